"""uwjit through mpi4py, run by ctest under mpiexec at np 2 and 3 (uneven shards): collective
kernel requests (one compile per job, the same error on every rank) and a sharded Simulation
equal to a serial one. Every rank runs every test in the same order."""

import os
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


def test_a_nodes_gpu_kernel_is_compiled_once_per_job(engine):
    [source] = uwjit.node_kernels(uwjit.node("heat", size=[8, 6, 5]), gpu=True)
    text, info = engine.ptx([source], "cuda:sm_90", comm=COMM)[0]
    assert info.tier == ("compiled" if COMM.rank == 0 else "received")
    assert total_compiles(engine) == 1
    assert len(set(COMM.allgather(text))) == 1 and ".target sm_90" in text


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
    shard = sharded.shard("heat")
    assert shard["extent"] == local.shape and shard["global"] == tuple(size)
    np.testing.assert_array_equal(whole[shard["offset"][0]:shard["offset"][0] + local.shape[0]],
                                  local)
    serial = uwjit.Simulation(engine, [uwjit.node("heat", size=size)], threads=1)
    serial.step(5)
    np.testing.assert_array_equal(whole, serial.field("heat", "u"))
    assert sharded.integrals("heat")["heat"] == pytest.approx(serial.integrals("heat")["heat"],
                                                               rel=1e-12)


class Relax(uwjit.Node):
    """u <- u + rate * (target - u); the target is sharded with the domain."""

    def __init__(self, name, nx, ny, rate, target):
        super().__init__("relax", name, {"nx": nx, "ny": ny, "rate": rate})
        self.target = target

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]], halo=1), [uwjit.StateField("u")],
                            integrals=["total"], dt=p["rate"])

    def build_static_data(self):
        return {"target": uwjit.StaticArray(self.target, replication="shard", shard_axis=0)}

    def initial_state(self, state):
        state["u"][...] = 1.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.static_array("target", "f64", [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.body("""
  for (uw_i64 i = 0; i < nx; ++i)
    for (uw_i64 j = 0; j < ny; ++j) {
      u_out(i, j) = u(i, j) + args->dt * (target(i, j) - u(i, j));
      total += u_out(i, j);
    }
""")


def test_a_python_node_sharded_equals_serial(engine):
    target = np.arange(11 * 4, dtype=np.float64).reshape(11, 4)
    sharded = uwjit.Simulation(engine, [Relax("r", 11, 4, 0.5, target)], comm=COMM, threads=1)
    sharded.step(3)
    serial = uwjit.Simulation(engine, [Relax("r", 11, 4, 0.5, target)], threads=1)
    serial.step(3)
    np.testing.assert_array_equal(sharded.gather("r", "u"), serial.field("r", "u"))
    assert sharded.integrals("r")["total"] == pytest.approx(serial.integrals("r")["total"],
                                                            rel=1e-12)
    with pytest.raises(uwjit.UsageError):
        sharded.rebind_static("r", "target", uwjit.StaticArray(target * 2, "shard", 0))


class Peaks(Relax):
    """Relax with two maxima: the largest change (on the last rank's rows) and the largest -u
    (on the first rank's)."""

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]], halo=1), [uwjit.StateField("u")],
                            integrals=["change", "lowest"], dt=p["rate"])

    def emit_update(self, writer):
        writer.state_out("u")
        writer.static_array("target", "f64", [writer.domain(0), writer.domain(1)])
        writer.integral("change", "max")
        writer.integral("lowest", "max")
        writer.for_each_cell(["i", "j"], """
      u_out(i, j) = u(i, j) + args->dt * (target(i, j) - u(i, j));
      change.max(uwm::fabs(u_out(i, j) - u(i, j)));
      lowest.max(-u_out(i, j));
""")


def test_a_maximum_over_the_ranks_is_the_serial_one_bit_for_bit(engine):
    target = np.sqrt(np.arange(13 * 5, dtype=np.float64)).reshape(13, 5) - 2.0
    sharded = uwjit.Simulation(engine, [Peaks("p", 13, 5, 0.5, target)], comm=COMM)
    serial = uwjit.Simulation(engine, [Peaks("p", 13, 5, 0.5, target)], threads=1)
    for _ in range(3):
        before = serial.field("p", "u").copy()
        sharded.step()
        serial.step()
        assert sharded.integrals("p") == serial.integrals("p")
        after = serial.field("p", "u")
        assert serial.integrals("p") == {"change": np.max(np.abs(after - before)),
                                         "lowest": np.max(-after)}


class FailsOn(uwjit.Node):
    """A 1-D node whose initial_state raises ValueError on rank `bad` only."""

    def __init__(self, bad):
        super().__init__("fails-on", "bad", {"n": 12})
        self.bad = bad

    def layout(self):
        return uwjit.Layout(uwjit.grid([12], halo=1), [uwjit.StateField("u")])

    def initial_state(self, state):
        if COMM.rank == self.bad:
            raise ValueError("no state here")
        state["u"][...] = 1.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i); }")


def test_a_python_exception_on_one_rank_keeps_its_type_there_and_is_named_elsewhere(engine):
    bad = COMM.size - 1
    if COMM.rank == bad:
        with pytest.raises(ValueError, match="^no state here$") as caught:
            uwjit.Simulation(engine, [FailsOn(bad)], comm=COMM, threads=1)
        assert type(caught.value) is ValueError
    else:
        with pytest.raises(uwjit.UsageError) as caught:
            uwjit.Simulation(engine, [FailsOn(bad)], comm=COMM, threads=1)
        assert str(caught.value) == (
            'rank %d: node "bad"\'s initial_state raised ValueError: no state here' % bad)
    # The job goes on: the ranks still meet in the next collective.
    assert COMM.allreduce(1) == COMM.size


def stop_on(rank, at_step, error):
    def callback(sim):
        if COMM.rank == rank and sim.steps_taken == at_step:
            raise error
    return callback


def test_ctrl_c_on_one_rank_stops_every_rank_after_the_same_step(engine):
    sim = uwjit.Simulation(engine, [uwjit.node("heat", size=[9, 4, 4])], comm=COMM, threads=1)
    with pytest.raises(KeyboardInterrupt):
        sim.run(50, stop_on(COMM.size - 1, 3, KeyboardInterrupt()))
    assert COMM.allgather(sim.steps_taken) == [3] * COMM.size
    sim.step(2)
    assert sim.steps_taken == 5


def test_a_run_callback_failing_on_one_rank_stops_every_rank_after_the_same_step(engine):
    sim = uwjit.Simulation(engine, [uwjit.node("heat", size=[9, 4, 4])], comm=COMM, threads=1)
    bad = COMM.size - 1
    expected = ValueError if COMM.rank == bad else uwjit.UsageError
    with pytest.raises(expected) as caught:
        sim.run(50, stop_on(bad, 2, ValueError("enough")))
    if COMM.rank != bad:
        assert str(caught.value) == "rank %d: run callback raised ValueError: enough" % bad
    assert COMM.allgather(sim.steps_taken) == [2] * COMM.size


class Ramp2D(uwjit.Node):
    """u = 100 x + y over 11 x 4 cells, filled by slab or whole as its layout says."""

    def __init__(self, by_slab):
        super().__init__("ramp2d", "ramp", {"by_slab": int(by_slab)})
        self.slabs = []

    def layout(self):
        return uwjit.Layout(uwjit.grid([11, 4], halo=1), [uwjit.StateField("u")],
                            slab_initial_state=bool(self.params["by_slab"]))

    def initial_state(self, state):
        self.slabs.append(state.slab)
        x0, y0 = state.slab.offset
        nx, ny = state.slab.extent
        state["u"][...] = (100 * (x0 + np.arange(nx))[:, None] + (y0 + np.arange(ny))[None, :])

    def emit_update(self, writer):
        writer.state_out("u")
        writer.for_each_cell(["i", "j"], "u_out(i, j) = 0.5 * (u(i - 1, j) + u(i + 1, j));")


def test_a_python_node_that_fills_by_slab_is_handed_its_slab_only(engine):
    for by_slab in (True, False):
        node = Ramp2D(by_slab)
        sim = uwjit.Simulation(engine, [node], comm=COMM)
        shard = sim.shard("ramp")
        assert len(node.slabs) == 1
        slab = node.slabs[0]
        if by_slab:
            assert (slab.offset, slab.extent) == (shard["offset"], shard["extent"])
        else:
            assert (slab.offset, slab.extent) == ((0, 0), (11, 4))
        assert slab.global_extent == (11, 4)
        sim.step(2)
        whole = sim.gather("ramp", "u")
        serial = uwjit.Simulation(engine, [Ramp2D(by_slab)])
        serial.step(2)
        np.testing.assert_array_equal(whole, serial.gather("ramp", "u"))


def shared_dir():
    """A directory for the job, made by rank 0."""
    path = tempfile.mkdtemp(prefix="uwjit-py-mpi-out-") if COMM.rank == 0 else None
    return COMM.bcast(path, root=0)


def test_write_vtk_sharded_writes_a_piece_per_rank_and_every_rank_gets_the_index(engine):
    sim = uwjit.Simulation(engine, [uwjit.node("heat", size=[9, 6, 5])], comm=COMM)
    sim.step(2)
    out = shared_dir()
    paths = [str(p) for p in sim.write_vtk(out + "/vtk", stem="run")]
    if COMM.size == 1:
        assert paths == [out + "/vtk/run_heat.vti"]
    else:
        assert paths == [out + "/vtk/run_heat.pvti"]
        assert os.path.isfile(out + "/vtk/run_heat/run_heat_%04d.vti" % COMM.rank)
    assert len(set(COMM.allgather(tuple(paths)))) == 1
    # local_snapshot: this rank's slab, nothing gathered.
    mine = sim.local_snapshot()
    slab = mine.slab("heat")
    shard = sim.shard("heat")
    assert slab["offset"] == shard["offset"] and slab["extent"] == shard["extent"]
    assert mine.field("heat", "u").shape == shard["extent"]
    # Rank 0 cannot write there: the same IoError on every rank, not an error on one alone.
    if COMM.rank == 0:
        open(out + "/plain", "w").write("a file")
    COMM.Barrier()
    with pytest.raises(uwjit.IoError) as caught:
        sim.write_vtk(out + "/plain/below")
    assert len(set(COMM.allgather(str(caught.value)))) == 1
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(out, ignore_errors=True)


def test_run_cli_shard_runs_a_python_kind_over_the_ranks(engine, capfd, monkeypatch):
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples" / "python"))
    import diffuse_cli
    out = shared_dir()
    monkeypatch.setenv("UWJIT_CACHE_DIR", out + "/cache")
    code = uwjit.run_cli(diffuse_cli.KIND, ["--size", "12x8x1", "--steps", "6", "--shard", "x",
                                            "--output", out, "--json"], program="diffuse")
    assert COMM.allgather(code) == [0] * COMM.size
    printed = capfd.readouterr().out
    if COMM.rank == 0:
        import json
        report = json.loads(printed)
        assert report["ranks"] == COMM.size and report["shard"] == "x"
        assert report["check"]["passed"]
    else:
        assert printed == ""
    COMM.Barrier()
    if COMM.rank == 0:
        shutil.rmtree(out, ignore_errors=True)


def test_an_ensemble_spread_over_the_ranks_equals_the_serial_one(engine):
    params = uwjit.default_params("heat")
    params.update({"nx": 6, "ny": 6, "nz": 6, "boundary": "fixed"})

    def make(p):
        return uwjit.node("heat", "heat", **p)

    def sweep(comm):
        ens = uwjit.Ensemble(engine, make, params, vary={"courant": (0.03, 0.15, 7)},
                             until=["change:heat<1e-8", "steps:20000"], batch=2, comm=comm)
        ens.run()
        return sorted(ens.take(), key=lambda m: m["id"]), ens.finished
    spread, finished = sweep(COMM)
    assert finished == 7
    if COMM.rank != 0:
        assert spread == []
        return
    alone, _ = sweep(None)
    assert [m["id"] for m in spread] == list(range(7))
    for a, b in zip(spread, alone):
        assert a["steps"] == b["steps"] and a["integrals"] == b["integrals"]
        assert np.array_equal(a["fields"]["u"], b["fields"]["u"])


def test_a_pipeline_passes_every_member_through_its_stages_once(engine):
    """One stage per rank: a spin-up at a large time step, then stages at smaller ones; every
    member leaves the last rank once, with the same bits in every mode."""
    params = uwjit.default_params("heat")
    params.update({"nx": 6, "ny": 6, "nz": 6, "boundary": "fixed", "courant": 0.15})

    def make(p):
        return uwjit.node("heat", "heat", **p)

    stages = [{"params": {"courant": 0.05}, "until": ["change:heat<1e-6", "steps:3000"]}
              for _ in range(COMM.size - 1)]
    last = COMM.rank == COMM.size - 1
    runs = []
    for mode in ("sync", "async_recv", "fully_async"):
        ens = uwjit.Ensemble(engine, make, params, vary={"contrast": (1, 4, 5)},
                             until=["steps:5"], batch=2, comm=COMM, stages=stages, mode=mode,
                             buffer=1)
        ens.run()
        members = sorted(ens.take(), key=lambda m: m["id"])
        assert ens.finished == 5
        assert (len(members) == 5) if last else (members == [])
        runs.append(members)
    if last:
        for members in runs:
            assert [m["id"] for m in members] == list(range(5))
            for a, b in zip(members, runs[0]):
                assert a["steps"] == b["steps"] > 5 and a["status"] == "converged"
                assert np.array_equal(a["fields"]["u"], b["fields"]["u"])
    with pytest.raises(uwjit.UsageError, match="one stage per rank"):
        uwjit.Ensemble(engine, make, params, vary={"contrast": (1, 4, 5)}, until=["steps:5"],
                       comm=COMM, stages=stages + stages[:1])


def test_an_ensemble_callback_failing_on_one_rank_stops_every_rank_after_the_same_round(engine):
    params = uwjit.default_params("heat")
    params.update({"nx": 6, "ny": 6, "nz": 6})
    bad = COMM.size - 1
    rounds = []

    def callback():
        rounds.append(1)
        if COMM.rank == bad and len(rounds) == 2:
            raise ValueError("enough")
    ens = uwjit.Ensemble(engine, lambda p: uwjit.node("heat", "heat", **p), params,
                         vary={"contrast": (1, 4, 6)}, until=["steps:200"], batch=1, comm=COMM)
    expected = ValueError if COMM.rank == bad else uwjit.UsageError
    with pytest.raises(expected) as caught:
        ens.run(callback)
    if COMM.rank != bad:
        assert "enough" in str(caught.value)
    assert COMM.allgather(len(rounds)) == [2] * COMM.size
