#!/usr/bin/env bash
# rn.Trainer on the GPU machine, from the bundle this script sits in (RN
# from its wheel, which gpu-env.sh installs into the machine's Python): the
# GPU tests of test/python-frontend/test_trainer_gpu.py and
# test_torch_import_gpu.py, then the Python step-rate benchmark
# (bench/python_step_rate.py). Logs and the summary go to $OUT.
#   RN_PYTHON_BENCH=0 skips the benchmark.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"   # out, python, the wheel installed, binaries
export RN_BUNDLE=$bundle RN_RUN=$bundle/bin/rn-run RN_DATA=$bundle/data
status=0
{ "$python" -c 'import sys, rn; print("python", sys.version.split()[0]); rn.trainer._native_module(); print("rn._native ok")'; } \
  > "$out/python-gpu.log" 2>&1 || status=1
"$python" -m pytest -v -s "$bundle/python/tests/test_trainer_gpu.py" \
  "$bundle/python/tests/test_torch_import_gpu.py" -p no:cacheprovider \
  >> "$out/python-gpu.log" 2>&1
rc=$?; [ $rc = 0 ] || status=$rc
summary=$(grep -E '^(=+ .*(passed|failed|skipped|error).* =+)$' "$out/python-gpu.log" | tail -1)
echo "python GPU tests: exit $rc, $summary" | tee -a "$out/summary.txt"
grep -E '^(Fashion-MNIST|burst of|\S+ f(32|16) (logits|step))' "$out/python-gpu.log" | tee -a "$out/summary.txt"
# torchvision's resnet50 imported against the zoo's resnet50, the same
# recipe and batch, alternated twice in one run (issue: within 3%).
if [ "${RN_TORCH_BENCH:-1}" != 0 ] && [ -f "$bundle/models/torch_resnet50.bench256.rnx" ]; then
  for round in 1 2; do
    for name in resnet50 torch_resnet50; do
      printf '%s ' "$name" >> "$out/torch-import-bench.log"
      "$bundle/bin/rn-run" "$bundle/models/$name.bench256.rnx" --benchmark --steps 30 --warmup 10 \
        --executor cuda-graph 2>>"$out/torch-import-bench.err" | tail -1 >> "$out/torch-import-bench.log"
    done
  done
  echo "imported resnet50 vs the zoo's (rn-run --benchmark, bs256):" | tee -a "$out/summary.txt"
  tee -a "$out/summary.txt" < "$out/torch-import-bench.log"
fi
if [ "${RN_PYTHON_BENCH:-1}" != 0 ]; then
  "$python" "$bundle/bench/python_step_rate.py" --models "$bundle/models" --rn-run "$bundle/bin/rn-run" \
    --json "$out/python_step_rate.jsonl" > "$out/python-bench.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=$rc
  echo "python step-rate benchmark: exit $rc" | tee -a "$out/summary.txt"
  grep -E '^\|' "$out/python-bench.log" | tee -a "$out/summary.txt"
fi
exit $status
