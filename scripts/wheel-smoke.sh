#!/usr/bin/env bash
# A user's first steps with RN's wheel, from a fresh virtual environment and
# nothing of the source tree on PYTHONPATH: pip install, the Python
# examples of docs/python.md, then rn-compile and rn-run from the venv's
# PATH training the main job's CNN on Fashion-MNIST for one short epoch.
#
#   bash scripts/wheel-smoke.sh build/dist/rn-0.2.0-cp311-cp311-linux_x86_64.whl
#
# RN_SMOKE_PYTHON picks the interpreter of the venv (default python3);
# RN_SMOKE_EXECUTOR the executor (default auto: the GPU where one answers).
set -euo pipefail
wheel=$(realpath "$1")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${RN_SMOKE_PYTHON:-python3}
executor=${RN_SMOKE_EXECUTOR:-auto}
data=${RN_DATA:-/usr/share/datasets/fashion-mnist}
work=$(mktemp -d /tmp/rn-wheel-smoke.XXXXXX)
log() { printf '[wheel-smoke] %s\n' "$*" >&2; }

log "fresh venv in $work/venv ($("$python" --version))"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"
log "installed: $("$work/venv/bin/python" -m pip list 2>/dev/null | grep -E '^(rn|numpy) ' | tr -s ' ' | paste -sd ' ')"

# Nothing of the checkout: another folder, no PYTHONPATH, no RN_* tool paths.
cd "$work"
run() {
  env -u PYTHONPATH -u RN_COMPILE -u RN_OPT -u RN_RUN -u RN_NATIVE_DIR -u LD_LIBRARY_PATH \
    PATH="$work/venv/bin:/usr/bin:/bin" "$@"
}
run python -c 'import rn, sys; print("rn", rn.__version__, "from", rn.__file__); assert "/venv/" in rn.__file__'
for tool in rn-compile rn-run rn-opt rn-data; do run "$tool" --version; done

log "docs/python.md's examples"
"$python" - "$root/docs/python.md" > "$work/docs_examples.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
print("\n".join(re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)))
PY
run python "$work/docs_examples.py"

log "rn-compile and rn-run from the venv"
run python -m rn.models fashion_cnn --batch 128 --classes 10 -o "$work/cnn.mlir"
run rn-compile "$work/cnn.mlir" -o "$work/cnn.rnx" --pipeline "optimizer=sgd nesterov=true"
run rn-run "$work/cnn.rnx" --data "$data" --epochs 1 --limit-train 4096 --lr 0.05 \
  --executor "$executor"
log "passed ($work)"
