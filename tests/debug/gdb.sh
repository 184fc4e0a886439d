#!/usr/bin/env bash
# UWJIT_DEBUG=1: a batch-mode gdb session stops in a JIT'd kernel by name and shows its source
# lines, for a kernel compiled in the session and for one loaded from the disk cache; then the
# README's worked example, verbatim. Skipped (exit 77) only where gdb is not installed.
#   gdb.sh DEBUG_HOST STENCIL_DEMO SOURCE_DIR
host=$1
demo=$2
src=$3
if ! command -v gdb >/dev/null 2>&1; then
  echo "skipped: gdb is not installed (Debian: apt-get install gdb)"
  exit 77
fi
. "$(dirname "$0")/../cli/lib.sh"
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(($1))"; }
export UWJIT_DEBUG=1
unset UWJIT_DUMP_DIR UWJIT_PERF
mkdir -p "$sandbox/run" "$sandbox/scratch"
cd "$sandbox/run" || exit 1

# The kernel's name comes from its key: a memory-only run elsewhere says it, leaving the cache
# cold for the first session.
run env UWJIT_CACHE=0 UWJIT_DUMP_DIR="$sandbox/scratch" "$host" --calls 0
expect_code 0 "debug_host names its kernel"
entry=$(json 'd["entry"]' <<<"$out")
[ -n "$entry" ] && ok || fail "debug_host printed the kernel's entry"

# gdb's own noise (debuginfod, libthread_db) is switched off; the inferior's exit status is
# reported as "exited normally" only if the kernel computed the right result under gdb.
session() {
  run timeout 120 gdb -batch -nx -iex 'set debuginfod enabled off' \
    -ex 'set breakpoint pending on' -ex "break $entry" -ex run -ex 'info source' \
    -ex next -ex next -ex 'info locals' -ex continue \
    --args "$host" --calls 1 --size 4
}
# How gdb announces a breakpoint hit: in a process that has started other threads (a compile
# runs on a thread of its own) it names the thread that hit it.
hit='^(Thread [0-9]+ "[^"]*" hit )?Breakpoint'
for tier in compiled disk; do
  session
  expect_code 0 "gdb batch session ($tier)"
  expect_out "\"tier\": \"$tier\"" "the session's kernel came from the $tier tier"
  expect_out "$hit 1, $entry \\(args=0x[0-9a-f]+\\) at \\./$entry\\.cpp:4$" \
    "gdb stops in the $tier kernel by name, at its first line of code"
  expect_out "^4[[:space:]]+const uw_i64 n = args->extents\\[0\\];$" "gdb shows the kernel's source line ($tier)"
  expect_out "^Located in $sandbox/run/$entry\\.cpp$" "gdb reads the source uwjit wrote to the working directory ($tier)"
  expect_out "^6[[:space:]]+const double r2 = x\\[i\\] \\* x\\[i\\] \\+ 1\\.0;$" "gdb steps through the kernel's lines ($tier)"
  expect_out "^n = 4$" "gdb shows the kernel's locals ($tier)"
  expect_out "exited normally" "the host finishes correctly under gdb ($tier)"
done

# Without UWJIT_DEBUG the kernel has neither a registered object nor debug info.
run env UWJIT_DEBUG=0 timeout 120 gdb -batch -nx -iex 'set debuginfod enabled off' \
  -ex 'set breakpoint pending on' -ex "break $entry" -ex run --args "$host" --calls 1 --size 4
expect_code 0 "gdb batch session without UWJIT_DEBUG"
grep -qE "$hit 1, " <<<"$out" && fail "without UWJIT_DEBUG, gdb does not stop" || ok

# The README's example: the demo's hand-named entry (-qualified: not Engine::kernel), sources in
# UWJIT_DUMP_DIR, gdb pointed at them with `directory`.
cd "$src" || exit 1
run env UWJIT_DUMP_DIR="$sandbox/dump" timeout 120 gdb -batch -nx -iex 'set debuginfod enabled off' \
  -ex 'set breakpoint pending on' -ex 'break -qualified kernel' -ex run -ex "directory $sandbox/dump" \
  -ex 'list 12,14' -ex 'print args->extents[0]' --args "$demo" examples/kernels/diffusion.cpp 1
expect_code 0 "README example"
expect_out "$hit 1(\\.[0-9]+)?, kernel \\(args=0x[0-9a-f]+\\) at \\./uwjit_[0-9a-f]{16}\\.cpp:[0-9]+$" "README example: gdb stops in the demo's kernel"
expect_out "^13[[:space:]]+const double r = 0\\.1 \\* args->dt;" "README example: gdb lists the kernel's source from the dump directory"
expect_out '^\$1 = 64$' "README example: gdb prints a kernel variable"
finish
