#!/usr/bin/env bash
# Compiles the artifacts checked in under test/runtime/Inputs/ again, with the
# compiler built in build/ (or $RN_BUILD): run it after a change of the
# artifact format or the pipeline. test/tools/rn-compile/checked-in-artifacts.mlir
# fails while a checked-in file differs from what the compiler produces.
set -euo pipefail
cd "$(dirname "$0")/.."
compile="${RN_BUILD:-build}/bin/rn-compile"
[[ -x "$compile" ]] || { echo "error: $compile not found: build the compiler first" >&2; exit 1; }
inputs=test/runtime/Inputs

# name, model, pipeline
artifacts=(
  "mlp mlp ''"
  "cbr cbr 'precision=f16 loss-scaling=dynamic momentum=0.9'"
  "cnn cnn ''"
  "dropout dropout ''"
  "stochastic_depth stochastic_depth ''"
  "mlp-per-param mlp 'group-updates=false'"
  "cbr-per-param cbr 'precision=f16 loss-scaling=dynamic momentum=0.9 group-updates=false'"
  "cnn-sgd cnn 'nesterov=true weight-decay=5e-4 no-decay-bn-bias=true'"
  "cnn-sgd-per-param cnn 'nesterov=true weight-decay=5e-4 no-decay-bn-bias=true group-updates=false'"
  "mlp-adamw mlp 'optimizer=adamw weight-decay=1e-2 precision=f16 loss-scaling=dynamic'"
  "mlp-adamw-per-param mlp 'optimizer=adamw weight-decay=1e-2 precision=f16 loss-scaling=dynamic group-updates=false'"
  "mlp-lars mlp 'optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic'"
  "mlp-lars-per-param mlp 'optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic group-updates=false'"
  "cbr-bnprologue cbr 'precision=f16 loss-scaling=dynamic momentum=0.9 fuse-bn-prologue=true'"
  "cbr-u8 cbr-u8 'precision=f16 loss-scaling=dynamic momentum=0.9'"
  "cbr-u8-f32 cbr-u8 ''"
)
for entry in "${artifacts[@]}"; do
  eval "set -- $entry"
  name=$1 model=$2 pipeline=$3
  args=("$inputs/$model.mlir" -o "$inputs/$name.rnx" --quiet)
  [[ -n "$pipeline" ]] && args+=(--pipeline "$pipeline")
  # rn-fuse-bn-prologue remarks on stderr about layers it leaves alone.
  "$compile" "${args[@]}" 2>/dev/null || "$compile" "${args[@]}"
  echo "$inputs/$name.rnx"
done
