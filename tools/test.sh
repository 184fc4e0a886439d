#!/usr/bin/env bash
# Installs what uwjit needs (tools/setup.sh: quiet, its log in build/setup.log; a failure shows
# the log's tail and exits with the failing step's status), builds the "ci" preset (tests on,
# warnings are errors) and runs the whole test suite; then builds the sanitizer presets and runs
# the unit and JIT tests under AddressSanitizer + UndefinedBehaviorSanitizer ("asan") and the
# concurrency tests under ThreadSanitizer ("tsan"); neither builds the benchmark, and tsan builds
# only the programs its tests run (CMakePresets.json). Extra arguments go to the "ci" ctest, e.g.
# `-L unit`; UWJIT_SANITIZERS=0 skips the sanitizer builds (a quick local run; CI runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
UWJIT_PRESET=ci tools/setup.sh
ctest --preset ci "$@"
if [ "${UWJIT_SANITIZERS:-1}" != 0 ]; then
  for preset in asan tsan; do
    start=$(date +%s)
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset"
    ctest --preset "$preset"
    echo "test.sh: preset $preset built and tested in $(($(date +%s) - start)) s"
  done
fi
