# GPU round F1 (issue 32's final run, first call): every GPU test of the final commit's bundle before its benchmarks: rn-cuda-tests, the 20-step GPU-vs-CPU comparisons, the zoo against its CPU digests, Fashion-MNIST (cuda-graph), memcheck.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
RN_GPU_TESTS="unit zoo fashion sanitizer" RN_FASHION_EXECUTORS=cuda-graph RN_TESTS_TIMEOUT=520 \
  RN_BENCH_MODELS=none RN_PYTHON_TESTS=none bash scripts/run-gpu-round.sh
echo "round-f1: exit $?"
