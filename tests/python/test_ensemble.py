"""uwjit.Ensemble: members of a Python node and of a built-in one, stepped as one batch, equal
each member run alone as a Simulation, bit for bit; their results come back as numpy arrays and
in an HDF5 file that h5py reads."""

import numpy as np
import pytest

import uwjit


class Decay(uwjit.Node):
    """u <- u - rate * dt * (u - floor) on a 2-D grid, with a run-time rate and a per-member
    floor (a static array built from the params); the integral is the total."""
    INTEGRALS = ["total"]
    RESIDUAL = ""  # a line the kernel adds to each cell's update

    def __init__(self, params):
        super().__init__("decay", "decay", params)

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]]), [uwjit.StateField("u")],
                            integrals=self.INTEGRALS, dt=0.1)

    def build_static_data(self):
        p = self.params
        floor = np.full((p["nx"], p["ny"]), p["floor"])
        floor[0, :] = 0.0
        return {"floor": uwjit.StaticArray(floor)}

    def initial_state(self, state):
        nx, ny = state["u"].shape
        state["u"][...] = np.arange(nx * ny).reshape(nx, ny) / 7.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.param("rate", self.params["rate"])
        writer.static_array("floor", writer.provided_dtype("floor"),
                            [writer.domain(0), writer.domain(1)])
        for name in self.INTEGRALS:
            writer.integral(name)
        writer.body("""
  for (uw_i64 i = 0; i < nx; ++i) {
    for (uw_i64 j = 0; j < ny; ++j) {
      u_out(i, j) = u(i, j) - rate * args->dt * (u(i, j) - floor(i, j));
      total += u_out(i, j);%s
    }
  }
""" % self.RESIDUAL)


BASE = {"nx": 7, "ny": 5, "rate": 0.5, "floor": 1.0}


def alone(engine, params, steps):
    sim = uwjit.Simulation(engine, [Decay(params)], threads=1)
    sim.step(steps)
    return sim.field("decay", "u").copy(), sim.integrals("decay")["total"]


def test_python_members_equal_each_run_alone(engine):
    ens = uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.2, 1.0, 3), "floor": (0, 2, 2)},
                         until=["steps:6"], batch=4, threads=2)
    ens.run()
    members = sorted(ens.take(), key=lambda m: m["id"])
    assert [m["id"] for m in members] == list(range(6))
    assert len(ens.kernel_reports) == 1
    for m in members:
        assert m["steps"] == 6 and m["status"] == "step_cap"
        u, total = alone(engine, {**BASE, **m["params"]}, 6)
        assert np.array_equal(m["fields"]["u"], u)
        assert m["integrals"]["total"] == total


def test_a_member_converges_by_its_own_rule(engine):
    ens = uwjit.Ensemble(engine, Decay, BASE, samples=[{"rate": 0.5}, {"rate": 2.0}, {"rate": 1.0}],
                         until=["change:total<1e-6", "steps:5000"], batch=2)
    ens.run()
    members = {m["id"]: m for m in ens.take()}
    assert all(m["status"] == "converged" for m in members.values())
    # The faster the decay, the sooner it converges.
    assert members[1]["steps"] < members[2]["steps"] < members[0]["steps"]
    u, total = alone(engine, {**BASE, "rate": 1.0}, members[2]["steps"])
    assert np.array_equal(members[2]["fields"]["u"], u)


class Settling(Decay):
    """Decay with a residual the kernel sums: (u_new - u_old)^2 over the cells."""
    INTEGRALS = ["total", "residual"]
    RESIDUAL = "\n      residual += (u_out(i, j) - u(i, j)) * (u_out(i, j) - u(i, j));"


def test_a_member_stops_when_its_residual_is_below_a_tolerance(engine):
    ens = uwjit.Ensemble(engine, Settling, BASE, vary={"rate": (0.5, 2.0, 3)},
                         until=["below:residual<1e-10", "steps:5000"], batch=2)
    ens.run()
    for m in ens.take():
        assert m["status"] == "converged" and m["reason"].startswith("|residual| ")
        # Run alone, the residual first falls below the tolerance at the member's step.
        sim = uwjit.Simulation(engine, [Settling({**BASE, **m["params"]})], threads=1)
        steps = 0
        while True:
            sim.step(1)
            steps += 1
            if abs(sim.integrals("decay")["residual"]) < 1e-10:
                break
        assert steps == m["steps"] > 1
        assert np.array_equal(m["fields"]["u"], sim.field("decay", "u"))


def test_heat_members_go_to_an_hdf5_file(engine, tmp_path):
    h5py = pytest.importorskip("h5py")
    params = uwjit.default_params("heat")
    params.update({"nx": 8, "ny": 6, "nz": 5})
    out = tmp_path / "sweep.h5"
    ens = uwjit.Ensemble(engine, lambda p: uwjit.node("heat", "heat", **p), params,
                         vary={"contrast": (1, 4, 4)}, until=["steps:5"], batch=3,
                         output=str(out), keep=False)
    ens.run()
    assert ens.take() == []
    with h5py.File(out, "r") as f:
        assert list(f["id"][:]) == [0, 1, 2, 3]
        assert list(f["params/contrast"][:]) == [1.0, 2.0, 3.0, 4.0]
        assert f["fields/u"].shape == (4, 8, 6, 5)
        assert [s.decode() if isinstance(s, bytes) else s for s in f["status"][:]] == ["step_cap"] * 4
        sim = uwjit.Simulation(engine, [uwjit.node("heat", "heat", **{**params, "contrast": 3.0})],
                               threads=1)
        sim.step(5)
        assert np.array_equal(f["fields/u"][2], sim.field("heat", "u"))
        assert f["integrals/heat"][2] == sim.integrals("heat")["heat"]
    # Never over a file that exists.
    with pytest.raises(uwjit.UsageError, match="exists"):
        uwjit.Ensemble(engine, lambda p: uwjit.node("heat", "heat", **p), params,
                       vary={"contrast": (1, 4, 4)}, until=["steps:5"], output=str(out))


def test_bad_input_is_a_usage_error(engine):
    with pytest.raises(uwjit.UsageError, match="unknown param \"rte\""):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rte": (0, 1, 2)}, until=["steps:2"])
    with pytest.raises(uwjit.UsageError, match="no step cap"):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0, 1, 2)}, until=["change:total<1"])
    with pytest.raises(uwjit.UsageError, match="has no integral \"energy\""):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0, 1, 2)},
                       until=["change:energy<1e-3", "steps:3"])
    with pytest.raises(uwjit.UsageError, match="never the layout"):
        uwjit.Ensemble(engine, Decay, BASE, vary={"nx": (4, 6, 2)}, until=["steps:2"])


def test_a_random_design_draws_in_low_high_ranges(engine):
    def draw(seed):
        ens = uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.1, 0.5)}, random=(5, seed),
                             until=["steps:2"])
        ens.run()
        return [m["params"]["rate"] for m in sorted(ens.take(), key=lambda m: m["id"])]

    rates = draw(7)
    assert len(rates) == 5 and all(0.1 <= r < 0.5 for r in rates)
    assert draw(7) == rates and draw(8) != rates
    # A grid needs its count; (low, high) alone is a range to draw from.
    with pytest.raises(uwjit.UsageError, match="a grid needs a COUNT"):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.1, 0.5)}, until=["steps:2"])
    with pytest.raises(uwjit.UsageError, match=r"expected \(low, high, count\), or \(low, high\)"):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.1,)}, until=["steps:2"])


def test_a_checkpoint_resumes_bit_for_bit(engine, tmp_path):
    kwargs = dict(samples=[{"rate": r} for r in (0.1, 0.2, 0.3, 0.4, 0.5)],
                  until=["change:total<1e-9", "steps:100000"], batch=2)
    whole = uwjit.Ensemble(engine, Decay, BASE, **kwargs)
    whole.run()
    expected = {m["id"]: m for m in whole.take()}
    first = uwjit.Ensemble(engine, Decay, BASE, **kwargs)
    for _ in range(8):
        assert first.advance(16)
    first.checkpoint(tmp_path / "decay.ckpt")
    resumed = uwjit.Ensemble(engine, Decay, BASE, resume=tmp_path / "decay.ckpt", **kwargs)
    resumed.run()
    assert sorted(m["id"] for m in resumed.summaries) == [0, 1, 2, 3, 4]
    for m in resumed.take():
        assert m["steps"] == expected[m["id"]]["steps"]
        assert np.array_equal(m["fields"]["u"], expected[m["id"]]["fields"]["u"])


def test_members_drawn_from_a_generator_as_slots_free_up(engine):
    drawn = []

    def members():
        for rate in (0.9, 0.1, 0.5, 0.3):
            drawn.append(rate)
            yield {"rate": rate}

    ens = uwjit.Ensemble(engine, Decay, BASE, samples=members(),
                         until=["change:total<1e-9", "steps:100000"], batch=2)
    # Only what the batch holds has been drawn.
    assert drawn == [0.9, 0.1]
    ens.run()
    assert sorted(m["params"]["rate"] for m in ens.take()) == [0.1, 0.3, 0.5, 0.9]


def test_an_ensemble_names_where_it_runs_and_a_missing_gpu_is_one_clear_error(engine):
    import ctypes

    ens = uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.2, 1.0, 2)}, until=["steps:1"])
    assert ens.device == "cpu"
    with pytest.raises(uwjit.UsageError, match=r'ensemble: device "gpu": expected "cpu", "cuda"'):
        uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.2, 1.0, 2)}, until=["steps:1"],
                       device="gpu")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        with pytest.raises(uwjit.UsageError, match=r"no NVIDIA driver: libcuda\.so\.1 could not "
                                                   r"be loaded"):
            uwjit.Ensemble(engine, Decay, BASE, vary={"rate": (0.2, 1.0, 2)}, until=["steps:1"],
                           device="cuda")


def test_a_make_that_raises_loses_no_member_and_a_call_from_make_is_refused(engine):
    calls = []

    def make(params):
        calls.append(params["rate"])
        if len(calls) == 3:
            raise KeyError("a bug in make")
        if len(calls) == 6:
            ens.step()  # a call of the ensemble while it runs
        return Decay(params)

    ens = uwjit.Ensemble(engine, make, BASE, vary={"rate": (0.1, 0.7, 7)}, until=["steps:3"],
                         batch=2)
    # The exception reaches the caller; the member it was for and the one drawn with it leave as
    # failed (they were lost), and the ensemble goes on with the others.
    with pytest.raises(KeyError, match="a bug in make"):
        ens.run()
    ens.run()
    left = {m["id"]: m for m in ens.take()}
    assert sorted(left) == list(range(7)) and ens.finished == 7
    failed = sorted(i for i, m in left.items() if m["status"] == "failed")
    assert failed == [2, 3, 6]
    assert all("a bug in make" in left[i]["reason"] for i in (2, 3))
    # The call from make() was refused, not run: that member failed, naming why.
    assert "one call at a time" in left[6]["reason"]


def test_a_member_whose_node_has_other_params_than_its_own_leaves_as_failed(engine):
    first = []

    def make(params):  # hands back the first node it made: every member would run rate 0.2
        first.append(first[0] if first else Decay(params))
        return first[-1]

    ens = uwjit.Ensemble(engine, make, BASE, vary={"rate": (0.2, 1.0, 3)}, until=["steps:2"])
    ens.run()
    left = sorted(ens.take(), key=lambda m: m["id"])
    assert [m["status"] for m in left] == ["step_cap", "failed", "failed"]
    assert 'param "rate" is 0.2, not the member\'s 0.6' in left[1]["reason"]
