# Helpers for the CLI suites: each suite runs the real uwjit binary in a fresh sandbox.
set -u
failures=0
checks=0
sandbox=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-cli.XXXXXX")
trap 'rm -rf "$sandbox"' EXIT
export UWJIT_CACHE_DIR="$sandbox/cache"
unset UWJIT_CACHE XDG_CACHE_HOME UWJIT_LOG_LEVEL

# as_nobody: the prefix that runs a command as user nobody (uid and gid 65534, no groups) when the
# suite runs as root, for the cases that root's privileges would pass without checking anything
# (root writes into read-only directories): setpriv, or Python's os.setuid where setpriv is
# missing. Empty for another user, who runs those cases as itself.
as_nobody=()
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null; then
    as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  else
    as_nobody=(python3 -c 'import os, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); os.execvp(sys.argv[1], sys.argv[1:])')
  fi
fi
# run CMD...: runs it, keeping stdout in $out, stderr in $err and the exit code in $code.
run() {
  out=$("$@" 2>"$sandbox/stderr") && code=0 || code=$?
  err=$(cat "$sandbox/stderr")
}
# json EXPR: evaluates a Python expression over the JSON document on stdin, named d.
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(($1))"; }
ok() { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; echo "  stdout: $out"; echo "  stderr: $err"; }
expect_code() { [ "$code" -eq "$1" ] && ok || fail "$2: exit $code, expected $1"; }
# A job that failed and ended (under `timeout`, whose 124 means that it hung instead).
expect_ended() { [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && ok || fail "$1: exit $code (124: the job hung)"; }
expect_out() { grep -qE -- "$1" <<<"$out" && ok || fail "$2: stdout lacks /$1/"; }
expect_err() { grep -qE -- "$1" <<<"$err" && ok || fail "$2: stderr lacks /$1/"; }
finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}
