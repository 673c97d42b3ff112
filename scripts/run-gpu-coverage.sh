#!/usr/bin/env bash
# The imported CNNs on the GPU machine, from a bundle (scripts/bundle-gpu.sh).
# Logs, JSON lines and a summary go to $OUT (or ./gpu-results).
#   survey  the layout, pool and norm kernel tests (memcheck of the layout
#           ones); every torchvision classifier through
#           scripts/torchvision-import.py --executor cuda-graph (evaluation
#           logits and one training step's loss against PyTorch's), the
#           concatenating and shuffling families first, the transformers
#           left out; and the timm survey (imports only: CPU work)
#   bench   densenet121, inception_v3, shufflenet_v2_x1_0 and convnext_tiny
#           at batch 256, 224x224, the benchmark recipe: rn-run --benchmark
#           on the bundle's torch_NAME.bench256.rnx, then bench/torch_step.py
#           eager and graph for all four, then compile (the slowest to start)
#   engines issue 46's kernels: CUTLASS's dgrad with the BN sums
#           (CutlassDgrad.*) and cuDNN's norm engines against RN's BN
#           passes (BnEngines.*), RN_CUDA_BENCH=1; then every rn-cuda-tests
#           test
#   first   the most of the three in one call, for a session that may get
#           only one: the kernel tests and memcheck, the survey of the
#           concatenating, shuffling and ConvNeXt families, RN and PyTorch
#           eager/graph on the four batch-256 models, then issue 46's
#           kernels (as engines)
# Usage: run-gpu-coverage.sh survey|bench|engines|first (each fits one
# 10-minute call).
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
start=$SECONDS
left() { echo $(($1 - (SECONDS - start))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
"$python" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)' \
  | tee -a "$out/gpu.txt"

first=densenet121,googlenet,inception_v3,squeezenet1_0,squeezenet1_1,shufflenet_v2_x0_5,shufflenet_v2_x1_0
first=$first,shufflenet_v2_x1_5,shufflenet_v2_x2_0,convnext_tiny,densenet161,densenet169,densenet201
bench_models=densenet121:256,inception_v3:256,shufflenet_v2_x1_0:256,convnext_tiny:256

kernel_tests() {
  "$bundle/bin/rn-cuda-tests" --gtest_filter='LayoutKernelsTest.*:LayerNormKernelsTest.*:CudaPool.*:CudaElementwise.*' \
    > "$out/unit.log" 2>&1
  say "kernel tests: exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/unit.log" | tr '\n' ' ')"
  compute-sanitizer --tool memcheck "$bundle/bin/rn-cuda-tests" --gtest_filter='LayoutKernelsTest.*' \
    > "$out/memcheck.log" 2>&1
  say "memcheck of the layout kernels: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)"
}
# survey SECONDS MODELS: torchvision-import.py on cuda-graph, then its counts
# and every model not equal.
survey() {
  timeout "$1" "$python" "$bundle/scripts/torchvision-import.py" "$out/torchvision-gpu.jsonl" \
    --executor cuda-graph --models "$2" > "$out/survey.log" 2>&1
  say "torchvision survey (cuda-graph): exit $? after $((SECONDS - start)) s; $(tail -1 "$out/survey.log")"
  "$python" - "$out/torchvision-gpu.jsonl" <<'PY' | tee -a "$summary"
import collections, json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print(len(rows), "models:", dict(collections.Counter(r["outcome"] for r in rows)),
      "training step:", dict(collections.Counter(r.get("train", "-") for r in rows)))
for r in rows:
    if r["outcome"] != "equal" or r.get("train") != "equal":
        print(" ", r["model"], r["outcome"], r.get("train", "-"), str(r.get("why", ""))[:160])
PY
}
# rn_bench: rn-run --benchmark on the four batch-256 models.
rn_bench() {
  for m in densenet121 inception_v3 shufflenet_v2_x1_0 convnext_tiny; do
    "$bundle/bin/rn-run" "$bundle/models/torch_$m.bench256.rnx" --benchmark --steps 30 --warmup 10 \
      --executor cuda-graph 2>> "$out/rn.err" | tail -1 >> "$out/rn.jsonl"
  done
  say "RN (rn-run --benchmark, cuda-graph):"; tee -a "$summary" < "$out/rn.jsonl"
}
# torch_bench SECONDS MODES: bench/torch_step.py on the same four.
torch_bench() {
  ( cd "$bundle/bench" && timeout "$1" "$python" torch_step.py --models $bench_models --modes "$2" \
      --steps 30 --warmup 10 >> "$out/torch.jsonl" 2>> "$out/torch.err" )
  say "PyTorch $2: exit $? after $((SECONDS - start)) s"
}
# bn_engines END: issue 46's kernels: CUTLASS's dgrad with the BN sums in
# its epilogue (checked against the CPU, then timed at ResNet-50's shapes),
# then cuDNN's norm engines (BnEngines.*) until END seconds after the start.
bn_engines() {
  RN_CUDA_BENCH=1 timeout "$(left "$1")" "$bundle/bin/rn-cuda-tests" --gtest_filter='CutlassDgrad.*:NormKernelsTest.BackwardFromSums*' \
    > "$out/cutlass-dgrad.log" 2>&1
  say "CutlassDgrad: exit $? after $((SECONDS - start)) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/cutlass-dgrad.log" | tr '\n' ' ')"
  grep -E 'cuDNN dgrad|Failure|error' "$out/cutlass-dgrad.log" | head -40 | tee -a "$summary"
  RN_CUDA_BENCH=1 timeout "$(left "$1")" "$bundle/bin/rn-cuda-tests" --gtest_filter='BnEngines.*' \
    > "$out/bn-engines.log" 2>&1
  say "BnEngines: exit $? after $((SECONDS - start)) s"
  grep -E '(forward|backward):' "$out/bn-engines.log" | tee -a "$summary"
}

case "${1:-survey}" in
survey)
  if "$python" -c 'import timm' 2>/dev/null; then
    ( timeout "$(left 570)" "$python" "$bundle/scripts/timm-import.py" survey "$out/timm" --jobs 6 \
        > "$out/timm-survey.jsonl" 2> "$out/timm.err"; echo $? > "$out/timm.exit" ) &
  fi
  kernel_tests
  rest=$("$python" - "$first" <<'PY'
import sys, torchvision
first = set(sys.argv[1].split(","))
transformers = ("vit_", "swin", "maxvit")
print(",".join(m for m in torchvision.models.list_models(module=torchvision.models)
               if m not in first and not m.startswith(transformers)))
PY
)
  survey "$(left 540)" "$first,$rest"
  wait
  [ -f "$out/timm.exit" ] && say "timm survey: exit $(cat "$out/timm.exit"), $(grep -c '^{' "$out/timm-survey.jsonl") models"
  ;;
bench)
  rn_bench
  torch_bench "$(left 380)" eager,graph
  torch_bench "$(left 585)" compile
  cut -c1-240 "$out/torch.jsonl" | tee -a "$summary"
  ;;
engines)
  bn_engines 300
  timeout "$(left 580)" "$bundle/bin/rn-cuda-tests" --gtest_output=json:"$out/rn-cuda-tests.json" \
    > "$out/rn-cuda-tests.log" 2>&1
  say "rn-cuda-tests: exit $? after $((SECONDS - start)) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/rn-cuda-tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$out/rn-cuda-tests.log" | head -40 | tee -a "$summary"
  ;;
first)
  # RN_COVERAGE_SECONDS: the call's length, for a device call given less
  # than 10 minutes; the stages end at fixed shares of it.
  total=${RN_COVERAGE_SECONDS:-585}
  kernel_tests
  survey "$(left $((total * 51 / 100)))" "$first"
  rn_bench
  torch_bench "$(left $((total * 82 / 100)))" eager,graph
  cut -c1-240 "$out/torch.jsonl" | tee -a "$summary"
  bn_engines "$total"
  ;;
*)
  echo "usage: run-gpu-coverage.sh survey|bench|engines|first" >&2; exit 2 ;;
esac
