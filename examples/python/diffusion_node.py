"""A node of your own in Python: 2-D diffusion of u on a periodic grid, with a run-time
diffusivity. uwjit writes the loops, compiles the kernel once (later runs load it from the disk
cache) and steps it on every core; the total of u is a domain integral, conserved to round-off."""
import uwjit


class Diffusion(uwjit.Node):
    def __init__(self, n, kappa):
        super().__init__("diffusion", "d", {"n": n, "kappa": kappa})  # node params

    def layout(self):
        n = self.params["n"]
        return uwjit.Layout(uwjit.grid([n, n], halo=1, boundary="periodic"),
                            [uwjit.StateField("u")], integrals=["total"], dt=0.2)

    def initial_state(self, state):  # numpy views of the interiors
        state["u"][...] = 0.0
        state["u"][8, 8] = 1.0

    def emit_update(self, w):
        w.state_out("u")
        w.integral("total")
        w.param("kappa", self.params["kappa"])  # run-time: not in the kernel's text
        w.for_each_cell(["i", "j"], """
            u_out(i, j) = u(i, j) + args->dt * kappa *
                          (u(i + 1, j) + u(i - 1, j) + u(i, j + 1) + u(i, j - 1) - 4 * u(i, j));
            total += u_out(i, j);""")


sim = uwjit.Simulation(uwjit.Engine(), [Diffusion(64, 0.5)])  # threads: every core
sim.run(100)
total = sim.integrals("d")["total"]
info = sim.kernel_reports()[0].info
print(f"kernel {info.key} ({info.tier}), {sim.threads} threads: total after 100 steps {total:.15f}")
assert abs(total - 1.0) < 1e-12
