#!/usr/bin/env bash
# UWJIT_PERF=1 writes a jitdump that perf can use: a valid header (the flags and pad1 fields
# that LLVM 19 leaves uninitialised are zeroed), a code-load record per kernel, line records with
# UWJIT_DEBUG=1, a close record at exit. Where the jitdump cannot be written, uwjit says so once
# and the kernels still run. Needs no perf.
#   jitdump.sh DEBUG_HOST SOURCE_DIR
host=$1
src=$2
. "$(dirname "$0")/../cli/lib.sh"
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(($1))"; }
unset UWJIT_DEBUG UWJIT_DUMP_DIR
export UWJIT_PERF=1 JITDUMPDIR="$sandbox/jitdump"
mkdir -p "$sandbox/run"
cd "$sandbox/run" || exit 1

check_dump() { # check_dump LABEL [--debug-file NAME]
  local label=$1
  shift
  local pid entry dumps
  pid=$(json 'd["pid"]' <<<"$out")
  entry=$(json 'd["entry"]' <<<"$out")
  dumps=("$JITDUMPDIR"/.debug/jit/llvm-IR-jit-*/"jit-$pid.dump")
  if [ ${#dumps[@]} -ne 1 ] || [ ! -f "${dumps[0]}" ]; then
    fail "$label: one jit-$pid.dump under \$JITDUMPDIR/.debug/jit"
    return
  fi
  if python3 "$src/tests/debug/check_jitdump.py" "${dumps[0]}" --pid "$pid" --entry "$entry" \
    --host "$host" "$@" >"$sandbox/check" 2>&1; then
    ok
  else
    fail "$label: $(cat "$sandbox/check")"
  fi
}

run "$host" --calls 2
expect_code 0 "a host with UWJIT_PERF=1"
expect_out '"tier": "compiled"' "the kernel is compiled"
check_dump "the jitdump of a compiled kernel"

run "$host" --calls 2
expect_out '"tier": "disk"' "the kernel is loaded from disk"
check_dump "the jitdump of a kernel loaded from disk"

run env UWJIT_DEBUG=1 "$host" --calls 2
expect_code 0 "a host with UWJIT_PERF=1 UWJIT_DEBUG=1"
check_dump "the jitdump of a debug kernel has line records" \
  --debug-file "$(json 'd["entry"]' <<<"$out").cpp"

# Where the jitdump cannot be written: one warning, and the kernel still loads and computes.
run env JITDUMPDIR=/proc/uwjit-no-such-dir "$host" --calls 2
expect_code 0 "a host whose jitdump cannot be written still runs its kernel"
[ "$(grep -c 'perf support unavailable' <<<"$err")" = 1 ] && ok ||
  fail "an unwritable jitdump is reported exactly once"
expect_err 'perf support unavailable: cannot write the jitdump in /proc/uwjit-no-such-dir/\.debug/jit' \
  "the warning names the directory"
finish
