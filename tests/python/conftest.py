"""Shared fixtures of the Python tests: each test gets its own cache directory."""

import pytest

import uwjit


@pytest.fixture
def cache_dir(tmp_path):
    path = tmp_path / "cache"
    path.mkdir()
    return path


@pytest.fixture
def engine(cache_dir):
    return uwjit.Engine(cache_dir=cache_dir)


# A kernel y = a * x + b over n values, with its slots declared so that calls are checked.
AXPB = r"""
extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {
  const double* x = (const double*)args->state_in[0];
  double* y = (double*)args->state_out[0];
  const double* ab = (const double*)args->statics[0];
  const uw_i64 n = args->extents[0];
  double total = 0;
  for (uw_i64 i = 0; i < n; ++i) {
    y[i] = ab[0] * x[i] + ab[1];
    total += y[i];
  }
  args->integrals[0] = total;
  return 0;
}
"""


def axpb(engine):
    return engine.kernel(AXPB, state_in=[("x", "f64", ("n",))], state_out=[("y", "f64", ("n",))],
                         statics=[("ab", "f64", (2,))], extents=["n"], integrals=["total"])
