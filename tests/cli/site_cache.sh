#!/usr/bin/env bash
# CLI suite: a read-only site cache beside a writable one (UWJIT_CACHE_SITE_DIR). One account
# (this one) fills a cache with `uwjit warm` and makes it read-only; another (user nobody when
# this suite runs as root) runs with a writable cache of its own and the site cache after it:
# kernels come from the site, nothing there is written, locked, touched or removed, a damaged
# site entry is a miss that stays where it is, and an untrusted one is refused.
uwjit=$1
. "$(dirname "$0")/lib.sh"

base=$(mktemp -d /tmp/uwjit-site.XXXXXX)
trap 'rm -rf "$sandbox" "$base"' EXIT
chmod 0755 "$base"
site=$base/site
mine=$base/mine
mkdir "$mine" "$base/out"
[ ${#as_nobody[@]} -gt 0 ] && chown 65534:65534 "$mine" "$base/out"

# The site's keeper warms it, then makes it read-only for everyone (its owner included).
UWJIT_CACHE_DIR=$site run "$uwjit" warm heat --size 12
expect_code 0 "warm heat into the site cache"
UWJIT_CACHE_DIR=$site run "$uwjit" warm fvm --size 12
expect_code 0 "warm fvm (and its first-step check) into the site cache"
chmod -R a+rX,a-w "$site"
# Names, sizes, modes, owners, modification times and contents: what "never written" means.
snapshot() { (cd "$1" && find . -printf '%p %s %m %u %T@\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
snapshot "$site" >"$sandbox/site.before"

user() { UWJIT_CACHE_DIR=$mine UWJIT_CACHE_SITE_DIR=$1 run "${as_nobody[@]}" "${@:2}"; }

user "$site" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
expect_code 0 "a run with the site cache after its own"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
k = d["kernels"][0]
assert d["compiles"] == 0 and k["tier"] == "disk" and k["served_from"] == sys.argv[2], d
' "$out" "$site" && ok || fail "the kernel comes from the site cache, nothing is compiled"
user "$site" "$uwjit" run fvm --size 12 --steps 2 --output "$base/out" --json
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
k = d["kernels"][0]
assert d["compiles"] == 0 and k["served_from"] == sys.argv[2], d
assert k["first_step_check"]["tier"] == "disk", d
' "$out" "$site" && ok || fail "fvm's kernel and its first-step check come from the site cache"
user "$site" "$uwjit" run fvm --size 12 --steps 2 --output "$base/out"
expect_out "^  fvm  disk .*\(site cache $site\)$" "the report names the site cache"
snapshot "$site" >"$sandbox/site.after"
cmp -s "$sandbox/site.before" "$sandbox/site.after" && ok ||
  fail "the site cache is left exactly as it was: $(diff "$sandbox/site.before" "$sandbox/site.after")"

# The user's own cache holds no copy; the CLI shows both.
user "$site" "$uwjit" cache list --json
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert [e for e in d if e["site"] is None] == [], d
assert len([e for e in d if e["site"] == sys.argv[2]]) == 3, d
' "$out" "$site" && ok || fail "cache list: nothing in the user's cache, three entries in the site's"
user "$site" "$uwjit" cache dir --json
[ "$(json '[(s["dir"], s["usable"], s["entries"]) for s in d["site"]]' <<<"$out")" = "[('$site', True, 3)]" ] &&
  ok || fail "cache dir --json shows the site cache"
user "$site" "$uwjit" cache stats --json
[ "$(json 'd["entries"], d["counters"]["site_hits"] >= 3, d["site"][0]["entries"]' <<<"$out")" = "(0, True, 3)" ] &&
  ok || fail "cache stats: the user's counters count the site hits; the site's entries are shown"
user "$site" "$uwjit" cache verify
expect_code 0 "cache verify checks the site cache too"
expect_out "^site cache $site: 3 entries checked, 0 bad" "verify names the site cache"

# A damaged site entry: a miss (compiled, kept in the user's cache), left where it is.
user "$site" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
heat_key=$(json 'd["kernels"][0]["key"]' <<<"$out")
damaged=$base/damaged
cp -a "$site" "$damaged"
chmod u+w "$damaged" "$damaged/$heat_key.o"
printf 'X' | dd of="$damaged/$heat_key.o" bs=1 seek=100 conv=notrunc status=none
chmod -R a-w "$damaged"
snapshot "$damaged" >"$sandbox/damaged.before"
rm -rf "$mine"/*
user "$damaged" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
expect_code 0 "a damaged site entry: the run goes on"
[ "$(json 'd["compiles"], d["kernels"][0]["tier"]' <<<"$out")" = "(1, 'compiled')" ] && ok ||
  fail "a damaged site entry is a miss: compiled"
expect_err "rejected key=$heat_key reason=checksum_mismatch .*left in the read-only site cache; a miss" \
  "the damaged site entry is reported, left in place"
snapshot "$damaged" >"$sandbox/damaged.after"
cmp -s "$sandbox/damaged.before" "$sandbox/damaged.after" && ok || fail "a damaged site entry is never removed"
user "$damaged" "$uwjit" cache verify --fix
expect_code 1 "verify --fix cannot fix a site cache"
expect_out "^$heat_key  BAD IN SITE CACHE $damaged  checksum_mismatch: .*\(read-only: not fixed\)" \
  "verify names the bad site entry"

# Trust: a site cache its group can write is refused, once, unless shared caches are trusted.
open_site=$base/open
cp -a "$site" "$open_site"
chmod 0775 "$open_site"
rm -rf "$mine"/*
user "$open_site" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
expect_code 0 "a group-writable site cache: the run goes on"
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "a group-writable site cache is not used"
expect_err "the site cache $open_site is not used: site cache \"$open_site\" is refused: it is writable by its group \(mode 0775\)" \
  "a group-writable site cache is refused, saying why"
[ "$(grep -c 'warn' <<<"$err")" = 1 ] && ok || fail "a refused site cache is one warning"
rm -rf "$mine"/*
UWJIT_CACHE_TRUST_SHARED=1 user "$open_site" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
[ "$(json 'd["compiles"], d["kernels"][0]["served_from"]' <<<"$out")" = "(0, '$open_site')" ] && ok ||
  fail "UWJIT_CACHE_TRUST_SHARED=1 trusts a group-writable site cache"

# A list: a missing directory is skipped with a warning, the next one serves.
rm -rf "$mine"/*
user "$base/none:$site" "$uwjit" run heat --size 12 --steps 2 --output "$base/out" --json
[ "$(json 'd["compiles"], d["kernels"][0]["served_from"]' <<<"$out")" = "(0, '$site')" ] && ok ||
  fail "a missing site cache is skipped, the next in the list serves"
expect_err "the site cache $base/none is not used: site cache \"$base/none\": cannot open" \
  "a missing site cache is named"

# uwjit warm with the site cache set: what the site holds is not copied.
rm -rf "$mine"/*
user "$site" "$uwjit" warm heat --size 12 --json
expect_code 0 "warm finds the kernel in the site cache"
[ "$(json 'd["kernels"][0]["tier"], d["kernels"][0]["served_from"]' <<<"$out")" = "('disk', '$site')" ] &&
  ok || fail "warm: already in the site cache"
[ -z "$(ls "$mine" | grep -E '^[0-9a-f]{16}\.')" ] && ok || fail "warm copies nothing from the site cache"

# UWJIT_CACHE=0 turns the site caches off with the rest of the disk cache.
UWJIT_CACHE=0 UWJIT_CACHE_SITE_DIR=$site run "$uwjit" run heat --size 12 --steps 2 --output "$sandbox/o" --json
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "UWJIT_CACHE=0: no site cache either"

finish
