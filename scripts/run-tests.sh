#!/usr/bin/env bash
# Sets up, builds and runs every RN test: the lit suite (dialect, passes,
# tools and the models the frontend emits), the runtime's unit tests (ctest)
# and the pytest suites of the Python frontend and the scripts.
set -euo pipefail
export RN_WITH_TORCH=1
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rn_log "lit tests"
"$LLVM_ROOT/bin/lit" -sv "$RN_BUILD_DIR/test"

rn_log "runtime unit tests"
ctest --test-dir "$RN_BUILD_DIR" --output-on-failure -j2

rn_log "pytest"
cd "$RN_ROOT"
RN_REQUIRE_TOOLS=1 RN_OPT="$RN_BUILD_DIR/bin/rn-opt" python3 -m pytest -q test/python-frontend test/scripts

# The torch import and export tests need PyTorch: Debian's python3-torch is
# for Debian's interpreter, which loads the extension built for the same
# Python minor version (the tests check that they ran: RN_REQUIRE_TORCH=1).
rn_log "pytest (torch import, /usr/bin/python3 with Debian's PyTorch)"
RN_REQUIRE_TOOLS=1 RN_REQUIRE_TORCH=1 RN_OPT="$RN_BUILD_DIR/bin/rn-opt" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider test/python-frontend/test_torch_import.py

# The user's path: RN's wheel built from this build folder, its ELF files
# checked for dependencies outside it (and its size), installed into a fresh
# venv and run from there with nothing of the checkout on PYTHONPATH.
rn_log "the wheel: build, check, install into a fresh venv, run"
wheel=$(RN_NO_BUILD=1 bash "$RN_ROOT/scripts/build-wheel.sh")
python3 "$RN_ROOT/scripts/check-wheel.py" "$wheel" --max-mib 40
bash "$RN_ROOT/scripts/wheel-smoke.sh" "$wheel"
