#!/usr/bin/env bash
# RN's side of the benchmark session, on the GPU machine from the bundle
# (gpu-bundle/: bin/, models/ from scripts/bench-artifacts.sh, bench/). Per
# model and batch, one process per measurement (so that the device memory
# is the measurement's own), each under bench/peak_memory.py:
#   1. cuda-graph, multi-stream, with an empty plan cache: ms/step and the
#      cold time to first step (load with autotuning, capture, first step);
#   2. cuda-graph single-stream (the pipeline's single-stream option),
#   3. cuda-eager, both with the plan cache the first run filled;
#   4. cuda-graph multi-stream again, a few steps: the warm time to first step;
#   5. where MODEL.benchBATCH.ungrouped.rnx exists, cuda-graph multi-stream
#      with group-elementwise=false (one zero, unscale and cast node per
#      tensor instead of the default multi-tensor ops); where
#      MODEL.benchBATCH.unpadded.rnx exists and the model has convolutions,
#      cuda-graph multi-stream with pad-conv-channels=0 (the image stem at
#      its 3 channels); where MODEL.benchBATCH.unfolded.rnx exists and the
#      model is a ResNet, cuda-graph multi-stream with fold-gradient-adds=false
#      (the junctions' gradient sums as separate adds, not the data
#      gradients' epilogues); where MODEL.benchBATCH.anystridefold.rnx
#      exists, the same with fold-gradient-adds-max-stride=0 (strided data
#      gradients take the addend too); where MODEL.benchBATCH.storedmask.rnx
#      exists, the same with recompute-relu-mask=false (the CBR backward
#      reads the ReLU result for its mask); where
#      MODEL.benchBATCH.bnprologue.rnx exists, the same with
#      fuse-bn-prologue=true (a CBR layer's BN apply + ReLU as the next
#      convolution's prologue, rn-fuse-bn-prologue).
# JSON lines go to $OUT/rn.jsonl (bench/collect_results.py reads them), logs
# to $OUT/rn-*.log.
#   RN_BENCH_MODELS (default mlp:128,resnet18c:256,resnet18c:1024,vgg11c:256,
#   vgg11c:1024,resnet50:256), RN_BENCH_STEPS (40), RN_BENCH_WARMUP (15),
#   RN_RUN_TIMEOUT (per process, default 240 s)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
models=${RN_BENCH_MODELS:-mlp:128,resnet18c:256,resnet18c:1024,vgg11c:256,vgg11c:1024,resnet50:256}
steps=${RN_BENCH_STEPS:-40}
warmup=${RN_BENCH_WARMUP:-15}
jsonl=$out/rn.jsonl
: > "$jsonl"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
compile_times=$bundle/models/compile-times.jsonl

# measure NAME MODE ARTIFACT EXECUTOR RN-RUN-ARGS...: one rn-run --benchmark
# under peak_memory.py; appends its JSON line with the mode, the external
# peak and rn-compile's time, or an error line.
measure() {
  local name=$1 batch=$2 mode=$3 artifact=$4 executor=$5
  shift 5
  local tag=$name-$batch-${mode// /-}
  local log=$out/rn-$tag.log mem=$out/rn-$tag.mem.json
  local cmd=("$bundle/bin/rn-run" "$artifact" --benchmark --executor "$executor" --lr 0.01 "$@")
  if [ -f "$bundle/bench/peak_memory.py" ]; then
    cmd=("$python" "$bundle/bench/peak_memory.py" --out "$mem" -- "${cmd[@]}")
  fi
  echo "[rn] $name:$batch $mode" >&2
  timeout "${RN_RUN_TIMEOUT:-240}" "${cmd[@]}" > "$log" 2>&1
  local rc=$?
  "$python" - "$jsonl" "$log" "$mem" "$rc" "$name" "$batch" "$mode" "$gpu" "$compile_times" <<'PY'
import json, os, sys
jsonl, log, mem, rc, name, batch, mode, gpu, times = sys.argv[1:]
line = None
for text in open(log, errors="replace"):
    if text.startswith('{"model"'):
        line = text
rec = {"framework": "rn", "model": name, "batch": int(batch), "mode": mode, "gpu": gpu}
if rc == "0" and line:
    r = json.loads(line)
    r.pop("model", None)  # the artifact's model name; keep the benchmark's
    rec.update(r)
    rec["mode"] = mode
else:
    tail = open(log, errors="replace").read().strip().splitlines()[-1:] or [""]
    rec["error"] = f"exit {rc}: {tail[0][:300]}"
if os.path.exists(mem):
    m = json.load(open(mem))
    rec["peak_memory_bytes"] = m.get("peak_memory_bytes")
    rec["peak_memory_method"] = m.get("method")
if os.path.exists(times):
    streams = next((v for v in ("single", "ungrouped", "unpadded", "unfolded", "anystridefold", "storedmask", "bnprologue") if v in mode), "multi")
    for t in map(json.loads, filter(str.strip, open(times))):
        if t["model"] == name and t["batch"] == int(batch) and t["streams"] == streams:
            rec["compile_s"] = t["compile_s"]
with open(jsonl, "a") as f:
    f.write(json.dumps(rec) + "\n")
print(json.dumps({k: rec.get(k) for k in ("model", "batch", "mode", "ms_per_step", "first_step_s", "error")}))
PY
}

for spec in ${models//,/ }; do
  name=${spec%%:*} batch=${spec##*:}
  artifact=$bundle/models/$name.bench$batch.rnx
  single=$bundle/models/$name.bench$batch.single.rnx
  cache=$out/plans-$name-$batch.json
  rm -f "$cache"
  measure "$name" "$batch" "cuda-graph multi-stream" "$artifact" cuda-graph \
    --plan-cache "$cache" --steps "$steps" --warmup "$warmup"
  measure "$name" "$batch" "cuda-graph single-stream" "$single" cuda-graph \
    --plan-cache "$cache" --steps "$steps" --warmup "$warmup"
  measure "$name" "$batch" "cuda-eager" "$artifact" cuda-eager \
    --plan-cache "$cache" --steps "$steps" --warmup "$warmup"
  measure "$name" "$batch" "cuda-graph multi-stream warm" "$artifact" cuda-graph \
    --plan-cache "$cache" --steps 3 --warmup 1
  for variant in ungrouped unpadded unfolded anystridefold storedmask bnprologue; do
    alternative=$bundle/models/$name.bench$batch.$variant.rnx
    [ -f "$alternative" ] || continue
    [ "$variant" = unpadded ] && [ "$name" = mlp ] && continue
    [[ $variant == unfolded || $variant == anystridefold ]] && [[ $name != resnet* ]] && continue
    measure "$name" "$batch" "cuda-graph multi-stream $variant" "$alternative" cuda-graph \
      --plan-cache "$cache" --steps "$steps" --warmup "$warmup"
  done
done
