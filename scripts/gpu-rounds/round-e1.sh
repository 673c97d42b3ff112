# GPU round E1 (issue 32): the GPU tests of the measured genstats choice; a device copy's rate; ResNet-50 bs256 and ResNet-18 bs1024 timelines (statistics pass everywhere, RN_CONV_GENSTATS=0) with each BN kernel's floor bytes and bandwidth; the stem at 4 channels with reduced-precision reductions allowed (its timeline); in-step A/B against the statistics pass everywhere: the genstats choice (default), genstats everywhere, the BN passes' target blocks, RPR, the 4-channel stem; the BN target-blocks and tiling sweeps, the occupancy check and conv + genstats per shape.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
timeout 150 bin/rn-cuda-tests --gtest_filter='*CbrForwardBackwardInference*:Conv.Genstats*:Conv.AutotuneKeeps*:NormKernelsTest.*' > $OUT/cuda-tests.log 2>&1; echo "rn-cuda-tests rc=$? at $((SECONDS - start)) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED|Genstats::' $OUT/cuda-tests.log | tail -14
RN_CONV_GENSTATS=0 RN_PROFILE_MODELS=resnet50:256,resnet18c:1024 RN_PROFILE_VARIANTS=default timeout 200 bash scripts/run-gpu-profile.sh
cat $OUT/device-copy.json
gbps=$($python -c 'import json, sys; print(json.load(open(sys.argv[1]))["copy_gbps"])' $OUT/device-copy.json)
echo "profiles done at $((SECONDS - start)) s"
# The 4-channel stem with reduced-precision reductions allowed (engine 63 is then a candidate).
RN_CONV_GENSTATS=0 timeout 150 bin/rn-run models/resnet50.bench256.pad4.rnx --benchmark --steps 10 --warmup 5 --executor cuda-graph \
  --lr 0.01 --allow-reduced-precision-reduction --trace /tmp/trace-pad4.json > $OUT/profile-resnet50-256-pad4rpr.log 2>&1
$python scripts/trace-summary.py /tmp/trace-pad4.json --kernels --top 60 --steps 35 \
  --artifact models/resnet50.bench256.pad4.rnx --copy-gbps $gbps > $OUT/profile-resnet50-256-pad4rpr.txt 2>&1
echo "pad4 profile done at $((SECONDS - start)) s"
# In-step A/B: one process per run, rounds interleaved, one plan cache.
printf '#!/bin/bash\nexec %s/bin/rn-run "$@" --allow-reduced-precision-reduction\n' "$bundle" > /tmp/rn-run-rpr && chmod +x /tmp/rn-run-rpr
source diag/ab-lib.sh
for round in 1 2; do
  ab resnet50:256 base bin/rn-run resnet50.bench256 RN_CONV_GENSTATS=0
  ab resnet50:256 choice bin/rn-run resnet50.bench256
  ab resnet50:256 genstats bin/rn-run resnet50.bench256 RN_CONV_GENSTATS=1
  ab resnet50:256 tb1320 bin/rn-run resnet50.bench256 RN_CONV_GENSTATS=0 RN_BN_TARGET_BLOCKS=1056,1056,1320
  ab resnet50:256 tb2640 bin/rn-run resnet50.bench256 RN_CONV_GENSTATS=0 RN_BN_TARGET_BLOCKS=1056,1056,2640
  ab resnet50:256 rpr /tmp/rn-run-rpr resnet50.bench256 RN_CONV_GENSTATS=0
  ab resnet50:256 pad4rpr /tmp/rn-run-rpr resnet50.bench256.pad4 RN_CONV_GENSTATS=0
  echo "A/B round $round done at $((SECONDS - start)) s"
done
ab_summary
# The sweeps while the call's time lasts (the logs are packed at 560 s at the latest).
if (( SECONDS - start < 420 )); then
  RN_CUDA_BENCH=1 timeout $((500 - SECONDS + start)) bin/rn-cuda-tests --gtest_filter='NormKernelsTest.TargetBlocksBandwidth:NormKernelsTest.ResNetSizeBandwidth:NormKernelsTest.KernelsKeepTheirOccupancy' > $OUT/bn-bench.log 2>&1
  echo "bn bench rc=$? at $((SECONDS - start)) s"; grep -E "blocks per SM|PASSED|FAILED" $OUT/bn-bench.log
fi
if (( SECONDS - start < 500 )); then
  RN_CUDA_BENCH=1 timeout $((555 - SECONDS + start)) bin/rn-cuda-tests --gtest_filter='Conv.GenstatsTimes' > $OUT/genstats.log 2>&1
  echo "genstats rc=$? at $((SECONDS - start)) s"
fi
for f in profile-resnet50-256.txt profile-resnet50-256-pad4rpr.txt; do grep -iE "busy|batch-norm|Kernel<|stem|conv" $OUT/$f | head -40; done
cd $OUT && tar czf logs.tgz *.log *.txt *.jsonl *.json 2>/dev/null && rm -f *.log *.txt *.jsonl *.json; ls $OUT
