#!/usr/bin/env bash
# Benchmarks on the GPU machine from a bundle (scripts/bundle-gpu.sh): RN's
# executors and PyTorch (bench/torch_step.py: eager and whole-step CUDA
# graph) in the same run on the same GPU, one JSON line per measurement in
# $OUT/bench.jsonl and a table with the ratios in $OUT/bench.txt.
#   RN_BENCH_MODELS: model:batch pairs (default mlp:128,resnet18c:256,vgg11c:256)
#   RN_BENCH_EXECUTORS: RN executors to time (default cuda-graph,cuda-eager)
#   RN_BENCH_PROFILE=1: also write profile-MODEL-BATCH.log (GPU time per op)
#   RN_BENCH_TRACE=1: also a cuda-graph timeline per model (trace-MODEL-BATCH.json)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
models=${RN_BENCH_MODELS:-mlp:128,resnet18c:256,vgg11c:256}
executors=${RN_BENCH_EXECUTORS:-cuda-graph,cuda-eager}
steps=${RN_BENCH_STEPS:-40}
jsonl=$out/bench.jsonl
: > "$jsonl"

for spec in ${models//,/ }; do
  name=${spec%%:*} batch=${spec##*:}
  artifact=$bundle/models/$name.bench$batch.rnx
  for ex in ${executors//,/ }; do
    if [ ! -f "$artifact" ]; then
      echo "{\"model\": \"$name\", \"batch\": $batch, \"executor\": \"$ex\", \"error\": \"no artifact $artifact\"}" >> "$jsonl"
      continue
    fi
    "$bundle/bin/rn-run" "$artifact" --benchmark --steps "$steps" --warmup 15 --executor "$ex" \
      --lr 0.01 > "$out/bench-$name-$batch-$ex.log" 2>&1
    rc=$?
    line=$(grep -E '^\{"model"' "$out/bench-$name-$batch-$ex.log" | tail -1)
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
      echo "$line" | sed 's/^{/{"framework": "rn", /' >> "$jsonl"
    else
      msg=$(tail -1 "$out/bench-$name-$batch-$ex.log" | tr -d '"\\' | cut -c1-300)
      echo "{\"framework\": \"rn\", \"model\": \"$name\", \"batch\": $batch, \"executor\": \"$ex\", \"error\": \"exit $rc: $msg\"}" >> "$jsonl"
    fi
  done
done
# RN_BENCH_PROFILE=1: also the GPU time per op of each RN model (cuda-eager).
if [ "${RN_BENCH_PROFILE:-0}" = 1 ]; then
  for spec in ${models//,/ }; do
    name=${spec%%:*} batch=${spec##*:}
    artifact=$bundle/models/$name.bench$batch.rnx
    [ -f "$artifact" ] && "$bundle/bin/rn-run" "$artifact" --benchmark --steps 5 --warmup 3 \
      --executor cuda-eager --profile > "$out/profile-$name-$batch.log" 2>&1
  done
fi
# RN_BENCH_TRACE=1: also a cuda-graph timeline of each model (trace-MODEL-BATCH.json)
# and the GPU's busy share over it (the last line of trace-MODEL-BATCH.log).
if [ "${RN_BENCH_TRACE:-0}" = 1 ]; then
  for spec in ${models//,/ }; do
    name=${spec%%:*} batch=${spec##*:}
    artifact=$bundle/models/$name.bench$batch.rnx
    [ -f "$artifact" ] && "$bundle/bin/rn-run" "$artifact" --benchmark --steps 10 --warmup 5 \
      --executor cuda-graph --trace "$out/trace-$name-$batch.json" > "$out/trace-$name-$batch.log" 2>&1
  done
fi
"$python" "$bundle/bench/torch_step.py" --models "$models" --modes eager,graph --steps "$steps" \
  --warmup 15 >> "$jsonl" 2> "$out/torch.log"

"$python" - "$jsonl" <<'PY' | tee "$out/bench.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {(r["model"], r["batch"], r["mode"]): r for r in rows if r.get("framework") == "torch" and "ms_per_step" in r}
print("%-10s %5s %-16s %9s %9s %9s %14s %14s" % ("model", "batch", "who", "ms/step", "img/s", "host ms", "vs torch eager", "vs torch graph"))
for r in rows:
    if "gpu" in r or "torch" in r and "framework" not in r:
        continue
    who = r.get("executor") or r.get("mode")
    who = ("rn " if r.get("framework") == "rn" else "torch ") + str(who)
    if "ms_per_step" not in r:
        print("%-10s %5s %-16s %s" % (r.get("model"), r.get("batch"), who, r.get("error")))
        continue
    e = torch.get((r["model"], r["batch"], "eager")); g = torch.get((r["model"], r["batch"], "graph"))
    ratio = lambda t: "%.2fx" % (t["ms_per_step"] / r["ms_per_step"]) if t else "-"
    host = "%.3f" % r["host_ms_per_step"] if "host_ms_per_step" in r else "-"
    print("%-10s %5d %-16s %9.3f %9d %9s %14s %14s" % (r["model"], r["batch"], who, r["ms_per_step"], r["images_per_s"], host, ratio(e), ratio(g)))
PY
