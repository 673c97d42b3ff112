#!/usr/bin/env bash
# The loader benchmark (docs/benchmarks.md, "The loader keeps up"), on the
# GPU machine from the bundle, one run:
#  1. CIFAR: a CIFAR-10-format folder of 50,000 + 10,000 synthetic records
#     (bench/write_cifar.py); rn-data bench with crop-flip at 1, 4, 8, 16
#     threads (f32 batches, and uint8 ones); ResNet-18 (CIFAR) bs256
#     rn-run --benchmark (synthetic in-memory batches) with f32 and with
#     uint8 images, and 3 epochs of rn-run --data with crop-flip for each
#     (f32 at 1, 4 and 8 loader threads, uint8 at 8).
#  2. ImageNet-like JPEGs (bench/make_image_folder.py: RN_LOADER_IMAGES
#     images, default 16384, of ImageNet's typical sizes): rn-data bench with
#     rrc-flip to 224 at 1, 4, 8, 16 threads (f32, and uint8 at 16); ResNet-50
#     bs256 rn-run --benchmark, f32 and uint8; 2 epochs of ResNet-50 from the
#     folder with 16 loader threads, f32 and uint8; then the folder shrunk
#     to a shorter side of 256 (rn-data to-jpeg --short-side 256), its loader
#     rate and 2 uint8 epochs from it.
# RN_LOADER_PARTS (default "cifar images") picks the parts. Logs under
# $OUT/loader/; the first lines of each are printed at the end.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
dir=$out/loader
data=${RN_LOADER_DATA:-/tmp/rn-loader-data}
parts=${RN_LOADER_PARTS:-cifar images}
mkdir -p "$dir" "$data"
run() { echo "+ $*" >&2; timeout "${RN_RUN_TIMEOUT:-300}" "$@"; }
nproc > "$dir/nproc.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 > "$dir/gpu.txt"
models=$bundle/models

if [[ " $parts " == *" cifar "* ]]; then
  [ -f "$data/cifar/test_batch.bin" ] || run "$python" "$bundle/bench/write_cifar.py" "$data/cifar" 10000 10000
  stats=(--mean 0.2187,0.2084,0.2114 --std 0.1912,0.1703,0.1767)
  run "$bundle/bin/rn-data" bench "$data/cifar" --augment crop-flip --threads 1,4,8,16 --batch 256 \
    --batches 100 "${stats[@]}" > "$dir/cifar-rn-data.log" 2>&1
  run "$bundle/bin/rn-data" bench "$data/cifar" --augment crop-flip --threads 1,8 --batch 256 \
    --batches 100 --pixels "${stats[@]}" > "$dir/cifar-rn-data-u8.log" 2>&1
  for kind in "" .u8; do
    run "$bundle/bin/rn-run" "$models/resnet18c.bench256$kind.rnx" --benchmark --steps 40 --warmup 15 \
      > "$dir/resnet18c$kind-benchmark.log" 2>&1
  done
  for threads in 1 4 8; do
    run "$bundle/bin/rn-run" "$models/resnet18c.bench256.rnx" --data "$data/cifar" \
      --augment crop-flip --epochs 3 --lr 0.05 --no-progress --loader-threads $threads \
      "${stats[@]}" > "$dir/resnet18c-cifar-$threads.log" 2>&1
  done
  run "$bundle/bin/rn-run" "$models/resnet18c.bench256.u8.rnx" --data "$data/cifar" \
    --augment crop-flip --epochs 3 --lr 0.05 --no-progress --loader-threads 8 \
    "${stats[@]}" > "$dir/resnet18c.u8-cifar-8.log" 2>&1
fi

if [[ " $parts " == *" images "* ]]; then
  [ -d "$data/images/val" ] || run "$python" "$bundle/bench/make_image_folder.py" "$data/images" \
    "${RN_LOADER_IMAGES:-16384}" > "$dir/images.log" 2>&1
  stats=(--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225)
  run "$bundle/bin/rn-data" bench "$data/images" --augment rrc-flip --size 224 --threads 1,4,8,16 \
    --batch 256 --batches 12 "${stats[@]}" > "$dir/images-rn-data.log" 2>&1
  run "$bundle/bin/rn-data" bench "$data/images" --augment rrc-flip --size 224 --threads 16 \
    --batch 256 --batches 12 --pixels "${stats[@]}" > "$dir/images-rn-data-u8.log" 2>&1
  for kind in "" .u8; do
    run "$bundle/bin/rn-run" "$models/resnet50.bench256$kind.rnx" --benchmark --steps 30 --warmup 10 \
      > "$dir/resnet50$kind-benchmark.log" 2>&1
    run "$bundle/bin/rn-run" "$models/resnet50.bench256$kind.rnx" --data "$data/images" \
      --augment rrc-flip --epochs 2 --lr 0.05 --no-progress --loader-threads 16 "${stats[@]}" \
      > "$dir/resnet50$kind-images-16.log" 2>&1
  done
  [ -d "$data/images256/val" ] || run "$bundle/bin/rn-data" to-jpeg "$data/images" "$data/images256" \
    --short-side 256 > "$dir/images256.log" 2>&1
  run "$bundle/bin/rn-data" bench "$data/images256" --augment rrc-flip --size 224 --threads 16 \
    --batch 256 --batches 12 --pixels "${stats[@]}" > "$dir/images256-rn-data-u8.log" 2>&1
  run "$bundle/bin/rn-run" "$models/resnet50.bench256.u8.rnx" --data "$data/images256" \
    --augment rrc-flip --epochs 2 --lr 0.05 --no-progress --loader-threads 16 "${stats[@]}" \
    > "$dir/resnet50.u8-images256-16.log" 2>&1
fi

for f in "$dir"/*.log; do
  echo "== $(basename "$f")"
  grep -E '^threads|images/s|^\{"model|^data:|^wrote|error' "$f" | cut -c1-400
done
