#!/usr/bin/env bash
# uwjit ensemble: a sweep's report (table and JSON) lists every member once, compiles once, and
# matches the same member run alone with uwjit run; the HDF5 file holds every member (h5py,
# where Debian's python3-h5py is installed); bad input is one clear error before any member runs.
# Usage: ensemble.sh PATH/TO/uwjit
uwjit=$1
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# wait_for_member FILE [ALSO]: waits until FILE, an HDF5 file a sweep is writing, holds a member
# (read without HDF5's lock) and ALSO exists, at most a minute; without h5py, a few seconds.
wait_for_member() {
  if "$py" -c "import h5py" 2>/dev/null; then
    "$py" - "$1" "${2:-$1}" <<'PY'
import os, sys, time
import h5py
for _ in range(600):
    try:
        with h5py.File(sys.argv[1], "r", locking=False) as f:
            if len(f["id"]) > 0 and os.path.exists(sys.argv[2]):
                break
    except (OSError, KeyError):
        pass
    time.sleep(0.1)
PY
  else
    sleep 5
  fi
}

run "$uwjit" ensemble --help
expect_code 0 "--help"
expect_out "change:INTEGRAL<TOL" "--help explains the change rule"
expect_out "uwjit ensemble heat --size 16 --vary contrast=1:4:4 --until steps:40" "--help example"
run "$uwjit" ensemble heat --size 8 --set help
expect_code 0 "--set help"
expect_out '^  courant = 0.1  \(accepted: ' "--set help lists the params every member shares"
expect_out '^  nx = 8( |$)' "--set help shows the defaults of the --size given"

run "$uwjit" ensemble heat --size 8 --vary contrast=1:4:4 --until steps:10 --json
expect_code 0 "a sweep of 4"
[ "$(json 'len(d["members"])' <<<"$out")" = 4 ] && ok || fail "4 members in the report"
[ "$(json 'sorted(m["id"] for m in d["members"])' <<<"$out")" = "[0, 1, 2, 3]" ] && ok ||
  fail "each member once"
[ "$(json 'd["compiles"]' <<<"$out")" = 1 ] && ok || fail "one compile for the sweep"
[ "$(json 'set(m["steps"] for m in d["members"])' <<<"$out")" = "{10}" ] && ok || fail "10 steps each"
[ "$(json '[m["params"]["contrast"] for m in sorted(d["members"], key=lambda m: m["id"])]' <<<"$out")" = "[1.0, 2.0, 3.0, 4.0]" ] &&
  ok || fail "the params of each member"
member=$(json '[m for m in d["members"] if m["params"]["contrast"] == 3.0][0]["integrals"]["heat"]' <<<"$out")
# The same member run alone: the same integral, to the last digit JSON carries.
run "$uwjit" run heat --size 8 --set contrast=3 --steps 10 --json --output "$sandbox"
expect_code 0 "the member alone"
alone=$(json 'd["integrals"]["heat"]' <<<"$out")
[ "$member" = "$alone" ] && ok || fail "member 2's integral $member equals the run alone's $alone"

# fvm (a mesh of its own per seed) and mlp (weights per seed): each member's integrals are those
# of the node run alone.
for case in "fvm 8 20" "mlp 8 5"; do
  set -- $case
  run "$uwjit" ensemble "$1" --size "$2" --vary seed=1:3:3 --until "steps:$3" --json
  expect_code 0 "an ensemble of $1"
  member=$(json '[m["integrals"] for m in d["members"] if m["params"]["seed"] == 2.0][0]' <<<"$out")
  run "$uwjit" run "$1" --size "$2" --set seed=2 --steps "$3" --json --output "$sandbox"
  alone=$(json 'd["integrals"]' <<<"$out")
  [ "$member" = "$alone" ] && ok || fail "$1: member seed=2 $member equals the run alone $alone"
done

# Warm: a second sweep of other values compiles nothing.
run "$uwjit" ensemble heat --size 8 --vary contrast=5:6:2 --until steps:3 --json
[ "$(json 'd["compiles"]' <<<"$out")" = 0 ] && ok || fail "a second sweep compiles nothing"

# Convergence with refill: members of different Courant numbers stop after different steps.
run "$uwjit" ensemble heat --size 6 --set boundary=fixed --vary courant=0.04:0.16:4 \
  --until 'change:heat<1e-7' --until steps:20000 --batch 2
expect_code 0 "a converging sweep"
expect_out "converged" "the table says converged"
expect_out "batch 2 as set" "the report names the batch"

run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:3 --output "$sandbox/sweep.h5"
expect_code 0 "an HDF5 output"
if "$py" -c "import h5py" 2>/dev/null; then
  n=$("$py" -c "import h5py; f = h5py.File('$sandbox/sweep.h5'); print(f['fields/u'].shape, list(f['id'][:]), list(f['steps'][:]))")
  [ "$n" = "(3, 6, 6, 6) [0, 1, 2] [3, 3, 3]" ] && ok || fail "h5py reads 3 members: $n"
else
  echo "note: h5py missing; the file's contents are not read here"
fi
run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:3 --output "$sandbox/sweep.h5"
expect_code 2 "an existing output"
expect_err "exists" "refuses to replace a file"
run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:3 --output /dev/null
expect_code 2 "/dev/null as output"
run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:3 --output "$sandbox/no/such/dir.h5"
expect_code 2 "a missing directory"
expect_err "does not exist" "names the missing directory"

# --vtk: each member for ParaView, the same arrays as the member run alone.
mkdir -p "$sandbox/vtk" "$sandbox/alone"
run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:4 --vtk "$sandbox/vtk"
expect_code 0 "--vtk"
[ -f "$sandbox/vtk/heat_000000.vti" ] && [ -f "$sandbox/vtk/heat_000002.vti" ] && ok ||
  fail "a VTK file per member"
run "$uwjit" run heat --size 6 --set contrast=1.5 --steps 4 --output "$sandbox/alone"
cmp -s <("$py" "$(dirname "$0")/vtk_arrays.py" "$sandbox/vtk/heat_000001.vti") \
  <("$py" "$(dirname "$0")/vtk_arrays.py" "$sandbox/alone/heat.vti") && ok ||
  fail "member 1's VTK arrays are those of the member run alone"
run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:3 --until steps:4 --vtk "$sandbox/none"
expect_code 2 "--vtk into a directory that does not exist"

# Ctrl-C: the members that left are reported and in the file, the others not; exit 130.
"$uwjit" ensemble heat --size 6 --set boundary=fixed --vary courant=0.000001:0.16:8 \
  --until 'change:heat<1e-12' --until steps:100000000 --batch 8 --output "$sandbox/stopped.h5" \
  --json >"$sandbox/stopped.json" 2>"$sandbox/stopped.err" &
pid=$!
wait_for_member "$sandbox/stopped.h5"
kill -INT "$pid"
wait "$pid" && code=0 || code=$?
out=$(cat "$sandbox/stopped.json")
err=$(cat "$sandbox/stopped.err")
expect_code 130 "an interrupted sweep"
[ "$(json 'd["interrupted"]' <<<"$out")" = True ] && ok || fail "the report says interrupted"
left=$(json 'len(d["members"])' <<<"$out")
[ "$left" -ge 1 ] && [ "$left" -lt 8 ] && ok || fail "some members left before the signal: $left"
if "$py" -c "import h5py" 2>/dev/null; then
  rows=$("$py" -c "import h5py; print(len(h5py.File('$sandbox/stopped.h5')['id']))")
  [ "$rows" = "$left" ] && ok || fail "the file holds the $left members that left: $rows"
fi

# Killed (SIGKILL) while it runs with --checkpoint: resumed with --resume, it ends as an
# uninterrupted run does, member for member, and its file holds each member once.
slow=(ensemble heat --size 12 --set boundary=fixed --vary courant=0.0002:0.16:6
  --until 'change:heat<1e-10' --until steps:10000000 --batch 2 --json)
"$uwjit" "${slow[@]}" --output "$sandbox/killed.h5" --checkpoint "$sandbox/killed.ckpt" \
  --checkpoint-every 500 >/dev/null 2>&1 &
pid=$!
wait_for_member "$sandbox/killed.h5" "$sandbox/killed.ckpt"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
run "$uwjit" "${slow[@]}" --output "$sandbox/killed.h5" --resume "$sandbox/killed.ckpt"
expect_code 0 "the killed sweep resumed"
resumed=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
run "$uwjit" "${slow[@]}"
expect_code 0 "the same sweep uninterrupted"
whole=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
[ "$resumed" = "$whole" ] && ok || fail "resumed, every member as uninterrupted: $resumed"
if "$py" -c "import h5py" 2>/dev/null; then
  ids=$("$py" -c "import h5py; print(sorted(h5py.File('$sandbox/killed.h5')['id'][:].tolist()))")
  [ "$ids" = "[0, 1, 2, 3, 4, 5]" ] && ok || fail "the file holds each member once: $ids"
fi
run "$uwjit" ensemble heat --size 12 --vary courant=0.01:0.1:6 --until steps:10 \
  --resume "$sandbox/killed.ckpt"
expect_code 2 "another sweep's checkpoint"
expect_err "it is of another ensemble: stop rule is steps:10 here" "names what differs"
# A checkpoint anyone may write (its seal is a plain SHA-256): a member's reason holding terminal
# escapes is shown as text in the report of the resumed sweep.
sweep=(ensemble heat --size 8 --vary contrast=1:4:8 --until steps:30 --batch 2)
run "$uwjit" "${sweep[@]}" --checkpoint "$sandbox/forged.ckpt" --checkpoint-every 1
expect_code 0 "a sweep with a checkpoint"
"$py" - "$sandbox/forged.ckpt" <<'PY' && ok || fail "a member's reason in the checkpoint replaced"
import hashlib, sys
body = open(sys.argv[1], "rb").read()[:-64]
assert b"step cap 30" in body
body = body.replace(b"step cap 30", b"\x1b]0;pw\x07\x1b[2J", 1)  # as long as what it replaces
open(sys.argv[1], "wb").write(body + hashlib.sha256(body).hexdigest().encode())
PY
run "$uwjit" "${sweep[@]}" --resume "$sandbox/forged.ckpt"
expect_code 0 "the forged sweep resumed"
[[ "$out" != *$'\e'* && "$out" != *$'\a'* ]] && ok || fail "the report sends no control byte of a checkpoint to the terminal"
expect_out ' step_cap .* \\x1b\]0;pw\\x07\\x1b\[2J$' "the report shows the reason's escapes as text"

run "$uwjit" ensemble heat --vary kapa=1:2:2 --until steps:2
expect_code 2 "an unknown param"
expect_err 'unknown param "kapa" to vary \(did you mean kappa\?\)' "names the param"
run "$uwjit" ensemble heat --vary kappa=1:2:0 --until steps:2
expect_code 2 "an empty range"
expect_err "empty range" "says it is empty"
run "$uwjit" ensemble heat --vary kappa=1:2:2 --until 'change:energy<1e-9' --until steps:9
expect_code 2 "a rule naming no integral"
expect_err 'has no integral "energy"' "names the integral"
run "$uwjit" ensemble heat --vary kappa=1:2:2 --until 'change:heat<1e-9'
expect_code 2 "no step cap"
expect_err "no step cap" "asks for a cap"
run "$uwjit" ensemble heat --size 6 --vary nx=6:8:2 --until steps:2
expect_code 2 "members of different layouts"
expect_err "never the layout" "says what may vary"
finish
