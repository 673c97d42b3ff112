# GPU round E3 (issue 32): the stem's reduced-precision bound and the cbr_forward tests; the six benchmark configurations before (statistics pass everywhere, BN target blocks 1024, the 8-channel stem) and after (the genstats choice with its 20% / 20 us margin, target blocks 528/1024/1320, the 4-channel stem), interleaved; the closest peers in the same session: JAX on resnet18c bs1024, PyTorch's whole-step graph on resnet18c and vgg11c bs256.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
timeout 120 bin/rn-cuda-tests --gtest_filter='*CbrForwardBackwardInference*:Conv.ImageStemReducedPrecisionError' > $OUT/cuda-tests.log 2>&1; echo "rn-cuda-tests rc=$? at $((SECONDS - start)) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|FAILED|Genstats::|^stem ' $OUT/cuda-tests.log | tail -12
ab() { # ab CONFIG SIDE ARTIFACT [ENV...]
  local config=$1 side=$2 art=$3; shift 3
  timeout 120 env "$@" bin/rn-run models/$art.rnx --benchmark --executor cuda-graph --lr 0.01 \
    --plan-cache /tmp/plans-${config/:/-}.json --steps 40 --warmup 15 > /tmp/ab.log 2>&1
  local rc=$?
  echo "{\"config\": \"$config\", \"side\": \"$side\", \"rc\": $rc, \"run\": $(grep '^{"model"' /tmp/ab.log | tail -1 || echo null)}" >> $OUT/ab.jsonl
  { echo "== $config $side"; grep -v '^  region' /tmp/ab.log; } >> $OUT/ab-logs.txt
}
before=(RN_CONV_GENSTATS=0 RN_BN_TARGET_BLOCKS=1024,1024,1024)
for round in 1 2; do
  for config in mlp:128 resnet18c:256 resnet18c:1024 vgg11c:256 vgg11c:1024 resnet50:256; do
    name=${config%%:*} batch=${config##*:}
    art=$name.bench$batch old=$art
    [ $name = resnet50 ] && old=$art.pad8
    ab $config before $old "${before[@]}"
    ab $config after $art
  done
  echo "A/B round $round done at $((SECONDS - start)) s"
done
$python - $OUT/ab.jsonl <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    run = r.get("run") or {}
    by.setdefault(r["config"], {}).setdefault(r["side"], []).append(run.get("ms_per_step"))
for config, sides in by.items():
    med = {s: statistics.median([m for m in v if m]) if any(v) else None for s, v in sides.items()}
    b, a = med.get("before"), med.get("after")
    print(f"{config:16s} before {sides.get('before')} after {sides.get('after')} after/before {a / b if a and b else None}")
PY
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
