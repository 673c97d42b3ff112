#!/usr/bin/env bash
# The main job: set up, build, emit a model from the Python frontend,
# compile it through the whole pipeline into a scheduled training step
# (memory plan, streams, verified event barriers) and an artifact, then train
# a small CNN and an MLP on Fashion-MNIST with rn-run's default executor
# (auto: cuda-graph where a GPU answers, else the CPU executor; rn-run's
# first line names it). The job says what is missing.
#   RN_MODEL (default resnet18c), RN_BATCH (default 256),
#   RN_PIPELINE (default "precision=f16 loss-scaling=dynamic")
#   RN_PREBUILT=DIR: no set-up, build or compiler (the GPU machine has no
#   MLIR): train with DIR/bin/rn-run on DIR/models/NAME.train.rnx, as
#   scripts/bundle-gpu.sh makes them (RN_PREBUILT=gpu-bundle there)
#   RN_DATA (default /usr/share/datasets/fashion-mnist; with RN_PREBUILT,
#   DIR/data when it has the IDX files)
set -euo pipefail
if [ -n "${RN_PREBUILT:-}" ]; then
  prebuilt=$(cd "$RN_PREBUILT" && pwd)
  rn_log() { printf '[rn] %s\n' "$*" >&2; }
  bundle=$prebuilt
  # The bundle's binaries (packed) and the GPU machine's library path.
  source "$(dirname "${BASH_SOURCE[0]}")/gpu-env.sh"
  rn-run() { "$prebuilt/bin/rn-run" "$@"; }
  out_dir=$(mktemp -d)
  [ -f "$prebuilt/data/train-images-idx3-ubyte.gz" ] && : "${RN_DATA:=$prebuilt/data}"
else
  source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
fi
model=${RN_MODEL:-resnet18c}
batch=${RN_BATCH:-256}
if [ -z "${RN_PREBUILT:-}" ]; then
out_dir="$RN_BUILD_DIR/models"
mkdir -p "$out_dir"
mlir="$out_dir/$model.mlir"

rn_log "emitting $model (batch $batch) to $mlir"
python3 -m rn.models "$model" --batch "$batch" -o "$mlir"
rn_log "$model: $(grep -c '^  rn.parameter ' "$mlir") parameter tensors, $(grep -c ' = rn\.' "$mlir") ops"
pipeline=${RN_PIPELINE:-precision=f16 loss-scaling=dynamic}
step="$out_dir/$model.step.mlir"
rn_log "compiling $model with rn-compile --pipeline \"$pipeline\" (the whole rn-training-pipeline) to $out_dir/$model.rnx"
# The artifact and the scheduled module it is made of come from one run;
# summary=true (rn-plan-memory) and report=true (rn-insert-barriers and the
# grouping passes) print what the pipeline built without changing it.
rn-compile "$mlir" -o "$out_dir/$model.rnx" --pipeline "$pipeline summary=true report=true" \
  --step-output "$step" 2>&1 | grep -E 'remark|bytes|wrote' | sed 's/^/[rn]   /' >&2
rn-opt "$step" --rn-print-schedule -o /dev/null 2> "$out_dir/$model.schedule.txt"
rn_log "schedule verified; readable dump in $out_dir/$model.schedule.txt"
else
  rn_log "prebuilt tools in $prebuilt: no compiler here, training its artifacts"
fi
# Training on Fashion-MNIST (the Debian package's IDX files; the executor
# is rn-run's auto choice), with evaluation and a checkpoint each epoch: the small CNN for 2
# epochs (target: >= 88% test accuracy), then the MLP for 1 (>= 85%).
#   RN_TRAIN_MODEL (train only this model; with RN_EPOCHS, default 1, and
#   RN_LR, default 0.1), RN_LIMIT_TRAIN (default: all 60000 examples)
data=${RN_DATA:-/usr/share/datasets/fashion-mnist}
limit=()
[ -z "${RN_LIMIT_TRAIN:-}" ] || limit=(--limit-train "$RN_LIMIT_TRAIN")
train() { # model epochs lr target%
  local name=$1 epochs=$2 lr=$3 target=$4
  local stem="$out_dir/$name.train" log artifact="$out_dir/$name.train.rnx"
  if [ -n "${RN_PREBUILT:-}" ]; then
    artifact="$prebuilt/models/$name.train.rnx"
  else
    python3 -m rn.models "$name" --batch 64 -o "$stem.mlir"
    rn-compile "$stem.mlir" -o "$artifact" --quiet
  fi
  rn_log "training $name on Fashion-MNIST (executor: auto, named on rn-run's first line): $epochs epochs, lr $lr (rn-run)"
  log="$stem.log"
  # Fashion-MNIST's published mean and std, given explicitly so the numbers
  # stay comparable whatever rn-run's default normalization becomes.
  rn-run "$artifact" --data "$data" --mean 0.2860 --std 0.3530 --epochs "$epochs" --lr "$lr" "${limit[@]}" \
    --checkpoint "$out_dir/$name.checkpoint.safetensors" | tee "$log"
  local accuracy
  accuracy=$(sed -n 's/^epoch \([0-9]*\)\/\1 test loss .* accuracy \([0-9.]*\)%.*/\2/p' "$log")
  if awk -v a="$accuracy" -v t="$target" 'BEGIN { exit !(a >= t) }'; then
    rn_log "$name: $accuracy% test accuracy after $epochs epochs (target >= $target%)"
  else
    rn_log "$name: $accuracy% test accuracy after $epochs epochs, below the target of $target%"
  fi
}
start=$SECONDS
if [ -n "${RN_TRAIN_MODEL:-}" ]; then
  train "$RN_TRAIN_MODEL" "${RN_EPOCHS:-1}" "${RN_LR:-0.1}" 0
else
  train fashion_cnn 2 0.01 88
  train mlp 1 0.1 85
fi
rn_log "training took $((SECONDS - start)) s"
rn_log "not yet here: multi-GPU training; GPU benchmarks run from scripts/bundle-gpu.sh's bundle (docs/benchmarks.md)"
