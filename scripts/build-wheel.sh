#!/usr/bin/env bash
# Builds RN's wheel (pyproject.toml) into $RN_BUILD_DIR/dist, reusing the
# CMake build folder of the README's commands, and prints its path last.
#
#   bash scripts/build-wheel.sh                    # for python3 (CI: cp311)
#   RN_WHEEL_PYTHON=/root/.pyenv/versions/3.12.1/bin/python3 bash scripts/build-wheel.sh
#                                                  # abi3 for 3.12+ (the GPU machine)
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
rm -f "$dist"/rn-*-"$tag"-*.whl "$dist"/rn-*-cp312-abi3-*.whl
rn_log "building the wheel for $("$python" --version) in $RN_BUILD_DIR"
# --no-build-isolation: the build folder's configuration stays the test
# command's (an isolated environment would be another interpreter).
"$python" -m pip wheel --no-build-isolation --no-deps -q \
  -Cbuild-dir="$RN_BUILD_DIR" -w "$dist" "$RN_ROOT" >&2
wheel=$(ls -t "$dist"/rn-*.whl | head -1)
rn_log "wheel: $wheel ($(du -m "$wheel" | cut -f1) MiB)"
echo "$wheel"
