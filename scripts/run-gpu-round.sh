#!/usr/bin/env bash
# One round on the GPU machine: the tests (run-gpu-tests.sh), then the
# benchmarks (run-gpu-bench.sh), then rn.Trainer's tests and benchmark
# (run-python-gpu.sh), from the bundle this script sits in. The
# device tool brings back only a few files, so the logs of both go into
# $OUT/logs.tgz next to summary.txt, bench.txt and bench.jsonl.
#   RN_GPU_TESTS, RN_BENCH_MODELS, RN_BENCH_EXECUTORS: as in those scripts
#   (RN_GPU_TESTS=none or RN_BENCH_MODELS=none skips a part)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
final=${OUT:-$here/../gpu-results}
work=$(mktemp -d)
status=0
if [ "${RN_GPU_TESTS:-}" != none ]; then
  OUT=$work timeout "${RN_TESTS_TIMEOUT:-400}" bash "$here/run-gpu-tests.sh" > "$work/tests-stdout.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=$rc
  echo "run-gpu-tests.sh: exit $rc" >> "$work/summary.txt"
fi
if [ "${RN_BENCH_MODELS:-}" != none ]; then
  OUT=$work timeout "${RN_BENCH_TIMEOUT:-180}" bash "$here/run-gpu-bench.sh" > "$work/bench-stdout.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=$rc
  echo "run-gpu-bench.sh: exit $rc" >> "$work/summary.txt"
fi
# The "python" group: rn.Trainer's GPU tests and step-rate benchmark
# (run-python-gpu.sh; RN_PYTHON_TESTS=none skips it).
if [ "${RN_PYTHON_TESTS:-}" != none ] && [ -f "$here/run-python-gpu.sh" ]; then
  OUT=$work timeout "${RN_PYTHON_TIMEOUT:-600}" bash "$here/run-python-gpu.sh" > "$work/python-stdout.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=$rc
  echo "run-python-gpu.sh: exit $rc" >> "$work/summary.txt"
fi
mkdir -p "$final"
for f in summary.txt bench.txt bench.jsonl; do
  [ -f "$work/$f" ] && cp "$work/$f" "$final/"
done
[ -f "$work/python_step_rate.jsonl" ] && cp "$work/python_step_rate.jsonl" "$final/"
tar czf "$final/logs.tgz" -C "$work" .
for f in summary.txt bench.txt; do
  [ -f "$final/$f" ] && cat "$final/$f"
done
# The round's status is its parts' (a missing bench.txt is not a failure).
exit $status
