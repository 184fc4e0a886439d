#!/usr/bin/env bash
# uwjit ensemble under MPI: the members spread over 2, 3 and 4 ranks, refilled wherever members
# finish first, each leaves exactly once, and each equals the serial sweep's member (steps and
# integrals exactly; the HDF5 file's fields bit for bit); an error on rank 0 ends every rank.
# Pipelines of 2, 3 and 4 stages (one per rank) in each mode: every member leaves the last stage
# once, the same bits in every mode; a pipeline of more stages than ranks is refused on all. A
# sweep over 2 ranks stopped while it checkpoints resumes as if it had not stopped; a damaged part
# of its checkpoint is refused on every rank.
# Usage: ensemble_mpi.sh MPIEXEC PATH/TO/uwjit
mpiexec=$1
uwjit=$2
. "$(dirname "$0")/lib.sh"
export UWJIT_LOG_LEVEL=off
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# term_once_written PID STEM: SIGTERM to PID once STEM.h5 holds a member and STEM.ckpt exists
# (at most a minute), then waits for it to end.
term_once_written() {
  for _ in $(seq 600); do
    [ -f "$2.ckpt" ] && "$py" -c "import h5py, sys
sys.exit(len(h5py.File('$2.h5', 'r', locking=False)['id']) == 0)" 2>/dev/null && break
    sleep 0.1
  done
  kill -TERM "$1"
  wait "$1" 2>/dev/null
}

# damaged_copy STEM RANK: STEM.ckpt and its parts copied to STEM-bad.ckpt..., a bit of rank
# RANK's part changed 100 bytes before its end (a member's state).
damaged_copy() {
  cp "$1.ckpt" "$1-bad.ckpt"
  for part in "$1".ckpt.g*.r*; do cp "$part" "$1-bad.ckpt${part#"$1.ckpt"}"; done
  "$py" -c "import glob, sys
path = glob.glob(sys.argv[1] + '-bad.ckpt.g*.r' + sys.argv[2])[0]
b = bytearray(open(path, 'rb').read()); b[-100] ^= 0x10; open(path, 'wb').write(b)" "$1" "$2"
}

# Fixed-wall bars of different Courant numbers: members converge after different steps.
sweep=(ensemble heat --size 6 --set boundary=fixed --vary courant=0.02:0.16:9
  --until 'change:heat<1e-8' --until steps:20000 --batch 2)
run "$uwjit" "${sweep[@]}" --json --output "$sandbox/serial.h5"
expect_code 0 "the serial sweep"
serial=$(json 'sorted((m["id"], m["steps"], m["status"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
[ "$(json 'len(set(m["steps"] for m in d["members"]))' <<<"$out")" -gt 3 ] && ok ||
  fail "members converge after different steps"

for n in 2 3 4; do
  run timeout 120 "$mpiexec" --oversubscribe -np "$n" "$uwjit" "${sweep[@]}" --json \
    --output "$sandbox/np$n.h5"
  expect_code 0 "mpiexec -np $n uwjit ensemble"
  [ "$(json 'd["ranks"]' <<<"$out")" = "$n" ] && ok || fail "np $n: the report names $n ranks"
  [ "$(json 'd["compiles"]' <<<"$out")" -le 1 ] && ok || fail "np $n: one compile for the job"
  mine=$(json 'sorted((m["id"], m["steps"], m["status"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
  [ "$mine" = "$serial" ] && ok || fail "np $n: every member once, as in the serial sweep: $mine"
  if "$py" -c "import h5py" 2>/dev/null; then
    same=$("$py" - "$sandbox/serial.h5" "$sandbox/np$n.h5" <<'PY'
import sys
import h5py
import numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
order_a, order_b = np.argsort(a["id"][:]), np.argsort(b["id"][:])
print(list(b["id"][:][order_b]) == list(range(9))
      and np.array_equal(a["fields/u"][:][order_a], b["fields/u"][:][order_b])
      and np.array_equal(a["steps"][:][order_a], b["steps"][:][order_b]))
PY
    )
    [ "$same" = True ] && ok || fail "np $n: the file holds each member once, bit for bit: $same"
  fi
done

# Pipelines: a spin-up at a large time step, then stages at smaller ones until the heat settles.
for n in 2 3 4; do
  pipe=(ensemble heat --size 6 --set boundary=fixed --set courant=0.16 --vary contrast=1:4:7
    --until steps:5 --batch 2 --buffer 1)
  for ((k = 1; k < n; ++k)); do
    pipe+=(--stage "courant=0.0$((k + 3)) until=change:heat<1e-6 until=steps:3000")
  done
  for mode in sync async_recv fully_async; do
    run timeout 180 "$mpiexec" --oversubscribe -np "$n" "$uwjit" "${pipe[@]}" --mode "$mode" \
      --json --output "$sandbox/pipe$n-$mode.h5"
    expect_code 0 "mpiexec -np $n uwjit ensemble with $n stages, mode $mode"
    [ "$(json '(len(d["stages"]), d["mode"], sorted(m["id"] for m in d["members"]))' <<<"$out")" = \
      "($n, '$mode', [0, 1, 2, 3, 4, 5, 6])" ] && ok ||
      fail "np $n $mode: the report names the stages and mode, every member once: $out"
    [ "$(json 'all(m["status"] == "converged" and m["reason"].startswith("stage '$((n - 1))':") for m in d["members"])' <<<"$out")" = True ] &&
      ok || fail "np $n $mode: members converge in the last stage: $out"
  done
  if "$py" -c "import h5py" 2>/dev/null; then
    same=$("$py" - "$sandbox"/pipe$n-*.h5 <<'PY'
import sys
import h5py
import numpy as np
files = [h5py.File(name) for name in sys.argv[1:]]
order = [np.argsort(f["id"][:]) for f in files]
first = files[0]["fields/u"][:][order[0]]
print(all(sorted(f["id"][:]) == list(range(7)) for f in files)
      and all(np.array_equal(first, f["fields/u"][:][o]) for f, o in zip(files, order))
      and not np.array_equal(first[0], first[1]))
PY
    )
    [ "$same" = True ] && ok || fail "np $n: every mode's file holds each member once, the same bits"
  fi
done
run timeout 120 "$mpiexec" --oversubscribe -np 3 "$uwjit" ensemble heat --size 6 --vary \
  contrast=1:2:2 --until steps:2 --stage 'courant=0.05 until=steps:2'
expect_code 2 "a pipeline of 2 stages on 3 ranks"
expect_err "one stage per rank" "the error says why"

# Ranks given other sweeps would each run their own and report a mixture, or wait in other
# collectives for ever: refused on every rank, naming the argument.
run timeout 120 "$mpiexec" --oversubscribe -np 1 "$uwjit" ensemble heat --size 6 --vary \
  contrast=1:4:6 --until steps:2 : -np 1 "$uwjit" ensemble heat --size 6 --vary contrast=1:4:5 \
  --until steps:2
expect_ended "ranks given other sweeps"
expect_err 'argument 5 is `--vary contrast=1:4:5` on rank 1 and `--vary contrast=1:4:6` on rank 0' \
  "the first argument that differs is named"

# Stopped by SIGTERM while it checkpoints (each rank its part beside the file): resumed on as
# many ranks it ends as the uninterrupted sweep, each member once in the file; on other rank
# counts it is refused on every rank.
slow=(ensemble heat --size 10 --set boundary=fixed --vary courant=0.0005:0.16:6
  --until 'change:heat<1e-10' --until steps:10000000 --batch 2 --json)
"$mpiexec" --oversubscribe -np 2 "$uwjit" "${slow[@]}" --output "$sandbox/stopped.h5" \
  --checkpoint "$sandbox/stopped.ckpt" --checkpoint-every 50 >"$sandbox/stopped.json" \
  2>/dev/null &
term_once_written $! "$sandbox/stopped"
[ "$(json 'd["interrupted"]' <"$sandbox/stopped.json")" = True ] && ok ||
  fail "SIGTERM stops every rank after the same round"
ls "$sandbox"/stopped.ckpt.g*.r0 "$sandbox"/stopped.ckpt.g*.r1 >/dev/null && ok ||
  fail "each rank wrote its part: $(ls "$sandbox")"
[ "$(ls "$sandbox" | grep -c 'stopped.ckpt.g')" = 2 ] && ok ||
  fail "the parts of earlier checkpoints are gone: $(ls "$sandbox")"
run timeout 120 "$mpiexec" --oversubscribe -np 3 "$uwjit" "${slow[@]}" --output "$sandbox/stopped.h5" \
  --resume "$sandbox/stopped.ckpt"
expect_code 2 "a resume on another rank count"
expect_err "written by 2 rank" "names the ranks that wrote it"
damaged_copy "$sandbox/stopped" 1
run timeout 120 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${slow[@]}" \
  --resume "$sandbox/stopped-bad.ckpt"
expect_code 1 "a resume from a damaged part"
expect_err "rank 1's part.*truncated or corrupt \(checksum mismatch\)" "names the damaged part"
run timeout 300 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${slow[@]}" \
  --output "$sandbox/stopped.h5" --resume "$sandbox/stopped.ckpt"
expect_code 0 "the stopped sweep resumed over 2 ranks"
resumed=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
run "$uwjit" "${slow[@]}"
whole=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
[ "$resumed" = "$whole" ] && ok || fail "resumed, every member as uninterrupted: $resumed"
if "$py" -c "import h5py" 2>/dev/null; then
  ids=$("$py" -c "import h5py; print(sorted(h5py.File('$sandbox/stopped.h5')['id'][:].tolist()))")
  [ "$ids" = "[0, 1, 2, 3, 4, 5]" ] && ok || fail "the file holds each member once: $ids"
fi

# A pipeline stopped by SIGTERM while it checkpoints resumes on as many ranks as if it had not
# stopped.
pipe=(ensemble heat --size 12 --set boundary=fixed --set courant=0.16 --vary contrast=1:4:6
  --until steps:40 --stage 'courant=0.004 until=change:heat<1e-12 until=steps:10000000'
  --batch 2 --buffer 1 --json)
"$mpiexec" --oversubscribe -np 2 "$uwjit" "${pipe[@]}" --output "$sandbox/piped.h5" \
  --checkpoint "$sandbox/piped.ckpt" --checkpoint-every 50 >"$sandbox/piped.json" 2>/dev/null &
term_once_written $! "$sandbox/piped"
[ "$(json 'd["interrupted"]' <"$sandbox/piped.json")" = True ] && ok ||
  fail "SIGTERM stops both stages after the same round"
damaged_copy "$sandbox/piped" 0
run timeout 120 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${pipe[@]}" \
  --resume "$sandbox/piped-bad.ckpt"
expect_code 1 "a pipeline's resume from a damaged part"
expect_err "stage 0's part.*truncated or corrupt \(checksum mismatch\)" "names the damaged part"
run timeout 300 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${pipe[@]}" \
  --output "$sandbox/piped.h5" --resume "$sandbox/piped.ckpt"
expect_code 0 "the stopped pipeline resumed"
resumed=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
run timeout 300 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${pipe[@]}"
whole=$(json 'sorted((m["id"], m["steps"], m["integrals"]["heat"]) for m in d["members"])' <<<"$out")
[ "$resumed" = "$whole" ] && ok || fail "the pipeline resumed, every member as uninterrupted: $resumed"
if "$py" -c "import h5py" 2>/dev/null; then
  ids=$("$py" -c "import h5py; print(sorted(h5py.File('$sandbox/piped.h5')['id'][:].tolist()))")
  [ "$ids" = "[0, 1, 2, 3, 4, 5]" ] && ok || fail "the pipeline's file holds each member once: $ids"
fi

# An output that exists: every rank ends with the error, none waits.
run timeout 120 "$mpiexec" --oversubscribe -np 2 "$uwjit" "${sweep[@]}" --output "$sandbox/np2.h5"
expect_code 2 "an existing output under MPI"
expect_err "exists" "the error names it"
finish
