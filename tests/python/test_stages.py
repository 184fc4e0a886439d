"""Nodes of several kernels per step (stages) and nodes that read other nodes' fields (coupling),
written in Python and checked against numpy."""

import numpy as np
import pytest

import uwjit

LAPLACIAN = "(D * (({f}(i - 1) - 2.0 * {f}(i)) + {f}(i + 1)))"


class Heun(uwjit.Node):
    """Periodic 1-D diffusion by Heun's method: stage 0 writes the predictor p, stage 1 the
    corrected u (and the integral total)."""

    def __init__(self, name, n, D, dt):
        super().__init__("heun", name, {"n": n, "D": D, "dt": dt})

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]], halo=1, boundary="periodic"),
                            [uwjit.StateField("u"), uwjit.StateField("p")], integrals=["total"],
                            stages=2)

    def initial_state(self, state):
        n = self.params["n"]
        state["u"][...] = np.sin(2 * np.pi * np.arange(n) / n) + 1.0

    def emit_stage(self, writer, stage):
        writer.param("D", self.params["D"])
        if stage == 0:
            writer.state_out("p")
            writer.body("for (uw_i64 i = 0; i < nx; ++i) { p_out(i) = u(i) + args->dt * "
                        + LAPLACIAN.format(f="u") + "; }")
        else:
            writer.state_out("u")
            writer.integral("total")
            writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = 0.5 * (u(i) + (p(i) + "
                        "args->dt * " + LAPLACIAN.format(f="p") + ")); total += u_out(i); }")


def heun_reference(u, D, dt, steps):
    def laplacian(f):
        return D * ((np.roll(f, 1) - 2.0 * f) + np.roll(f, -1))
    for _ in range(steps):
        p = u + dt * laplacian(u)
        u = 0.5 * (u + (p + dt * laplacian(p)))
    return u


def test_a_two_stage_python_node_matches_numpy(engine):
    node = Heun("h", 16, 0.3, 0.5)
    sim = uwjit.Simulation(engine, [node])
    start = sim.field("h", "u").copy()
    sim.step(5)
    expected = heun_reference(start, 0.3, 0.5, 5)
    np.testing.assert_allclose(sim.field("h", "u"), expected, rtol=1e-14)
    assert sim.integrals("h")["total"] == pytest.approx(expected.sum(), rel=1e-12)
    reports = sim.kernel_reports()
    assert [(r.node, r.stage) for r in reports] == [("h", 0), ("h", 1)]
    assert reports[0].info.key != reports[1].info.key
    assert repr(reports[1]) == "KernelReport(node='h', stage=1, key=%s, tier=%s)" % (
        reports[1].info.key, reports[1].info.tier)
    # The shapes these had before: dict access on a report, kernels() by node name (deprecated).
    assert reports[1]["stage"] == 1 and reports[1]["info"].key == reports[1].info.key
    with pytest.warns(DeprecationWarning, match="use kernel_reports"):
        assert sim.kernels()["h"].key == reports[0].info.key


class Source(uwjit.Node):
    """u <- 0.5 u."""

    def __init__(self, name, n):
        super().__init__("source", name, {"n": n})

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]]), [uwjit.StateField("u")])

    def initial_state(self, state):
        state["u"][...] = np.arange(1.0, self.params["n"] + 1)

    def emit_update(self, writer):
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = 0.5 * u(i); }")


class Sink(uwjit.Node):
    """v <- v + a, a being the field u of node `source` (coupled)."""

    def __init__(self, name, n, source="src", field="u"):
        super().__init__("sink", name, {"n": n, "source": source, "field": field})

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["n"]]), [uwjit.StateField("v")],
                            inputs=[uwjit.NodeInput(p["source"], p["field"], as_="a")])

    def initial_state(self, state):
        state["v"][...] = 0.0

    def emit_update(self, writer):
        writer.state_out("v")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { v_out(i) = v(i) + a(i); }")


class TwoStagesOneKernel(Source):
    """Declares two stages but writes only emit_update, like a single-kernel node."""

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]]), [uwjit.StateField("u")], stages=2)


def test_the_default_emit_stage_calls_emit_update_for_stage_zero_only(engine):
    writer = uwjit.KernelWriter("src")
    writer.domain_extent(0, "nx", 4)
    writer.state_in("u", "f64", [writer.domain(0)])
    Source("src", 4).emit_stage(writer, 0)
    assert "0.5 * u(i)" in writer.finish().body
    with pytest.raises(uwjit.UsageError, match="does not override emit_stage"):
        uwjit.Simulation(engine, [TwoStagesOneKernel("two", 4)])


@pytest.mark.parametrize("sink_first", [False, True])
def test_a_coupled_pair_of_python_nodes_reads_the_other_node_in_order(engine, sink_first):
    nodes = [Source("src", 4), Sink("sink", 4)]
    sim = uwjit.Simulation(engine, nodes[::-1] if sink_first else nodes)
    u = np.arange(1.0, 5.0)
    v = np.zeros(4)
    for _ in range(3):
        if sink_first:  # reads the source as it was before this step
            v, u = v + u, 0.5 * u
        else:           # reads the source after its step
            u = 0.5 * u
            v = v + u
    sim.step(3)
    np.testing.assert_array_equal(sim.field("src", "u"), u)
    np.testing.assert_array_equal(sim.field("sink", "v"), v)


@pytest.mark.parametrize("source, field, words", [
    ("nobody", "u", '"nobody"'),
    ("src", "w", '"w"'),
])
def test_an_input_that_does_not_exist_is_a_usage_error(engine, source, field, words):
    with pytest.raises(uwjit.UsageError, match=words):
        uwjit.Simulation(engine, [Source("src", 4), Sink("sink", 4, source, field)])


def test_an_input_of_other_cells_is_a_usage_error_naming_both_nodes(engine):
    with pytest.raises(uwjit.UsageError) as raised:
        uwjit.Simulation(engine, [Source("src", 5), Sink("sink", 4)])
    assert '"src"' in str(raised.value) and '"sink"' in str(raised.value)
