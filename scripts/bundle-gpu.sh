#!/usr/bin/env bash
# Collects what a run of the GPU tests and benchmarks needs into one folder
# (default gpu-bundle/, git-ignored), which the device tool carries over.
# RN itself goes as its wheel (docs/install.md: pip install --no-index
# --no-deps, then nothing else to set up); the bundle carries only what a
# wheel should not hold:
#   wheel/    RN's cp312 wheel (scripts/build-wheel.sh with Python
#             3.12, the GPU machine's), installed there by gpu-env.sh
#   bin.tar.xz  rn-cuda-tests (unpacked to bin/ with links to the wheel's
#             tools by gpu-env.sh): a test binary linking the wheel's
#             librn_runtime.so and librn_cuda.so
#   models.tar.xz  artifacts (unpacked to models/ by the run scripts, as
#             zoo.tar.xz to zoo/: the artifacts' JSON packs about 20x), weight-free where they are compiled here (the
#             runtime samples the parameters: the same values): the unit
#             tests' inputs, the Fashion-MNIST models of the main job
#             (fashion_cnn and mlp, batch 64), the benchmark models
#   data/     Fashion-MNIST (the Debian package's IDX files), unless
#             RN_BUNDLE_DATA=0
#   scripts/  run-gpu-tests.sh, run-gpu-round.sh, run-gpu-bench.sh,
#             run-gpu-profile.sh, run-gpu-coverage.sh (the imported CNNs:
#             torchvision-import.py and timm-import.py's surveys, and the
#             benchmark against PyTorch) and their helpers; bench/ the benchmark
#             drivers; python/tests the Python GPU tests
#   zoo/      the zoo's artifacts and CPU reference digests, unless
#             RN_BUNDLE_ZOO=0 (packed as zoo.tar.xz)
# RN_BUNDLE_BIN_ONLY=1 refreshes only the wheel, the test binary and the
# scripts of an existing bundle (after a runtime change).
# Refuses a bundle over 60 MiB (the device tool carries 64 MiB at most).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

bundle=${RN_BUNDLE_DIR:-$RN_ROOT/gpu-bundle}
limit_mib=60
gpu_python=${RN_BUNDLE_PYTHON:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")/versions/3.12.1/bin/python3}
if [ ! -x "$gpu_python" ]; then
  rn_log "error: no Python 3.12 at $gpu_python to build the wheel for the GPU machine (RN_BUNDLE_PYTHON)"
  exit 1
fi

# pack_binaries: RN's wheel for the GPU machine's Python, and the CUDA test
# binary (mostly sm_90 kernel images: it packs well).
pack_binaries() {
  rn_log "building rn-cuda-tests"
  ninja -C "$RN_BUILD_DIR" rn-cuda-tests
  rm -rf "$bundle/wheel" "$bundle/bin" "$bundle/bin.tar.xz"
  mkdir -p "$bundle/wheel" "$bundle/bin"
  local wheel
  wheel=$(RN_NO_BUILD=1 RN_WHEEL_PYTHON="$gpu_python" bash "$RN_ROOT/scripts/build-wheel.sh")
  cp "$wheel" "$bundle/wheel/"
  strip -o "$bundle/bin/rn-cuda-tests" "$RN_BUILD_DIR/bin/rn-cuda-tests"
  tar cJf "$bundle/bin.tar.xz" -C "$bundle/bin" .
  rm -r "$bundle/bin"
}
# copy_scripts: what runs on the GPU machine besides the binaries.
copy_scripts() {
  mkdir -p "$bundle/bench" "$bundle/scripts"
  cp "$RN_ROOT"/bench/*.py "$RN_ROOT"/bench/*.sh "$bundle/bench/"
  # The loader benchmark writes its CIFAR-format folder with the test suite's writer.
  cp "$RN_ROOT/test/tools/rn-run/Inputs/write_cifar.py" "$bundle/bench/"
  cp "$RN_ROOT/scripts/run-gpu-tests.sh" "$RN_ROOT/scripts/run-gpu-bench.sh" \
    "$RN_ROOT/scripts/run-gpu-round.sh" "$RN_ROOT/scripts/gpu-env.sh" \
    "$RN_ROOT/scripts/compare-digests.py" "$RN_ROOT/scripts/run-gpu-profile.sh" \
    "$RN_ROOT/scripts/trace-summary.py" "$RN_ROOT/scripts/torchvision-import.py" \
    "$RN_ROOT/scripts/timm-import.py" "$RN_ROOT/scripts/run-gpu-coverage.sh" \
    "$bundle/scripts/"
}
# pack_python: the Python GPU tests (the rn package comes from the wheel).
pack_python() {
  rm -rf "$bundle/python" "$bundle/python.tar.xz"
  mkdir -p "$bundle/python/tests" "$bundle/scripts"
  cp "$RN_ROOT/test/python-frontend/test_trainer_gpu.py" \
    "$RN_ROOT/test/python-frontend/test_torch_import_gpu.py" "$bundle/python/tests/"
  cp "$RN_ROOT/scripts/run-python-gpu.sh" "$bundle/scripts/"
}
# RN_BUNDLE_BIN_ONLY=1: refresh the binaries and scripts of an existing
# bundle (a runtime change), keeping its artifacts, data and references.
if [ "${RN_BUNDLE_BIN_ONLY:-0}" = 1 ] && [ -f "$bundle/models.tar.xz" ]; then
  pack_binaries
  copy_scripts
  pack_python
  rn_log "bundle: $bundle ($(du -sm "$bundle" | cut -f1) MiB), binaries and scripts refreshed"
  exit 0
fi

rm -rf "$bundle"
mkdir -p "$bundle/models"
pack_binaries
cp "$RN_ROOT"/test/runtime/Inputs/*.rnx "$bundle/models/"
for name in fashion_cnn mlp; do
  python3 -m rn.models "$name" --batch 64 -o "$bundle/models/$name.train.mlir"
  rn-compile "$bundle/models/$name.train.mlir" -o "$bundle/models/$name.train.rnx" --quiet \
    --no-weights
  rm "$bundle/models/$name.train.mlir"
done
# fashion_cnn with uint8 images normalized on the device (test_trainer_gpu.py
# against fashion_cnn.train.rnx fed the host's normalization).
python3 -m rn.models fashion_cnn --batch 64 --input-dtype uint8 --mean 0.2860 --std 0.3530 \
  -o "$bundle/models/fashion_cnn_u8.train.mlir"
rn-compile "$bundle/models/fashion_cnn_u8.train.mlir" -o "$bundle/models/fashion_cnn_u8.train.rnx" \
  --quiet --no-weights
rm "$bundle/models/fashion_cnn_u8.train.mlir"
# Data-parallel checks on two GPUs (run-gpu-tests.sh, dist2): the f32 MLP
# at batch 64 per GPU against one GPU at the global batch 128 (no BN, so
# the trajectories must agree), and fashion_cnn at 32 per GPU for the
# Fashion-MNIST recipe's global batch of 64.
for spec in "mlp 64 dp" "mlp 128 plain" "fashion_cnn 32 dp"; do
  set -- $spec
  python3 -m rn.models "$1" --batch "$2" -o "$bundle/models/$1.dist$2.mlir"
  pipeline=()
  [ "$3" = dp ] && pipeline=(--pipeline "data-parallel=true")
  rn-compile "$bundle/models/$1.dist$2.mlir" -o "$bundle/models/$1.dist$2.$3.rnx" --quiet \
    --no-weights ${pipeline[@]+"${pipeline[@]}"}
  rm "$bundle/models/$1.dist$2.mlir"
done
if [ "${RN_BUNDLE_DATA:-1}" != 0 ]; then
  mkdir -p "$bundle/data"
  cp /usr/share/datasets/fashion-mnist/*.gz "$bundle/data/"
fi
# Benchmark artifacts, multi- and single-stream, weight-free, with
# rn-compile's times (scripts/bench-artifacts.sh).
bash "$RN_ROOT/scripts/bench-artifacts.sh" "$bundle/models"
# Imported torchvision models (Debian's PyTorch under /usr/bin/python3, as
# the CI's torch tests): the GPU equality tests' artifacts at 224x224, and
# torchvision's resnet50, mobilenet_v2, efficientnet_b0, densenet121,
# inception_v3 (no auxiliary classifier), shufflenet_v2_x1_0 and
# convnext_tiny with the benchmark recipe at batch 256, 224x224 (resnet50
# timed against the zoo's resnet50.bench256.rnx, the others against
# PyTorch: run-python-gpu.sh, bench/torch_step.py builds them alike).
if /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  PYTHONPATH="$RN_ROOT/python-frontend" /usr/bin/python3 \
    "$RN_ROOT/test/python-frontend/test_torch_import_gpu.py" --compile "$bundle/models"
  PYTHONPATH="$RN_ROOT/python-frontend" /usr/bin/python3 - "$bundle/models" <<'PY'
import sys, torchvision, rn
recipe = "precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4 momentum=0.9"
models = {"resnet50": {}, "mobilenet_v2": {}, "efficientnet_b0": {}, "densenet121": {},
          "inception_v3": {"aux_logits": False, "init_weights": True},
          "shufflenet_v2_x1_0": {}, "convnext_tiny": {}}
for name, kwargs in models.items():
    # efficientnet and convnext with their stochastic depth
    model = getattr(torchvision.models, name)(**kwargs)
    rn.compile(model, f"{sys.argv[1]}/torch_{name}.bench256.rnx",
               batch=256, input_shape=(3, 224, 224), pipeline=recipe, weights=False,
               name=f"torch_{name}")
PY
else
  rn_log "no PyTorch for /usr/bin/python3 (apt python3-torch python3-torchvision): no imported models"
fi
# The out-of-memory error path: ResNet-50 at batch 4096 needs a 168 GiB arena.
python3 -m rn.models resnet50 --batch 4096 -o "$bundle/models/resnet50.mlir"
rn-compile "$bundle/models/resnet50.mlir" -o "$bundle/models/resnet50.oom.rnx" --quiet --no-weights \
  --pipeline "precision=f16 loss-scaling=dynamic"
rm "$bundle/models/resnet50.mlir"
copy_scripts
pack_python
# One CPU step of every zoo model, the reference of the GPU's (slow: the
# 224x224 models; RN_BUNDLE_ZOO=0 leaves it out).
if [ "${RN_BUNDLE_ZOO:-1}" != 0 ]; then
  bash "$RN_ROOT/scripts/zoo-digests.sh" "$bundle/zoo"
fi

# The artifacts are JSON: packed, they take a twentieth of the device
# tool's carry limit they would otherwise.
for packed in models zoo; do
  [ -d "$bundle/$packed" ] || continue
  tar cJf "$bundle/$packed.tar.xz" -C "$bundle/$packed" .
  rm -r "${bundle:?}/$packed"
done
bytes=$(du -sb "$bundle" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
if (( mib > limit_mib )); then
  rn_log "error: the bundle is $mib MiB, over the limit of $limit_mib MiB"
  du -sh "$bundle"/* >&2
  exit 1
fi
rn_log "bundle: $bundle ($mib MiB)"
