"""uwjit: run-time compiled simulation kernels with an on-disk kernel cache.

The compiled module is uwjit._uwjit; everything public is re-exported here. See help(uwjit.Engine),
help(uwjit.Simulation), help(uwjit.Node) and the README's Python quick start.
"""

from ._uwjit import (  # noqa: F401
    __version__,
    Axis,
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
    Simulation,
    Source,
    StateField,
    StaticArray,
    UsageError,
    default_params,
    grid,
    has_mpi,
    node,
    node_types,
    static_data_hash,
)

__all__ = [
    "__version__", "Axis", "CollectiveError", "CompileError", "DomainAxis", "Engine", "Error",
    "Extent", "InternalError", "IoError", "JitError", "Kernel", "KernelError", "KernelInfo",
    "KernelWriter", "Layout", "Node", "Simulation", "Source", "StateField", "StaticArray",
    "UsageError", "default_params", "grid", "has_mpi", "node", "node_types", "static_data_hash",
]
