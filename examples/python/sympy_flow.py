#!/usr/bin/env python3
"""The underworld3 flow through uwjit: a sympy expression becomes C code (sympy's own code
printer), the C code becomes a uwjit kernel, and the kernel is evaluated over a numpy grid and
checked against numpy. Run it twice: the second process loads the kernel from the disk cache
instead of compiling it.

    python3 examples/python/sympy_flow.py [--cache-dir DIR] [--n N]

Prints one line: the tier that served the kernel, the largest difference from numpy, the time
the kernel request took.
"""

import argparse
import json

import numpy as np
import sympy

import uwjit


def kernel_text(expression, symbols):
    """The C body of a kernel that evaluates `expression` at every point of the grid."""
    c_expression = sympy.ccode(expression)  # e.g. "exp(-pow(y, 2))*sin(x) + ..."
    reads = "\n".join(f"      const double {s} = {s}_in[p];" for s in symbols)
    return f"""
// {expression}
extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {{
  using namespace uwm;  // sqrt, exp, pow, sin, ...: the math prelude every kernel has
{chr(10).join(f"  const double* {s}_in = (const double*)args->state_in[{i}];" for i, s in enumerate(symbols))}
  double* out = (double*)args->state_out[0];
  const uw_i64 n = args->extents[0] * args->extents[1];
  for (uw_i64 p = 0; p < n; ++p) {{
{reads}
      out[p] = {c_expression};
  }}
  return 0;
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=None, help="the kernel cache (default: uwjit's)")
    parser.add_argument("--n", type=int, default=64, help="grid points per axis")
    args = parser.parse_args()

    x, y = sympy.symbols("x y")
    expression = sympy.sin(x) * sympy.exp(-y**2) + x * y / (1 + x**2) + sympy.sqrt(1 + y**2)

    engine = uwjit.Engine(cache_dir=args.cache_dir)
    grid = ("ny", "nx")
    kernel = engine.kernel(kernel_text(expression, ["x", "y"]),
                           state_in=[("x", "f64", grid), ("y", "f64", grid)],
                           state_out=[("f", "f64", grid)], extents=["nx", "ny"])

    xs, ys = np.meshgrid(np.linspace(-2, 2, args.n), np.linspace(-1, 3, args.n + 1))
    f = np.empty_like(xs)
    kernel(state_in=[xs, ys], state_out=[f], extents=[args.n, args.n + 1])

    reference = sympy.lambdify((x, y), expression, "numpy")(xs, ys)
    error = float(np.max(np.abs(f - reference)))
    print(json.dumps({"tier": kernel.info.tier, "max_error": error,
                      "request_ms": round(kernel.info.request_ms, 3)}))
    return 0 if error < 1e-12 else 1


if __name__ == "__main__":
    raise SystemExit(main())
