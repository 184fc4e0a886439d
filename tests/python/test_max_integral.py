"""A domain integral that is a maximum (KernelWriter.integral(name, "max")): exactly numpy's
maximum of the cells' values, the same bits at any thread count, checked or not, NaN kept; an
ensemble member stops when it is below a tolerance, at the step a solo run says."""

import math

import numpy as np
import pytest

import uwjit


class Settle(uwjit.Node):
    """u <- u + rate * (target - u) on a 2-D grid, with three integrals: the total (a sum), the
    largest change |u_new - u_old| and the largest -u_new (minus the smallest value)."""

    def __init__(self, params):
        super().__init__("settle", "settle", params)

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]]), [uwjit.StateField("u")],
                            integrals=["total", "change", "lowest"], dt=1.0)

    def build_static_data(self):
        p = self.params
        target = np.cos(np.arange(p["nx"] * p["ny"], dtype=np.float64)).reshape(p["nx"], p["ny"])
        if p.get("poison", 0):
            target[p["nx"] // 2, 1] = math.nan
        return {"target": uwjit.StaticArray(target)}

    def initial_state(self, state):
        state["u"][...] = 2.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.param("rate", self.params["rate"])
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.integral("change", "max")
        writer.integral("lowest", reduction="max")
        writer.for_each_cell(["i", "j"], """
      const double next = u(i, j) + rate * (target(i, j) - u(i, j));
      u_out(i, j) = next;
      total += next;
      change.max(uwm::fabs(next - u(i, j)));
      lowest.max(-next);
""")


BASE = {"nx": 45, "ny": 700, "rate": 0.25}


def numpy_steps(params, steps):
    """The state after `steps` steps and each step's largest change, by numpy."""
    target = np.cos(np.arange(params["nx"] * params["ny"], dtype=np.float64)).reshape(
        params["nx"], params["ny"])
    u = np.full_like(target, 2.0)
    changes = []
    for _ in range(steps):
        nxt = u + params["rate"] * (target - u)
        changes.append(np.max(np.abs(nxt - u)))
        u = nxt
    return u, changes


def test_a_maximum_is_numpys_maximum_of_the_cells(engine):
    sim = uwjit.Simulation(engine, [Settle(BASE)], threads=2)
    u, changes = numpy_steps(BASE, 3)
    sim.step(3)
    np.testing.assert_array_equal(sim.field("settle", "u"), u)
    integrals = sim.integrals("settle")
    assert integrals["change"] == changes[-1]
    assert integrals["lowest"] == -np.min(u)
    assert integrals["total"] == pytest.approx(u.sum(), rel=1e-12)


def test_a_maximum_has_the_same_bits_at_any_thread_count_and_checked(engine):
    def run(threads, checked=False):
        sim = uwjit.Simulation(engine, [Settle(BASE)], threads=threads, checked=checked)
        seen = []
        for _ in range(4):
            sim.step()
            seen.append(np.float64(sim.integrals("settle")["change"]).tobytes())
        return seen

    one = run(1)
    for threads in (2, 3):
        assert run(threads) == one, f"{threads} threads: other bits"
    assert run(2, checked=True) == one


def test_a_nan_in_any_cell_is_the_maximum(engine):
    sim = uwjit.Simulation(engine, [Settle({**BASE, "poison": 1})], threads=2)
    sim.step()
    assert math.isnan(sim.integrals("settle")["change"])


def test_a_kernel_called_directly_gives_the_maximum_as_a_number(engine):
    writer = uwjit.KernelWriter("peak")
    n = writer.extent("nx", 6)
    writer.state_in("x", "f64", [n])
    writer.state_out("x")
    writer.integral("peak", "max")
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { x_out(i) = x(i); peak.max(x(i)); }")
    kernel = engine.kernel(writer.finish())
    x, y = uwjit.empty(6), uwjit.zeros(6)
    x[...] = [-3.0, -0.0, -7.5, -1.25, -9.0, -2.0]
    peak = kernel(state_in=[x], state_out=[y])["peak"]
    assert peak == 0.0 and math.copysign(1.0, peak) == -1.0  # -0.0, above -1.25
    x[3] = 0.0
    assert math.copysign(1.0, kernel(state_in=[x], state_out=[y])["peak"]) == 1.0  # +0 > -0
    with pytest.raises(ValueError, match=r"unknown reduction \"min\" \(accepted: sum, max\)"):
        uwjit.KernelWriter("low").integral("low", "min")


def test_an_ensemble_member_stops_when_its_largest_change_is_below_a_tolerance(engine):
    ens = uwjit.Ensemble(engine, Settle, {**BASE, "nx": 9, "ny": 40},
                         vary={"rate": (0.2, 0.6, 3)}, until=["below:change<1e-9", "steps:2000"],
                         batch=2, threads=2)
    ens.run()
    members = ens.take()
    assert len(members) == 3
    for m in members:
        assert m["status"] == "converged" and m["reason"].startswith("|change| ")
        sim = uwjit.Simulation(engine, [Settle({**BASE, "nx": 9, "ny": 40, **m["params"]})],
                               threads=1)
        steps = 0
        while True:
            sim.step(1)
            steps += 1
            if sim.integrals("settle")["change"] < 1e-9:
                break
        assert steps == m["steps"] > 1
        assert m["integrals"]["change"] == sim.integrals("settle")["change"]
        assert np.array_equal(m["fields"]["u"], sim.field("settle", "u"))
