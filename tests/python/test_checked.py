"""Checked mode: a Python node that reads beyond its halo fails the step with a KernelError that
names the node, the field and the index, whether asked for by checked=True or by UWJIT_CHECK."""

import numpy as np
import pytest

import uwjit


class Shift(uwjit.Node):
    """u_out(i) = u(i - 1) over a 1-D grid of `halo` halo cells: with no halo, u(-1) is a read
    outside the field's layout."""

    def __init__(self, name, n, halo):
        super().__init__("shift", name, {"n": n, "halo": halo})

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]], halo=self.params["halo"]),
                            [uwjit.StateField("u")])

    def initial_state(self, state):
        state["u"][...] = np.arange(self.params["n"], dtype=float)

    def emit_update(self, writer):
        writer.state_out("u")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i - 1); }")


def test_a_read_beyond_the_halo_fails_the_step_naming_node_field_and_index(engine):
    sim = uwjit.Simulation(engine, [Shift("advect", 6, 0)], checked=True)
    assert sim.checked is True
    with pytest.raises(uwjit.KernelError) as raised:
        sim.step()
    message = str(raised.value)
    assert 'node "advect"' in message
    assert '"u"' in message and "(-1)" in message and "halo 0" in message
    assert sim.steps_taken == 0
    np.testing.assert_array_equal(sim.field("advect", "u"), np.arange(6.0))


def test_the_same_node_within_its_halo_passes_and_gives_the_unchecked_result(engine):
    checked = uwjit.Simulation(engine, [Shift("s", 6, 1)], checked=True)
    plain = uwjit.Simulation(engine, [Shift("s", 6, 1)])
    assert plain.checked is False
    checked.step(2)
    plain.step(2)
    np.testing.assert_array_equal(checked.field("s", "u"), plain.field("s", "u"))
    np.testing.assert_array_equal(plain.field("s", "u"), [0, 0, 0, 1, 2, 3])
    # Checked kernels are other text, so another key.
    assert checked.kernel_reports()[0].info.key != plain.kernel_reports()[0].info.key


def test_uwjit_check_in_the_environment_turns_checked_mode_on(engine, monkeypatch):
    monkeypatch.setenv("UWJIT_CHECK", "1")
    sim = uwjit.Simulation(engine, [Shift("advect", 6, 0)])
    assert sim.checked is True
    with pytest.raises(uwjit.KernelError, match='"u" at \\(-1\\)'):
        sim.step()
