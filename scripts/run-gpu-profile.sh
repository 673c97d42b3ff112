#!/usr/bin/env bash
# Where a step's GPU time goes, on the GPU machine from a bundle
# (scripts/bundle-gpu.sh): per model and batch, a cuda-graph timeline
# (rn-run --trace) of the benchmark artifact and, where it exists, of its
# ungrouped variant (group-elementwise=false), each summarized by
# scripts/trace-summary.py into $OUT/profile-MODEL-BATCH[-ungrouped].txt (GPU busy and idle per step, GPU
# time per op and per kernel; each batch-norm kernel's floor bytes, GB/s
# and time over a device copy's, the copy's rate measured first by
# bench/device_copy.py into $OUT/device-copy.json). The traces themselves
# stay on the machine unless RN_PROFILE_KEEP_TRACES=1 (they are large).
#   RN_PROFILE_MODELS: model:batch pairs (default resnet18c:256,resnet50:256)
#   RN_PROFILE_VARIANTS: which artifacts (default "default ungrouped")
#   RN_PROFILE_STEPS / RN_PROFILE_WARMUP: timed steps per window (3 windows)
#   and warmup steps (default 10 / 5)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
models=${RN_PROFILE_MODELS:-resnet18c:256,resnet50:256}
steps=${RN_PROFILE_STEPS:-10}
warmup=${RN_PROFILE_WARMUP:-5}
traces=$(mktemp -d)
[ "${RN_PROFILE_KEEP_TRACES:-0}" = 1 ] && traces=$out
# A device copy's read + write rate on this card, in this session.
copy=()
if "$python" "$bundle/bench/device_copy.py" > "$out/device-copy.json" 2>&1; then
  copy=(--copy-gbps "$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["copy_gbps"])' "$out/device-copy.json")")
fi

for spec in ${models//,/ }; do
  name=${spec%%:*} batch=${spec##*:}
  for variant in ${RN_PROFILE_VARIANTS:-default ungrouped}; do
    suffix=.$variant
    [ "$variant" = default ] && suffix=
    artifact=$bundle/models/$name.bench$batch$suffix.rnx
    [ -f "$artifact" ] || continue
    tag=$name-$batch${suffix:+-$variant}
    echo "[profile] $tag" >&2
    timeout "${RN_PROFILE_TIMEOUT:-200}" "$bundle/bin/rn-run" "$artifact" --benchmark \
      --steps "$steps" --warmup "$warmup" --executor cuda-graph --lr 0.01 \
      --trace "$traces/trace-$tag.json" > "$out/profile-$tag.log" 2>&1 ||
      { echo "[profile] $tag: rn-run exit $?" >&2; continue; }
    # The trace covers the first step, the warmup and three timed windows.
    "$python" "$bundle/scripts/trace-summary.py" "$traces/trace-$tag.json" --kernels --top 60 \
      --steps $((warmup + 3 * steps)) --artifact "$artifact" "${copy[@]}" \
      --json "$out/profile-$tag.json" > "$out/profile-$tag.txt" 2>&1
  done
done
