#!/usr/bin/env bash
# Builds RN's wheel (pyproject.toml) into $RN_BUILD_DIR/dist, reusing the
# CMake build folder of the README's commands, and prints its path last.
#
#   bash scripts/build-wheel.sh                    # for python3 (CI: cp311)
#   RN_WHEEL_PYTHON=/root/.pyenv/versions/3.12.1/bin/python3 bash scripts/build-wheel.sh
#                                                  # cp312 (the GPU machine)
#
# Sets up and builds as the README's commands do (scripts/setup.sh) first;
# then only the install step and the Python extensions of another
# interpreter are new work. The wheel holds the CUDA executors where the
# build found CUDA (docs/install.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

python=${RN_WHEEL_PYTHON:-python3}
if ! "$python" -c 'import scikit_build_core, nanobind' 2>/dev/null; then
  rn_log "installing scikit-build-core and nanobind for $python (pip)"
  "$python" -m pip install -q scikit-build-core nanobind
fi
dist="$RN_BUILD_DIR/dist"
mkdir -p "$dist"
tag=$("$python" -c 'import sys; v = sys.version_info; print(f"cp{v.major}{v.minor}")')
rm -f "$dist"/rn-*-"$tag"-*.whl
rn_log "building the wheel for $("$python" --version) in $RN_BUILD_DIR"
# The build folder's own interpreter, restored afterwards: scikit-build-core
# leaves its SKBUILD* variables (the extension suffix among them) and its
# interpreter in the cache, which would name the next plain build's
# extensions for the wheel's Python.
cached() { sed -n "s/^$1:[A-Z]*=//p" "$RN_BUILD_DIR/CMakeCache.txt" 2>/dev/null; }
own_python3=$(cached Python3_EXECUTABLE)
own_python=$(cached Python_EXECUTABLE)
# --no-build-isolation: the build folder's configuration stays the test
# command's (an isolated environment would be another interpreter).
status=0
# The interpreter named explicitly: scikit-build-core's own hints do not
# replace what the folder's cache holds.
exe=$("$python" -c 'import sys; print(sys.executable)')
"$python" -m pip wheel --no-build-isolation --no-deps -q -Cbuild-dir="$RN_BUILD_DIR" \
  -Ccmake.define.Python_EXECUTABLE="$exe" -Ccmake.define.Python3_EXECUTABLE="$exe" \
  -w "$dist" "$RN_ROOT" >&2 || status=$?
if [ -n "$own_python3" ]; then
  cmake -S "$RN_ROOT" -B "$RN_BUILD_DIR" -U 'SKBUILD*' -DPython3_EXECUTABLE="$own_python3" \
    ${own_python:+-DPython_EXECUTABLE="$own_python"} > /dev/null
fi
[ "$status" = 0 ] || exit "$status"
wheel=$(ls -t "$dist"/rn-*.whl | head -1)
rn_log "wheel: $wheel ($(du -m "$wheel" | cut -f1) MiB)"
echo "$wheel"
