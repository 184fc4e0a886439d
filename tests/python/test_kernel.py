"""Engine and kernel calls: compile and call, zero-copy, the checks before a call, the GIL,
errors, the tiers."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import uwjit
from conftest import AXPB, axpb


def test_a_kernel_compiles_and_computes(engine):
    kernel = axpb(engine)
    x = np.arange(8.0)
    y = np.zeros(8)
    integrals = kernel(state_in=[x], state_out=[y], statics=[np.array([2.0, 1.0])], extents=[8])
    np.testing.assert_array_equal(y, 2 * x + 1)
    assert integrals == {"total": float(np.sum(2 * x + 1))}
    assert kernel.info.tier == "compiled"
    assert len(kernel.info.key) == 16
    assert kernel.info.compile_ms["total"] > 0
    assert engine.stats()["compiles"] == 1


def test_the_kernel_writes_into_the_callers_array(engine):
    kernel = axpb(engine)
    x = np.ones(4)
    y = np.full(4, -1.0)
    before = y.__array_interface__["data"][0]
    kernel(state_in=[x], state_out=[y], statics=[np.array([3.0, 0.0])], extents=[4])
    assert y.__array_interface__["data"][0] == before
    np.testing.assert_array_equal(y, [3.0, 3.0, 3.0, 3.0])
    # A view into a larger array: the kernel writes through it into the base.
    base = np.zeros(10)
    kernel(state_in=[x], state_out=[base[2:6]], statics=[np.array([1.0, 1.0])], extents=[4])
    np.testing.assert_array_equal(base, [0, 0, 2, 2, 2, 2, 0, 0, 0, 0])


def test_a_second_request_is_a_memory_hit_and_a_second_process_a_disk_hit(engine, cache_dir):
    axpb(engine)
    assert axpb(engine).info.tier == "memory"
    script = (
        "import sys, uwjit\n"
        "sys.path.insert(0, %r)\n"
        "from conftest import axpb\n"
        "e = uwjit.Engine(cache_dir=%r)\n"
        "k = axpb(e)\n"
        "print(k.info.tier, e.stats()['compiles'], e.stats()['disk_hits'])\n"
    ) % (os.path.dirname(__file__), str(cache_dir))
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["disk", "0", "1"]


@pytest.fixture
def call(engine):
    kernel = axpb(engine)
    good = dict(state_in=[np.zeros(4)], state_out=[np.zeros(4)], statics=[np.ones(2)],
                extents=[4])

    def with_(**changes):
        args = dict(good)
        args.update(changes)
        return kernel(**args)

    with_()  # the good call works
    return with_


@pytest.mark.parametrize("changes, error, words", [
    (dict(state_in=[np.zeros(4, dtype=np.float32)]), TypeError, "expected dtype f64, got f32"),
    (dict(state_in=[np.zeros(4, dtype=np.complex128)]), TypeError, "unsupported dtype"),
    (dict(state_in=[[0.0, 0.0, 0.0, 0.0]]), TypeError, "expected a numpy.ndarray, got list"),
    (dict(state_in=[np.zeros(8)[::2]]), ValueError, "C-contiguous"),
    (dict(state_out=[np.zeros(4)]), None, None),
    (dict(state_in=[np.zeros(5)]), ValueError, "expected shape (4), got (5)"),
    (dict(statics=[np.ones(3)]), ValueError, "expected shape (2), got (3)"),
    (dict(state_in=[np.zeros(4), np.zeros(4)]), ValueError, "state_in takes 1 buffer(s) (x), got 2"),
    (dict(state_out=[]), ValueError, "state_out takes 1 buffer(s) (y), got 0"),
    (dict(extents=[]), ValueError, "extents takes 1 value(s) (n), got 0"),
    (dict(extents=[4.0]), TypeError, "extent \"n\": expected an int, got float"),
    (dict(extents=[0]), ValueError, "extent \"n\": expected an int from 1 to"),
])
def test_each_bad_argument_is_a_clear_error(call, changes, error, words):
    if error is None:
        call(**changes)
        return
    with pytest.raises(error) as caught:
        call(**changes)
    assert words in str(caught.value)


def test_a_read_only_output_is_refused_and_left_unwritten(call):
    y = np.full(4, 7.0)
    y.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        call(state_out=[y])
    np.testing.assert_array_equal(y, 7.0)


def test_positional_arguments_are_refused(engine):
    kernel = axpb(engine)
    with pytest.raises(TypeError):
        kernel([np.zeros(4)], [np.zeros(4)])


def test_a_compile_error_carries_line_and_column(engine):
    source = 'extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n' \
             "  int ok = 1;\n" \
             "  return ok + missing;\n" \
             "}\n"
    with pytest.raises(uwjit.CompileError) as caught:
        engine.kernel(source)
    error = caught.value
    assert (error.line, error.column) == (3, 15)
    line, column, severity, message = error.diagnostics[0]
    assert (line, column, severity) == (3, 15, "error")
    assert message.startswith("use of undeclared identifier 'missing'")
    assert isinstance(error, uwjit.Error) and error.kind == "compile"
    assert engine.stats()["published"] == 0


def test_a_usage_error_is_a_value_error_too(engine):
    with pytest.raises(uwjit.UsageError) as caught:
        engine.kernel("int f() { return 0; }", entry="not an identifier")
    assert isinstance(caught.value, ValueError) and caught.value.kind == "usage"


def test_a_non_zero_status_is_a_kernel_error(engine):
    kernel = engine.kernel('extern "C" int fail(const uwjit_kernel_args*) { return 7; }',
                           entry="fail")
    with pytest.raises(uwjit.KernelError, match="status 7"):
        kernel()


SPIN = r"""
extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {
  volatile uw_i64* flags = (volatile uw_i64*)args->state_out[0];
  flags[1] = 1;                       // running
  for (uw_i64 i = 0; i < 4000000000LL; ++i) {
    if (flags[0] != 0) {              // set by another Python thread
      flags[2] = 1;                   // seen while running
      return 0;
    }
  }
  return 0;
}
"""


def test_the_gil_is_released_while_a_kernel_runs(engine):
    kernel = engine.kernel(SPIN, state_out=[("flags", "i64", (3,))])
    flags = np.zeros(3, dtype=np.int64)

    def other_thread():
        # Runs Python code while the kernel is running: possible only without the GIL.
        while flags[1] == 0:
            pass
        flags[0] = 1

    thread = threading.Thread(target=other_thread)
    thread.start()
    kernel(state_out=[flags])
    thread.join()
    assert flags[2] == 1, "the other thread made no progress while the kernel ran"


def test_engine_options_are_checked(cache_dir):
    for seconds in (-1, float("nan"), 1e300):  # 1e300 overflowed the milliseconds
        with pytest.raises(ValueError, match="lock_timeout must be a number of seconds from 0"):
            uwjit.Engine(cache_dir=cache_dir, lock_timeout=seconds)
    assert uwjit.Engine(cache_dir=cache_dir, lock_timeout=1e9).cache_dir == cache_dir
    memory = uwjit.Engine(disk_cache=False)
    assert memory.cache_dir is None
    assert uwjit.Engine(cache_dir=cache_dir).cache_dir == cache_dir


def test_kernels_compiles_a_list(engine):
    sources = [uwjit.Source(AXPB, state_in=["x"], state_out=["y"], statics=["ab"], extents=["n"],
                            integrals=["total"]),
               uwjit.Source('extern "C" int k2(const uwjit_kernel_args*) { return 0; }', entry="k2")]
    kernels = engine.kernels(sources)
    assert [k.info.tier for k in kernels] == ["compiled", "compiled"]
    assert engine.key_of(sources[0]) == kernels[0].info.key
    with pytest.raises(TypeError, match="uwjit.Source"):
        engine.kernels(["text"])


def test_a_kernel_outlives_its_engine(cache_dir):
    engine = uwjit.Engine(cache_dir=cache_dir)
    kernel = axpb(engine)
    del engine
    y = np.zeros(3)
    kernel(state_in=[np.ones(3)], state_out=[y], statics=[np.array([2.0, 0.5])], extents=[3])
    np.testing.assert_array_equal(y, 2.5)


def test_a_kernel_written_with_the_kernel_writer_is_checked_against_its_declarations(engine):
    writer = uwjit.KernelWriter("doubler")
    n = writer.extent("nx", 6)
    writer.state_in("x", "f64", [n])
    writer.state_out("x")
    writer.integral("total")
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { x_out(i) = 2 * x(i); total += x_out(i); }")
    kernel = engine.kernel(writer.finish())
    x, y = uwjit.empty(6), uwjit.zeros(6)
    x[...] = np.arange(6.0)
    assert x.ctypes.data % 64 == 0 and y.ctypes.data % 64 == 0
    assert kernel(state_in=[x], state_out=[y]) == {"total": 30.0}
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(ValueError, match=r"expected shape \(6\), got \(5\)"):
        kernel(state_in=[uwjit.zeros(5)], state_out=[y])
    with pytest.raises(TypeError, match="expected dtype f64, got i64"):
        kernel(state_in=[uwjit.zeros(6, dtype=np.int64)], state_out=[y])
    # The kernel assumes aligned state buffers: a misaligned one is refused, not a crash.
    misaligned = uwjit.zeros(7)[1:]
    with pytest.raises(ValueError, match="64-byte aligned"):
        kernel(state_in=[misaligned], state_out=[y])
    # It reads its inputs as they were before the call: an output sharing an input's memory
    # (an update in place) is refused, not computed from half-written values.
    with pytest.raises(ValueError, match='state_out "x" shares memory with state_in "x"'):
        kernel(state_in=[x], state_out=[x])
    np.testing.assert_array_equal(x, np.arange(6.0))
    # A kernel of the host's own text is the host's to call in place.
    z = np.ones(3)
    axpb(engine)(state_in=[z], state_out=[z], statics=[np.array([2.0, 0.5])], extents=[3])
    np.testing.assert_array_equal(z, 2.5)
    with pytest.raises(uwjit.UsageError, match="nx"):
        writer.extent("nx", 3)


def test_a_kernel_writer_kernel_over_run_time_extents_checks_shapes_and_its_update_box(engine):
    writer = uwjit.KernelWriter("smooth")
    n = writer.domain_extent(0, "nx", 8, "runtime")
    writer.state_in("u", "f64", [uwjit.Axis(n, 1)])
    writer.state_out("u")
    writer.integral("total")
    writer.for_each_cell(["i"], "u_out(i) = u(i - 1) + u(i + 1); total += u_out(i);")
    kernel = engine.kernel(writer.finish())
    u, out = uwjit.zeros(12), uwjit.zeros(12)
    u[...] = np.arange(12.0)
    # Without domain=, the update box is the whole domain (it was empty: nothing was computed).
    assert kernel(state_in=[u], state_out=[out], extents=[10]) == {"total": 110.0}
    np.testing.assert_array_equal(out[1:-1], u[:-2] + u[2:])
    # A buffer over a run-time extent with halos is the extent plus the halos: smaller arrays are
    # refused (they were accepted, and the kernel wrote past them).
    with pytest.raises(ValueError, match=r'state_in "u": expected shape \(10000002\), got \(12\)'):
        kernel(state_in=[u], state_out=[out], extents=[10**7])
    # The update box may be part of the domain, never beyond it.
    assert kernel(state_in=[u], state_out=[out], extents=[10], domain=[3]) == {"total": 12.0}
    with pytest.raises(ValueError, match=r"domain \(11\): axis 0 is 11, outside 1 to 10"):
        kernel(state_in=[u], state_out=[out], extents=[10], domain=[11])
    with pytest.raises(ValueError, match="domain has 1 axes"):
        kernel(state_in=[u], state_out=[out], extents=[10], domain=[4, 4])
