#!/usr/bin/env bash
# CLI suite under MPI: `uwjit run --shard` splits a node over the ranks, compiles once for the
# job, passes the physics check and prints one report.
mpiexec=$1
uwjit=$2
. "$(dirname "$0")/lib.sh"
export UWJIT_LOG_LEVEL=off

run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 60 --output "$sandbox/out"
expect_code 0 "mpiexec -np 2 uwjit run heat --shard x"
expect_out '; 1 compile for the job; [0-9]+ threads? per rank$' "a cold sharded job compiles once"
expect_out '^  2 ranks, sharded along x, halo exchange \(sync\) [0-9.]+ s per rank$' \
  "the halo exchange time is reported"
expect_out '^check: PASS$' "the sharded run passes the physics check"
[ "$(grep -c '^check: ' <<<"$out")" -eq 1 ] && ok || fail "only rank 0 prints the report"
[ -f "$sandbox/out/heat.pvti" ] && [ -f "$sandbox/out/heat/heat_0000.vti" ] &&
  [ -f "$sandbox/out/heat/heat_0001.vti" ] && ok || fail "each rank writes its piece, rank 0 the index"
expect_out "^  $sandbox/out/heat.pvti$" "the output named is the index ParaView opens"
run "$uwjit" run heat --size 13 --steps 60 --output "$sandbox/serial"
cmp -s <(python3 "$(dirname "$0")/vtk_arrays.py" "$sandbox/out/heat.pvti") \
  <(python3 "$(dirname "$0")/vtk_arrays.py" "$sandbox/serial/heat.vti") && ok ||
  fail "the pieces joined hold the serial run's cells bit for bit"

# --plot draws from the ranks' slabs (the slices joined, the profile added up): the pictures of
# pipe-flow split over two axes are the serial run's, byte for byte.
run timeout 120 "$mpiexec" -np 2 "$uwjit" run pipe-flow --size 12x9x9 --steps 20 --shard x,z \
  --output "$sandbox/plots-mpi" --plot
expect_code 0 "mpiexec -np 2 uwjit run pipe-flow --shard x,z --plot"
run "$uwjit" run pipe-flow --size 12x9x9 --steps 20 --output "$sandbox/plots-serial" --plot
same=0
for png in "$sandbox"/plots-serial/*.png; do
  cmp -s "$png" "$sandbox/plots-mpi/$(basename "$png")" && same=$((same + 1))
done
[ "$same" -ge 4 ] && [ "$same" = "$(ls "$sandbox"/plots-serial/*.png | wc -l)" ] && ok ||
  fail "the sharded run's pictures are the serial run's ($same alike)"

run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 60 --exchange overlap \
  --output "$sandbox/out"
expect_code 0 "a warm sharded job with --exchange overlap"
expect_out '; 0 compiles for the job; [0-9]+ threads? per rank$' "a warm sharded job compiles nothing"
expect_out '^  2 ranks, sharded along x, halo exchange \(overlap\) [0-9.]+ s per rank, 60 of 60 steps with the interior updated during the transfers$' \
  "every step of an overlapped heat run updates the interior while halos are in flight"

run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 30 \
  --checkpoint "$sandbox/heat.ckpt" --output "$sandbox/out"
expect_code 0 "a sharded job writes a checkpoint"
run timeout 120 "$mpiexec" -np 3 "$uwjit" run heat --shard x --restore "$sandbox/heat.ckpt" \
  --steps 30 --output "$sandbox/out"
expect_code 0 "a sharded job resumes on another rank count"
expect_out "^  restored $sandbox/heat.ckpt at step 30$" "the resumed job says where it resumed"
expect_out '^check: PASS$' "the resumed sharded run passes the physics check"

run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard w
expect_code 2 "a bad --shard"
expect_err 'shard: expected distinct axes x, y, z' "--shard is explained"

# What each node can be split along is said in --help, and anything else is refused before MPI
# starts, naming the node and what it accepts (one process: two would interleave their messages).
run "$uwjit" run --help
expect_out 'heat and pipe-flow only, along x, alone or with y and/or z' "--help says which nodes shard"
expect_out '^              --shard: cannot be sharded$' "--help says which nodes cannot be sharded"
for axes in y z y,z; do
  run "$uwjit" run heat --shard "$axes" --size 8
  expect_code 2 "heat --shard $axes"
  expect_err "^uwjit: error: run: --shard $axes: heat can be sharded along x, alone or with y and/or z \\(its static arrays are cut along x\\), not along $axes\$" \
    "heat --shard $axes names the axes heat can be split along"
done
run "$uwjit" run pipe-flow --shard y --size 12
expect_code 2 "pipe-flow --shard y"
expect_err "pipe-flow can be sharded along x, alone or with y and/or z" "pipe-flow --shard y is refused"
for node in mlp fvm; do
  run "$uwjit" run "$node" --shard x
  expect_code 2 "$node --shard x"
  expect_err "^uwjit: error: run: --shard x: $node cannot be sharded: none of its domain axes has a halo to exchange \\(only heat and pipe-flow can be sharded, along x, alone or with y and/or z\\)\$" \
    "$node --shard x is refused before the job, naming the nodes that can be sharded"
done
run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x,z --size 8 --steps 2 --output "$sandbox/out"
expect_code 0 "heat --shard x,z (x with another axis) still runs"
# An error on some ranks only ends the whole job promptly, with its message (never a hang).
run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 5 \
  --output /proc/uwjit-cannot-write-here
expect_ended "an unwritable --output (written by rank 0 only)"
expect_err 'uwjit: error: .*/proc/uwjit-cannot-write-here' "the output error names the path"
run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 5 \
  --checkpoint /proc/uwjit-cannot-write-here/heat.ckpt --output "$sandbox/out"
expect_ended "an unwritable --checkpoint"
expect_err 'uwjit-cannot-write-here' "the checkpoint error names the path"
run timeout 120 "$mpiexec" -np 1 "$uwjit" run heat --shard x --size 13 --steps 5 --output "$sandbox/out" \
  : -np 1 env UWJIT_LOG_LEVEL=bogus "$uwjit" run heat --shard x --size 13 --steps 5 --output "$sandbox/out"
expect_ended "a bad UWJIT_LOG_LEVEL on one rank only"
expect_err 'uwjit: error: rank 1/2: UWJIT_LOG_LEVEL: unrecognised value "bogus"' \
  "the variable's error is printed by the rank that has it"
# Ranks started with other arguments would take other step counts or write other files, and
# wait for each other for ever: refused on every rank before any step, naming what differs.
run timeout 120 "$mpiexec" -np 1 "$uwjit" run heat --shard x --size 13 --steps 5 --output "$sandbox/out" \
  : -np 1 "$uwjit" run heat --shard x --size 13 --steps 6 --output "$sandbox/out"
expect_ended "ranks asked for other step counts"
expect_err 'rank 1/2: the ranks of this job were started with other arguments: argument 7 is `--steps 6` on rank 1 and `--steps 5` on rank 0' \
  "the ranks' arguments are compared, and the first that differs is named"
run timeout 120 "$mpiexec" -np 1 "$uwjit" run heat --shard x --size 13 --steps 5 --output "$sandbox/out" \
  --checkpoint "$sandbox/one-rank.ckpt" : -np 1 "$uwjit" run heat --shard x --size 13 --steps 5 \
  --output "$sandbox/out"
expect_ended "a checkpoint asked of one rank only"
expect_err 'argument 10 is nothing on rank 1 and `--checkpoint` on rank 0' "a missing argument is named too"
# Without --shard, each rank would run the whole job alone and write the same files.
run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --size 13 --steps 5 --output "$sandbox/out"
expect_code 2 "uwjit run under mpiexec without --shard"
expect_err 'without --shard each rank would run the whole domain alone and write the same files' \
  "says why it is refused"
# A cache the job cannot write: one warning, from rank 0, that every job compiles again.
ro=$(mktemp -d /tmp/uwjit-ro.XXXXXX)
chmod 0555 "$ro"
# Root writes into read-only directories: as root the job runs as user nobody (lib.sh).
mkdir -p "$sandbox/ro-out" && chmod 0711 "$sandbox" && chmod 0777 "$sandbox/ro-out"
run env HOME="$sandbox/ro-out" UWJIT_LOG_LEVEL=warn UWJIT_CACHE_DIR="$ro" UWJIT_CACHE_TRUST_SHARED=1 \
  timeout 120 "${as_nobody[@]}" "$mpiexec" -np 2 "$uwjit" run heat --shard x --size 13 --steps 2 \
  --output "$sandbox/ro-out"
expect_code 0 "a sharded job with a cache it cannot write"
expect_err '^\[uwjit.engine\] \[rank 0/2\] \[warning\] the kernel cache .* cannot be written .*every job compiles again' \
  "rank 0 says that every job compiles again"
[ "$(grep -c 'warn' <<<"$err")" = 1 ] && ok || fail "a cache the job cannot write is one warning"
rm -rf "$ro"

# Launched by Slurm's srun (simulated here: its variables set, no srun): an MPI that cannot reach
# Slurm's process manager makes each task a job of one rank, and N copies of the run would write
# the same files. Refused, naming the task, the task count and what to do; a job of one task,
# and a job that MPI sees whole (mpiexec inside an allocation), run.
run env SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=2 timeout 120 "$uwjit" run heat --shard x --size 13 \
  --steps 1 --output "$sandbox/out"
expect_code 2 "srun's task 2 of 4 alone in its MPI job"
expect_err 'uwjit: error: this process is task 2 of the 4 that srun started \(SLURM_PROCID, SLURM_STEP_NUM_TASKS\), but MPI sees a job of 1 rank' \
  "a job of one rank under srun says why"
expect_err 'srun --mpi=pmix' "and what to do"
run env SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0 timeout 120 "$uwjit" run heat --shard x --size 13 \
  --steps 1 --output "$sandbox/out"
expect_code 0 "srun's only task runs"
# mpirun inside an allocation starts its daemons as a Slurm step of one task per node, so its
# ranks see that step's task count: a job of one rank there is what mpirun asked for.
run env SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 timeout 120 "$mpiexec" -np 1 "$uwjit" run heat \
  --shard x --size 13 --steps 1 --output "$sandbox/out"
expect_code 0 "mpiexec -np 1 inside an allocation of two nodes runs"

finish
