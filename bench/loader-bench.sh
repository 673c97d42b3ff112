#!/usr/bin/env bash
# The loader benchmark (docs/benchmarks.md, "The loader keeps up"), on the
# GPU machine from the bundle, one run:
#  1. CIFAR: a CIFAR-10-format folder of 50,000 + 10,000 synthetic records
#     (bench/write_cifar.py); rn-data bench with crop-flip at 1, 4, 8, 16
#     threads; ResNet-18 (CIFAR) bs256 rn-run --benchmark (synthetic,
#     in-memory data) and 3 epochs of rn-run --data with crop-flip at 1, 4 and
#     8 loader threads (the last epoch's images/s and wait for data).
#  2. ImageNet-like JPEGs (bench/make_image_folder.py: RN_LOADER_IMAGES
#     images, default 4096, of ImageNet's typical sizes): rn-data bench with
#     rrc-flip to 224 at 1, 4, 8, 16 threads; ResNet-50 bs256 rn-run
#     --benchmark; one epoch of ResNet-50 from the folder with 16 loader
#     threads (what its steps wait for).
# Logs and JSON lines under $OUT/loader/.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
dir=$out/loader
data=${RN_LOADER_DATA:-/tmp/rn-loader-data}
mkdir -p "$dir" "$data"
run() { echo "+ $*" >&2; timeout "${RN_RUN_TIMEOUT:-300}" "$@"; }
nproc > "$dir/nproc.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 > "$dir/gpu.txt"

# 1. CIFAR-format, crop-flip, ResNet-18 (CIFAR) bs256.
[ -f "$data/cifar/test_batch.bin" ] || run "$python" "$bundle/bench/write_cifar.py" "$data/cifar" 10000 10000
cifar_stats=(--mean 0.2187,0.2084,0.2114 --std 0.1912,0.1703,0.1767)
run "$bundle/bin/rn-data" bench "$data/cifar" --augment crop-flip --threads 1,4,8,16 --batch 256 \
  --batches 100 "${cifar_stats[@]}" > "$dir/cifar-rn-data.log" 2>&1
run "$bundle/bin/rn-run" "$bundle/models/resnet18c.bench256.rnx" --benchmark --steps 40 --warmup 15 \
  > "$dir/resnet18c-benchmark.log" 2>&1
for threads in 1 4 8; do
  run "$bundle/bin/rn-run" "$bundle/models/resnet18c.bench256.rnx" --data "$data/cifar" \
    --augment crop-flip --epochs 3 --lr 0.05 --no-progress --loader-threads $threads \
    "${cifar_stats[@]}" > "$dir/resnet18c-cifar-$threads.log" 2>&1
done

# 2. ImageNet-like JPEGs, rrc-flip to 224, ResNet-50 bs256.
[ -d "$data/images/val" ] || run "$python" "$bundle/bench/make_image_folder.py" "$data/images" \
  "${RN_LOADER_IMAGES:-4096}" > "$dir/images.log" 2>&1
image_stats=(--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225)
run "$bundle/bin/rn-data" bench "$data/images" --augment rrc-flip --size 224 --threads 1,4,8,16 \
  --batch 256 --batches 12 "${image_stats[@]}" > "$dir/images-rn-data.log" 2>&1
run "$bundle/bin/rn-run" "$bundle/models/resnet50.bench256.rnx" --benchmark --steps 30 --warmup 10 \
  > "$dir/resnet50-benchmark.log" 2>&1
run "$bundle/bin/rn-run" "$bundle/models/resnet50.bench256.rnx" --data "$data/images" \
  --augment rrc-flip --epochs 1 --lr 0.05 --no-progress --loader-threads 16 "${image_stats[@]}" \
  > "$dir/resnet50-images-16.log" 2>&1

for f in "$dir"/*.log; do echo "== $(basename "$f")"; grep -E '^threads|images/s|^\{"model|^data:|error' "$f" | cut -c1-400; done
