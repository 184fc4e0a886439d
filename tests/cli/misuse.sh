#!/usr/bin/env bash
# Bad input, each with the message it must produce: every UWJIT_* variable's bad values (in a
# host and in the CLI), misuse of every CLI command (exit 2 with usage), malformed, binary and
# huge kernel files, and cache directories that must not be trusted.
uwjit=$1
host=$2
src=$3
. "$(dirname "$0")/lib.sh"
kernel=$src/examples/kernels/diffusion.cpp
quote() { sed 's/[][\.*^$()+?{}|]/\\&/g' <<<"$1"; } # a fixed string as an extended regex

# --- Every variable's bad values: the host stops with the message, the CLI exits 2 -----------
bad_value() { # VARIABLE VALUE ACCEPTED
  local message
  message=$(quote "$1: unrecognised value \"$2\" (accepted: $3)")
  run env "$1=$2" "$host"
  expect_code 1 "$1=$2 in a host"
  expect_err "^kernel_host: error: $message\$" "$1=$2: the host names the variable and the accepted values"
  run env "$1=$2" "$uwjit" compile "$kernel"
  expect_code 2 "$1=$2 in the CLI"
  expect_err "^uwjit: error: $message\$" "$1=$2: the CLI names the variable and the accepted values"
}
booleans="0, false, no, off, 1, true, yes, on"
sizes="a whole number of bytes with an optional suffix K, M, G or T, e.g. 500M or 2G, at most 18446744073709551615"
durations="a non-negative number with an optional unit s, m, h or d, e.g. 30, 1.5, 10m, 7d, at most 1000000000 s"
bad_value UWJIT_CACHE maybe "$booleans"
bad_value UWJIT_CACHE 2 "$booleans"
bad_value UWJIT_CACHE_MAX_SIZE big "$sizes"
bad_value UWJIT_CACHE_MAX_SIZE -5M "$sizes"
bad_value UWJIT_CACHE_MAX_SIZE 5X "$sizes"
bad_value UWJIT_CACHE_MAX_SIZE 99999999999T "$sizes"
bad_value UWJIT_LOCK_TIMEOUT soon "$durations"
bad_value UWJIT_LOCK_TIMEOUT -1 "$durations"
bad_value UWJIT_LOCK_TIMEOUT 5w "$durations"
bad_value UWJIT_LOCK_TIMEOUT 99999999999999999999 "$durations"
# The edges the messages state: accepted at the edge, refused just beyond it.
bad_value UWJIT_LOCK_TIMEOUT 1000000000.001 "$durations"
bad_value UWJIT_CACHE_MAX_SIZE 18446744073709551616 "$sizes"
bad_value UWJIT_CACHE_MAX_SIZE 16777216T "$sizes"
bad_value UWJIT_CACHE_MAX_SIZE 0.5 "$sizes"
for edge in UWJIT_LOCK_TIMEOUT=1000000000 UWJIT_LOCK_TIMEOUT=0 \
  UWJIT_CACHE_MAX_SIZE=18446744073709551615 UWJIT_CACHE_MAX_SIZE=16777215T UWJIT_CACHE_MAX_SIZE=0; do
  run env "$edge" "$uwjit" env
  expect_code 0 "$edge (an edge the message states) is accepted"
done
bad_value UWJIT_LOG_LEVEL loud "trace, debug, info, warn, error, off"
bad_value UWJIT_DEBUG maybe "$booleans"
bad_value UWJIT_PERF maybe "$booleans"
bad_value UWJIT_CACHE_TRUST_SHARED sure "$booleans"
# The cache subcommands read the cache variables too.
run env UWJIT_CACHE_MAX_SIZE=big "$uwjit" cache stats
expect_code 2 "UWJIT_CACHE_MAX_SIZE=big in cache stats"
expect_err 'UWJIT_CACHE_MAX_SIZE: unrecognised value "big"' "cache stats names the variable"
run env UWJIT_CACHE=maybe "$uwjit" cache list
expect_code 2 "UWJIT_CACHE=maybe in cache list"

# An unwritable dump directory costs the dumps, never the run.
echo "a file" >"$sandbox/file"
UWJIT_DUMP_DIR=$sandbox/file/dumps run "$host"
expect_code 0 "UWJIT_DUMP_DIR under a regular file: the host runs"
[ "$(json 'd["ok"]' <<<"$out")" = True ] && ok || fail "UWJIT_DUMP_DIR unusable: the kernels compute right"
expect_err "UWJIT_DUMP_DIR $(quote "$sandbox/file/dumps"): .*; no dumps" "an unusable UWJIT_DUMP_DIR is named with the reason"
mkdir -p "$sandbox/dumps"
UWJIT_DUMP_DIR=$sandbox/dumps run "$host" --first 7
key=$(json 'd["keys"]["7"]' <<<"$out")
rm -rf "$sandbox/dumps"/*
mkdir "$sandbox/dumps/host-$key.s" # a directory where a dump file goes
UWJIT_DUMP_DIR=$sandbox/dumps UWJIT_CACHE=0 run "$host" --first 7
expect_code 0 "a dump file that cannot be written: the host runs"
expect_err "cannot write $(quote "$sandbox/dumps/host-$key.s")" "a dump that cannot be written is named"
# A test-only variable with a typo says so instead of silently testing nothing.
UWJIT_CACHE_DIR=$sandbox/fault UWJIT_TEST_FAULT=kill@nowhere run "$host"
expect_code 0 "an unknown UWJIT_TEST_FAULT point"
expect_err 'UWJIT_TEST_FAULT: unrecognised value "kill@nowhere"' "UWJIT_TEST_FAULT names a bad point"

# --- Cache directories that must not be trusted ----------------------------------------------
shared=$sandbox/shared
mkdir -m 0777 "$shared"
UWJIT_CACHE_DIR=$shared run "$host"
expect_code 0 "a world-writable cache directory: the host runs"
[ "$(json 'd["ok"], d["compiles"], d["published"], d["cache_dir"]' <<<"$out")" = "(True, 1, 0, '')" ] \
  && ok || fail "a world-writable cache directory is refused: memory only"
expect_err "is refused: it is writable by other users \(mode 0777\); whoever can write it can run code in this process" \
  "the refusal says why"
[ "$(grep -c 'is refused' <<<"$err")" = 1 ] && ok || fail "the refusal is one warning"
[ -z "$(ls -A "$shared")" ] && ok || fail "nothing is written into a refused directory"
UWJIT_CACHE_DIR=$shared run "$uwjit" cache list
expect_code 1 "cache list on a refused directory"
expect_err "^uwjit: error: cache directory \"$(quote "$shared")\" is refused" "the CLI says the directory is refused"
UWJIT_CACHE_DIR=$shared UWJIT_CACHE_TRUST_SHARED=1 run "$host"
[ "$(json 'd["ok"], d["published"]' <<<"$out")" = "(True, 1)" ] && ok || fail "UWJIT_CACHE_TRUST_SHARED=1 accepts a shared directory"
chmod 0770 "$shared"
UWJIT_CACHE_DIR=$shared run "$host"
expect_err "is refused: it is writable by its group \(mode 0770\)" "a group-writable directory is refused"
# Another user's directory: as root, nobody (lib.sh) is refused one of root's; another user is
# refused the file system's root, root's.
if [ ${#as_nobody[@]} -gt 0 ]; then
  theirs=$sandbox/root-owned
  mkdir -m 0755 "$theirs"
  chmod 0755 "$sandbox"
  me=65534
else
  theirs=/
  me=$(id -u)
fi
owner=$(stat -c %u "$theirs")
UWJIT_CACHE_DIR=$theirs run "${as_nobody[@]}" "$host"
expect_code 0 "another user's cache directory: the host runs"
expect_err "is refused: it is owned by uid $owner, not by this user \\(uid $me\\)" "another user's directory is refused"
[ "$owner" != "$me" ] && ok || fail "$theirs belongs to this user: no directory of another user to refuse"
chmod 0700 "$sandbox"

# --- CLI misuse: every command exits 2 with the message, its usage and where to read more ---
export UWJIT_CACHE_DIR=$sandbox/misuse-cache
misuse() { # "MESSAGE REGEX" COMMAND ARGUMENTS...
  local message=$1 command=$2
  shift 2
  run "$uwjit" "$@"
  expect_code 2 "uwjit $*"
  expect_err "^uwjit: error: $command: $message" "uwjit $*: names the fault"
  expect_err "^usage: uwjit $command" "uwjit $*: prints the usage"
  expect_err "^\(run 'uwjit $command --help' for details\)" "uwjit $*: points at --help"
}
misuse 'missing argument FILE' compile compile
misuse 'unexpected argument "b\.cpp"' compile compile a.cpp b.cpp
misuse '--entry needs a value \(NAME\)' compile compile "$kernel" --entry
misuse '--json takes no value' compile compile "$kernel" --json=yes
misuse '-O: expected 0, 1, 2 or 3, got "fast"' compile compile "$kernel" -Ofast
misuse 'unknown option --bogus' env env --bogus
misuse 'unexpected argument "extra"' env env extra
misuse 'unknown option --bogus' "cache dir" cache dir --bogus
misuse 'unexpected argument "extra"' "cache list" cache list extra
misuse 'unknown option --all' "cache stats" cache stats --all
misuse 'missing argument KEY-PREFIX' "cache inspect" cache inspect
misuse 'key prefix "ZZ": expected 1 to 16 lowercase hex digits' "cache inspect" cache inspect ZZ
misuse 'key prefix "\.\./x": expected 1 to 16 lowercase hex digits' "cache inspect" cache inspect ../x
misuse 'unexpected argument "b"' "cache inspect" cache inspect a b
misuse 'missing argument KEY-B' "cache explain" cache explain abc
misuse 'key prefix "0123456789abcdef0": expected' "cache explain" cache explain abc 0123456789abcdef0
misuse '--fix takes no value' "cache verify" cache verify --fix=yes
misuse 'unexpected argument "now"' "cache verify" cache verify now
misuse 'give --max-size SIZE or --older-than AGE' "cache prune" cache prune
misuse '--max-size: unrecognised value "big"' "cache prune" cache prune --max-size big
misuse '--older-than: unrecognised value "soon"' "cache prune" cache prune --older-than soon
misuse '--max-size needs a value \(SIZE\)' "cache prune" cache prune --max-size
misuse 'unknown option --force' "cache wipe" cache wipe --force
misuse 'unexpected argument "all"' "cache wipe" cache wipe all
misuse 'unknown option --stpes \(did you mean --steps\?\)' run run heat --stpes 3
misuse 'unknown option --entyr \(did you mean --entry\?\)' compile compile "$kernel" --entyr main
misuse 'unknown node type "haet" \(built-in: heat, pipe-flow, fvm, mlp\) \(did you mean heat\?\)' run run haet
misuse '--set contrst=2: unknown param "contrst" \(known: .*\) \(did you mean contrast\?\)' run run heat --set contrst=2
misuse 'heat: param "courant" = 0.5 is out of range \[1e-12, 0.166667\]' run run heat --set courant=0.5
misuse 'heat: param "kappa" = 1e-320 is out of range \[1e-100, 1e\+12\]' run run heat --set kappa=1e-320
misuse '--size: expected N or NXxNYxNZ \(positive integers\), got "0"' run run heat --size 0
misuse '--steps: expected a whole number >= 0, got "-1"' run run heat --steps -1
misuse '--exchange: expected sync or overlap, got "async"' run run heat --exchange async
misuse '--restore takes the params from the checkpoint' run run heat --restore x.ckpt --size 8
run "$uwjit" rnu heat
expect_code 2 "a mistyped command"
expect_err '^uwjit: error: unknown command "rnu" \(did you mean run\?\)$' "a mistyped command gets a suggestion"
expect_err '^usage: uwjit ' "a mistyped command prints the usage"
run "$uwjit" cache stast
expect_code 2 "a mistyped cache subcommand"
expect_err '^uwjit: error: cache: unknown subcommand "stast" \(did you mean stats\?\)$' "a mistyped subcommand gets a suggestion"
run "$uwjit" run heat --frobnicate
expect_err '^uwjit: error: run: unknown option --frobnicate$' "no suggestion when nothing is close"
# "uwjit help COMMAND" is "uwjit COMMAND --help".
for command in compile env run cache "cache prune" "cache inspect"; do
  run "$uwjit" help $command
  help_text=$out
  help_code=$code
  run "$uwjit" $command --help
  [ "$help_code" = 0 ] && [ "$code" = 0 ] && [ -n "$out" ] && [ "$help_text" = "$out" ] && ok ||
    fail "uwjit help $command equals uwjit $command --help"
done
run "$uwjit" help rnu
expect_code 2 "help for a mistyped command"
expect_err 'unknown command "rnu" \(did you mean run\?\)' "help for a mistyped command gets a suggestion"
run "$uwjit" cache frob
expect_code 2 "an unknown cache subcommand"
expect_err '^uwjit: error: cache: unknown subcommand "frob"' "the unknown subcommand is named"
expect_err '^  verify \[--fix\]' "an unknown cache subcommand lists the subcommands"
run "$uwjit" --bogus
expect_code 2 "an unknown global option"
expect_err 'unknown command "--bogus"' "an unknown global option is named"
expect_err '^usage: uwjit' "an unknown global option prints the usage"
# Misuse is found before anything is touched: no cache directory appears.
[ ! -e "$UWJIT_CACHE_DIR" ] && ok || fail "misuse creates no cache directory"
# A key prefix that names no entry is a misuse too: the (sub)command's usage line follows.
run "$uwjit" cache explain 0 1
expect_code 2 "cache explain of keys not in the cache"
expect_err '^uwjit: error: (the cache is empty|no cache entry has a key starting with "0")$' "the missing key is named"
expect_err '^usage: uwjit cache explain KEY-A KEY-B$' "the subcommand's usage line follows"
expect_err "^\(run 'uwjit cache explain --help' for details\)$" "and where to read more"

# --- Malformed, binary and huge kernel files: diagnostics, never a crash ----------------------
printf '' >"$sandbox/empty.cpp"
run "$uwjit" compile "$sandbox/empty.cpp"
expect_code 1 "an empty kernel file"
expect_err "^uwjit: error: .*kernel" "an empty kernel file: the missing entry is reported"
python3 -c "
import random, sys
rng = random.Random(7)
sys.stdout.buffer.write(bytes(rng.randrange(256) for _ in range(3 << 20)))" >"$sandbox/garbage.cpp"
run "$uwjit" compile "$sandbox/garbage.cpp"
expect_code 1 "3 MB of binary garbage"
expect_err '^uwjit: error: kernel does not compile:$' "binary garbage: a compile error"
expect_err "^$sandbox/garbage\.cpp:[0-9]+:[0-9]+: error: " "binary garbage: clang's diagnostics"
expect_err 'too many errors emitted' "binary garbage: the diagnostics are bounded"
[ "${#err}" -lt 100000 ] && ok || fail "binary garbage: the message stays short (${#err} bytes)"
python3 -c "
import sys
sys.stdout.write('lorem ipsum dolor sit amet ' * (4 << 16))" >"$sandbox/words.cpp"
run "$uwjit" compile "$sandbox/words.cpp"
expect_code 1 "7 MB of text that is not C++"
expect_err "^$sandbox/words\.cpp:1:1: error: unknown type name 'lorem'" "text that is not C++: the first error is at 1:1"
{
  printf '// '
  head -c $((5 << 20)) /dev/zero | tr '\0' 'x'
  printf '\n'
  cat "$kernel"
} >"$sandbox/huge.cpp"
run "$uwjit" compile "$sandbox/huge.cpp" --json -O0
expect_code 0 "a 5 MB kernel file (a long comment) compiles"
run "$uwjit" compile "$sandbox/huge.cpp" --json -O0
[ "$(json 'd["tier"]' <<<"$out")" = disk ] && ok || fail "a 5 MB kernel is cached and served from disk"
printf 'extern "C" int kernel(const uwjit_kernel_args* a) {\n  return a->nope;\n}\n' >"$sandbox/member.cpp"
run "$uwjit" compile "$sandbox/member.cpp"
expect_code 1 "a kernel using a missing member"
expect_err "$sandbox/member\.cpp:2:13: error: no member named 'nope'" "a missing member is reported at its line"

finish
