#!/usr/bin/env bash
# Collects what a run on the GPU machine needs into one folder (default
# gpu-bundle/, git-ignored), which the device tool carries over: the GPU
# machine has no MLIR, no apt and no internet, so everything is built here.
#   bin.tar.xz  rn-run, rn-data and rn-cuda-tests (unpacked to bin/ by the run
#             scripts): the runtime half built
#             with CUDA (sm_90), stripped; cuDNN, cuBLASLt, NVRTC and cudart
#             are the GPU machine's own (its Python venv has the same
#             versions, see docs/design.md), OpenBLAS is left out (the CPU
#             kernels fall back to plain loops there)
#   models.tar.xz  artifacts (unpacked to models/ by the run scripts, as
#             zoo.tar.xz to zoo/: the artifacts' JSON packs about 20x), weight-free where they are compiled here (the
#             runtime samples the parameters: the same values): the unit
#             tests' inputs, the Fashion-MNIST models of the main job
#             (fashion_cnn and mlp, batch 64), the benchmark models
#   data/     Fashion-MNIST (the Debian package's IDX files), unless
#             RN_BUNDLE_DATA=0
#   scripts/  run-gpu-tests.sh, run-gpu-round.sh, run-gpu-bench.sh,
#             run-gpu-profile.sh and their helpers; bench/ the benchmark
#             drivers
#   zoo/      the zoo's artifacts and CPU reference digests, unless
#             RN_BUNDLE_ZOO=0 (packed as zoo.tar.xz)
# RN_BUNDLE_BIN_ONLY=1 refreshes only the binaries and scripts of an
# existing bundle (after a runtime change; minutes instead of ten).
# Refuses a bundle over 60 MiB (the device tool carries 64 MiB at most).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

bundle=${RN_BUNDLE_DIR:-$RN_ROOT/gpu-bundle}
gpu_build=${RN_GPU_BUILD_DIR:-$RN_ROOT/build-gpu}
limit_mib=60

if [ ! -f "$gpu_build/build.ninja" ]; then
  rn_log "configuring the GPU runtime build in $gpu_build"
  cmake -G Ninja -S "$RN_ROOT" -B "$gpu_build" -DCMAKE_BUILD_TYPE=Release \
    -DRN_BUILD_COMPILER=OFF -DRN_ENABLE_CUDA=ON -DRN_WITH_OPENBLAS=OFF \
    -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
fi
rn_log "building the GPU runtime (rn-run, rn-cuda-tests, rn-runtime-tests)"
# A source edited while its object compiles leaves the object newer than
# the edit, which ninja then takes as current (a bundle once carried a
# stale norm_kernels.cu that way): sources newer than the build's start
# are touched and built again until none is.
build_start=$(mktemp)
trap 'rm -f "$build_start"' EXIT
for attempt in 1 2 3; do
  touch "$build_start"
  ninja -C "$gpu_build" rn-run rn-data rn-cuda-tests
  edited=$(find "$RN_ROOT/runtime" "$RN_ROOT/tools" "$RN_ROOT/test/runtime" -type f \
    \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' \) -newer "$build_start")
  [ -z "$edited" ] && break
  (( attempt == 3 )) && { rn_log "error: sources keep changing during the build: $edited"; exit 1; }
  rn_log "sources edited during the build, building again: $(echo $edited)"
  touch $edited
done

# pack_binaries: the binaries are mostly sm_90 kernel images and compress
# well (35 MB -> a few); the run scripts unpack them on the GPU machine.
pack_binaries() {
  rm -rf "$bundle/bin" "$bundle/bin.tar.xz"
  mkdir -p "$bundle/bin"
  for b in rn-run rn-data rn-cuda-tests; do
    strip -o "$bundle/bin/$b" "$gpu_build/bin/$b"
  done
  tar cJf "$bundle/bin.tar.xz" -C "$bundle/bin" .
  rm -r "$bundle/bin"
}
# copy_scripts: what runs on the GPU machine besides the binaries.
copy_scripts() {
  mkdir -p "$bundle/bench" "$bundle/scripts"
  cp "$RN_ROOT"/bench/*.py "$RN_ROOT"/bench/*.sh "$bundle/bench/"
  # The loader benchmark writes its CIFAR-format folder with the test suite's writer.
  cp "$RN_ROOT/test/tools/rn-run/Inputs/write_cifar.py" "$bundle/bench/"
  # The recorded GPU rounds (run from the working tree's root on the GPU
  # machine: bash gpu-bundle/diag/NAME.sh).
  mkdir -p "$bundle/diag"
  cp "$RN_ROOT"/scripts/gpu-rounds/*.sh "$bundle/diag/"
  cp "$RN_ROOT/scripts/run-gpu-tests.sh" "$RN_ROOT/scripts/run-gpu-bench.sh" \
    "$RN_ROOT/scripts/run-gpu-round.sh" "$RN_ROOT/scripts/gpu-env.sh" \
    "$RN_ROOT/scripts/compare-digests.py" "$RN_ROOT/scripts/run-gpu-profile.sh" \
    "$RN_ROOT/scripts/trace-summary.py" "$bundle/scripts/"
}
# pack_python: rn.Trainer for the GPU machine's Python 3.12 (pyenv's 3.12.1
# here has its ABI; RN_BUNDLE_PYTHON names another): the extension built in
# the GPU runtime's build folder with the CUDA executors, the pure rn
# package, its GPU tests and their driver (run-python-gpu.sh), packed into
# python.tar.xz, which the driver unpacks.
pack_python() {
  local py=${RN_BUNDLE_PYTHON:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")/versions/3.12.1/bin/python3}
  if [ ! -x "$py" ]; then
    rn_log "error: no Python 3.12 at $py to build rn._native for the GPU machine (RN_BUNDLE_PYTHON)"
    exit 1
  fi
  "$py" -c 'import nanobind' 2>/dev/null || "$py" -m pip install -q nanobind
  rn_log "building rn._native for $("$py" --version)"
  cmake "$gpu_build" -DRN_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" >/dev/null
  ninja -C "$gpu_build" rn_native
  rm -rf "$bundle/python" "$bundle/python.tar.xz"
  mkdir -p "$bundle/python/rn" "$bundle/python/tests"
  cp "$RN_ROOT"/python-frontend/rn/*.py "$RN_ROOT/python-frontend/rn/py.typed" "$bundle/python/rn/"
  for so in "$gpu_build"/python/rn/_native.cpython-312-*.so; do
    strip --strip-unneeded -o "$bundle/python/rn/$(basename "$so")" "$so"
  done
  cp "$RN_ROOT/test/python-frontend/test_trainer_gpu.py" \
    "$RN_ROOT/test/python-frontend/test_torch_import_gpu.py" "$bundle/python/tests/"
  tar cJf "$bundle/python.tar.xz" -C "$bundle/python" .
  rm -r "$bundle/python"
  mkdir -p "$bundle/scripts"
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
# torchvision's resnet50, mobilenet_v2 and efficientnet_b0 with the
# benchmark recipe at batch 256 (resnet50 timed against the zoo's
# resnet50.bench256.rnx, the other two against PyTorch: run-python-gpu.sh).
if /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  PYTHONPATH="$RN_ROOT/python-frontend" /usr/bin/python3 \
    "$RN_ROOT/test/python-frontend/test_torch_import_gpu.py" --compile "$bundle/models"
  PYTHONPATH="$RN_ROOT/python-frontend" /usr/bin/python3 - "$bundle/models" <<'PY'
import sys, torchvision, rn
recipe = "precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4 momentum=0.9"
for name in ("resnet50", "mobilenet_v2", "efficientnet_b0"):
    model = getattr(torchvision.models, name)()  # efficientnet with its stochastic depth
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
