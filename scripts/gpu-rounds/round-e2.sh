# GPU round E2 (issue 32): the GPU tests of the genstats choice, the 4-channel stem's reduced-precision plans (error against the CPU and against barred plans) and the BN kernels; the six benchmark configurations before (statistics pass everywhere, BN target blocks 1024, the 8-channel stem) and after (the measured genstats choice, target blocks 528/1024/1320 with the dx pass on the apply's grid, the 4-channel stem), interleaved; ResNet-50's timeline after; JAX's resnet18c bs1024 step with a profile of its kernels.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
timeout 150 bin/rn-cuda-tests --gtest_filter='*CbrForwardBackwardInference*:Conv.Genstats*:Conv.AutotuneKeeps*:NormKernelsTest.*:Conv.ImageStemReducedPrecisionError' > $OUT/cuda-tests.log 2>&1; echo "rn-cuda-tests rc=$? at $((SECONDS - start)) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED|Genstats::|^stem ' $OUT/cuda-tests.log | tail -16
# Before and after, one process per run, rounds interleaved, one plan cache per configuration.
source diag/ab-lib.sh
before=(RN_CONV_GENSTATS=0 RN_BN_TARGET_BLOCKS=1024,1024,1024)
for round in 1 2; do
  for config in mlp:128 resnet18c:256 resnet18c:1024 vgg11c:256 vgg11c:1024 resnet50:256; do
    name=${config%%:*} batch=${config##*:}
    art=$name.bench$batch old=$art
    [ $name = resnet50 ] && old=$art.pad8
    ab $config before bin/rn-run $old "${before[@]}"
    ab $config after bin/rn-run $art
  done
  echo "A/B round $round done at $((SECONDS - start)) s"
done
ab_summary
# ResNet-50 after: its timeline and BN kernel table.
RN_PROFILE_MODELS=resnet50:256 RN_PROFILE_VARIANTS=default timeout 150 bash scripts/run-gpu-profile.sh
echo "profile done at $((SECONDS - start)) s"
grep -E "per step|batch-norm|Kernel<|first_layer|genstats" $OUT/profile-resnet50-256.txt | head -24
# JAX on resnet18c bs1024 (the level configuration), as bench/run-peers.sh runs it, then profiled.
if (( SECONDS - start < 430 )); then
  XLA_FLAGS="--xla_dump_to=/tmp/xla-dump --xla_dump_hlo_as_text" timeout $((540 - SECONDS + start)) $python bench/jax_step.py --models resnet18c:1024 --dtype bf16 --h2d --trace /tmp/jax-trace --trace-steps 5 > $OUT/jax.log 2>&1
  echo "jax rc=$? at $((SECONDS - start)) s"; grep '^{' $OUT/jax.log | cut -c1-400
  $python bench/xla_trace_summary.py /tmp/jax-trace --steps 5 --top 60 --json $OUT/jax-kernels.json > $OUT/jax-kernels.txt 2>&1; head -50 $OUT/jax-kernels.txt
  ls /tmp/xla-dump 2>/dev/null | grep -i "after_optimizations.txt" | head -3
  f=$(ls -S /tmp/xla-dump/*train_step*after_optimizations.txt 2>/dev/null | head -1)
  [ -n "$f" ] && cp "$f" $OUT/xla-train-step-after-optimizations.txt
fi
cd $OUT && tar czf logs.tgz *.log *.txt *.jsonl *.json 2>/dev/null && rm -f *.log *.txt *.jsonl *.json; ls $OUT
