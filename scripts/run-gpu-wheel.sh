#!/usr/bin/env bash
# The user's path on the GPU machine, from RN's wheel alone (docs/install.md):
# the wheel installed into the machine's Python (torch 2.11, torchvision,
# timm) with `pip install --no-index --no-deps`, then, with no PYTHONPATH
# and no LD_LIBRARY_PATH:
#   install  the install line, where NVIDIA's libraries resolve from
#   user     the versions, docs/python.md's examples, the torchvision example
#            (resnet18 and mobilenet_v2, compiled there with that torch's fx),
#            rn-compile + rn-run training the main job's fashion_cnn on cuda-graph
#   tests    rn-cuda-tests (the wheel's libraries; the test binary carried
#            beside it)
#   pytests  the Python GPU tests (test_trainer_gpu.py, test_torch_import_gpu.py)
#   f16noise scripts/f16-step-noise.py: RN's f16 step against PyTorch's f16 noise
#   timm     the importer under that torch: scripts/timm-import.py survey,
#            compile and check on the GPU within RN_TIMM_BUDGET_S seconds
# Run from a checkout on the GPU machine:
#   bash scripts/run-gpu-wheel.sh WHEEL [TEST_BINARIES_DIR]
# RN_WHEEL_STEPS picks steps (default "install user tests pytests timm"); RN_DATA the
# Fashion-MNIST folder (default: the checkout's gpu-data/, copied to where
# rn.data looks). Logs and the summary go to $OUT (else ./gpu-results).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wheel=$(realpath "$1")
bins=${2:-}
out=${OUT:-$root/gpu-results}
mkdir -p "$out"
python=${RN_PYTHON:-python3}
steps=${RN_WHEEL_STEPS:-install user tests pytests timm}
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $steps " == *" $1 "* ]]; }
unset PYTHONPATH LD_LIBRARY_PATH RN_COMPILE RN_OPT RN_RUN RN_NATIVE_DIR
export PYTHONUNBUFFERED=1
# pip puts the console scripts (rn-compile, rn-run, ...) in the interpreter's
# scripts folder: the one a user of that Python has on PATH.
PATH=$($python -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH
work=$(mktemp -d /tmp/rn-gpu-wheel.XXXXXX)

say "card: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
say "python: $($python --version 2>&1) at $(command -v $python); torch $($python -c 'import torch, torchvision; print(torch.__version__, "torchvision", torchvision.__version__)' 2>&1)"

# Fashion-MNIST where rn.data and the main job look for it.
data=${RN_DATA:-$root/gpu-data}
if [ -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp "$data"/*.gz /usr/share/datasets/fashion-mnist/
fi
data=/usr/share/datasets/fashion-mnist

if has install; then
  if ! $python -m pip --version > /dev/null 2>&1; then
    say "pip is missing for $python: installing it from Python's own ensurepip (no network)"
    $python -m ensurepip 2>&1 | tail -1 | tee -a "$summary"
  fi
  say "pip: $($python -m pip --version 2>&1)"
  say "install: $python -m pip install --no-index --no-deps $(basename "$wheel")"
  $python -m pip install --no-index --no-deps --force-reinstall "$wheel" 2>&1 | tail -3 | tee -a "$summary"
  say "rn $($python -c 'import rn; print(rn.__version__, rn.__file__)')"
fi

# Where the installed rn lives (site-packages), for the test binary's
# library path and the tools' own paths.
site=$($python -c 'import rn, os; print(os.path.dirname(os.path.dirname(rn.__file__)))' 2>/dev/null)
if has install; then
  say "NVIDIA's libraries as librn_cuda.so resolves them (no LD_LIBRARY_PATH):"
  ldd "$site/rn/lib/librn_cuda.so" | grep -E "not found|cudnn|nccl|cupti|cudart|cublas|nvrtc|rn_runtime" \
    | sed 's/ (0x.*//' | tee -a "$summary"
fi

if has user; then
  cd "$work"
  for tool in rn-compile rn-run rn-opt rn-data; do say "$(command -v $tool): $($tool --version 2>&1)"; done
  $python - "$root/docs/python.md" > docs_examples.py <<'PY'
import re, sys
print("\n".join(re.findall(r"^```python\n(.*?)^```", open(sys.argv[1]).read(), flags=re.S | re.M)))
PY
  $python docs_examples.py > "$out/docs-examples.log" 2>&1
  say "docs/python.md examples: exit $? ($(head -1 "$out/docs-examples.log"))"
  for model in resnet18 mobilenet_v2; do
    $python "$root/examples/finetune_torchvision.py" --model "$model" --epochs 1 \
      --out "$work/finetune-$model" > "$out/finetune-$model.log" 2>&1
    say "finetune_torchvision.py --model $model: exit $?"
    grep -iE "accuracy|executor|compiled|error" "$out/finetune-$model.log" | tail -6 | sed 's/^/  /' | tee -a "$summary"
  done
  $python -m rn.models fashion_cnn --batch 64 -o fashion_cnn.mlir
  rn-compile fashion_cnn.mlir -o fashion_cnn.rnx --pipeline "precision=f16 loss-scaling=dynamic" \
    > "$out/main-job.log" 2>&1
  rn-run fashion_cnn.rnx --data "$data" --mean 0.2860 --std 0.3530 --epochs 2 --lr 0.1 \
    --executor cuda-graph --checkpoint fashion_cnn.ckpt >> "$out/main-job.log" 2>&1
  say "main job (fashion_cnn, rn-compile + rn-run --executor cuda-graph, 2 epochs): exit $?"
  grep -E "^executor|^epoch|error" "$out/main-job.log" | sed 's/^/  /' | tee -a "$summary"
  cd "$root"
fi

if has tests; then
  if [ -n "$bins" ] && [ -x "$bins/rn-cuda-tests" ]; then
    # Test binaries are not in the wheel: they link its libraries, which
    # they find here (the wheel's own files find each other by RPATH).
    nv=$site/nvidia
    LD_LIBRARY_PATH=$site/rn/lib:$nv/cu13/lib:$nv/cudnn/lib:$nv/nccl/lib \
      RN_TEST_INPUTS_DIR=$root/test/runtime/Inputs \
      "$bins/rn-cuda-tests" --gtest_output=json:"$out/rn-cuda-tests.json" > "$out/rn-cuda-tests.log" 2>&1
    say "rn-cuda-tests: exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/rn-cuda-tests.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]' "$out/rn-cuda-tests.log" | head -20 | tee -a "$summary"
  fi
fi

if has pytests; then
  # The Python GPU tests' artifacts, compiled here from the wheel (the
  # imported torchvision models with this machine's torch).
  tb=$work/test-artifacts
  mkdir -p "$tb/models"
  cp "$root"/test/runtime/Inputs/*.rnx "$tb/models/"
  recipe="precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4 momentum=0.9"
  for spec in "fashion_cnn 64 fashion_cnn.train" "mlp 64 mlp.train" "resnet18c 256 resnet18c.bench256"; do
    set -- $spec
    pipeline=()
    [ "$1" = resnet18c ] && pipeline=(--pipeline "$recipe")
    $python -m rn.models "$1" --batch "$2" -o "$tb/$3.mlir"
    rn-compile "$tb/$3.mlir" -o "$tb/models/$3.rnx" --quiet --no-weights ${pipeline[@]+"${pipeline[@]}"}
  done
  $python -m rn.models fashion_cnn --batch 64 --input-dtype uint8 --mean 0.2860 --std 0.3530 \
    -o "$tb/fashion_cnn_u8.mlir"
  rn-compile "$tb/fashion_cnn_u8.mlir" -o "$tb/models/fashion_cnn_u8.train.rnx" --quiet --no-weights
  $python "$root/test/python-frontend/test_torch_import_gpu.py" --compile "$tb/models" \
    > "$out/torch-import-compile.log" 2>&1
  say "test artifacts compiled from the wheel: $(ls "$tb/models" | wc -l) in $tb/models"
  RN_BUNDLE=$tb RN_DATA=$data RN_RUN=$site/rn/bin/rn-run \
    $python -m pytest -q -p no:cacheprovider --noconftest "$root/test/python-frontend/test_trainer_gpu.py" \
    "$root/test/python-frontend/test_torch_import_gpu.py" > "$out/python-gpu.log" 2>&1
  say "python GPU tests: exit $?; $(tail -1 "$out/python-gpu.log")"
  grep -E "^FAILED" "$out/python-gpu.log" | head -10 | tee -a "$summary"
fi

if has f16noise; then
  # Issue 43's f16 bound question: RN's f16 step against PyTorch's f16 noise.
  tb=$work/test-artifacts
  if [ ! -f "$tb/models/torch_vgg11_bn.f16.rnx" ]; then
    mkdir -p "$tb/models"
    $python "$root/test/python-frontend/test_torch_import_gpu.py" --compile "$tb/models" \
      > "$out/torch-import-compile.log" 2>&1
  fi
  $python "$root/scripts/f16-step-noise.py" "$tb/models" > "$out/f16-noise.jsonl" 2> "$out/f16-noise.err"
  say "f16 step noise: exit $?"
  $python -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f\"  {r['model']}: {r['entries']} entries; over 4x t16 {r['over_4x_t16']}, over 4x max(t16, t16p) {r['over_4x_max_t16_t16p']}, rn32 over 4x t16p {r['rn32_over_4x_t16p']}\")
    for w in r['worst'][:3]:
        print('    ' + ', '.join(f'{k} {v:.3g}' if isinstance(v, float) else f'{k} {v}' for k, v in w.items()))
" "$out/f16-noise.jsonl" | tee -a "$summary"
fi

if has timm; then
  budget=${RN_TIMM_BUDGET_S:-240}
  jobs=${RN_TIMM_JOBS:-8}
  timeout "${RN_TIMM_STEP_S:-240}" $python "$root/scripts/timm-import.py" survey "$work/timm" --jobs "$jobs" \
    > "$out/timm-survey.jsonl" 2> "$out/timm-survey.err"
  timeout "${RN_TIMM_STEP_S:-240}" $python "$root/scripts/timm-import.py" compile "$work/timm" "$work/timm-rnx" --jobs "$jobs" \
    > "$out/timm-compile.log" 2>&1
  say "timm: $(grep -c '^wrote' "$out/timm-compile.log") artifacts compiled, $(grep -c 'compile failed' "$out/timm-compile.log") failed"
  # Models an earlier GPU check found equal (bench/timm-check-h100*.jsonl)
  # are not checked again: the budget goes to the unverified ones.
  skip=()
  for f in "$root"/bench/timm-check-h100*.jsonl; do skip+=(--skip "$f"); done
  $python "$root/scripts/timm-import.py" check "$work/timm-rnx" "$out/timm-check.jsonl" \
    --budget-s "$budget" ${skip[@]+"${skip[@]}"} > /dev/null 2> "$out/timm-check.err"
  $python - "$out" <<'PY' | tee -a "$summary"
import json, sys
out = sys.argv[1]
survey = [json.loads(l) for l in open(f"{out}/timm-survey.jsonl") if l.startswith("{")]
check = [json.loads(l) for l in open(f"{out}/timm-check.jsonl") if l.strip()]
imports = sum(r["imports"] for r in survey)
equal = sum(r.get("equal") is True for r in check)
unequal = [r["model"] for r in check if r.get("equal") is False]
unchecked = [r["model"] for r in check if r.get("equal") is None]
print(f"timm: {len(survey)} models, {imports} import; on the GPU {equal} equal to PyTorch's logits, "
      f"{len(unequal)} not, {len(unchecked)} not checked (budget)")
print("  not equal:", ", ".join(unequal) or "-")
PY
fi
say "done; logs in $out"
