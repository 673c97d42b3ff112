#!/usr/bin/env bash
# The main job: set up, build, emit a model from the Python frontend,
# compile it through the whole pipeline into a scheduled training step
# (memory plan, streams, verified event barriers) and an artifact, then train
# an MLP with the CPU executor on synthetic data. Fashion-MNIST training
# arrives with rn-run's data loading; the job says what is missing.
#   RN_MODEL (default resnet18c), RN_BATCH (default 256),
#   RN_PIPELINE (default "precision=f16 loss-scaling=dynamic")
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

model=${RN_MODEL:-resnet18c}
batch=${RN_BATCH:-256}
out_dir="$RN_BUILD_DIR/models"
mkdir -p "$out_dir"
mlir="$out_dir/$model.mlir"

rn_log "emitting $model (batch $batch) to $mlir"
python3 -m rn.models "$model" --batch "$batch" -o "$mlir"
rn_log "$model: $(grep -c '^  rn.parameter ' "$mlir") parameter tensors, $(grep -c ' = rn\.' "$mlir") ops"
pipeline=${RN_PIPELINE:-precision=f16 loss-scaling=dynamic}
step="$out_dir/$model.step.mlir"
rn_log "compiling the training step (rn-training-pipeline: $pipeline) to $step"
rn-opt "$mlir" --rn-build-training="$pipeline" --rn-fuse-cbr --rn-partition \
  --rn-plan-memory=summary --rn-assign-streams --rn-insert-barriers=report \
  --rn-verify-schedule -o "$step" 2>&1 | grep -E 'remark|bytes|@' | sed 's/^/[rn]   /' >&2
rn-opt "$step" --rn-print-schedule -o /dev/null 2> "$out_dir/$model.schedule.txt"
rn_log "schedule verified; readable dump in $out_dir/$model.schedule.txt"
rn-compile "$mlir" -o "$out_dir/$model.rnx" --pipeline "$pipeline" 2>&1 | sed 's/^/[rn]   /' >&2
# Training on the CPU executor: the MLP on synthetic data, for now (real
# data, the learning-rate schedule and checkpoints are not in rn-run yet).
mlp="$out_dir/mlp.mlir"
python3 -m rn.models mlp --batch 32 -o "$mlp"
rn-compile "$mlp" -o "$out_dir/mlp.rnx" --quiet
rn_log "training the MLP on synthetic data with the CPU executor (rn-run)"
rn-run "$out_dir/mlp.rnx" --synthetic --steps 20 --lr 0.05 | tail -3 | sed 's/^/[rn]   /' >&2
rn_log "not yet: Fashion-MNIST data, lr schedule, evaluation, checkpoints in rn-run; the CUDA executors"
