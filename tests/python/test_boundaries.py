"""Per-face boundaries: what a Dirichlet or Neumann halo holds, as a kernel that reads it sees;
the C++ validation of boundaries surfacing as UsageError."""

import numpy as np
import pytest

import uwjit
from uwjit import Boundary, BoundaryFace


class Peek(uwjit.Node):
    """Copies the halos of u into lo and hi: lo(i) = u(i - 2) and hi(i) = u(i + 2), so that after
    a step lo[0], lo[1] are u's low halo cells at distance 2, 1 and hi[n-2], hi[n-1] the high
    ones at distance 1, 2. u = 0, 1, ..., n-1 is never written."""

    def __init__(self, name, n, boundary, dtype="f64"):
        super().__init__("peek", name, {"n": n})
        self.boundary = boundary
        self.dtype = dtype

    def layout(self):
        axes = [uwjit.DomainAxis(self.params["n"], halo=2, boundary=self.boundary)]
        return uwjit.Layout(axes, [uwjit.StateField(f, self.dtype) for f in ("u", "lo", "hi")])

    def initial_state(self, state):
        state["u"][...] = np.arange(self.params["n"])

    def emit_update(self, writer):
        writer.state_out("lo")
        writer.state_out("hi")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { lo_out(i) = u(i - 2); hi_out(i) = u(i + 2); }")


def halos(engine, boundary, n=6):
    sim = uwjit.Simulation(engine, [Peek("p", n, boundary)])
    sim.step()
    lo, hi = sim.field("p", "lo"), sim.field("p", "hi")
    return [lo[0], lo[1]], [hi[n - 2], hi[n - 1]]  # low: distance 2, 1; high: distance 1, 2


def test_a_dirichlet_halo_is_the_reflection_about_the_face_value(engine):
    # The halo cell at distance k holds 2 value - mirror; mirrors of u = 0..5: low k-1, high n-k.
    low, high = halos(engine, Boundary(BoundaryFace.dirichlet(1.0), BoundaryFace.dirichlet(-2.0)))
    assert low == [2 * 1.0 - 1, 2 * 1.0 - 0]
    assert high == [2 * -2.0 - 5, 2 * -2.0 - 4]


def test_a_neumann_halo_adds_the_gradient_over_the_distance_to_its_mirror(engine):
    # mirror + gradient (2k - 1).
    low, high = halos(engine, Boundary(low=BoundaryFace.neumann(0.5), high=BoundaryFace.neumann(0)))
    assert low == [1 + 0.5 * 3, 0 + 0.5 * 1]
    assert high == [5, 4]


def test_edge_periodic_and_a_single_face_for_both_ends(engine):
    assert halos(engine, "edge") == ([0, 0], [5, 5])
    assert halos(engine, Boundary.periodic()) == ([4, 5], [0, 1])
    assert halos(engine, BoundaryFace.dirichlet(0)) == ([-1, 0], [-5, -4])


def test_grid_takes_a_boundary_for_every_axis():
    wall = Boundary(BoundaryFace.dirichlet(1), BoundaryFace.edge())
    axes = uwjit.grid([4, 3], halo=1, boundary=wall)
    assert [a.boundary for a in axes] == [wall, wall]
    assert axes[0].boundary.low.kind == "dirichlet" and axes[0].boundary.low.value == 1
    assert str(wall) == "dirichlet 1 / edge"
    assert uwjit.grid([4], boundary="periodic")[0].boundary == Boundary.both(BoundaryFace.periodic())
    with pytest.raises(ValueError, match="unknown boundary"):
        uwjit.grid([4], boundary="wall")
    with pytest.raises(TypeError):
        uwjit.DomainAxis(4, boundary=1.0)


@pytest.mark.parametrize("boundary, dtype, words", [
    (Boundary(BoundaryFace.periodic(), BoundaryFace.edge()), "f64", "periodic"),
    (BoundaryFace.dirichlet(1.0), "i32", "dirichlet"),
])
def test_invalid_boundaries_are_usage_errors_naming_the_node(engine, boundary, dtype, words):
    with pytest.raises(uwjit.UsageError, match=words) as raised:
        uwjit.Simulation(engine, [Peek("walls", 6, boundary, dtype)])
    assert '"walls"' in str(raised.value)


def test_a_dirichlet_halo_wider_than_the_axis_is_a_usage_error(engine):
    with pytest.raises(uwjit.UsageError, match='"narrow"'):
        uwjit.Simulation(engine, [Peek("narrow", 1, BoundaryFace.dirichlet(0))])


@pytest.mark.parametrize("make, value", [
    (BoundaryFace.dirichlet, 1e308), (BoundaryFace.dirichlet, float("inf")),
    (BoundaryFace.neumann, -1e301), (BoundaryFace.neumann, float("nan")),
])
def test_a_face_value_whose_halo_could_overflow_is_refused_when_the_face_is_made(make, value):
    with pytest.raises(uwjit.UsageError, match=r"is not a finite number within \[-1e300, 1e300\]"):
        make(value)
    assert make(1e300).value == 1e300 and make(-1e300).value == -1e300
