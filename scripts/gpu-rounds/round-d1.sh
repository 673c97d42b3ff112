# GPU round D1: the GPU tests of stochastic depth and uint8 images, then efficientnet_b0 with and without stochastic depth against PyTorch's whole-step graph.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
mkdir -p python && tar xJf python.tar.xz -C python && export PYTHONPATH=$PWD/python RN_BUNDLE=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 bin/rn-cuda-tests --gtest_filter='*StochasticDepth*:CudaElementwiseLaunchers.*:*NormalizeImages*:*PadNormalizedChannels*:*Uint8*' > $OUT/cuda-tests.log 2>&1; echo "rn-cuda-tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED' $OUT/cuda-tests.log | tail -12
timeout 150 $python -m pytest -q -p no:cacheprovider python/tests/test_trainer_gpu.py -k uint8 > $OUT/pytest-u8.log 2>&1; echo "pytest rc=$?"; tail -3 $OUT/pytest-u8.log
for a in torch_efficientnet_b0.bench256 torch_efficientnet_b0.sd.bench256; do
  timeout 100 bin/rn-run models/$a.rnx --benchmark --steps 30 --warmup 10 --executor cuda-graph 2>>$OUT/bench.err | tail -1 | tee -a $OUT/bench-rn.jsonl
done
cd bench && timeout 200 $python torch_step.py --models efficientnet_b0:256 --modes graph,eager --steps 30 --warmup 10 > $OUT/bench-torch.log 2>&1; echo "torch bench rc=$?"; cd ..
grep -E '^\{' $OUT/bench-torch.log | cut -c1-220
