"""A node written in Python: layout, static data, initial state and kernel text from Python,
checked against numpy; rebinding; restoring with a factory."""

import numpy as np
import pytest

import uwjit


class Relax(uwjit.Node):
    """u <- u + rate * (target - u) on a 2-D grid; the target is a static array."""

    def __init__(self, name, nx, ny, rate, target=None):
        super().__init__("relax", name, {"nx": nx, "ny": ny, "rate": rate})
        self.target = target if target is not None else np.linspace(0, 1, nx * ny).reshape(nx, ny)

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]]), [uwjit.StateField("u")],
                            integrals=["total"], dt=p["rate"])

    def build_static_data(self):
        return {"target": uwjit.StaticArray(self.target), "label": "relax"}

    def initial_state(self, state):
        state["u"][...] = 1.0

    def emit_update(self, writer):
        writer.state_out("u")
        # The bound array's dtype (a rebind may change it) and the domain's shape (checked).
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.body("""
  for (uw_i64 i = 0; i < nx; ++i) {
    for (uw_i64 j = 0; j < ny; ++j) {
      u_out(i, j) = u(i, j) + args->dt * (target(i, j) - u(i, j));
      total += u_out(i, j);
    }
  }
""")


def reference(target, rate, steps):
    u = np.ones_like(target)
    for _ in range(steps):
        u = u + rate * (target - u)
    return u


def test_a_python_node_matches_numpy(engine):
    node = Relax("r", 6, 5, 0.25)
    sim = uwjit.Simulation(engine, [node], threads=2)
    sim.step(4)
    expected = reference(node.target, 0.25, 4)
    np.testing.assert_allclose(sim.field("r", "u"), expected, rtol=1e-14)
    assert sim.integrals("r")["total"] == pytest.approx(expected.sum(), rel=1e-12)
    assert sim.kernel_reports()[0].info.origin == "r"


def test_the_simulation_keeps_its_nodes_whatever_the_caller_does_with_the_list(engine):
    import gc

    nodes = [Relax("r", 6, 5, 0.25)]
    sim = uwjit.Simulation(engine, nodes, threads=1)
    nodes.clear()
    gc.collect()
    sim.step(2)
    assert sim.integrals("r")["total"] == pytest.approx(
        reference(np.linspace(0, 1, 30).reshape(6, 5), 0.25, 2).sum(), rel=1e-12)
    nodes.append("junk")
    assert [n.name for n in sim.nodes] == ["r"]


class Relabelled(Relax):
    """A node whose layout() would name its integral anew on every call."""

    calls = 0

    def layout(self):
        Relabelled.calls += 1
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]]), [uwjit.StateField("u")],
                            integrals=[f"total{Relabelled.calls}"], dt=p["rate"])

    def emit_update(self, writer):
        name = uwjit.Node.layout(self).integrals[0]  # the layout uwjit keeps
        writer.state_out("u")
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral(name)
        writer.body(f"""
  for (uw_i64 i = 0; i < nx; ++i) {{
    for (uw_i64 j = 0; j < ny; ++j) {{
      u_out(i, j) = u(i, j) + args->dt * (target(i, j) - u(i, j));
      {name} += u_out(i, j);
    }}
  }}
""")


def test_a_nodes_layout_is_asked_once_and_names_its_integrals_from_then_on(engine, tmp_path):
    node = Relabelled("r", 6, 5, 0.25)
    sim = uwjit.Simulation(engine, [node], threads=1)
    sim.step(2)
    sim.checkpoint(tmp_path / "r.ckpt")
    total = reference(node.target, 0.25, 2).sum()
    assert sim.integrals("r") == {"total1": pytest.approx(total, rel=1e-12)}
    assert sim.integrals("r") == sim.gathered().integrals("r")
    assert Relabelled.calls == 1
    # A new node is asked anew: the checkpoint's integral is not among its own.
    with pytest.raises(uwjit.UsageError, match='node "r" has no domain integral "total1"'):
        uwjit.Simulation.restore(engine, tmp_path / "r.ckpt",
                                 factory=lambda t, n, p: Relabelled(n, p["nx"], p["ny"], p["rate"]),
                                 threads=1)


def test_rebinding_a_same_shape_array_compiles_nothing_and_changes_the_results(engine):
    node = Relax("r", 6, 5, 0.5)
    sim = uwjit.Simulation(engine, [node], threads=1)
    sim.step()
    compiles = engine.stats()["compiles"]
    other = np.full((6, 5), 3.0)
    rebound = sim.rebind_static("r", "target", uwjit.StaticArray(other))
    assert rebound["new_kernel"] is False
    assert engine.stats()["compiles"] == compiles
    before = sim.field("r", "u").copy()
    sim.step()
    np.testing.assert_allclose(sim.field("r", "u"), before + 0.5 * (other - before), rtol=1e-14)
    # Another dtype: a new kernel, which reads the new array.
    rebound = sim.rebind_static("r", "target", uwjit.StaticArray(np.zeros((6, 5), np.float32)))
    assert rebound["new_kernel"] is True and rebound["info"].tier == "compiled"
    before = sim.field("r", "u").copy()
    sim.step()
    np.testing.assert_allclose(sim.field("r", "u"), 0.5 * before, rtol=1e-14)


def test_a_wrong_shape_is_refused_and_leaves_the_simulation_unchanged(engine):
    sim = uwjit.Simulation(engine, [Relax("r", 6, 5, 0.5)], threads=1)
    with pytest.raises(uwjit.UsageError):
        sim.rebind_static("r", "target", uwjit.StaticArray(np.zeros((7, 5))))
    with pytest.raises(uwjit.UsageError):
        sim.rebind_static("r", "no_such_key", uwjit.StaticArray(np.zeros((6, 5))))
    sim.step()
    np.testing.assert_allclose(sim.field("r", "u"), reference(Relax("x", 6, 5, 0.5).target, 0.5, 1))


def test_errors_raised_in_a_python_node_reach_the_caller(engine):
    class Broken(Relax):
        def emit_update(self, writer):
            raise RuntimeError("no kernel today")

    with pytest.raises(RuntimeError, match="no kernel today"):
        uwjit.Simulation(engine, [Broken("b", 4, 4, 0.1)])

    class BadText(Relax):
        def emit_update(self, writer):
            writer.state_out("u")
            writer.integral("total")
            writer.body("  u_out(0, 0) = nothing;\n")

    with pytest.raises(uwjit.CompileError) as caught:
        uwjit.Simulation(engine, [BadText("t", 4, 4, 0.1)])
    # Lines and columns count in the text the node wrote, and the message names the node.
    error = caught.value
    assert (error.section, error.line, error.column) == ("kernel", 1, 17)
    assert error.diagnostics[0][:3] == (1, 17, "error")
    assert 'node "t": kernel line 1, column 17' in str(error)


def test_a_checkpointed_python_node_is_rebuilt_by_the_factory(engine, tmp_path):
    node = Relax("r", 4, 3, 0.5)
    sim = uwjit.Simulation(engine, [node, uwjit.node("heat", size=[4, 4, 4])], threads=1)
    sim.step(2)
    path = tmp_path / "mixed.ckpt"
    sim.checkpoint(path)
    sim.step(1)

    def factory(type, name, params):
        if type == "relax":
            return Relax(name, params["nx"], params["ny"], params["rate"], node.target)
        return None  # built-in

    restored = uwjit.Simulation.restore(engine, path, factory=factory, threads=1)
    restored.step(1)
    np.testing.assert_array_equal(restored.field("r", "u"), sim.field("r", "u"))
    np.testing.assert_array_equal(restored.field("heat", "u"), sim.field("heat", "u"))
    paths = restored.write_vtk(tmp_path / "vtk")
    assert any(p.suffix == ".vti" and p.stem == "r" for p in paths)


def test_restoring_a_checkpoint_written_after_rebind_static_warns_and_lists_the_key(
        engine, tmp_path):
    node = Relax("r", 4, 3, 0.5)
    sim = uwjit.Simulation(engine, [node], threads=1)
    assert sim.rebound_statics("r") == []
    sim.rebind_static("r", "target", uwjit.StaticArray(np.full((4, 3), 2.0)))
    assert sim.rebound_statics("r") == ["target"]
    sim.step()
    path = tmp_path / "rebound.ckpt"
    sim.checkpoint(path)

    def factory(type, name, params):
        return Relax(name, params["nx"], params["ny"], params["rate"], node.target)

    with pytest.warns(RuntimeWarning, match=r'node "r" .*\(target\).*rebind_static'):
        restored = uwjit.Simulation.restore(engine, path, factory=factory, threads=1)
    assert restored.rebound_statics("r") == ["target"]
    # The node's own array is bound again: the next step relaxes towards it, not towards 2.
    before = restored.field("r", "u").copy()
    restored.step()
    np.testing.assert_allclose(restored.field("r", "u"), before + 0.5 * (node.target - before),
                               rtol=1e-14)
    with pytest.raises(uwjit.UsageError, match="nobody"):
        restored.rebound_statics("nobody")


def test_a_node_lacking_a_method_is_a_clear_error(engine):
    class Empty(uwjit.Node):
        pass

    with pytest.raises(TypeError, match="must define layout"):
        uwjit.Simulation(engine, [Empty("empty", "e")])


@pytest.mark.parametrize("method, body, error, words", [
    ("layout", lambda self: None, TypeError, "layout() must return a uwjit.Layout, got NoneType"),
    ("initial_state", lambda self, state: state.update(u=np.zeros((4, 4))), ValueError,
     "in place"),
    # Resized or retyped in place: was an InternalError (an assertion) or bytes read as another type.
    ("initial_state", lambda self, state: state["u"].resize((100,), refcheck=False), ValueError,
     "initial_state changed the shape or dtype of state[\"u\"] to (100) float64"),
    ("initial_state", lambda self, state: setattr(state["u"], "dtype", np.int64), ValueError,
     "to (4, 4) int64 (its layout's is (4, 4) f64)"),
    ("build_static_data", lambda self: [1, 2], TypeError, "expected a dict"),
    ("build_static_data", lambda self: {"w": np.zeros(4)}, TypeError, "uwjit.StaticArray"),
])
def test_a_node_that_breaks_its_contract_is_a_clear_error(engine, method, body, error, words):
    broken = type("Broken", (Relax,), {method: body})
    with pytest.raises(error) as caught:
        uwjit.Simulation(engine, [broken("b", 4, 4, 0.1)])
    assert words in str(caught.value)


class RelaxCells(Relax):
    """Relax with the writer's iteration: the node gives one cell's update."""

    def emit_update(self, writer):
        writer.state_out("u")
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.for_each_cell(["i", "j"], """
      u_out(i, j) = u(i, j) + args->dt * (target(i, j) - u(i, j));
      total += u_out(i, j);
""")
        assert writer.cell_form


def test_a_cell_form_python_node_matches_numpy_and_its_loop_form(engine):
    loops = uwjit.Simulation(engine, [Relax("r", 7, 9, 0.25)], threads=2)
    cells = uwjit.Simulation(engine, [RelaxCells("r", 7, 9, 0.25)], threads=2)
    loops.step(3)
    cells.step(3)
    np.testing.assert_array_equal(cells.field("r", "u"), loops.field("r", "u"))
    np.testing.assert_allclose(cells.field("r", "u"), reference(RelaxCells("r", 7, 9, 0.25).target,
                                                                0.25, 3), rtol=1e-14)
    assert cells.integrals("r")["total"] == pytest.approx(loops.integrals("r")["total"], rel=1e-12)


def test_a_kernel_with_its_own_loops_and_the_writers_is_a_usage_error(engine):
    class Both(RelaxCells):
        def emit_update(self, writer):
            writer.state_out("u")
            writer.body("// the node's own loops\n")
            writer.for_each_cell(["i", "j"], "u_out(i, j) = u(i, j);\n")

    with pytest.raises(uwjit.UsageError, match="a kernel has its own loops or the writer's"):
        uwjit.Simulation(engine, [Both("r", 4, 4, 0.5)])

    class WrongCount(RelaxCells):
        def emit_update(self, writer):
            writer.state_out("u")
            writer.for_each_cell(["i"], "u_out(i, 0) = 1.0;\n")

    with pytest.raises(uwjit.UsageError, match=r"names 1 indices \(i\) for 2 domain axes"):
        uwjit.Simulation(engine, [WrongCount("r", 4, 4, 0.5)])



class Waves(RelaxCells):
    """Relaxation towards sin(target + k), k = 0 .. 3, in the writer's iteration: enough work per
    cell that the threads share the slabs of a step."""

    def emit_update(self, writer):
        writer.state_out("u")
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.for_each_cell(["i", "j"], """
      double v = u(i, j);
      for (int k = 0; k < 4; ++k) {
        v += args->dt * (uwm::sin(target(i, j) + k) - v);
      }
      u_out(i, j) = v;
      total += v;
""")


def test_a_cell_form_python_node_gives_the_same_bytes_and_bits_at_any_thread_count(engine):
    # The CPU executor cuts the box along x into slabs of about 16384 cells (at most 64) and adds
    # their integrals in slab order: 45 x 8100 cells are 22 slabs of 2 or 3 rows, many enough
    # that an order that followed the threads would change the integral's last bits.
    target = np.arange(45 * 8100, dtype=np.float64).reshape(45, 8100)

    def run(threads):
        sim = uwjit.Simulation(engine, [Waves("w", 45, 8100, 0.25, target)], threads=threads)
        assert sim.threads == threads
        totals = []
        for _ in range(6):
            sim.step()
            totals.append(np.float64(sim.integrals("w")["total"]).tobytes())
        return sim.field("w", "u").tobytes(), totals

    one = run(1)
    for threads in (2, 3, 7):
        state, totals = run(threads)
        assert state == one[0], f"{threads} threads: another state"
        assert totals == one[1], f"{threads} threads: other integral bits"


class Drift(uwjit.Node):
    """Two components on a periodic 2-D grid: component 0 drifts along x, component 1 along y, so
    that each reads the halos of one axis only (halo_axes [0b01, 0b10])."""

    def __init__(self, name, halo_axes):
        super().__init__("drift", name, {"n": 24})
        self.halo_axes = halo_axes

    def layout(self):
        n = self.params["n"]
        return uwjit.Layout(uwjit.grid([n, n], halo=1, boundary="periodic"),
                            [uwjit.StateField("u", components=[2], halo_axes=self.halo_axes)])

    def initial_state(self, state):
        n = self.params["n"]
        state["u"][...] = np.arange(2 * n * n, dtype=np.float64).reshape(2, n, n) % 7

    def emit_update(self, writer):
        writer.state_out("u")
        writer.for_each_cell(["i", "j"], """
      u_out(0, i, j) = 0.5 * (u(0, i - 1, j) + u(0, i + 1, j));
      u_out(1, i, j) = 0.5 * (u(1, i, j - 1) + u(1, i, j + 1));
""")


def test_halo_axes_fill_only_the_halos_the_kernel_reads_with_the_same_bits(engine):
    def run(halo_axes, threads, checked=False):
        sim = uwjit.Simulation(engine, [Drift("d", halo_axes)], threads=threads, checked=checked)
        sim.step(5)
        return sim.field("d", "u").copy()

    every = run([], 1)
    for threads in (1, 2):
        np.testing.assert_array_equal(run([0b01, 0b10], threads), every)
    # The declaration is obeyed: one that swaps the axes leaves the halos read unfilled, and the
    # results differ, except in checked mode, which fills every halo.
    assert not np.array_equal(run([0b10, 0b01], 1), every)
    np.testing.assert_array_equal(run([0b10, 0b01], 1, checked=True), every)


def test_halo_axes_is_shown_and_checked():
    field = uwjit.StateField("u", components=[2], halo_axes=[1, 2])
    assert field.halo_axes == (1, 2)
    assert repr(field) == "StateField('u', 'f64', components=[2], halo_axes=[1, 2])"
    assert uwjit.StateField("u").halo_axes == ()
    with pytest.raises(TypeError, match="StateField: halo_axes: expected a list of ints"):
        uwjit.StateField("u", halo_axes=3)


def test_halo_axes_of_the_wrong_length_or_beyond_the_domain_name_the_field(engine):
    with pytest.raises(uwjit.UsageError, match=r'state field "u": halo_axes has 1 masks, but the '
                       r"field has 2 components"):
        uwjit.Simulation(engine, [Drift("d", [0b01])])
    with pytest.raises(uwjit.UsageError, match=r'state field "u": halo_axes\[1\] is 4, which '
                       r"names an axis beyond the domain's 2"):
        uwjit.Simulation(engine, [Drift("d", [0b01, 0b100])])
