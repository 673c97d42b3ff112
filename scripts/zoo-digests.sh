#!/usr/bin/env bash
# One training step of every zoo model at a small batch on the CPU executor,
# as the reference for the GPU executors: writes, into DIR (default
# gpu-bundle/zoo), each model's weight-free artifact and the digest of its
# state after the step (rn-run --state-digest). run-gpu-tests.sh (group
# "zoo") runs the same step on the GPU and compares the digests
# (scripts/compare-digests.py). Each model's step also runs from parameters
# perturbed by a relative RN_ZOO_NOISE_EPS (rn-run --perturb-state), once per
# seed of RN_ZOO_NOISE_SEEDS, into MODEL.noise.SEED.json: how much an
# ulp-scale change moves the CPU's own result, the bound of the comparison
# where the step is ill-conditioned (docs/gpu-tests.md, "The zoo
# criterion"); the 20-step runs below too. Needs the compiler and rn-run
# built (scripts/setup.sh); slow, most of it resnet18c's 20-step runs
# (docs/gpu-tests.md says how long).
#   RN_ZOO_MODELS (default: every model of `python3 -m rn.models --list`)
#   RN_ZOO_PIPELINE (default: the compiler's defaults, f32)
#   RN_ZOO_NOISE_EPS (default 1e-6), RN_ZOO_NOISE_SEEDS (default "1 2 3";
#   empty: no noise digests)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
dir=${1:-$RN_ROOT/gpu-bundle/zoo}
mkdir -p "$dir"
models=${RN_ZOO_MODELS:-$(python3 -m rn.models --list | awk 'NR > 1 { print $1 }')}
for model in $models; do
  input=$(python3 -m rn.models --list | awk -v m="$model" '$1 == m { print $2 }')
  case $input in
    *x224x224) batch=2 ;;
    *x32x32) batch=8 ;;
    *) batch=16 ;;
  esac
  python3 -m rn.models "$model" --batch "$batch" -o "$dir/$model.mlir"
  rn-compile "$dir/$model.mlir" -o "$dir/$model.rnx" --quiet --no-weights \
    ${RN_ZOO_PIPELINE:+--pipeline "$RN_ZOO_PIPELINE"}
  rm "$dir/$model.mlir"
  start=$SECONDS
  rn-run "$dir/$model.rnx" --synthetic --steps 1 --lr 0.05 --executor cpu \
    --state-digest "$dir/$model.cpu.json" > "$dir/$model.cpu.log"
  rn_log "$model (batch $batch): CPU step and digest in $((SECONDS - start)) s"
  rm -f "$dir/$model".noise.*.json
  for seed in ${RN_ZOO_NOISE_SEEDS-1 2 3}; do
    rn-run "$dir/$model.rnx" --synthetic --steps 1 --lr 0.05 --executor cpu \
      --perturb-state "${RN_ZOO_NOISE_EPS:-1e-6}" "$seed" \
      --state-digest "$dir/$model.noise.$seed.json" > "$dir/$model.noise.$seed.log"
  done
done

# 20 steps of fashion_cnn and of a small-batch resnet18c, f32 and f16 with
# dynamic loss scaling, and of vgg11c in f16: the GPU's losses are compared
# with these, within what the perturbed runs' losses (NAME.noise.SEED.log)
# differ from them.
for spec in "fashion_cnn 16" "resnet18c 8" "vgg11c 8"; do
  set -- $spec
  precisions="f32 f16"
  [ "$1" = vgg11c ] && precisions=f16
  for precision in $precisions; do
    name=$1.$precision.steps20
    python3 -m rn.models "$1" --batch "$2" -o "$dir/$name.mlir"
    pipeline="precision=$precision"
    [ "$precision" = f32 ] || pipeline="$pipeline loss-scaling=dynamic"
    rn-compile "$dir/$name.mlir" -o "$dir/$name.rnx" --quiet --no-weights --pipeline "$pipeline"
    # The same step with one zeroing, unscaling and cast node per tensor
    # (the default groups them into multi-tensor ops): the GPU round checks
    # that both leave the same bits (run-gpu-tests.sh, zoo).
    rn-compile "$dir/$name.mlir" -o "$dir/$name.ungrouped.rnx" --quiet --no-weights \
      --pipeline "$pipeline group-elementwise=false"
    # Data-parallel with the all-reduce in 1 MiB buckets during the
    # backward (rn-bucket-all-reduce; one replica, so the all-reduce is the
    # identity): the same bits too, through a schedule with the buckets'
    # cross-stream events.
    rn-compile "$dir/$name.mlir" -o "$dir/$name.buckets.rnx" --quiet --no-weights \
      --pipeline "$pipeline data-parallel=true all-reduce-bucket-bytes=1048576"
    # The residual junctions' gradient sums as separate adds (the default
    # folds them into the data gradients' epilogues, rn-fold-gradient-adds,
    # the sum rounded once): its losses are compared with this build's CPU
    # losses, within the same noise (ResNet only: the CNN has no junctions).
    # Likewise the CBR backward reading the ReLU results for its masks (the
    # default recomputes them from the convolution outputs,
    # rn-recompute-relu-mask).
    if [ "$1" = resnet18c ]; then
      rn-compile "$dir/$name.mlir" -o "$dir/$name.unfolded.rnx" --quiet --no-weights \
        --pipeline "$pipeline fold-gradient-adds=false"
      rn-compile "$dir/$name.mlir" -o "$dir/$name.storedmask.rnx" --quiet --no-weights \
        --pipeline "$pipeline recompute-relu-mask=false"
    fi
    # vgg11c's CBR layers that feed convolutions, with their BN apply +
    # ReLU as those convolutions' prologue (rn-fuse-bn-prologue, f16 only;
    # resnet18c has no such layer): its f16-rounded scale and bias change
    # the numbers, so the GPU is compared with this build's own CPU losses.
    [ "$1" = vgg11c ] &&
      rn-compile "$dir/$name.mlir" -o "$dir/$name.bnprologue.rnx" --quiet --no-weights \
        --pipeline "$pipeline fuse-bn-prologue=true"
    rm "$dir/$name.mlir"
    builds=$name
    [ -f "$dir/$name.bnprologue.rnx" ] && builds="$builds $name.bnprologue"
    for build in $builds; do
      rn-run "$dir/$build.rnx" --synthetic --steps 20 --lr 0.02 --executor cpu > "$dir/$build.cpu.log"
      rm -f "$dir/$build".noise.*.log
      for seed in ${RN_ZOO_NOISE_SEEDS-1 2 3}; do
        rn-run "$dir/$build.rnx" --synthetic --steps 20 --lr 0.02 --executor cpu \
          --perturb-state "${RN_ZOO_NOISE_EPS:-1e-6}" "$seed" > "$dir/$build.noise.$seed.log"
      done
      rn_log "$build: 20 CPU steps, and from perturbed parameters"
    done
  done
done
