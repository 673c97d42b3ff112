#!/usr/bin/env bash
# The main job: set up, build, emit a model from the Python frontend,
# compile it through the whole pipeline into a scheduled training step
# (memory plan, streams, verified event barriers) and an artifact, then train
# an MLP on Fashion-MNIST with the CPU executor. The job says what is missing.
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
# Training on the CPU executor: the MLP on Fashion-MNIST (the Debian
# package's IDX files), with evaluation and a checkpoint each epoch.
#   RN_TRAIN_MODEL (default mlp), RN_EPOCHS (default 1), RN_LIMIT_TRAIN
#   (default: all 60000 examples), RN_LR (default 0.1)
train_model=${RN_TRAIN_MODEL:-mlp}
train_mlir="$out_dir/$train_model.train.mlir"
python3 -m rn.models "$train_model" --batch 64 -o "$train_mlir"
rn-compile "$train_mlir" -o "$out_dir/$train_model.train.rnx" --quiet
rn_log "training $train_model on Fashion-MNIST with the CPU executor (rn-run)"
limit=()
[ -z "${RN_LIMIT_TRAIN:-}" ] || limit=(--limit-train "$RN_LIMIT_TRAIN")
rn-run "$out_dir/$train_model.train.rnx" --data /usr/share/datasets/fashion-mnist \
  --epochs "${RN_EPOCHS:-1}" --lr "${RN_LR:-0.1}" "${limit[@]}" \
  --checkpoint "$out_dir/$train_model.checkpoint.safetensors"
rn_log "not yet: the CUDA executors (cuda-eager, cuda-graph) and GPU benchmarks"
