"""A node of your own in Python, run from the command line as `uwjit run` runs the built-in
nodes: `python3 diffuse_cli.py --set help`, `--steps 50 --output out --output-every 10`,
`--checkpoint d.ckpt`, `--restore d.ckpt --steps 10`, `--json`, and under mpiexec (with
mpi4py) `--shard x`."""
import sys

import uwjit


class Diffuse(uwjit.Node):
    """u += rate * laplacian(u) on a periodic nx x ny grid: the total is conserved."""

    def __init__(self, name, node_params):
        if not 0 < node_params["rate"] <= 0.25:
            raise uwjit.UsageError("diffuse: param \"rate\" must be in (0, 0.25] (stable)")
        super().__init__("diffuse", name, node_params)

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]], halo=1, boundary="periodic"),
                            [uwjit.StateField("u")], integrals=["total"])

    def initial_state(self, state):
        state["u"][0, :] = 1.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.integral("total")
        writer.param("rate", self.params["rate"])  # a run-time param, from a node param
        writer.for_each_cell(["i", "j"], """
          const double next = u(i, j) + rate * (u(i + 1, j) + u(i - 1, j) + u(i, j + 1)
                                                + u(i, j - 1) - 4 * u(i, j));
          u_out(i, j) = next;
          total += next;""")


def check(node, snapshot, trace):
    """The total heat stays what the first column held: the kernel's integral, and the field
    summed over this rank's slab, then over the ranks (reads_slabs below: nothing is gathered)."""
    verdict = uwjit.Verdict()
    ny = node.params["ny"]
    total = snapshot.integrals(node.name)["total"]
    verdict.add("conservation", "|total / ny - 1|", abs(total / ny - 1), 1e-12)
    [field_total] = snapshot.sum_over_ranks([float(snapshot.field(node.name, "u").sum())])
    verdict.add("field total", "|sum(u) / ny - 1|", abs(field_total / ny - 1), 1e-12)
    return verdict


def make_diffuse(type, name, node_params):
    return Diffuse(name, node_params)


KIND = uwjit.NodeKind(
    "diffuse", "2-D diffusion on a periodic grid", {"nx": 32, "ny": 16, "rate": 0.2}, make_diffuse,
    param_docs=[uwjit.ParamDoc("nx", "cells along x", "cells", "[1, 4096]"),
                uwjit.ParamDoc("ny", "cells along y", "cells", "[1, 4096]"),
                uwjit.ParamDoc("rate", "diffusion per step", "", "(0, 0.25]")],
    sized=lambda size: {"nx": size[0], "ny": size[1] if len(size) > 1 else size[0]},
    size_help="N for an N x N grid, or NXxNYx1", shard_help="x, y or both",
    default_steps=100, check=check, reads_slabs=True)

if __name__ == "__main__":
    sys.exit(uwjit.run_cli(KIND))
