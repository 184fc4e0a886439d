#!/usr/bin/env python3
"""uwjit from Python, against the same work driven from C++ (rows of the README's Performance
table; figures, not tests).

  call overhead: one call of a small kernel (n = 16 doubles) from Python, checks included,
                 minus the same bound call repeated from C++ (Kernel._native_call_seconds).
  pipe-flow:     MLUPS of a D3Q19 pipe flow stepped from a Python loop (sim.step(1) per step)
                 against the same Simulation stepping inside C++ (sim.step(k)), 1 thread.

Medians (and the best) of interleaved rounds. Usage: python_bench.py [--rounds R] [--size N] [--json PATH]
"""

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

import uwjit

SMALL = r"""
extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {
  const double* x = (const double*)args->state_in[0];
  double* y = (double*)args->state_out[0];
  for (uw_i64 i = 0; i < 16; ++i) y[i] = 2.0 * x[i] + 1.0;
  return 0;
}
"""


def call_overhead(engine, rounds, calls=20000):
    kernel = engine.kernel(SMALL, state_in=[("x", "f64", (16,))], state_out=[("y", "f64", (16,))])
    x, y = np.arange(16.0), np.zeros(16)
    python_us, native_us = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            kernel(state_in=[x], state_out=[y])
        python_us.append((time.perf_counter() - start) / calls * 1e6)
        native_us.append(kernel._native_call_seconds(calls, state_in=[x], state_out=[y])
                         / calls * 1e6)
    python, native = statistics.median(python_us), statistics.median(native_us)
    return {"python_call_us": python, "cpp_call_us": native, "added_us": python - native}


def pipe_flow(engine, rounds, size, steps):
    node = uwjit.node("pipe-flow", size=[size])
    sim = uwjit.Simulation(engine, [node], threads=1)
    sim.step(1)
    updates = node.updates_per_step
    python, native = [], []
    for r in range(rounds):
        for way in ((0, 1) if r % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            if way == 0:
                for _ in range(steps):
                    sim.step(1)
                python.append(updates * steps / (time.perf_counter() - start) / 1e6)
            else:
                sim.step(steps)
                native.append(updates * steps / (time.perf_counter() - start) / 1e6)
    py_mlups, cpp_mlups = statistics.median(python), statistics.median(native)
    # The best rounds too: on a loaded machine they are the ones least disturbed.
    return {"size": size, "python_mlups": py_mlups, "cpp_mlups": cpp_mlups,
            "python_vs_cpp_percent": 100.0 * (py_mlups / cpp_mlups - 1.0),
            "python_best_mlups": max(python), "cpp_best_mlups": max(native),
            "best_python_vs_cpp_percent": 100.0 * (max(python) / max(native) - 1.0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=32, help="pipe-flow size (uwjit run's N)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        engine = uwjit.Engine(cache_dir=cache)
        result = {"call": call_overhead(engine, args.rounds),
                  "pipe_flow": pipe_flow(engine, args.rounds, args.size, args.steps)}
    c, p = result["call"], result["pipe_flow"]
    print(f"python call overhead (16 doubles): {c['python_call_us']:.2f} µs from Python, "
          f"{c['cpp_call_us']:.3f} µs from C++, added {c['added_us']:.2f} µs")
    print(f"pipe-flow {p['size']}: {p['python_mlups']:.1f} MLUPS from a Python loop, "
          f"{p['cpp_mlups']:.1f} MLUPS stepped in C++ ({p['python_vs_cpp_percent']:+.1f} %); "
          f"best rounds {p['python_best_mlups']:.1f} vs {p['cpp_best_mlups']:.1f} "
          f"({p['best_python_vs_cpp_percent']:+.1f} %)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
