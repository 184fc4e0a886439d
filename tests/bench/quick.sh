#!/usr/bin/env bash
# A short run of the benchmark, so that it cannot rot: every section runs (or says why not), the
# JSON parses and holds every section and row field, and the Markdown table is written. The
# numbers are not asserted: this machine is shared and noisy.
#   quick.sh UWJIT_BENCH
set -euo pipefail
bench=$1
out=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-bench-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
export UWJIT_LOG_LEVEL=error
"$bench" --quick --out "$out" > "$out/stdout.md"
"$bench" --check "$out/bench.json" --complete
grep -q '^| section | figure | median' "$out/bench.md"
cmp -s "$out/bench.md" "$out/stdout.md"
# A row's command reproduces it: run one and check its JSON too.
"$bench" --quick --sections warm --out "$out/again" > /dev/null
"$bench" --check "$out/again/bench.json"
# Usage errors exit 2.
status=0; "$bench" --sections nonsense > /dev/null 2>&1 || status=$?
[ "$status" -eq 2 ]
echo "bench quick: 1 passed, 0 failed"
