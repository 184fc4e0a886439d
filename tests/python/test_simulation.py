"""Simulation with a built-in node: fields, integrals, checkpoint/restore, VTK, errors."""

import numpy as np
import pytest

import uwjit


def heat(name="heat"):
    return uwjit.node("heat", name=name, size=[8, 6, 5])


def test_a_built_in_node_steps_and_conserves_heat(engine):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    u0 = sim.field("heat", "u").copy()
    assert u0.shape == (8, 6, 5)
    sim.step(3)
    assert sim.steps_taken == 3
    u3 = sim.field("heat", "u")
    assert not np.array_equal(u0, u3)
    # Insulating walls: the heat integral of the kernel is the sum of the field.
    assert sim.integrals("heat")["heat"] == pytest.approx(u0.sum(), rel=1e-12)
    assert sim.integrals("heat")["heat"] == pytest.approx(u3.sum(), rel=1e-12)
    assert sim.kernel_reports()[0].info.tier == "compiled"


def test_a_field_is_a_read_only_view_that_goes_stale_at_the_next_step(engine):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    sim.step()
    view = sim.field("heat", "u")
    kept = view.copy()
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0, 0] = 1.0
    sim.step()
    # The view now shows the other buffer; a fresh field() shows the state after the step.
    assert not np.array_equal(sim.field("heat", "u"), kept)
    np.testing.assert_array_equal(sim.gather("heat", "u"), sim.field("heat", "u"))


def test_run_calls_back_after_each_step(engine):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    seen = []
    sim.run(4, lambda s: seen.append(s.steps_taken))
    assert seen == [1, 2, 3, 4]

    def fail(s):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        sim.run(2, fail)


def test_checkpoint_and_restore_continue_bit_for_bit(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    sim.step(2)
    path = tmp_path / "run.ckpt"
    sim.checkpoint(path)
    sim.step(3)
    restored = uwjit.Simulation.restore(engine, path, threads=1)
    assert restored.steps_taken == 2
    restored.step(3)
    np.testing.assert_array_equal(restored.field("heat", "u"), sim.field("heat", "u"))
    assert restored.kernel_reports()[0].info.tier == "memory"
    with pytest.raises(uwjit.IoError):
        uwjit.Simulation.restore(engine, tmp_path / "missing.ckpt")


def test_vtk_files_are_written(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    sim.step()
    paths = sim.write_vtk(tmp_path / "out")
    assert paths and all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert b"<VTKFile" in paths[0].read_bytes()


def test_bad_simulation_arguments(engine):
    with pytest.raises(uwjit.UsageError, match="unknown"):
        uwjit.node("no-such-node")
    with pytest.raises(ValueError, match='unknown param "speed"'):
        uwjit.node("heat", speed=3)
    with pytest.raises(TypeError, match="uwjit.Node"):
        uwjit.Simulation(engine, ["heat"])
    with pytest.raises(ValueError, match="exchange"):
        uwjit.Simulation(engine, [heat()], exchange="sometimes")
    with pytest.raises(uwjit.UsageError):
        uwjit.Simulation(engine, [heat("a"), heat("a")])
    with pytest.raises(TypeError, match="mpi4py"):
        uwjit.Simulation(engine, [heat()], comm="world")
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    with pytest.raises(uwjit.UsageError):
        sim.field("heat", "v")
    with pytest.raises(uwjit.UsageError):
        sim.integrals("cold")
