"""uwjit: run-time compiled simulation kernels with an on-disk kernel cache.

The compiled module is uwjit._uwjit; everything public is re-exported here. See help(uwjit.Engine),
help(uwjit.Simulation), help(uwjit.Node), help(uwjit.run_cli), and the manual (docs/,
"tools/docs.sh" builds it as HTML): its tutorials start from a numpy stencil.
"""

from ._uwjit import (  # noqa: F401
    __version__,
    Axis,
    Boundary,
    BoundaryFace,
    CollectiveError,
    CompileError,
    DomainAxis,
    Ensemble,
    Engine,
    Error,
    Extent,
    InternalError,
    IoError,
    JitError,
    Kernel,
    KernelError,
    KernelInfo,
    KernelReport,
    KernelWriter,
    Layout,
    Measurement,
    Node,
    NodeInput,
    NodeKind,
    ParamDoc,
    Simulation,
    Slab,
    Snapshot,
    Source,
    StateField,
    StaticArray,
    Trace,
    UsageError,
    Verdict,
    default_params,
    grid,
    has_mpi,
    node,
    node_kernels,
    node_types,
    run_cli,
    static_data_hash,
    _numpy_dtype,
)



class State(dict):
    """What Node.initial_state fills: each state field's interior by name, as a numpy array to
    fill in place (state["u"][...] = ...), and `slab`, a uwjit.Slab saying which cells of the
    domain they hold (offset, extent and global_extent per domain axis). The arrays hold the whole
    domain serially; sharded, a node whose Layout says slab_initial_state=True is given its
    rank's slab only (index i on axis d is the global cell slab.offset[d] + i)."""

    _slab = None

    @property
    def slab(self):
        """The uwjit.Slab of the domain's cells the arrays hold."""
        return self._slab

    @slab.setter
    def slab(self, value):
        self._slab = value


def _extents(shape, what):
    """`shape` (an int or a sequence of ints, numpy's included) as a tuple of extents >= 0."""
    import operator

    try:
        extents = (operator.index(shape),)
    except TypeError:
        try:
            extents = tuple(operator.index(n) for n in shape)
        except TypeError:
            raise TypeError("%s: shape: expected an int or a sequence of ints, got %r"
                            % (what, shape)) from None
    for n in extents:
        if n < 0:
            error = UsageError("%s: shape: extent %d is negative (numpy: negative dimensions are "
                               "not allowed)" % (what, n))
            error.kind = "usage"
            raise error
    return extents


def empty(shape, dtype=float):
    """A new uninitialised C-contiguous numpy array whose data is 64-byte aligned, as the state
    buffers of kernels made by a KernelWriter must be (numpy guarantees less). shape: an int or a
    sequence of ints >= 0 (UsageError, a ValueError, for a negative one). dtype: a kernel dtype
    name ("f32", "f64", "i8", "u8", "i32", "i64") or the numpy dtype of one (float is f64);
    TypeError for another."""
    import math

    extents = _extents(shape, "uwjit.empty")
    dtype = _numpy_dtype(dtype, "uwjit.empty")
    size = math.prod(extents) * dtype.itemsize
    import numpy as np

    raw = np.empty(size + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + size].view(dtype).reshape(extents)


def zeros(shape, dtype=float):
    """As empty(), filled with zeros."""
    array = empty(shape, dtype)
    array[...] = 0
    return array


__all__ = [
    "__version__", "Axis", "Boundary", "BoundaryFace", "CollectiveError", "CompileError",
    "DomainAxis", "Engine", "Ensemble", "Error", "Extent", "InternalError", "IoError", "JitError", "Kernel",
    "KernelError", "KernelInfo", "KernelReport", "KernelWriter", "Layout", "Measurement", "Node", "NodeInput",
    "NodeKind", "ParamDoc", "Simulation", "Slab", "Snapshot", "State", "Source", "StateField", "StaticArray",
    "Trace", "UsageError", "Verdict", "default_params", "empty", "grid", "has_mpi", "node",
    "node_kernels", "node_types", "run_cli", "static_data_hash", "zeros",
]
