"""uwjit through mpi4py, run by ctest under mpiexec at np 2 and 3 (uneven shards): collective
kernel requests (one compile per job, the same error on every rank) and a sharded Simulation
equal to a serial one. Every rank runs every test in the same order."""

import shutil
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import uwjit

COMM = MPI.COMM_WORLD


@pytest.fixture
def engine():
    # One cache directory for the job, made by rank 0.
    path = tempfile.mkdtemp(prefix="uwjit-py-mpi-") if COMM.rank == 0 else None
    path = COMM.bcast(path, root=0)
    yield uwjit.Engine(cache_dir=path)
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


SOURCE = 'extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) { return 0; }\n'


def total_compiles(engine):
    return COMM.allreduce(engine.stats()["compiles"], op=MPI.SUM)


def test_a_collective_request_compiles_once_per_job(engine):
    kernels = engine.kernels([uwjit.Source(SOURCE)], comm=COMM)
    assert kernels[0].info.tier == ("compiled" if COMM.rank == 0 else "received")
    assert total_compiles(engine) == 1
    keys = COMM.allgather(kernels[0].info.key)
    assert len(set(keys)) == 1


def test_a_compile_error_is_raised_on_every_rank(engine):
    bad = uwjit.Source('extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args*) { return x; }\n')
    with pytest.raises(uwjit.CompileError) as caught:
        engine.kernels([bad], comm=COMM)
    assert caught.value.line == 1


def test_sources_that_differ_between_ranks_raise_on_every_rank(engine):
    text = SOURCE + "// rank %d\n" % (COMM.rank % 2)
    with pytest.raises(uwjit.CollectiveError):
        engine.kernels([uwjit.Source(text)], comm=COMM)


def test_a_sharded_simulation_equals_the_serial_one(engine):
    # 3 ranks over 10 cells: uneven shards.
    size = [10, 6, 5]
    sharded = uwjit.Simulation(engine, [uwjit.node("heat", size=size)], comm=COMM, threads=1)
    sharded.step(5)
    whole = sharded.gather("heat", "u")
    local = sharded.field("heat", "u")
    assert local.shape[0] < size[0] and local.shape[1:] == (6, 5)
    assert COMM.allreduce(local.shape[0], op=MPI.SUM) == size[0]
    serial = uwjit.Simulation(engine, [uwjit.node("heat", size=size)], threads=1)
    serial.step(5)
    np.testing.assert_array_equal(whole, serial.field("heat", "u"))
    assert sharded.integrals("heat")["heat"] == pytest.approx(serial.integrals("heat")["heat"],
                                                               rel=1e-12)
