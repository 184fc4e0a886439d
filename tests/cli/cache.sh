#!/usr/bin/env bash
# CLI and multi-process suite of the kernel cache: real processes, a fresh cache directory.
uwjit=$1
host=$2
src=$3
. "$(dirname "$0")/lib.sh"
cache=$UWJIT_CACHE_DIR

# --- A second process compiles nothing ---------------------------------------------------------
run "$host"
expect_code 0 "first host run"
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "the first process compiles once"
[ "$(json 'd["published"]' <<<"$out")" = 1 ] && ok || fail "the first process publishes"
run "$host"
expect_code 0 "second host run"
[ "$(json 'd["compiles"], d["disk_hits"]' <<<"$out")" = "(0, 1)" ] && ok || fail "a second process is served from disk"

# --- Every entry's key is SHA-256 of its stored source, the separator and its salt -------------
python3 - "$cache" <<'PY' && ok || fail "stored keys are recomputable from source and salt"
import glob, hashlib, json, os, sys
entries = glob.glob(os.path.join(sys.argv[1], "*.json"))
entries = [e for e in entries if not e.endswith("stats.json")]
assert entries
for manifest_path in entries:
    m = json.load(open(manifest_path))
    source = open(manifest_path[:-5] + ".cpp", "rb").read()
    key = hashlib.sha256(source + b"\n---\n" + m["salt"].encode()).hexdigest()[:16]
    assert key == m["key"] == os.path.basename(manifest_path)[:-5], (key, m["key"])
    obj = open(manifest_path[:-5] + ".o", "rb").read()
    assert hashlib.sha256(obj).hexdigest() == m["object_sha256"] and len(obj) == m["object_size"]
    for part in ("uwjit=", "|llvm=", "|triple=", "|cpu=", "|features=", "|opt=", "|flags="):
        assert part in m["salt"], part
PY
[ "$(stat -c %a "$cache")" = 700 ] && ok || fail "the cache directory is created 0700"
grep -q '^Signature: 8a477f597d28d172789f06886806bc55' "$cache/CACHEDIR.TAG" && ok || fail "the directory is marked with CACHEDIR.TAG"

# --- UWJIT_CACHE ------------------------------------------------------------------------------
UWJIT_CACHE=0 UWJIT_CACHE_DIR="$sandbox/off" run "$host"
expect_code 0 "UWJIT_CACHE=0 still runs"
[ ! -e "$sandbox/off" ] && ok || fail "UWJIT_CACHE=0 writes nothing"
UWJIT_CACHE=0 UWJIT_CACHE_DIR="$sandbox/off" run "$host"
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "UWJIT_CACHE=0: every process compiles"
UWJIT_CACHE=maybe run "$host"
expect_code 1 "UWJIT_CACHE=maybe in a host"
expect_err 'UWJIT_CACHE: unrecognised value "maybe" \(accepted: 0, false, no, off, 1, true, yes, on\)' "UWJIT_CACHE=maybe names the variable and the accepted values"
UWJIT_CACHE=maybe run "$uwjit" compile "$src/examples/kernels/diffusion.cpp"
expect_code 2 "UWJIT_CACHE=maybe in the CLI"
expect_err 'UWJIT_CACHE: unrecognised value' "the CLI names the variable"

# --- XDG precedence, the same function in CLI and library --------------------------------------
(unset UWJIT_CACHE_DIR; XDG_CACHE_HOME="$sandbox/xdg" run "$uwjit" cache dir; echo "$out") >"$sandbox/xdg.out"
grep -q "^$sandbox/xdg/uwjit$" "$sandbox/xdg.out" && ok || fail "XDG_CACHE_HOME/uwjit is used without UWJIT_CACHE_DIR"
(unset UWJIT_CACHE_DIR; XDG_CACHE_HOME="$sandbox/xdg" run "$host"; echo "$out") >"$sandbox/xdg-host.out"
grep -q "\"cache_dir\": \"$sandbox/xdg/uwjit\"" "$sandbox/xdg-host.out" && ok || fail "the library resolves the same directory as the CLI"
(unset UWJIT_CACHE_DIR XDG_CACHE_HOME; HOME="$sandbox/home" run "$uwjit" cache dir; echo "$out") >"$sandbox/home.out"
grep -q "^$sandbox/home/.cache/uwjit$" "$sandbox/home.out" && ok || fail "~/.cache/uwjit is the last resort"

# --- Corruption is detected, counted, removed and recompiled -----------------------------------
key=$(json 'd[0]["key"]' <<<"$("$uwjit" cache list --json)")
corrupt_and_heal() { # NAME COMMAND...: corrupt, then the next run recompiles, the one after hits
  local name=$1
  shift
  "$@"
  run "$host"
  [ "$code" -eq 0 ] && [ "$(json 'd["ok"], d["rejected"] + 0 >= 0, d["compiles"]' <<<"$out")" = "(True, True, 1)" ] \
    && ok || fail "$name: the next run recompiles and computes right"
  run "$host"
  [ "$(json 'd["compiles"], d["disk_hits"]' <<<"$out")" = "(0, 1)" ] && ok || fail "$name: healed, the run after is a disk hit"
}
corrupt_and_heal "truncated object" truncate -s 100 "$cache/$key.o"
corrupt_and_heal "flipped byte" python3 -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x40; open(p,'wb').write(b)" "$cache/$key.o"
corrupt_and_heal "missing object" rm "$cache/$key.o"
corrupt_and_heal "corrupt manifest" sh -c "echo '{not json' > '$cache/$key.json'"
corrupt_and_heal "manifest of another format" python3 -c "
import json,sys; p=sys.argv[1]; m=json.load(open(p)); m['format']=99; json.dump(m,open(p,'w'))" "$cache/$key.json"
corrupt_and_heal "foreign salt" python3 -c "
import json,sys; p=sys.argv[1]; m=json.load(open(p)); m['salt']=m['salt'].replace('cpu=','cpu=other'); json.dump(m,open(p,'w'))" "$cache/$key.json"
[ "$(json 'd["counters"]["rejected"]' <<<"$("$uwjit" cache stats --json)")" -ge 5 ] && ok || fail "rejections are counted in the persisted stats"

# --- verify finds what is bad and --fix removes it ---------------------------------------------
run "$uwjit" cache verify
expect_code 0 "verify on a sound cache"
truncate -s 10 "$cache/$key.o"
run "$uwjit" cache verify
expect_code 1 "verify finds a truncated object"
expect_out "$key  BAD" "verify names the bad key"
run "$uwjit" cache verify --fix --json
expect_code 0 "verify --fix"
[ ! -e "$cache/$key.json" ] && ok || fail "verify --fix removes the bad entry"
run "$host"
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "after --fix the entry is compiled again"

# --- verify --fix says when something bad is left ---------------------------------------------
mkdir "$cache/fedcba9876543210.o"
run "$uwjit" cache verify
expect_code 1 "verify finds a directory in an entry's place"
expect_out "fedcba9876543210.o  NOT A FILE" "verify names the foreign object"
run "$uwjit" cache verify --fix
expect_code 1 "verify --fix exits 1 when something bad is left"
[ -d "$cache/fedcba9876543210.o" ] && ok || fail "verify --fix never removes a directory"
rmdir "$cache/fedcba9876543210.o"

# --- A size limit that can never hold an entry says so ----------------------------------------
UWJIT_CACHE_DIR="$sandbox/tiny" UWJIT_CACHE_MAX_SIZE=1K run "$host"
expect_code 0 "a cache limit below one entry: the host runs"
expect_err 'cache size limit \(1024 bytes, UWJIT_CACHE_MAX_SIZE\) is smaller than entry [0-9a-f]{16} alone' "a cache limit below one entry is a warning"
UWJIT_CACHE_DIR="$sandbox/tiny" run "$host"
UWJIT_CACHE_DIR="$sandbox/tiny" run "$uwjit" cache prune --max-size 1K
expect_code 0 "prune below one entry"
expect_err 'larger than --max-size' "prune warns about a limit below one entry"

# --- uwjit owns only what it made: a directory of user files is left as it was ----------------
listing() { find "$1" -mindepth 1 -maxdepth 1 ! -name uwjit -printf '%f %s %T@ %m\n' | sort; }
user_files() { # DIR: plants a user's files, none of them uwjit's
  mkdir -p "$1"
  echo '{"mine": true}' >"$1/stats.json"
  echo draft >"$1/.tmp.report.1234.o"
  echo notes >"$1/notes.txt"
  touch -d '2 hours ago' "$1/.tmp.report.1234.o" "$1/stats.json" "$1/notes.txt"
  listing "$1" >"$sandbox/before.txt"
}
untouched() { # DIR WHAT
  listing "$1" >"$sandbox/after.txt"
  diff "$sandbox/before.txt" "$sandbox/after.txt" >/dev/null && [ ! -e "$1/CACHEDIR.TAG" ] \
    && [ "$(cat "$1/stats.json")" = '{"mine": true}' ] && ok || fail "$2: the user's files are untouched"
}
user_files "$sandbox/work"
(cd "$sandbox/work" && UWJIT_CACHE_DIR=. run "$host" && echo "$out") >"$sandbox/dot.out"
grep -q "\"cache_dir\": \"$sandbox/work/uwjit\"" "$sandbox/dot.out" && ok || fail "UWJIT_CACHE_DIR=. holding files uses ./uwjit"
for cmd in "cache verify --fix" "cache prune --max-size 0" "cache wipe"; do
  (cd "$sandbox/work" && UWJIT_CACHE_DIR=. $uwjit $cmd >/dev/null 2>&1)
  untouched "$sandbox/work" "UWJIT_CACHE_DIR=. and $cmd"
done
(cd "$sandbox/work" && UWJIT_CACHE_DIR=. run "$uwjit" cache dir && echo "$out") >"$sandbox/dot-dir.out"
grep -q "^$sandbox/work/uwjit$" "$sandbox/dot-dir.out" && ok || fail "cache dir names the uwjit/ subdirectory it uses"
user_files "$sandbox/fakehome"
(unset XDG_CACHE_HOME; HOME="$sandbox/fakehome" UWJIT_CACHE_DIR="$sandbox/fakehome" run "$host"; HOME="$sandbox/fakehome" UWJIT_CACHE_DIR="$sandbox/fakehome" "$uwjit" cache wipe >/dev/null 2>&1)
untouched "$sandbox/fakehome" "UWJIT_CACHE_DIR=\$HOME"
[ -e "$sandbox/fakehome/uwjit/CACHEDIR.TAG" ] && ok || fail "the cache lives in \$HOME/uwjit, marked"

# --- Temporaries of killed writers are cleaned, young ones kept --------------------------------
touch -d '2 hours ago' "$cache/.uwjit-tmp.0123456789abcdef.999.00000000deadbeef.o"
touch "$cache/.uwjit-tmp.0123456789abcdef.998.00000000deadbeef.o"
rm -f "$cache/cleanup.stamp"
run "$host"
[ ! -e "$cache/.uwjit-tmp.0123456789abcdef.999.00000000deadbeef.o" ] && ok || fail "an old temporary is cleaned"
[ -e "$cache/.uwjit-tmp.0123456789abcdef.998.00000000deadbeef.o" ] && ok || fail "a young temporary is kept"
rm -f "$cache/.uwjit-tmp.0123456789abcdef.998.00000000deadbeef.o"

# --- Four processes racing on one cold key compile once ----------------------------------------
race=$sandbox/race
for i in 1 2 3 4; do UWJIT_CACHE_DIR=$race "$host" --first 42 >"$sandbox/race.$i" 2>&1 & done
wait
total=$(cat "$sandbox"/race.? | python3 -c "import json,sys; print(sum(json.loads(l)['compiles'] for l in sys.stdin if l.startswith('{')))")
[ "$total" = 1 ] && ok || { out=$(cat "$sandbox"/race.?); fail "four racing processes compile once (compiled $total times)"; }
oks=$(grep -c '"ok": true' "$sandbox"/race.? | awk -F: '{s+=$2} END {print s}')
[ "$oks" = 4 ] && ok || fail "all four racing processes compute right"

# --- An unwritable cache directory never fails the host ----------------------------------------
ro=$(mktemp -d /tmp/uwjit-ro.XXXXXX)
chmod 0555 "$ro"
# Root writes into read-only directories: as root these cases run as user nobody (lib.sh).
# A read-only site cache kept by another user is trusted only when the user says so.
UWJIT_CACHE_DIR=$ro UWJIT_CACHE_TRUST_SHARED=1 run "${as_nobody[@]}" "$host"
expect_code 0 "a read-only cache directory: the host runs"
[ "$(json 'd["ok"], d["compiles"], d["publish_failed"]' <<<"$out")" = "(True, 1, 1)" ] && ok || fail "a read-only directory: compiled, publish failed softly"
expect_err 'cannot be written .*every job compiles again' "a read-only directory says that every job compiles again"
[ "$(grep -c 'warn' <<<"$err")" = 1 ] && ok || fail "a read-only directory is one warning"
# Untrusted, another user's read-only directory serves from memory only: as root, nobody is
# refused root's $ro; another user is refused the file system's root, root's.
theirs=$ro
[ ${#as_nobody[@]} -gt 0 ] || theirs=/
owner=$(stat -c %u "$theirs")
UWJIT_CACHE_DIR=$theirs run "${as_nobody[@]}" "$host"
[ "$code" = 0 ] && [ "$(json 'd["ok"], d["publish_failed"], d["cache_dir"]' <<<"$out")" = "(True, 0, '')" ] \
  && ok || fail "another user's read-only directory, untrusted: memory only"
expect_err "is refused: it is owned by uid $owner, not by this user" "another user's directory is refused unless trusted"
rm -rf "$ro"
UWJIT_CACHE_DIR=/proc/version/cache run "$host"
expect_code 0 "a cache directory that cannot exist: the host runs memory-only"

# --- The CLI --------------------------------------------------------------------------------
run "$uwjit" cache list --json
expect_code 0 "cache list --json"
python3 -c '
import json, sys
for e in json.load(sys.stdin):
    assert set(e) >= {"key", "origin", "entry", "object_size", "total_size", "created_utc", "last_used_utc", "compile_ms", "uwjit_version"}
' <<<"$out" && ok || fail "cache list --json has the documented fields"
first_key=$(json 'd[0]["key"]' <<<"$out")
run "$uwjit" cache inspect "${first_key:0:6}" --source
cmp -s <(printf '%s\n' "$out") "$cache/$first_key.cpp" && ok || fail "inspect --source prints the stored source"
run "$uwjit" cache inspect "${first_key:0:6}" --json
[ "$(json 'd["key"]' <<<"$out")" = "$first_key" ] && ok || fail "inspect --json prints the manifest"
run "$uwjit" cache inspect "${first_key:0:6}" --asm
expect_out '^uwjit_'"$first_key"':' "inspect --asm shows the entry's disassembly"
run "$uwjit" cache inspect "${first_key:0:6}" --source --asm
OUT=$out python3 - "$cache/$first_key.cpp" "$first_key" <<'PY' && ok || fail "inspect --source --asm prints the source, then the disassembly"
import sys
import os
out, source, key = os.environ["OUT"], open(sys.argv[1]).read(), sys.argv[2]
assert out.startswith(source), "the source comes first"
assert f"\nuwjit_{key}:\n" in out[len(source):], "the disassembly follows"
PY
# Jumps show their target as an address and as the entry's label plus offset (the entry starts at
# offset 0, so both agree); calls to functions outside the object show the function's name.
run "$uwjit" cache inspect "${first_key:0:6}" --asm
OUT=$out python3 - "$first_key" <<'PY' && ok || fail "inspect --asm shows jump targets as addresses with the label"
import os, re, sys
key = sys.argv[1]
jumps = re.findall(r"^[0-9a-f]{6}:\tj\w+\t0x([0-9a-f]+) <uwjit_%s(?:\+0x([0-9a-f]+))?>$" % key,
                   os.environ["OUT"], re.M)
assert jumps, "no jump with its target"
for address, label_offset in jumps:
    assert int(address, 16) == int(label_offset or "0", 16), (address, label_offset)
PY
run "$uwjit" cache inspect "${first_key:0:6}" --source --asm --json
OUT=$out python3 - "$cache/$first_key.cpp" "$first_key" <<'PY' && ok || fail "inspect --json --source --asm gives the manifest, the source and the listing in one object"
import json, os, sys
d = json.loads(os.environ["OUT"])
assert d["key"] == sys.argv[2], d.get("key")
assert d["source"] == open(sys.argv[1]).read(), "the stored source"
assert f"\nuwjit_{sys.argv[2]}:\n" in d["asm"], "the listing"
PY
# A manifest is a file: an edited origin carrying terminal escapes is shown escaped, never sent
# to the terminal as it is.
cp -a "$cache" "$sandbox/escapes"
python3 - "$sandbox/escapes/$first_key.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["origin"] = "kernel\x1b]0;retitled\x07\x1b[2J"
json.dump(m, open(sys.argv[1], "w"))
PY
for command in "list" "inspect ${first_key:0:6}"; do
  UWJIT_CACHE_DIR="$sandbox/escapes" run "$uwjit" cache $command
  [[ "$out" != *$'\x1b'* && "$out" != *$'\x07'* ]] && ok || fail "cache $command sends no control byte of a manifest to the terminal"
  expect_out 'kernel\\x1b\]0;retitled\\x07\\x1b\[2J' "cache $command shows the escapes as text"
done
rm -rf "$sandbox/escapes"
cat >"$sandbox/calls.cpp" <<'EOF'
#include <cmath>
extern "C" int kernel(const uwjit_kernel_args* args) {
  const double* x = static_cast<const double*>(args->state_in[0]);
  double* y = static_cast<double*>(args->state_out[0]);
  for (uw_i64 k = 0; k < args->extents[0]; ++k) y[k] = std::sin(x[k]) * 0.25;
  return UWJIT_KERNEL_OK;
}
EOF
run "$uwjit" compile "$sandbox/calls.cpp" --entry kernel --json
run "$uwjit" cache inspect "$(json 'd["key"]' <<<"$out")" --asm
expect_out '^[0-9a-f]{6}:	call\w*	<sin>$' "inspect --asm names the function a call goes to"
expect_out '	# \.LCPI[0-9_]+$' "inspect --asm names the constant an instruction reads"

run "$uwjit" cache inspect zz
expect_code 2 "inspect a malformed prefix"
run "$uwjit" cache inspect 0000000000000000
expect_code 2 "inspect an unknown key"
expect_err 'no cache entry has a key starting with' "an unknown key is explained"

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --json -O2
key_o2=$(json 'd["key"]' <<<"$out")
run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --json -O3
key_o3=$(json 'd["key"]' <<<"$out")
run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --json -O3
[ "$(json 'd["tier"]' <<<"$out")" = disk ] && ok || fail "uwjit compile says the disk tier served it"
run "$uwjit" cache explain "$key_o2" "$key_o3"
expect_code 0 "cache explain"
expect_out '^  opt: A=2  B=3' "explain names the changed salt component"
sed 's/0.1 \* args->dt/0.25 * args->dt/' "$src/examples/kernels/diffusion.cpp" >"$sandbox/other.cpp"
run "$uwjit" compile "$sandbox/other.cpp" --json -O3
key_other=$(json 'd["key"]' <<<"$out")
run "$uwjit" cache explain "$key_o3" "$key_other"
expect_out 'salt: identical' "explain: same salt"
expect_out '^  - A line [0-9]+: .*0\.1 \* args->dt' "explain shows the removed source line"
expect_out '^  \+ B line [0-9]+: .*0\.25 \* args->dt' "explain shows the added source line"
# A stored source is a file too: explain shows an escape in it as text.
cp -a "$cache" "$sandbox/escapes"
sed -i 's|0.25 \* args->dt|0.25 * args->dt /* \x1b[2J */|' "$sandbox/escapes/$key_other.cpp"
UWJIT_CACHE_DIR="$sandbox/escapes" run "$uwjit" cache explain "$key_o3" "$key_other"
[[ "$out" != *$'\x1b'* ]] && ok || fail "cache explain sends no control byte of a stored source to the terminal"
expect_out '^  \+ B line [0-9]+: .*0\.25 \* args->dt /\* \\x1b\[2J \*/' "cache explain shows the escape as text"
UWJIT_CACHE_DIR="$sandbox/escapes" run "$uwjit" cache inspect "$key_other" --source
[[ "$out" != *$'\x1b'* ]] && grep -qF '0.25 * args->dt /* \x1b[2J */' <<<"$out" && ok ||
  fail "cache inspect --source shows an escape in a stored source as text"
rm -rf "$sandbox/escapes"

run "$uwjit" cache stats --json
[ "$(json 'd["entries"] > 0 and d["counters"]["published"] > 0' <<<"$out")" = True ] && ok || fail "cache stats --json has entries and counters"

# The hit ratio: where requests were served, over every process that used the cache.
ratio_cache="$sandbox/ratio"
UWJIT_CACHE_DIR=$ratio_cache run "$uwjit" cache stats --json
[ "$(json '[d["hit_ratio"][k] for k in ("requests", "hit", "memory", "disk", "compiles")]' <<<"$out")" = "[0, None, None, None, None]" ] && ok || fail "cache stats --json: no requests, no ratio"
UWJIT_CACHE_DIR=$ratio_cache run "$host" --kernels 2
UWJIT_CACHE_DIR=$ratio_cache run "$host" --kernels 3
UWJIT_CACHE_DIR=$ratio_cache run "$uwjit" cache stats --json
[ "$(json '[d["hit_ratio"][k] for k in ("requests", "hit", "memory", "disk", "compiles")]' <<<"$out")" = "[5, 0.4, 0.0, 0.4, 0.6]" ] && ok || fail "cache stats --json: 2 disk hits and 3 compiles of 5 requests"
UWJIT_CACHE_DIR=$ratio_cache run "$uwjit" cache stats
expect_out '^hit ratio   40\.0 % of 5 requests \(memory 0\.0 %, disk 40\.0 %, compiled 60\.0 %\)$' "cache stats prints the hit ratio"
# Counters at their ceiling (each saturates at 2^64 - 1): the sum saturates too, no share above 1.
[ -f "$ratio_cache/stats.json" ] && ok || fail "the counters are in $ratio_cache/stats.json"
echo '{"format": 1, "counters": {"memory_hits": 18446744073709551615, "disk_hits": 2, "compiles": 18446744073709551615}}' >"$ratio_cache/stats.json"
UWJIT_CACHE_DIR=$ratio_cache run "$uwjit" cache stats --json
[ "$(json 'd["hit_ratio"]["requests"] == 2**64 - 1 and 0 <= d["hit_ratio"]["compiles"] <= 1 and d["hit_ratio"]["hit"] <= 1' <<<"$out")" = True ] &&
  ok || fail "cache stats: counters at their ceiling give at most 2^64 - 1 requests: $out"

touch -d '3 days ago' "$cache/$key_o2.json"
run "$uwjit" cache prune --older-than 1d --dry-run
expect_out "would evict $key_o2" "prune --dry-run names the stale entry"
[ -e "$cache/$key_o2.o" ] && ok || fail "prune --dry-run deletes nothing"
run "$uwjit" cache prune --older-than 1d
[ ! -e "$cache/$key_o2.o" ] && [ -e "$cache/$key_o3.o" ] && ok || fail "prune evicts only the stale entry"
run "$uwjit" cache prune
expect_code 2 "prune without a criterion"

mkdir -p "$sandbox/unmarked"
touch "$sandbox/unmarked/0123456789abcdef.o"
UWJIT_CACHE_DIR="$sandbox/unmarked" run "$uwjit" cache wipe
expect_code 0 "wipe of a directory holding files that are not uwjit's"
expect_err "no cache directory yet at $sandbox/unmarked/uwjit" "wipe looks only in the uwjit/ subdirectory"
[ -e "$sandbox/unmarked/0123456789abcdef.o" ] && ok || fail "wipe of an unmarked directory deletes nothing"
[ ! -e "$sandbox/unmarked/CACHEDIR.TAG" ] && [ ! -e "$sandbox/unmarked/uwjit" ] && ok || fail "wipe creates nothing in an unmarked directory"
printf 'notes\n' >"$sandbox/a-file"
for sub in list stats verify wipe; do
  UWJIT_CACHE_DIR="$sandbox/a-file" run "$uwjit" cache $sub
  expect_code 1 "cache $sub where a file is the cache directory"
  expect_err "the cache directory $sandbox/a-file is not a directory \\(a file is there\\)" "cache $sub says a file is in the cache's place"
done
[ "$(cat "$sandbox/a-file")" = notes ] && ok || fail "the file in the cache's place is left as it was"
mkdir -p "$sandbox/unmarked/uwjit"
touch "$sandbox/unmarked/uwjit/0123456789abcdef.o"
UWJIT_CACHE_DIR="$sandbox/unmarked" run "$uwjit" cache wipe
[ "$code" -ne 0 ] && ok || fail "wipe refuses when uwjit/ holds files that are not uwjit's either"
expect_err "not uwjit's, and so does" "the refusal says why"
[ -e "$sandbox/unmarked/uwjit/0123456789abcdef.o" ] && ok || fail "a refused wipe deletes nothing"
echo "mine" >"$cache/notes.txt"
run "$uwjit" cache wipe
expect_code 0 "wipe"
[ -e "$cache/notes.txt" ] && ok || fail "wipe keeps files that are not uwjit's"
[ -z "$(ls "$cache" | grep -E '^[0-9a-f]{16}\.')" ] && ok || fail "wipe deletes every entry"

run "$uwjit" cache
expect_code 2 "cache without a subcommand"
run "$uwjit" cache frob
expect_code 2 "an unknown cache subcommand"

finish
