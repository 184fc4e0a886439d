#!/usr/bin/env bash
# Installs what uwjit needs (tools/setup.sh), builds the "ci" preset (tests on, warnings are
# errors) and runs the whole test suite. Extra arguments go to ctest, e.g. `-L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
UWJIT_PRESET=ci tools/setup.sh
ctest --preset ci "$@"
