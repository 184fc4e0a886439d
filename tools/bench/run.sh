#!/usr/bin/env bash
# The benchmark, as the README's table was made: builds the release preset's benchmark programs
# and runs uwjit-bench; arguments go to it (default: --out bench-results). It writes
# bench-results/bench.json and bench-results/bench.md. Run it on a quiet machine: the figures are
# medians of interleaved rounds, but a loaded machine still spreads them (the table says how
# loaded it was). Then, when the Python module was built, tools/bench/python_bench.py: Python's
# call overhead and a Python-hosted pipe flow against C++ (printed, and python-bench.json beside
# the build).
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --preset release > /dev/null
targets=(uwjit_cli uwjit_bench uwjit_bench_start_plain uwjit_bench_start_linked)
if cmake --build --preset release --target help | grep -q '^uwjit_bench_mpi:'; then
  targets+=(uwjit_bench_mpi)
fi
python=""
if cmake --build --preset release --target help | grep -q '^uwjit_python:'; then
  targets+=(uwjit_python)
  python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' build/release/CMakeCache.txt)
fi
cmake --build --preset release --target "${targets[@]}"
[ $# -gt 0 ] || set -- --out bench-results
build/release/bin/uwjit-bench "$@"
if [ -n "$python" ]; then
  PYTHONPATH=$PWD/build/release/python "$python" tools/bench/python_bench.py \
    --json build/release/python-bench.json
fi
