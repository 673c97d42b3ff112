#!/usr/bin/env bash
# Sets up, builds and runs every RN test: the lit suite (dialect, passes,
# tools and the models the frontend emits), the runtime's unit tests (ctest)
# and the pytest suites of the Python frontend and the scripts.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rn_log "lit tests"
"$LLVM_ROOT/bin/lit" -sv "$RN_BUILD_DIR/test"

rn_log "runtime unit tests"
ctest --test-dir "$RN_BUILD_DIR" --output-on-failure -j2

rn_log "pytest"
cd "$RN_ROOT"
RN_REQUIRE_TOOLS=1 RN_OPT="$RN_BUILD_DIR/bin/rn-opt" python3 -m pytest -q test/python-frontend test/scripts
