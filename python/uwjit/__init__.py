"""uwjit: run-time compiled simulation kernels with an on-disk kernel cache.

The compiled module is uwjit._uwjit; everything public is re-exported here. See help(uwjit.Engine),
help(uwjit.Simulation), help(uwjit.Node) and the README's Python quick start.
"""

from ._uwjit import (  # noqa: F401
    __version__,
    Axis,
    Boundary,
    BoundaryFace,
    CollectiveError,
    CompileError,
    DomainAxis,
    Engine,
    Error,
    Extent,
    InternalError,
    IoError,
    JitError,
    Kernel,
    KernelError,
    KernelInfo,
    KernelWriter,
    Layout,
    Node,
    NodeInput,
    Simulation,
    Source,
    StateField,
    StaticArray,
    UsageError,
    default_params,
    grid,
    has_mpi,
    node,
    node_kernels,
    node_types,
    static_data_hash,
)



def empty(shape, dtype=float):
    """A new uninitialised C-contiguous numpy array whose data is 64-byte aligned, as the state
    buffers of kernels made by a KernelWriter must be (numpy guarantees less)."""
    import numpy as np

    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def zeros(shape, dtype=float):
    """As empty(), filled with zeros."""
    array = empty(shape, dtype)
    array[...] = 0
    return array


__all__ = [
    "__version__", "Axis", "Boundary", "BoundaryFace", "CollectiveError", "CompileError",
    "DomainAxis", "Engine", "Error", "Extent", "InternalError", "IoError", "JitError", "Kernel",
    "KernelError", "KernelInfo", "KernelWriter", "Layout", "Node", "NodeInput", "Simulation",
    "Source", "StateField", "StaticArray", "UsageError", "default_params", "empty", "grid",
    "has_mpi", "node", "node_kernels", "node_types", "static_data_hash", "zeros",
]
