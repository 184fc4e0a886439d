"""What a Python host's files and texts may do: a checkpoint never replaces a special file, a
node's name is a plain file name, a cell's text cannot leave the cell, and a kernel's layout
changes no key (the same text from C++ and from Python, indented otherwise, is one kernel)."""

import json
import os
import pathlib
import socket
import subprocess
import textwrap

import numpy as np
import pytest

import uwjit


class Ramp(uwjit.Node):
    """u <- u + 1 on a 1-D grid, its cell's text given whole (so a test can make it wrong)."""

    def __init__(self, name="ramp", cell="u_out(i) = u(i) + 1;", indent=""):
        super().__init__("ramp", name, {"n": 12})
        self.cell = textwrap.indent(cell, indent)

    def layout(self):
        return uwjit.Layout(uwjit.grid([12], halo=1), [uwjit.StateField("u")])

    def initial_state(self, state):
        state["u"][...] = np.arange(12.0)

    def emit_update(self, writer):
        writer.state_out("u")
        writer.for_each_cell(["i"], self.cell)


def test_a_checkpoint_over_a_fifo_or_socket_is_refused_and_the_file_left(engine, tmp_path):
    sim = uwjit.Simulation(engine, [Ramp()])
    sim.step(1)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    sock = tmp_path / "sock"
    socket.socket(socket.AF_UNIX).bind(str(sock))
    for path, kind in ((fifo, "FIFO"), (sock, "socket")):
        with pytest.raises(uwjit.IoError, match=f"is a {kind}, not a regular file"):
            sim.checkpoint(path)
    assert pathlib.Path(fifo).is_fifo() and pathlib.Path(sock).is_socket()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "pipe", "sock"]
    # Restoring from one is refused without waiting for a writer.
    with pytest.raises(uwjit.IoError, match="is a FIFO, not a regular file"):
        uwjit.Simulation.restore(engine, fifo, lambda t, n, p: Ramp(n))


def test_a_checkpoint_over_a_users_file_is_refused_and_the_file_left(engine, tmp_path):
    sim = uwjit.Simulation(engine, [Ramp()])
    sim.step(1)
    notes = tmp_path / "notes.txt"
    notes.write_text("my results\n")
    with pytest.raises(uwjit.IoError, match="is not a uwjit checkpoint"):
        sim.checkpoint(notes)
    assert notes.read_text() == "my results\n"
    # The next checkpoint at a checkpoint's path replaces it.
    first = tmp_path / "ramp.ckpt"
    sim.checkpoint(first)
    sim.step(1)
    sim.checkpoint(first)
    assert uwjit.Simulation.restore(engine, first, lambda t, n, p: Ramp(n)).steps_taken == 2


@pytest.mark.parametrize("name", ["../escape", "/abs", "a b", "nul\0", ".hidden", "-x", "",
                                  "x" * 65])
def test_a_node_name_is_a_plain_file_name(name):
    with pytest.raises(uwjit.UsageError, match="node name"):
        Ramp(name)


@pytest.mark.parametrize("cell, keyword", [
    ("if (i == 3) return;\nu_out(i) = u(i) + 1;", "return"),
    ("u_out(i) = u(i) + 1;\nif (i > 5) break;", "break"),
    ("if (i == 3) continue;\nu_out(i) = u(i) + 1;", "continue"),
])
def test_a_cell_that_would_leave_the_cell_is_refused_in_any_mode(engine, cell, keyword):
    for checked in (False, True):
        with pytest.raises(uwjit.UsageError, match=f'"{keyword}" at line'):
            uwjit.Simulation(engine, [Ramp(cell=cell)], checked=checked)


def test_checked_mode_names_a_cell_the_step_left_unwritten(engine):
    sim = uwjit.Simulation(engine, [Ramp(cell="if (i != 7) { u_out(i) = u(i) + 1; }")],
                           checked=True)
    with pytest.raises(uwjit.KernelError, match=r'without writing "u" at \(7\)'):
        sim.step(1)
    assert sim.steps_taken == 0


def test_indentation_changes_no_key(engine):
    keys = set()
    for indent in ("", "    ", "\t\t"):
        sim = uwjit.Simulation(engine, [Ramp(cell="u_out(i) = u(i)\n  + 1;\n\n", indent=indent)])
        keys.add(sim.kernel_reports()[0].info.key)
    assert len(keys) == 1
    assert engine.stats()["compiles"] == 1


# A hand-written kernel, the way a C++ host writes it (two-space indentation) and the way a Python
# host writes it (inside a function, four more spaces, blank lines).
CPP_TEXT = """extern "C" int twice(const uwjit_kernel_args* args) {
  const double* x = (const double*)args->state_in[0];
  double* y = (double*)args->state_out[0];
  for (uw_i64 i = 0; i < args->extents[0]; ++i) {
    y[i] = 2 * x[i];
  }
  return 0;
}
"""


def test_the_same_kernel_from_a_cpp_file_and_from_python_has_one_key(engine, tmp_path, cache_dir):
    python_text = "\n" + textwrap.indent(CPP_TEXT.replace("  ", "    "), "        ") + "\n\n"
    kernel = engine.kernel(python_text, entry="twice", state_in=["x"], state_out=["y"],
                           extents=["n"])
    x = np.arange(5.0)
    y = np.zeros(5)
    kernel(state_in=[x], state_out=[y], extents=[5])
    np.testing.assert_array_equal(y, 2 * x)
    source = tmp_path / "twice.cpp"
    source.write_text(CPP_TEXT)
    cli = pathlib.Path(uwjit.__file__).resolve().parents[2] / "bin" / "uwjit"
    out = subprocess.run([str(cli), "compile", str(source), "--entry", "twice", "--state-in", "x",
                          "--state-out", "y", "--extents", "n", "--json"],
                         check=True, capture_output=True, text=True,
                         env={**os.environ, "UWJIT_CACHE_DIR": str(cache_dir)})
    report = json.loads(out.stdout)
    assert report["key"] == kernel.info.key
    assert report["tier"] == "disk"  # the Python host's compile served the C++ file's request
