#!/usr/bin/env bash
# CLI suite: a cache directory where flock(2) is refused, as on a shared file system without a
# lock manager (NFS without lockd: ENOLCK; some FUSE and network file systems: EINVAL,
# EOPNOTSUPP), simulated by a stand-in flock loaded with LD_PRELOAD. The cache degrades to no
# cross-process single flight: one warning, never a failure; entries are still whole (written to
# a temporary, renamed) and verified when read.
uwjit=$1
shim=$2
. "$(dirname "$0")/lib.sh"
# Under AddressSanitizer its runtime must come first among the preloaded libraries.
preload=$shim
libasan=$(ldd "$uwjit" | awk '/libasan/ { print $3 }')
[ -n "$libasan" ] && preload=$libasan:$shim

for code in ENOLCK EINVAL EOPNOTSUPP; do
  number=$(python3 -c "import errno; print(errno.$code)")
  cache=$sandbox/cache-$code
  UWJIT_CACHE_DIR=$cache LD_PRELOAD=$preload UWJIT_TEST_FLOCK_ERRNO=$number \
    run "$uwjit" run heat --size 12 --steps 2 --output "$sandbox/out" --json
  expect_code 0 "$code: a cold run goes on without locks"
  [ "$(json 'd["compiles"], d["kernels"][0]["tier"]' <<<"$out")" = "(1, 'compiled')" ] && ok ||
    fail "$code: compiled"
  expect_err "cannot lock entries in $cache \(cannot lock \"[0-9a-f]{16}\.lock\": .*\); running unlocked: processes may compile the same kernel more than once" \
    "$code: the warning says why and what it costs"
  [ "$(grep -c 'warn' <<<"$err")" = 1 ] && ok || fail "$code: one warning"
  UWJIT_CACHE_DIR=$cache LD_PRELOAD=$preload UWJIT_TEST_FLOCK_ERRNO=$number \
    run "$uwjit" run heat --size 12 --steps 2 --output "$sandbox/out" --json
  [ "$(json 'd["compiles"], d["kernels"][0]["tier"]' <<<"$out")" = "(0, 'disk')" ] && ok ||
    fail "$code: what was published unlocked serves the next run"
done

# Four processes racing on one cold kernel without locks: each may compile it, all compute, and
# the entry each publishes replaces the last whole (rename), so the cache verifies clean.
race=$sandbox/race
for i in 1 2 3 4; do
  UWJIT_CACHE_DIR=$race LD_PRELOAD=$preload "$uwjit" run pipe-flow --size 12 --steps 2 \
    --output "$sandbox/race-out-$i" --json >"$sandbox/race.$i" 2>"$sandbox/race.err.$i" &
done
wait
python3 - "$sandbox"/race.? <<'PY' && ok || fail "four racing processes without locks all compute"
import json, sys
reports = [json.load(open(name)) for name in sys.argv[1:]]
assert len(reports) == 4 and all(r["errors"] == [] for r in reports), reports
assert 1 <= sum(r["compiles"] for r in reports) <= 4, [r["compiles"] for r in reports]
assert len({r["kernels"][0]["key"] for r in reports}) == 1
PY
UWJIT_CACHE_DIR=$race run "$uwjit" cache verify
expect_code 0 "the cache the racing processes wrote unlocked verifies clean"
expect_out '^1 entries checked, 0 bad, 0 orphaned files' "one whole entry"

finish
