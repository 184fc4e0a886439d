#!/usr/bin/env bash
# Why did a run recompile? Two processes on one machine request the same node's kernel, the
# second with UWJIT_DEBUG=1, so its key changes. Their logs alone say why: the info lines name
# origin, key and the digests of source and salt (same source, different salt), and the debug
# lines carry the salt text, whose components show what changed; `uwjit cache explain` agrees.
# (These checks read log text on purpose: the log lines are what is being delivered.)
#   why_recompiled.sh UWJIT KERNEL_HOST
uwjit=$1
host=$2
. "$(dirname "$0")/../cli/lib.sh"
unset UWJIT_DEBUG UWJIT_DUMP_DIR UWJIT_PERF
export UWJIT_LOG_LEVEL=debug
mkdir -p "$sandbox/run"
cd "$sandbox/run" || exit 1

run "$host"
expect_code 0 "the first process"
log_a=$err
run env UWJIT_DEBUG=1 "$host"
expect_code 0 "the second process, with UWJIT_DEBUG=1"
log_b=$err

python3 - "$log_a" "$log_b" >"$sandbox/report" 2>&1 <<'PY' && ok || fail "the two logs say why the key changed: $(cat "$sandbox/report")"
import re, sys

def parse(log):
    info = re.findall(r"\[info\] compiled key=([0-9a-f]{16}) origin=(\S+) source=([0-9a-f]{16}) "
                      r"salt=([0-9a-f]{16}) in ", log)
    debug = re.findall(r"\[debug\] request key=([0-9a-f]{16}) origin=(\S+) source=([0-9a-f]{16}) "
                       r"salt=([0-9a-f]{16}) salt_text=(.+)$", log, re.M)
    assert len(info) == 1, f"one info line per compile: {info}"
    assert len(debug) == 1, f"one debug line per request: {debug}"
    assert info[0] == debug[0][:4], (info, debug)
    salt = dict(part.split("=", 1) for part in debug[0][4].split("|"))
    return info[0], salt

(key_a, origin_a, source_a, salt_a), components_a = parse(sys.argv[1])
(key_b, origin_b, source_b, salt_b), components_b = parse(sys.argv[2])
assert origin_a == origin_b == "host", (origin_a, origin_b)
assert key_a != key_b, "the key changed"
assert source_a == source_b, "same source digest"
assert salt_a != salt_b, "different salt digest"
changed = sorted(n for n in components_a if components_a[n] != components_b.get(n))
assert changed == ["flags"], changed
added = set(components_b["flags"].split()) - set(components_a["flags"].split())
assert "-g" in added, added
print(key_a, key_b)
PY
read -r key_a key_b <"$sandbox/report"

run "$uwjit" cache explain "$key_a" "$key_b"
expect_code 0 "cache explain of the two keys"
expect_out '^  flags differ: B:-fdebug-compilation-dir=\. B:-g$' "explain names the flags that differ"
expect_out '^source: identical$' "explain: same source"
grep -q '^  opt\|^  features\|^  cpu' <<<"$out" && fail "explain names only the changed component" || ok

# A memory hit logs its request at debug level too, and nothing at info level.
run env UWJIT_LOG_LEVEL=info "$host"
grep -q 'request key=' <<<"$err" && fail "no request lines at info level" || ok
expect_err "disk hit key=$key_a origin=host source=[0-9a-f]{16} salt=[0-9a-f]{16} loaded in" \
  "the info line of a disk hit names key, origin and digests"
finish
