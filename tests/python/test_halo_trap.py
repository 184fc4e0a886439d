"""A node whose kernel reads beyond its declared halo never runs silently wrong by default: the
Allen-Cahn mistake (a 2-D grid declared with uwjit.grid([nx, ny]), halo 0, and a cell text that
reads u(i - 1, j), u(i + 1, j), u(i, j - 1), u(i, j + 1)) is refused, naming node, field, axis
and halo, whether the boundaries are periodic, left at their default, or the reach is hidden
from the text; the same node with the halo it reads runs and matches numpy."""

import re

import numpy as np
import pytest

import uwjit

# Allen-Cahn: u_t = eps^2 lap(u) + u - u^3, explicit Euler, unit cells.
LAPLACIAN = """
      const double c = u(i, j);
      const double lap = u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * c;
      u_out(i, j) = c + args->dt * (eps2 * lap + c - c * c * c);
"""

# The same stencil with its reach out of the text's sight: the offsets are variables.
HIDDEN = """
      const uw_i64 left = i - shift, right = i + shift, down = j - shift, up = j + shift;
      const double c = u(i, j);
      const double lap = u(left, j) + u(right, j) + u(i, down) + u(i, up) - 4.0 * c;
      u_out(i, j) = c + args->dt * (eps2 * lap + c - c * c * c);
"""


class AllenCahn(uwjit.Node):
    def __init__(self, name, n, halo=None, boundary="periodic", cell=LAPLACIAN):
        super().__init__("allen-cahn", name, {"n": n, "dt": 0.1})
        self.halo = halo
        self.boundary = boundary
        self.cell = cell

    def layout(self):
        n = self.params["n"]
        if self.halo is None:
            axes = uwjit.grid([n, n], boundary=self.boundary)  # the mistake: halo 0
        else:
            axes = uwjit.grid([n, n], halo=self.halo, boundary=self.boundary)
        return uwjit.Layout(axes, [uwjit.StateField("u")])

    def initial_state(self, state):
        n = self.params["n"]
        x = np.arange(n) + 0.5
        state["u"][...] = 0.9 * np.outer(np.sin(2 * np.pi * x / n), np.cos(2 * np.pi * x / n))

    def emit_update(self, writer):
        writer.state_out("u")
        writer.param("eps2", 0.5)
        writer.helpers("constexpr long long shift = 1;\n")
        writer.for_each_cell(["i", "j"], self.cell)


def test_the_allen_cahn_mistake_with_periodic_boundaries_is_refused_naming_node_axis_and_halo(
        engine):
    with pytest.raises(uwjit.UsageError) as caught:
        uwjit.Simulation(engine, [AllenCahn("ac", 16)])
    message = str(caught.value)
    assert 'node "ac": axis 0 (nx): a periodic boundary with halo 0 fills nothing' in message
    assert "uwjit.grid(cells, halo=1" in message


def test_the_same_mistake_with_the_default_boundary_is_refused_naming_node_field_axis_and_halo(
        engine):
    with pytest.raises(uwjit.UsageError) as caught:
        uwjit.Simulation(engine, [AllenCahn("ac", 16, boundary="edge")])
    message = str(caught.value)
    assert message.startswith('kernel of "ac": for_each_cell(): u(i - 1, j) at line 3')
    assert 'reads "u" 1 cell beyond the interior along domain axis 0 (nx), whose halo is 0' in message
    assert "uwjit.grid(cells, halo=1)" in message


def test_a_reach_the_text_hides_fails_the_first_step_naming_node_field_axis_and_halo(engine):
    sim = uwjit.Simulation(engine, [AllenCahn("ac", 16, boundary="edge", cell=HIDDEN)])
    assert sim.kernel_reports()[0].first_step_check is not None
    before = sim.field("ac", "u").copy()
    with pytest.raises(uwjit.KernelError) as caught:
        sim.step()
    message = str(caught.value)
    assert re.match(r'node "ac", step 0: kernel read "u" at \((-1, 0|0, -1)\), outside its layout '
                    r'\(halo 0 on axis (0|1)\)', message), message
    assert "found by the check of the first step" in message
    assert sim.steps_taken == 0
    np.testing.assert_array_equal(sim.field("ac", "u"), before)


def reference(u, steps, dt=0.1, eps2=0.5):
    for _ in range(steps):
        lap = (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
               - 4.0 * u)
        u = u + dt * (eps2 * lap + u - u * u * u)
    return u


@pytest.mark.parametrize("cell", [LAPLACIAN, HIDDEN])
def test_with_the_halo_it_reads_the_node_runs_and_matches_numpy(engine, cell):
    node = AllenCahn("ac", 16, halo=1, cell=cell)
    sim = uwjit.Simulation(engine, [node])
    start = sim.field("ac", "u").copy()
    sim.step(5)
    np.testing.assert_allclose(sim.field("ac", "u"), reference(start, 5), rtol=1e-13, atol=1e-15)
    # The text shows the stencil's reach, or the first step checks it.
    hidden = cell is HIDDEN
    assert (sim.kernel_reports()[0].first_step_check is not None) == hidden
