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
# The machine's CPU kind and vector ISA are named in the JSON and on top of the table: the
# widest the CPU's flags in /proc/cpuinfo list.
python3 - "$out/bench.json" <<'PY'
import json, sys
machine = json.load(open(sys.argv[1]))["machine"]
assert machine["llvm_cpu"], machine
flags = open("/proc/cpuinfo").read().split("\nflags")[1].split("\n")[0].split()
widest = next((isa for flag, isa in [("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                                     ("sse4_2", "SSE4.2")] if flag in flags), None)
assert widest is None or machine["vector_isa"] == widest, (machine["vector_isa"], widest)
PY
# Each cold row against the compiler subprocess has its twin against the same compile stopped at
# the object, so that the linker's share of the ratio is shown.
python3 - "$out/bench.json" <<'PY'
import json, sys
figures = [row["figure"] for row in json.load(open(sys.argv[1]))["rows"] if row["section"] == "cold"]
kernels = [f.split(":")[0] for f in figures if f.endswith("clang++-19 subprocess + dlopen / in-process")]
assert kernels, figures
for kernel in kernels:
    assert any(f.startswith(kernel + ": clang++-19 -c (object only") for f in figures), (kernel, figures)
PY
# The copy with streaming stores is timed beside the plain copy at each thread count (a failed
# check of its output fails the section, and --complete above with it).
python3 - "$out/bench.json" <<'PY'
import json, sys
figures = [row["figure"] for row in json.load(open(sys.argv[1]))["rows"] if row["section"] == "threads"]
for threads in ("1 thread", "2 threads"):
    assert f"STREAM copy with streaming stores / with plain stores, {threads}" in figures, figures
PY
grep -qE "^Machine: .* \([a-z0-9_-]+, (AVX-512|AVX2|AVX|SSE4\.2|SVE|NEON|scalar)\), [0-9]+ cores" "$out/bench.md"
# Two runs side by side: every row of each, with the ratio of their medians.
"$bench" --compare "$out/bench.json" "$out/again/bench.json" > "$out/compare.md"
grep -q '^| section | figure | A | B | B / A |$' "$out/compare.md"
rows_a=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$out/bench.json")
[ "$(grep -c '^| [a-z_]* | ' "$out/compare.md")" -ge "$rows_a" ]
grep -qE '^\| warm \| .* \| [0-9.]+×? ?[a-zA-Z/%]* \| [0-9.]+×? ?[a-zA-Z/%]* \| [0-9.]+× \|$' "$out/compare.md"
grep -qE '\| not in B \| – \|$' "$out/compare.md" # rows of sections the second run skipped
status=0; "$bench" --compare "$out/bench.json" "$out/none.json" > /dev/null 2>&1 || status=$?
[ "$status" -ne 0 ]
# Usage errors exit 2.
status=0; "$bench" --sections nonsense > /dev/null 2>&1 || status=$?
[ "$status" -eq 2 ]
echo "bench quick: 1 passed, 0 failed"
