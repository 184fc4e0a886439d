"""The underworld3 flow (examples/python/sympy_flow.py): sympy → C → a uwjit kernel over a numpy
grid, equal to numpy; a second process loads the kernel from the disk cache."""

import json
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "python" / "sympy_flow.py"


def run(cache_dir):
    out = subprocess.run([sys.executable, str(EXAMPLE), "--cache-dir", str(cache_dir), "--n", "33"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_sympy_expression_as_a_kernel_equals_numpy_and_the_second_process_is_a_disk_hit(cache_dir):
    first = run(cache_dir)
    assert first["tier"] == "compiled"
    assert first["max_error"] < 1e-12
    second = run(cache_dir)
    assert second["tier"] == "disk"
    assert second["max_error"] == first["max_error"]
