#!/usr/bin/env bash
# Runs the GPU tests on the GPU machine from a bundle (scripts/bundle-gpu.sh):
# the kernel tests against the CPU references, the executor tests, the error
# paths, Fashion-MNIST training with cuda-eager and compute-sanitizer on the
# kernel tests. Logs and a summary go to $OUT (or ./gpu-results).
#   RN_GPU_TESTS: which groups to run (default "unit errors fashion zoo sanitizer")
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$bundle/gpu-results}
mkdir -p "$out"
# The bundle carries its binaries packed (scripts/bundle-gpu.sh).
if [ ! -x "$bundle/bin/rn-run" ] && [ -f "$bundle/bin.tar.xz" ]; then
  mkdir -p "$bundle/bin" && tar xJf "$bundle/bin.tar.xz" -C "$bundle/bin"
fi
V=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$V/cudnn/lib:$V/nccl/lib:$V/cu13/lib:${LD_LIBRARY_PATH:-}
bin=$bundle/bin
models=$bundle/models
data=$bundle/data
groups=${RN_GPU_TESTS:-unit errors fashion zoo sanitizer}
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

has() { [[ " $groups " == *" $1 "* ]]; }

if has unit; then
  "$bin/rn-cuda-tests" --gtest_output=json:"$out/rn-cuda-tests.json" > "$out/rn-cuda-tests.log" 2>&1
  rc=$?
  say "rn-cuda-tests: exit $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/rn-cuda-tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$out/rn-cuda-tests.log" | head -40 | tee -a "$summary"
fi

if has errors; then
  # Each error path once: a clear message and exit code 1.
  run_error() { # name expected-rc command...
    local name=$1 want=$2; shift 2
    "$@" > "$out/error-$name.log" 2>&1
    local rc=$?
    say "error path $name: exit $rc (want $want): $(grep -m1 -E 'error' "$out/error-$name.log")"
  }
  run_error no-gpu 1 env CUDA_VISIBLE_DEVICES= "$bin/rn-run" "$models/mlp.train.rnx" \
    --synthetic --steps 2 --executor cuda-eager
  run_error injected-call 1 env RN_CUDA_FAIL_CALL=40 "$bin/rn-run" "$models/mlp.train.rnx" \
    --synthetic --steps 2 --executor cuda-eager
  run_error injected-late 1 env RN_CUDA_FAIL_CALL=400 "$bin/rn-run" "$models/cnn.rnx" \
    --synthetic --steps 3 --executor cuda-eager
  # An arena larger than the GPU's memory (ResNet-50 at batch 4096: 168 GiB).
  run_error out-of-memory 1 "$bin/rn-run" "$models/resnet50.oom.rnx" --synthetic --steps 1 \
    --executor cuda-eager
fi

if has fashion; then
  for spec in "fashion_cnn 2 0.01" "mlp 1 0.1"; do
    set -- $spec
    "$bin/rn-run" "$models/$1.train.rnx" --data "$data" --epochs "$2" --lr "$3" \
      --executor cuda-eager > "$out/fashion-$1.log" 2>&1
    say "fashion $1 (cuda-eager, $2 epochs, lr $3): exit $?; $(grep -E 'test loss' "$out/fashion-$1.log" | tail -1)"
  done
fi

if has zoo && [ -d "$bundle/zoo" ]; then
  # One step of every zoo model against the CPU executor's digest
  # (scripts/zoo-digests.sh made them on the development machine).
  python=${RN_PYTHON:-/opt/torch/.venv/bin/python}
  for ref in "$bundle"/zoo/*.steps20.cpu.log; do
    name=$(basename "$ref" .cpu.log)
    "$bin/rn-run" "$bundle/zoo/$name.rnx" --synthetic --steps 20 --lr 0.02 --executor cuda-eager \
      > "$out/zoo-$name.gpu.log" 2>&1
    rc=$?
    tol=1e-3
    [[ $name == *f16* ]] && tol=3e-2
    if [ $rc -eq 0 ]; then
      "$python" "$bundle/scripts/compare-digests.py" --losses "$ref" "$out/zoo-$name.gpu.log" \
        --tol "$tol" > "$out/zoo-$name.compare.log" 2>&1
      rc=$?
    fi
    say "20 steps $name: exit $rc; $(tail -1 "$out/zoo-$name.compare.log" 2>/dev/null)"
  done
  for ref in "$bundle"/zoo/*.cpu.json; do
    model=$(basename "$ref" .cpu.json)
    "$bin/rn-run" "$bundle/zoo/$model.rnx" --synthetic --steps 1 --lr 0.05 --executor cuda-eager \
      --state-digest "$out/zoo-$model.gpu.json" > "$out/zoo-$model.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      "$python" "$bundle/scripts/compare-digests.py" "$ref" "$out/zoo-$model.gpu.json" \
        --tol "${RN_ZOO_TOL:-2e-3}" >> "$out/zoo-$model.log" 2>&1
      rc=$?
    fi
    say "zoo $model: exit $rc; $(tail -1 "$out/zoo-$model.log")"
  done
fi

if has sanitizer; then
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/rn-cuda-tests" \
      --gtest_filter="${RN_SANITIZE_FILTER:-*}:-*Bandwidth*" > "$out/memcheck-kernels.log" 2>&1
    say "memcheck kernel tests: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck-kernels.log" | tail -1)"
    compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/rn-run" "$models/cnn.rnx" \
      --synthetic --steps 2 --executor cuda-eager > "$out/memcheck-cnn.log" 2>&1
    say "memcheck cnn 2 steps: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck-cnn.log" | tail -1)"
  else
    say "compute-sanitizer not found"
  fi
fi
cat "$summary"
