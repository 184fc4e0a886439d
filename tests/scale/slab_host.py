"""A sharded pipe-flow job that builds, steps, checkpoints and restores without any rank holding
the whole domain: run by memory_per_rank.sh under an address-space limit that the serial run's
state exceeds and one rank's slab does not.

usage: slab_host.py NX DIRECTORY   (the domain is NX x 96 x 96, split along x)
"""
import os
import sys

import uwjit
from mpi4py import MPI

comm = MPI.COMM_WORLD
nx, directory = int(sys.argv[1]), sys.argv[2]
engine = uwjit.Engine(cache_dir=os.path.join(directory, "cache"))
checkpoint = os.path.join(directory, "slab.ckpt")
sim = uwjit.Simulation(engine, [uwjit.node("pipe-flow", size=[nx, 96, 96])], comm=comm,
                       shard_axes=[0], threads=1)
sim.step(2)
sim.checkpoint(checkpoint)
del sim
again = uwjit.Simulation.restore(engine, checkpoint, comm=comm, shard_axes=[0], threads=1)
again.step(1)
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
peaks = comm.gather(int(status["VmPeak"].split()[0]) * 1024)
if comm.rank == 0:
    print(f"{comm.size} ranks, {nx}x96x96: peak address space per rank "
          f"{max(peaks) / 1e9:.2f} GB, steps {again.steps_taken}")
