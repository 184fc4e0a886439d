#!/usr/bin/env bash
# The benchmark, as the README's table was made: builds the release preset's benchmark programs
# and runs uwjit-bench; arguments go to it (default: --out bench-results). It writes
# bench-results/bench.json and bench-results/bench.md. Run it on a quiet machine: the figures are
# medians of interleaved rounds, but a loaded machine still spreads them (the table says how
# loaded it was).
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --preset release > /dev/null
targets=(uwjit_cli uwjit_bench uwjit_bench_start_plain uwjit_bench_start_linked)
if cmake --build --preset release --target help | grep -q '^uwjit_bench_mpi:'; then
  targets+=(uwjit_bench_mpi)
fi
cmake --build --preset release --target "${targets[@]}"
[ $# -gt 0 ] || set -- --out bench-results
exec build/release/bin/uwjit-bench "$@"
