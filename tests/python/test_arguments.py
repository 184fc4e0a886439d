"""Arguments a careful user might still get wrong: each is refused with a message that names it and
what is accepted (never a crash, never a value silently changed), and numpy scalars pass where
Python numbers do."""

import math

import numpy as np
import pytest

import uwjit
from conftest import axpb


def heat(size=(8, 6, 5)):
    return uwjit.node("heat", size=list(size))


class Keeper(uwjit.Node):
    """A node that keeps the writer it is lent (which it must not use after its emit)."""

    def __init__(self, name, stages=1, through_default=False):
        super().__init__("keeper", name, {"n": 4})
        self.stages = stages
        self.through_default = through_default
        self.kept = []

    def layout(self):
        return uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")], stages=self.stages)

    def initial_state(self, state):
        state["u"][...] = 1.0

    def emit_update(self, writer):
        self.kept.append(writer)
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i); }")


class StagedKeeper(Keeper):
    def emit_stage(self, writer, stage):
        if self.through_default and stage == 0:
            return uwjit.Node.emit_stage(self, writer, stage)
        self.kept.append(writer)
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i) + 1.0; }")


@pytest.mark.parametrize("node", [Keeper("k"), StagedKeeper("k", stages=2),
                                  StagedKeeper("k", stages=2, through_default=True)],
                         ids=["emit_update", "emit_stage", "default emit_stage"])
def test_a_writer_kept_after_its_emit_refuses_every_use(engine, node):
    uwjit.Simulation(engine, [node], threads=1)
    assert node.kept
    for writer in node.kept:
        uses = [lambda: writer.body("x"), lambda: writer.extent("m", 3),
                lambda: writer.domain(0), lambda: writer.state_out("u"), lambda: writer.finish(),
                lambda: writer.param("p", 1.0), lambda: writer.provided_shape("w"),
                lambda: writer.checked, lambda: writer.gpu, lambda: writer.cell_form]
        for use in uses:
            with pytest.raises(uwjit.UsageError, match=r'node "k".*emit_\w+, which has ended'):
                use()


def test_a_writer_made_in_python_stays_usable():
    writer = uwjit.KernelWriter("mine")
    n = writer.domain_extent(0, "nx", 4)
    writer.state_in("x", "f64", [n])
    writer.state_out("x")
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { x_out(i) = x(i); }")
    assert "x_out" in writer.finish().canonical
    assert writer.checked is False and writer.cell_form is False


@pytest.mark.parametrize("threads", [0, -1, 4097, 100_000, 2**70])
def test_threads_is_a_whole_number_from_1_to_4096_as_for_the_cli(engine, threads):
    expected = r'threads: expected a whole number from 1 to 4096, got "%d"' % threads
    with pytest.raises(uwjit.UsageError, match=expected):
        uwjit.Simulation(engine, [heat()], threads=threads)


def test_threads_takes_a_numpy_integer_and_refuses_a_float(engine):
    assert uwjit.Simulation(engine, [heat()], threads=np.int64(2)).threads == 2
    with pytest.raises(TypeError, match="threads: expected an int"):
        uwjit.Simulation(engine, [heat()], threads=2.0)


@pytest.mark.parametrize("shape", [(4, -1), -1, (-6,), [2, -3, 4]])
@pytest.mark.parametrize("make", [uwjit.empty, uwjit.zeros])
def test_a_negative_extent_is_refused_as_numpy_does(make, shape):
    with pytest.raises(ValueError, match="negative"):
        np.empty(shape)
    with pytest.raises(ValueError, match=r"shape: extent -\d+ is negative"):
        make(shape)


@pytest.mark.parametrize("make", [uwjit.empty, uwjit.zeros])
def test_empty_and_zeros_take_the_kernel_dtype_names(make):
    for name, dtype in [("f64", np.float64), ("f32", np.float32), ("i8", np.int8),
                        ("u8", np.uint8), ("i32", np.int32), ("i64", np.int64)]:
        array = make((3, np.int64(2)), name)
        assert array.dtype == dtype and array.shape == (3, 2)
        assert array.ctypes.data % 64 == 0
    assert make(0).shape == (0,)
    assert make(5, float).dtype == np.float64
    with pytest.raises(TypeError, match="f32, f64, i8, u8, i32, i64"):
        make(4, "f65")
    with pytest.raises(TypeError, match="shape"):
        make(2.5)


@pytest.mark.parametrize("dt, shown", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"),
                                       (-1.0, "-1"), (0.0, "0"), (np.float64(-0.5), "-0.5")])
def test_a_layout_time_step_is_a_finite_number_above_zero(dt, shown):
    expected = r"dt: expected a finite number > 0, got %s$" % shown
    with pytest.raises(uwjit.UsageError, match=expected):
        uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")], dt=dt)


class ParamStep(uwjit.Node):
    """A node whose time step is its param "dt" (its layout says none)."""

    def __init__(self, dt):
        super().__init__("param-step", "p", {"dt": dt})

    def layout(self):
        return uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")])

    def initial_state(self, state):
        pass

    def emit_update(self, writer):
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i) + args->dt; }")


def test_a_time_step_from_the_param_dt_is_checked_too(engine):
    expected = r'node "p": dt: expected a finite number > 0, got -2'
    with pytest.raises(uwjit.UsageError, match=expected):
        uwjit.Simulation(engine, [ParamStep(-2.0)])
    sim = uwjit.Simulation(engine, [ParamStep(np.float32(0.5))])
    sim.step()
    np.testing.assert_array_equal(sim.field("p", "u"), [0.5] * 4)


def test_a_param_given_by_size_and_by_name_is_refused():
    with pytest.raises(uwjit.UsageError, match=r'"nx" is given twice: by size and by name'):
        uwjit.node("heat", size=[8, 8, 8], nx=16)
    with pytest.raises(uwjit.UsageError, match=r'"n" is given twice'):
        uwjit.node("fvm", size=[12], n=16)
    with pytest.raises(uwjit.UsageError, match=r'unknown param "speed"'):
        uwjit.node("heat", speed=3)
    # What the size only derives (a pipe's radius) may still be chosen.
    assert uwjit.node("pipe-flow", size=[16], radius=4.0).params["radius"] == 4.0
    assert uwjit.node("heat", size=np.int64(6)).params["nx"] == 6
    with pytest.raises(TypeError, match="size: expected an int or a list of"):
        uwjit.node("heat", size="8")


def test_text_a_message_quotes_has_its_control_bytes_escaped(engine, tmp_path):
    # Anyone can write a checkpoint with a valid seal: one of type heat whose boundary holds
    # terminal escapes is refused, and the refusal shows them as text.
    escapes = "\x1b]0;retitled\x07\x1b[2J"
    heat = uwjit.node("heat", size=[4, 4, 4]).params

    class Forged(uwjit.Node):
        def __init__(self):
            super().__init__("heat", "heat", {**heat, "boundary": escapes})

        def layout(self):
            return uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")])

        def initial_state(self, state):
            state["u"][...] = 1.0

        def emit_update(self, writer):
            writer.state_out("u")
            writer.body("for (uw_i64 i = 0; i < 4; ++i) { u_out(i) = u(i); }")

    sim = uwjit.Simulation(engine, [Forged()])
    sim.step()
    sim.checkpoint(str(tmp_path / "forged.ckp"))
    with pytest.raises(uwjit.UsageError) as refused:
        uwjit.Simulation.restore(engine, str(tmp_path / "forged.ckp"))
    message = str(refused.value)
    assert 'param "boundary" = "\\x1b]0;retitled\\x07\\x1b[2J"' in message, message
    assert not any(ord(c) < 0x20 for c in message), message

    # A name that is not an identifier is quoted the same way when the kernel is written.
    class BadName(Forged):
        def layout(self):
            return uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u" + escapes)])

    with pytest.raises(uwjit.UsageError) as refused:
        uwjit.Simulation(engine, [BadName()])
    message = str(refused.value)
    assert 'accessor "u\\x1b]0;retitled\\x07\\x1b[2J" is not a C identifier' in message, message
    assert not any(ord(c) < 0x20 for c in message), message


def test_an_int_out_of_range_is_named_with_the_range():
    too_big = 2**70
    with pytest.raises(uwjit.UsageError,
                       match=r'param "nx": expected an int from -9223372036854775808 to '
                             r'9223372036854775807, got 1180591620717411303424'):
        uwjit.node("heat", nx=too_big)
    with pytest.raises(uwjit.UsageError, match=r'param "n": expected an int from'):
        uwjit.Node("t", "n", {"n": too_big})
    writer = uwjit.KernelWriter("big")
    with pytest.raises(uwjit.UsageError, match=r"extent: value: expected an int from"):
        writer.extent("m", too_big)
    with pytest.raises(uwjit.UsageError, match=r"step: count: expected an int from 0"):
        uwjit.Simulation(uwjit.Engine(disk_cache=False), [heat()], threads=1).step(too_big)


def test_a_kernel_call_takes_numpy_integers_and_names_an_extent_out_of_range(engine):
    kernel = axpb(engine)
    x = np.arange(8.0)
    y = np.zeros(8)
    ab = np.array([2.0, 1.0])
    kernel(state_in=[x], state_out=[y], statics=[ab], extents=[np.int64(8)])
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(uwjit.UsageError, match=r'extent "n": expected an int from 1 to'):
        kernel(state_in=[x], state_out=[y], statics=[ab], extents=[2**70])
    with pytest.raises(TypeError, match=r'extent "n": expected an int, got float'):
        kernel(state_in=[x], state_out=[y], statics=[ab], extents=[8.0])


def test_numpy_numbers_pass_where_python_numbers_do(engine):
    writer = uwjit.KernelWriter("np")
    n = writer.domain_extent(np.int32(0), "nx", np.int64(4))
    writer.state_in("x", "f64", [uwjit.Axis(n, np.int64(0))])
    writer.state_out("x")
    writer.param("rate", np.float32(0.5))
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { x_out(i) = rate * x(i); }")
    writer.finish()
    axis = uwjit.DomainAxis(np.int64(4), halo=np.int64(1))
    assert axis.cells == 4 and axis.halo == 1
    assert len(uwjit.grid([np.int64(4), np.int64(3)], halo=np.int64(1))) == 2
    assert uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u", "f64", [np.int64(2)])],
                        dt=np.float64(0.25)).dt == 0.25
    assert uwjit.StaticArray(np.float32(2.0)).dtype == "f32"
    assert uwjit.StaticArray(np.int32(3)).dtype == "i32"
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    sim.step(np.int64(2))
    sim.run(np.int32(1))
    assert sim.steps_taken == 3


def test_a_restore_factory_that_returns_neither_a_node_nor_none_is_named(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    path = tmp_path / "run.ckpt"
    sim.checkpoint(path)
    with pytest.raises(TypeError, match="factory: expected a uwjit.Node or None, got int"):
        uwjit.Simulation.restore(engine, path, lambda type, name, params: 42)


def test_write_vtk_to_a_path_that_is_not_a_directory_is_an_io_error(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    plain = tmp_path / "plain"
    plain.write_text("not a directory")
    with pytest.raises(uwjit.IoError, match=str(plain)):
        sim.write_vtk(plain)
    with pytest.raises(uwjit.IoError, match=str(plain)):
        sim.write_vtk(plain / "below")


def test_none_for_the_engine_or_the_node_is_a_type_error_not_a_crash(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    path = tmp_path / "run.ckpt"
    sim.checkpoint(path)
    with pytest.raises(TypeError, match="incompatible"):
        uwjit.Simulation(None, [heat()])
    with pytest.raises(TypeError, match="incompatible"):
        uwjit.Simulation.restore(None, path)
    with pytest.raises(TypeError, match="incompatible"):
        uwjit.Ensemble(None, lambda p: heat(), {}, samples=[{}], until=["steps:1"])
    with pytest.raises(TypeError, match="incompatible"):
        uwjit.node_kernels(None)


def test_a_param_of_tuples_nested_deeper_than_a_checkpoint_reads_is_refused():
    def nested(depth):
        value = 1.0
        for _ in range(depth):
            value = (value,)
        return value

    # 16 deep is a param like any other (a checkpoint reads values back to that depth).
    assert uwjit.Node("tuples", "deep", {"shape": nested(16)}).params["shape"] is not None
    # Deeper was accepted, and made a checkpoint no restore could read; 50 000 deep overflowed
    # the stack.
    for depth in (17, 50_000):
        with pytest.raises(ValueError, match="tuples nested more than 16 deep"):
            uwjit.Node("tuples", "deep", {"shape": nested(depth)})
        with pytest.raises(ValueError, match="tuples nested more than 16 deep"):
            uwjit.static_data_hash({"shape": nested(depth)})


def test_write_vtk_keeps_to_its_directory_and_replaces_only_vtk_files(engine, tmp_path):
    sim = uwjit.Simulation(engine, [heat()], threads=1)
    for stem in ("../escape", "/abs", "a\nb", ".hidden"):
        with pytest.raises(uwjit.UsageError, match="is not a plain file name"):
            sim.write_vtk(tmp_path / "out", stem=stem)
    assert not (tmp_path / "escape_heat.vti").exists()
    (tmp_path / "out").mkdir()
    mine = tmp_path / "out" / "heat.vti"
    mine.write_text("my notes")
    with pytest.raises(uwjit.IoError, match="is not a VTK XML file"):
        sim.write_vtk(tmp_path / "out")
    assert mine.read_text() == "my notes"
    mine.unlink()
    assert sim.write_vtk(tmp_path / "out") == [mine]
    assert sim.write_vtk(tmp_path / "out") == [mine]  # an earlier output is replaced


@pytest.mark.parametrize("call, words", [
    (lambda e: uwjit.Simulation(e, [heat()]).rebind_static("heat", "kappa", np.ones((8, 6, 5))),
     "expected a uwjit.StaticArray, got ndarray"),
    (lambda e: e.kernel(5), "expected a uwjit.Source or the kernel's text"),
    (lambda e: e.kernel("int f() { return 0; }", state_in=[(5, "f64", [3])]),
     "a slot's name is a str, got int"),
    (lambda e: e.kernel("int f() { return 0; }", state_in=[("x", "f64", 3)]),
     "the shape is a sequence"),
    (lambda e: uwjit.Ensemble(e, lambda p: heat(), {}, vary={1: (0, 1, 2)}, until=["steps:1"]),
     "Ensemble: vary: keys are str, got int"),
    (lambda e: uwjit.Ensemble(e, lambda p: heat(), {}, vary={"kappa": 3}, until=["steps:1"]),
     r'vary\["kappa"\]: expected \(low, high, count\)'),
    (lambda e: uwjit.Ensemble(e, lambda p: heat(), {}, samples=[{1: 1.0}], until=["steps:1"]),
     "Ensemble: samples: keys are str, got int"),
    (lambda e: uwjit.Ensemble(e, lambda p: heat(), {}, samples=[{"kappa": 1.0}],
                              until=["steps:1"], stages=[{"until": "steps:1"}]),
     "expected a list of stop rules"),
    (lambda e: uwjit.Ensemble(e, lambda p: heat(), {}, samples=[{"kappa": 1.0}],
                              until=["steps:1"], stages=[{1: 2}]),
     "a stage: keys are str, got int"),
])
def test_an_argument_of_the_wrong_type_is_a_type_error_naming_it(engine, call, words):
    with pytest.raises(TypeError, match=words):
        call(engine)
