"""The tutorial's node (docs/tutorials/first-node.md): 2-D diffusion of a temperature u between
insulating walls, as a node of its own. It runs on every core, split over the MPI ranks when
started under mpiexec, writes its state for ParaView, and checks that a run restarted from a
checkpoint ends bit for bit where the straight run ends."""
import numpy as np
import uwjit


class Heat2D(uwjit.Node):
    """u += dt kappa laplacian(u) on an n x n grid; the total heat is a domain integral."""

    def __init__(self, n, kappa, name="plate"):
        super().__init__("heat2d", name, {"n": n, "kappa": kappa})  # node params

    def layout(self):
        n = self.params["n"]
        return uwjit.Layout(uwjit.grid([n, n], halo=1, boundary="edge"),
                            [uwjit.StateField("u")], integrals=["heat"], dt=0.2)

    def initial_state(self, state):
        n = self.params["n"]
        state["u"][...] = 0.0
        state["u"][n // 4:n // 2, n // 4:n // 2] = 1.0  # a hot square

    def emit_update(self, w):
        w.state_out("u")
        w.integral("heat")
        w.param("kappa", self.params["kappa"])  # a run-time param
        w.for_each_cell(["i", "j"], """
            const double lap = u(i + 1, j) + u(i - 1, j) + u(i, j + 1) + u(i, j - 1) - 4 * u(i, j);
            u_out(i, j) = u(i, j) + args->dt * kappa * lap;
            heat += u_out(i, j);""")


def factory(node_type, name, params):
    """Rebuilds a node from a checkpoint: its type, name and node params."""
    return Heat2D(params["n"], params["kappa"], name) if node_type == "heat2d" else None


def main():
    comm = None
    if uwjit.has_mpi:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD  # one rank: serial; several: the grid is split along x
    rank = comm.Get_rank() if comm is not None else 0
    engine = uwjit.Engine()
    sim = uwjit.Simulation(engine, [Heat2D(64, 0.5)], comm=comm)  # threads=None: every core
    sim.run(50)
    sim.checkpoint("plate.ckpt")  # collective: each rank writes its slab of the one file
    sim.run(50)
    sim.write_vtk("out")          # out/plate.vti, for ParaView
    straight = sim.gather("plate", "u")  # the whole domain, on every rank

    again = uwjit.Simulation.restore(engine, "plate.ckpt", factory=factory, comm=comm)
    again.run(50)
    same = np.array_equal(again.gather("plate", "u"), straight)
    heat = sim.integrals("plate")["heat"]
    if rank == 0:
        print(f"{sim.threads} threads per rank, kernel {sim.kernel_reports()[0].info.tier}; "
              f"heat after {sim.steps_taken} steps {heat:.12f} (start {16 * 16})")
        print("restarted at step 50: " + ("the same state bit for bit" if same else "DIFFERENT"))
    assert same and abs(heat - 256) < 1e-9


if __name__ == "__main__":
    main()
