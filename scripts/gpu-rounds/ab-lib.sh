# Sourced by the issue-32 rounds (round-e*.sh) after gpu-env.sh: in-step
# A/B runs of rn-run on the benchmark artifacts, one process per run, one
# plan cache per configuration, JSON lines in $OUT/ab.jsonl and the logs in
# $OUT/ab-logs.txt. Not bench/ab-binaries.sh, which runs two binaries on
# one artifact: these rounds compare more than two sides, and sides with
# different artifacts (the 8- and 4-channel stems).

# ab CONFIG SIDE BINARY ARTIFACT [VAR=VALUE...]: one benchmark run of
# models/ARTIFACT.rnx by BINARY with the variables set for it alone.
ab() {
  local config=$1 side=$2 binary=$3 artifact=$4; shift 4
  timeout 150 env "$@" "$binary" "models/$artifact.rnx" --benchmark --executor cuda-graph --lr 0.01 \
    --plan-cache "/tmp/plans-${config/:/-}.json" --steps 40 --warmup 15 > /tmp/ab.log 2>&1
  local rc=$?
  echo "{\"config\": \"$config\", \"side\": \"$side\", \"rc\": $rc, \"run\": $(grep '^{"model"' /tmp/ab.log | tail -1 || echo null)}" >> "$out/ab.jsonl"
  { echo "== $config $side"; grep -v '^  region' /tmp/ab.log; } >> "$out/ab-logs.txt"
}

# ab_summary: per configuration, each side's runs (ms per step), median and
# ratio to the first side run.
ab_summary() {
  "$python" - "$out/ab.jsonl" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    by.setdefault(r["config"], {}).setdefault(r["side"], []).append((r.get("run") or {}).get("ms_per_step"))
for config, sides in by.items():
    med = {s: statistics.median([m for m in v if m]) if any(v) else None for s, v in sides.items()}
    first = next(iter(med.values()))
    print(config.ljust(15), "  ".join(
        f"{s} {v} ({med[s] / first:.4f})" if med[s] and first else f"{s} {v}" for s, v in sides.items()))
PY
}
