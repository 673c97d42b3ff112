#!/usr/bin/env bash
# Compiles the benchmark artifacts into DIR (default gpu-bundle/models): per
# model and batch, MODEL.benchBATCH.rnx (the multi-stream schedule),
# MODEL.benchBATCH.single.rnx (the pipeline's single-stream option: every
# op on COMP_1), MODEL.benchBATCH.unfolded.rnx (multi-stream with
# fold-gradient-adds=false: the residual junctions' gradient sums as
# separate adds instead of the data gradients' epilogues) and
# MODEL.benchBATCH.anystridefold.rnx (fold-gradient-adds-max-stride=0: the
# strided data gradients take the addend too; the default folds only into
# stride-1 ones), both ResNets only,
# MODEL.benchBATCH.storedmask.rnx (recompute-relu-mask=false: the CBR
# backward reads the ReLU result for its mask instead of recomputing it),
# convolutional models only, MODEL.benchBATCH.bnprologue.rnx
# (fuse-bn-prologue=true: a CBR layer's BN apply + ReLU as the prologue of
# the convolutions that read it, rn-fuse-bn-prologue), convolutional models
# only, and only when RN_BENCH_VARIANTS names them
# MODEL.benchBATCH.unpadded.rnx (pad-conv-channels=0: the 3-channel image
# stems as they are) and MODEL.benchBATCH.ungrouped.rnx
# (group-elementwise=false, one zeroing, unscaling and cast node per tensor
# instead of the default multi-tensor ops), and MODEL.benchBATCH.dp.rnx
# (data-parallel=true: the batch is one GPU's, the gradient all-reduce in
# buckets during the backward; rn-run --gpus N or torchrun's variables run
# it on N GPUs), with the PyTorch reference's
# recipe (f16 AMP, SGD Nesterov
# momentum 0.9, weight decay 5e-4, dynamic loss scaling), weight-free (the
# runtime samples the parameters). rn-compile's wall time per artifact goes
# to DIR/compile-times.jsonl (part of RN's time to first step).
#   RN_BENCH_CONFIGS (default mlp:128 resnet18c:256 resnet18c:1024 vgg11c:256
#   vgg11c:1024 resnet50:256), RN_BENCH_VARIANTS (default multi single
#   unfolded anystridefold storedmask bnprologue dp; also unpadded, ungrouped)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
dir=${1:-$RN_ROOT/gpu-bundle/models}
mkdir -p "$dir"
recipe="precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4 momentum=0.9"
times=$dir/compile-times.jsonl
: > "$times"
for spec in ${RN_BENCH_CONFIGS:-mlp:128 resnet18c:256 resnet18c:1024 vgg11c:256 vgg11c:1024 resnet50:256}; do
  name=${spec%%:*} batch=${spec##*:}
  python3 -m rn.models "$name" --batch "$batch" -o "$dir/$name.$batch.mlir"
  for variant in ${RN_BENCH_VARIANTS:-multi single unfolded anystridefold storedmask bnprologue dp}; do
    # Folding changes only models with residual junctions, the mask only
    # models with CBR ops.
    case $variant in unfolded | anystridefold) [[ $name == resnet* ]] || continue ;; esac
    case $variant in storedmask | bnprologue) [[ $name != mlp ]] || continue ;; esac
    out=$dir/$name.bench$batch.rnx pipeline=$recipe
    case $variant in
      single) out=$dir/$name.bench$batch.single.rnx pipeline="$recipe single-stream=true" ;;
      ungrouped) out=$dir/$name.bench$batch.ungrouped.rnx pipeline="$recipe group-elementwise=false" ;;
      unpadded) out=$dir/$name.bench$batch.unpadded.rnx pipeline="$recipe pad-conv-channels=0" ;;
      unfolded) out=$dir/$name.bench$batch.unfolded.rnx pipeline="$recipe fold-gradient-adds=false" ;;
      anystridefold) out=$dir/$name.bench$batch.anystridefold.rnx pipeline="$recipe fold-gradient-adds-max-stride=0" ;;
      storedmask) out=$dir/$name.bench$batch.storedmask.rnx pipeline="$recipe recompute-relu-mask=false" ;;
      bnprologue) out=$dir/$name.bench$batch.bnprologue.rnx pipeline="$recipe fuse-bn-prologue=true" ;;
      dp) out=$dir/$name.bench$batch.dp.rnx pipeline="$recipe data-parallel=true" ;;
    esac
    start=$EPOCHREALTIME
    rn-compile "$dir/$name.$batch.mlir" -o "$out" --quiet --no-weights --pipeline "$pipeline"
    secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    printf '{"model": "%s", "batch": %d, "streams": "%s", "compile_s": %.3f}\n' \
      "$name" "$batch" "$variant" "$secs" >> "$times"
    rn_log "$(basename "$out"): compiled in $secs s"
  done
  rm "$dir/$name.$batch.mlir"
done
# The image models with uint8 images normalized on the device (the loader
# benchmark, bench/loader-bench.sh): NAME.benchBATCH.u8.rnx, the same recipe,
# ImageNet's mean and std (any: the loader writes its data's).
for spec in ${RN_BENCH_U8_CONFIGS:-resnet18c:256 resnet50:256}; do
  name=${spec%%:*} batch=${spec##*:}
  python3 -m rn.models "$name" --batch "$batch" --input-dtype uint8 --mean 0.485,0.456,0.406 \
    --std 0.229,0.224,0.225 -o "$dir/$name.$batch.u8.mlir"
  rn-compile "$dir/$name.$batch.u8.mlir" -o "$dir/$name.bench$batch.u8.rnx" --quiet --no-weights \
    --pipeline "$recipe"
  rm "$dir/$name.$batch.u8.mlir"
  rn_log "$name.bench$batch.u8.rnx: compiled"
done
