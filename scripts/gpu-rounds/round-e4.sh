# GPU round E4 (issue 32): the configurations the BN target blocks move, before (statistics pass everywhere, target blocks 1024, the 8-channel stem), after (the genstats choice with its margin, the 4-channel stem, target blocks 1024) and after with the backward's sums at 1320 blocks (RN_BN_TARGET_BLOCKS=1024,1024,1320), interleaved.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
source diag/ab-lib.sh
for round in 1 2; do
  for config in resnet18c:256 vgg11c:256 resnet18c:1024 resnet50:256; do
    name=${config%%:*} batch=${config##*:}
    art=$name.bench$batch old=$art
    [ $name = resnet50 ] && old=$art.pad8
    ab $config before bin/rn-run $old RN_CONV_GENSTATS=0
    ab $config after bin/rn-run $art
    ab $config after-tb1320 bin/rn-run $art RN_BN_TARGET_BLOCKS=1024,1024,1320
  done
  echo "A/B round $round done at $((SECONDS - start)) s"
done
ab_summary
cd $OUT && tar czf logs.tgz *.txt *.jsonl 2>/dev/null && rm -f *.txt *.jsonl; ls $OUT
