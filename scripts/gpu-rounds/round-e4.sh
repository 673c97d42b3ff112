# GPU round E4 (issue 32): the configurations the BN target blocks move, before (statistics pass everywhere, target blocks 1024, the 8-channel stem), after (the genstats choice with its margin, the 4-channel stem, target blocks 1024) and after with the backward's sums at 1320 blocks (RN_BN_TARGET_BLOCKS=1024,1024,1320), interleaved.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
ab() { # ab CONFIG SIDE ARTIFACT [ENV...]
  local config=$1 side=$2 art=$3; shift 3
  timeout 120 env "$@" bin/rn-run models/$art.rnx --benchmark --executor cuda-graph --lr 0.01 \
    --plan-cache /tmp/plans-${config/:/-}.json --steps 40 --warmup 15 > /tmp/ab.log 2>&1
  local rc=$?
  echo "{\"config\": \"$config\", \"side\": \"$side\", \"rc\": $rc, \"run\": $(grep '^{"model"' /tmp/ab.log | tail -1 || echo null)}" >> $OUT/ab.jsonl
  { echo "== $config $side"; grep -v '^  region' /tmp/ab.log; } >> $OUT/ab-logs.txt
}
for round in 1 2; do
  for config in resnet18c:256 vgg11c:256 resnet18c:1024 resnet50:256; do
    name=${config%%:*} batch=${config##*:}
    art=$name.bench$batch old=$art
    [ $name = resnet50 ] && old=$art.pad8
    ab $config before $old RN_CONV_GENSTATS=0
    ab $config after $art
    ab $config after-tb1320 $art RN_BN_TARGET_BLOCKS=1024,1024,1320
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
    b = med.get("before")
    print(config.ljust(15), "  ".join(f"{s} {v} ({med[s] / b:.4f})" if med[s] and b else f"{s} {v}" for s, v in sides.items()))
PY
cd $OUT && tar czf logs.tgz *.txt *.jsonl 2>/dev/null && rm -f *.txt *.jsonl; ls $OUT
