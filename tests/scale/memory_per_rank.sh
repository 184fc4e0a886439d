#!/usr/bin/env bash
# A sharded job's memory follows its rank's slab, not the global domain: under an address-space
# limit (prlimit --as, per process) between what one of four ranks needs and what the serial run
# needs, pipe-flow 384x96x96 (3.5 M cells, 1.1 GB of state serially) builds, steps, checkpoints
# and restores at np 4, and the serial run is refused before allocating, naming both figures. A
# rank that held a whole copy of a state field set, even for a moment (a gather, a whole initial
# state, a checkpoint read whole: 0.54 GB each), would exceed the limit at np 4, whose ranks
# peak near 1.03 GB of address space (Python, numpy, MPI and LLVM mapped, and a quarter of the
# state). `uwjit run` does the same under the same limit, writing its VTK output (a piece per
# rank) and a checkpoint: a gather for either (0.54 GB, and as much again in flight) would exceed
# it.
#   memory_per_rank.sh MPIEXEC PYTHON UWJIT
mpiexec=$1
python=$2
uwjit=$3
. "$(dirname "$0")/../cli/lib.sh"
host=$(dirname "$0")/slab_host.py
limit=$((1300 * 1000 * 1000))

run timeout 300 "$mpiexec" -np 4 prlimit --as=$limit "$python" "$host" 384 "$sandbox"
expect_code 0 "np 4 under a limit of 1.3 GB per process"
expect_out '^4 ranks, 384x96x96: peak address space per rank [0-9.]+ GB, steps 3$' \
  "the job builds, steps, checkpoints and restores"
echo "$out"
run timeout 300 "$mpiexec" -np 1 prlimit --as=$limit "$python" "$host" 384 "$sandbox"
expect_code 1 "the serial run under the same limit"
expect_err 'run needs about [0-9.]+ [MG]B of memory \(state .*\) and this process may map [0-9.]+ [MG]B \(RLIMIT_AS, less what is mapped already\); use a smaller grid, or shard the run over more machines' \
  "the serial run is refused before allocating, naming both figures"

run timeout 300 "$mpiexec" -np 4 prlimit --as=$limit "$uwjit" run pipe-flow --size 384x96x96 \
  --steps 2 --shard x --threads 1 --output "$sandbox/out" --checkpoint "$sandbox/run.ckpt"
expect_code 0 "uwjit run at np 4 under the same limit, with output and a checkpoint"
[ -s "$sandbox/out/pipe-flow.pvti" ] && [ -s "$sandbox/out/pipe-flow/pipe-flow_0003.vti" ] &&
  [ -s "$sandbox/run.ckpt" ] && ok || fail "every rank wrote its piece and its slab of the checkpoint"
finish
