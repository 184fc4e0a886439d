"""Run-time params and scalar static arrays: values a kernel reads when it runs, never written
into its text, so that changing them compiles nothing."""

import numpy as np
import pytest

import uwjit


class Decay(uwjit.Node):
    """u <- u - rate * u + gain, with `rate` a run-time param and `gain` a scalar static array."""

    def __init__(self, name, rate, gain=0.0, n=5):
        super().__init__("decay", name, {"n": n, "rate": rate})
        self.gain = gain

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]]), [uwjit.StateField("u")])

    def build_static_data(self):
        return {"gain": uwjit.StaticArray(self.gain)}

    def initial_state(self, state):
        state["u"][...] = np.arange(1.0, self.params["n"] + 1)

    def emit_update(self, writer):
        writer.state_out("u")
        writer.param("rate", self.params["rate"])
        writer.static_array("gain")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i) - rate * u(i) + gain(); }")


def test_a_sweep_over_a_run_time_param_compiles_once(engine):
    start = np.arange(1.0, 6.0)
    for rate in (0.1, 0.25, 0.5, 0.75):
        sim = uwjit.Simulation(engine, [Decay("d", rate)])
        sim.step()
        np.testing.assert_array_equal(sim.field("d", "u"), start - rate * start)
    # The kernel, and once the checked copy that runs its first step (its loops are its own, so
    # its text does not show how far it reads).
    assert sim.kernel_reports()[0].first_step_check is not None
    assert engine.stats()["compiles"] == 2


def test_a_kernel_called_directly_takes_its_run_time_params_by_name(engine):
    writer = uwjit.KernelWriter("scale")
    n = writer.domain_extent(0, "nx", 4)
    writer.state_in("x", "f64", [n])
    writer.state_out("x")
    writer.param("factor", 2.0)
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { x_out(i) = factor * x(i); }")
    kernel = engine.kernel(writer.finish())
    assert kernel.slots["params"] == ["factor"]
    x = uwjit.zeros(4)
    x[...] = [1, 2, 3, 4]
    y = uwjit.zeros(4)
    kernel(state_in=[x], state_out=[y], run_time_params={"factor": 3.0})
    np.testing.assert_array_equal(y, [3, 6, 9, 12])
    with pytest.raises(ValueError, match='run_time_params lacks "factor"'):
        kernel(state_in=[x], state_out=[y])
    with pytest.raises(ValueError, match='unknown run-time param "scale"'):
        kernel(state_in=[x], state_out=[y], run_time_params={"factor": 1.0, "scale": 2.0})
    # The keyword's former name still works, with a DeprecationWarning.
    with pytest.warns(DeprecationWarning, match="use run_time_params="):
        kernel(state_in=[x], state_out=[y], params={"factor": 4.0})
    np.testing.assert_array_equal(y, [4, 8, 12, 16])


def test_a_param_name_that_is_taken_is_a_usage_error():
    writer = uwjit.KernelWriter("clash")
    writer.domain_extent(0, "nx", 4)
    with pytest.raises(uwjit.UsageError, match="nx"):
        writer.param("nx", 1.0)


@pytest.mark.parametrize("value", [2.0, np.array(2.0)])
def test_a_float_or_a_0d_array_is_a_scalar_static_array(value):
    scalar = uwjit.StaticArray(value)
    assert scalar.shape == () and scalar.dtype == "f64" and float(scalar.value) == 2.0


def test_an_int_is_an_i64_scalar_and_a_bool_is_refused():
    assert uwjit.StaticArray(3).dtype == "i64"
    with pytest.raises(TypeError):
        uwjit.StaticArray(True)


def test_rebinding_a_scalar_static_array_compiles_nothing(engine):
    sim = uwjit.Simulation(engine, [Decay("d", 0.5, gain=1.0)])
    sim.step()
    np.testing.assert_array_equal(sim.field("d", "u"), 0.5 * np.arange(1.0, 6.0) + 1.0)
    compiles = engine.stats()["compiles"]
    rebound = sim.rebind_static("d", "gain", uwjit.StaticArray(np.array(10.0)))
    assert rebound["new_kernel"] is False
    before = sim.field("d", "u").copy()
    sim.step()
    np.testing.assert_array_equal(sim.field("d", "u"), before - 0.5 * before + 10.0)
    assert engine.stats()["compiles"] == compiles
    assert sim.rebound_statics("d") == ["gain"]
