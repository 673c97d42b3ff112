#!/usr/bin/env bash
# The main job: set up, build, emit a model from the Python frontend and
# verify it with rn-opt. Training needs the runtime, which does not exist yet:
# for now the job ends after verification, and says so.
#   RN_MODEL (default resnet18c), RN_BATCH (default 256)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

model=${RN_MODEL:-resnet18c}
batch=${RN_BATCH:-256}
out_dir="$RN_BUILD_DIR/models"
mkdir -p "$out_dir"
mlir="$out_dir/$model.mlir"

rn_log "emitting $model (batch $batch) to $mlir"
python3 -m rn.models "$model" --batch "$batch" -o "$mlir"
rn_log "verifying with rn-opt"
rn-opt "$mlir" -o "$out_dir/$model.verified.mlir"
rn_log "$model: $(grep -c '^  rn.parameter ' "$mlir") parameter tensors, $(grep -c ' = rn\.' "$mlir") ops; verified"
rn_log "training is not available yet: the runtime (rn-compile, rn-run) is still to be built"
