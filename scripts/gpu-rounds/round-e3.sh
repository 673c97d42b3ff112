# GPU round E3 (issue 32): the stem's reduced-precision bound and the cbr_forward tests; the six benchmark configurations before (statistics pass everywhere, BN target blocks 1024, the 8-channel stem) and after (the genstats choice with its 20% / 20 us margin, target blocks 528/1024/1320, the 4-channel stem), interleaved; the closest peers in the same session: JAX on resnet18c bs1024, PyTorch's whole-step graph on resnet18c and vgg11c bs256.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
timeout 120 bin/rn-cuda-tests --gtest_filter='*CbrForwardBackwardInference*:Conv.ImageStemReducedPrecisionError' > $OUT/cuda-tests.log 2>&1; echo "rn-cuda-tests rc=$? at $((SECONDS - start)) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED|Genstats::|^stem ' $OUT/cuda-tests.log | tail -12
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
grep -h "genstats for" $OUT/ab-logs.txt | sed 's/.*(\(.*\)).*/\1/' | sort | uniq -c | cut -c1-200
if (( SECONDS - start < 400 )); then
  timeout 100 $python bench/jax_step.py --models resnet18c:1024 --dtype bf16 --h2d > $OUT/jax.log 2>&1
  echo "jax rc=$? at $((SECONDS - start)) s"; grep '"ms_per_step"' $OUT/jax.log | cut -c1-220
fi
if (( SECONDS - start < 470 )); then
  (cd bench && timeout $((540 - SECONDS + start)) $python torch_step.py --models resnet18c:256,vgg11c:256 --modes graph --steps 40 --warmup 15 > $OUT/torch.log 2>&1)
  echo "torch rc=$? at $((SECONDS - start)) s"; grep '"ms_per_step"' $OUT/torch.log | cut -c1-220
fi
cd $OUT && tar czf logs.tgz *.log *.txt *.jsonl 2>/dev/null && rm -f *.log *.txt *.jsonl; ls $OUT
