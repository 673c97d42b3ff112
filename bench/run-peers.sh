#!/usr/bin/env bash
# The peers of RN's benchmark on the GPU machine, from the bundle directory
# (gpu-bundle/, where bench/ sits next to bin/ and models/): PyTorch
# (bench/torch_step.py, one mode per run) and JAX (bench/jax_step.py, jit,
# bf16, a host batch transferred every step with --h2d, as RN and PyTorch
# copy one per step). One process per model, batch and mode, each under
# bench/peak_memory.py (NVML every 20 ms: the same memory number for every
# system) and a `timeout`, so one hung compile cannot eat the session.
#   RN_BENCH_MODELS   model:batch pairs (default below)
#   RN_TORCH_MODES    PyTorch modes (default eager,graph,compile; empty: no PyTorch)
#   RN_JAX=0          no JAX runs; RN_JAX_DTYPE (default bf16), RN_JAX_H2D=0 keeps the batch on
#                     the device as the JAX reference does
#   RN_PEER_TIMEOUT   seconds per run (default 240)
#   RN_BENCH_STEPS, RN_BENCH_WARMUP  steps per timed window (40) and warmup steps (15)
#   RN_PYTHON         the Python with torch and jax (default /opt/torch/.venv/bin/python)
#   RN_RESULTS_RN     RN's JSON lines for the final table (default $OUT/rn.jsonl from
#                     bench/run-rn.sh, else $OUT/bench.jsonl, where one exists)
#   OUT               results folder (default gpu-results/): peers.jsonl (records appended),
#                     peer-*.log (each run's output), peer-*.mem.json (its peak memory),
#                     gpu.txt, results.json and results.md (bench/collect_results.py)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$bundle" || exit 1
out=${OUT:-$bundle/gpu-results}
mkdir -p "$out"
python=${RN_PYTHON:-/opt/torch/.venv/bin/python}
models=${RN_BENCH_MODELS:-mlp:128,resnet18c:256,resnet18c:1024,vgg11c:256,vgg11c:1024,resnet50:256}
torch_modes=${RN_TORCH_MODES-eager,graph,compile}
limit=${RN_PEER_TIMEOUT:-240}
steps=${RN_BENCH_STEPS:-40}
warmup=${RN_BENCH_WARMUP:-15}
jax_dtype=${RN_JAX_DTYPE:-bf16}
jax_input=(--h2d)
[ "${RN_JAX_H2D:-1}" = 0 ] && jax_input=()
jsonl=$out/peers.jsonl

[ -s "$out/gpu.txt" ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  > "$out/gpu.txt" 2>/dev/null || rm -f "$out/gpu.txt"

# The runs, as "framework mode model:batch" lines.
runs=()
for spec in ${models//,/ }; do
  for mode in ${torch_modes//,/ }; do runs+=("torch $mode $spec"); done
  [ "${RN_JAX:-1}" = 0 ] || runs+=("jax jit $spec")
done

i=0
for run in "${runs[@]}"; do
  i=$((i + 1))
  read -r framework mode spec <<< "$run"
  name=${spec%%:*} batch=${spec##*:}
  tag=$framework-$mode-$name-$batch
  log=$out/peer-$tag.log mem=$out/peer-$tag.mem.json
  if [ "$framework" = torch ]; then
    cmd=("$python" bench/torch_step.py --models "$spec" --modes "$mode")
  else
    cmd=("$python" bench/jax_step.py --models "$spec" --dtype "$jax_dtype" "${jax_input[@]}")
  fi
  echo "[$i/${#runs[@]}] $framework $mode $spec ..."
  rm -f "$mem"
  start=$SECONDS
  "$python" bench/peak_memory.py --out "$mem" -- \
    timeout -k 15 "$limit" "${cmd[@]}" --steps "$steps" --warmup "$warmup" > "$log" 2>&1
  rc=$?
  config="{\"framework\": \"$framework\", \"model\": \"$name\", \"batch\": $batch, \"mode\": \"$mode\"}"
  merged=$("$python" bench/peak_memory.py --merge "$mem" --log "$log" --config "$config")
  echo "$merged" >> "$jsonl"
  # One summary line per record: time per step, peak memory, or the error.
  echo "$merged" | "$python" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if "ms_per_step" in r:
        peak = r.get("peak_memory_bytes")
        print("    %.3f ms/step, peak %s, first step %s s" % (r["ms_per_step"],
              "-" if peak is None else "%.2f GiB" % (peak / 2**30), r.get("first_step_s")))
    else:
        print("    error: %s" % r.get("error"))
'
  echo "    exit $rc after $((SECONDS - start)) s; log $log"
done

# RN's records first: where a file repeats a configuration, the later record wins, and
# run-gpu-bench.sh's bench.jsonl also holds PyTorch lines without the external peak.
inputs=()
if [ -n "${RN_RESULTS_RN:-}" ]; then
  inputs+=("$RN_RESULTS_RN")
elif [ -f "$out/rn.jsonl" ]; then
  inputs+=("$out/rn.jsonl")  # bench/run-rn.sh
elif [ -f "$out/bench.jsonl" ]; then
  inputs+=("$out/bench.jsonl")  # scripts/run-gpu-bench.sh
fi
"$python" bench/collect_results.py "${inputs[@]}" "$jsonl" --out "$out/results.json" \
  | tee "$out/results.md"
