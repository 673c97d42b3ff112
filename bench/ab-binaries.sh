#!/usr/bin/env bash
# A/B of two rn-run binaries on the GPU machine, from the bundle (a runtime
# change measured without the rest of the benchmark session): per
# model:batch[:variant], the benchmark artifact (models/MODEL.benchBATCH
# [.VARIANT].rnx) run by A and B in turn, A B A B ... for RN_AB_ROUNDS
# rounds (default 2), cuda-graph multi-stream, every run with the same plan
# cache so that both time the same convolution plans (a cache that
# bench/run-rn.sh left skips the autotuning). JSON lines go to
# $OUT/ab.jsonl, each side's median ms/step and B / A to $OUT/ab.txt.
#   usage: bench/ab-binaries.sh A_RN_RUN B_RN_RUN MODEL:BATCH[:VARIANT]...
#   RN_AB_PLANS: the folder of plans-MODEL-BATCH.json caches (default $OUT),
#   RN_AB_ENV_A / RN_AB_ENV_B: VAR=VALUE words set for that side's runs only
#   (a runtime switch measured with one binary, e.g. RN_AB_ENV_B=RN_CONV_GENSTATS=1),
#   RN_BENCH_STEPS (40), RN_BENCH_WARMUP (15), RN_RUN_TIMEOUT (per run, 120 s)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
if [ $# -lt 3 ]; then
  echo "usage: $0 A_RN_RUN B_RN_RUN MODEL:BATCH[:VARIANT]..." >&2
  exit 2
fi
binary_a=$1 binary_b=$2
shift 2
jsonl=$out/ab.jsonl
: > "$jsonl"
for spec in "$@"; do
  IFS=: read -r name batch variant <<< "$spec"
  artifact=$bundle/models/$name.bench$batch${variant:+.$variant}.rnx
  cache=${RN_AB_PLANS:-$out}/plans-$name-$batch.json
  for round in $(seq "${RN_AB_ROUNDS:-2}"); do
    for side in a b; do
      binary=$binary_a side_env=${RN_AB_ENV_A:-}
      [ "$side" = b ] && binary=$binary_b side_env=${RN_AB_ENV_B:-}
      log=$out/ab-$name-$batch-$side-$round.log
      echo "[ab] $spec $side round $round" >&2
      # shellcheck disable=SC2086 # side_env is a list of VAR=VALUE words
      timeout "${RN_RUN_TIMEOUT:-120}" env $side_env "$binary" "$artifact" --benchmark --executor cuda-graph \
        --lr 0.01 --plan-cache "$cache" --steps "${RN_BENCH_STEPS:-40}" \
        --warmup "${RN_BENCH_WARMUP:-15}" > "$log" 2>&1
      "$python" - "$jsonl" "$log" "$?" "$spec" "$side" "$round" <<'PY'
import json, sys
jsonl, log, rc, spec, side, round_ = sys.argv[1:]
lines = [t for t in open(log, errors="replace") if t.startswith('{"model"')]
rec = {"spec": spec, "side": side, "round": int(round_)}
if rc == "0" and lines:
    rec.update({k: json.loads(lines[-1]).get(k) for k in ("ms_per_step", "conv_floor_ms", "loss")})
else:
    rec["error"] = f"exit {rc}"
with open(jsonl, "a") as f:
    f.write(json.dumps(rec) + "\n")
PY
    done
  done
done
"$python" - "$jsonl" > "$out/ab.txt" <<'PY'
import json, statistics, sys
runs = [json.loads(t) for t in open(sys.argv[1]) if t.strip()]
for spec in dict.fromkeys(r["spec"] for r in runs):
    times = {s: [r["ms_per_step"] for r in runs if r["spec"] == spec and r["side"] == s
                 and r.get("ms_per_step")] for s in "ab"}
    if not times["a"] or not times["b"]:
        print(f"{spec}: a run failed")
        continue
    a, b = statistics.median(times["a"]), statistics.median(times["b"])
    print(f"{spec}: A {a:.3f} ms {times['a']}, B {b:.3f} ms {times['b']}, B / A {b / a:.3f}")
PY
cat "$out/ab.txt"
