#!/usr/bin/env bash
# The README's perf recipe: `perf record -k 1` + `perf inject --jit` + `perf report` attributes
# samples to the kernel by name. Skipped (exit 77) where perf is not installed or may not
# record here (perf_event_paranoid, containers).
#   perf_report.sh DEBUG_HOST
host=$1
. "$(dirname "$0")/../cli/lib.sh"
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(($1))"; }
unset UWJIT_DEBUG UWJIT_DUMP_DIR
# The jitdump and perf's build-id cache ($HOME/.debug) stay in the sandbox.
export JITDUMPDIR="$sandbox/jitdump" HOME="$sandbox/home"
mkdir -p "$sandbox/run" "$HOME"
cd "$sandbox/run" || exit 1

if ! command -v perf >/dev/null 2>&1; then
  echo "skipped: perf is not installed (Debian: apt-get install linux-perf)"
  exit 77
fi
if ! perf record -k 1 -o probe.data -- true >probe.log 2>&1; then
  echo "skipped: perf cannot record here: $(head -n 3 probe.log)"
  exit 77
fi

# About a second of kernel work: hundreds of samples land in it.
run env UWJIT_PERF=1 perf record -k 1 -o perf.data -- "$host" --calls 300 --size 1000000
expect_code 0 "perf record of a host with UWJIT_PERF=1"
entry=$(json 'd["entry"]' <<<"$out")
run perf inject --jit -i perf.data -o perf.jit.data
expect_code 0 "perf inject --jit accepts the jitdump"
run perf report -i perf.jit.data --stdio --sort sym
expect_code 0 "perf report"
expect_out "\\[\\.\\] $entry\$" "perf report attributes samples to the kernel by name"

# Without the jitdump, perf knows no name for the kernel's addresses.
run perf record -k 1 -o plain.data -- "$host" --calls 30 --size 1000000
run perf report -i plain.data --stdio --sort sym
grep -q "$entry" <<<"$out" && fail "without UWJIT_PERF the kernel has no name in perf" || ok
finish
