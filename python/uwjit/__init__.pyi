"""Type stubs of the uwjit module (see the docstrings: help(uwjit.Engine), ...)."""

import os
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str
has_mpi: bool

Scalar = Union[int, float, str, tuple]
DtypeLike = Union[str, npt.DTypeLike]
SlotSpec = Union[str, tuple[str, DtypeLike, Sequence[Union[int, str]]]]
PathLike = Union[str, os.PathLike[str]]

class Error(RuntimeError):
    """The base of uwjit's errors; `kind` names it: usage, io, compile, jit, collective, internal,
    kernel."""
    kind: str
class UsageError(Error, ValueError):
    """A misuse: a bad argument, value, layout or environment variable (also a ValueError)."""
class IoError(Error):
    """A file or directory could not be read or written (a checkpoint, VTK output)."""
class CompileError(Error):
    """A kernel did not compile; `diagnostics` holds (line, column, severity, message), lines
    counted in your text."""
    diagnostics: list[tuple[int, int, str, str]]
    line: int | None
    column: int | None
    section: str | None
class JitError(Error):
    """A compiled kernel could not be loaded into the process."""
class CollectiveError(Error):
    """Under MPI, the ranks disagreed (e.g. their kernels' keys differ); raised on every rank."""
class InternalError(Error):
    """A bug in uwjit: please report it with the message."""
class KernelError(Error):
    """A kernel returned a non-zero status, or checked mode found a bad access, while a simulation
    stepped."""

class KernelInfo:
    """What a kernel request did and what it cost: key, tier (memory, disk, compiled, received),
    timings, publication."""
    key: str
    entry: str
    origin: str
    tier: str
    compile_ms: dict[str, float]
    load_ms: float
    request_ms: float
    object_size: int
    warnings: str
    publication: str
    not_published_because: str
    served_from: str

class KernelReport:
    """One kernel a Simulation uses: its node, its stage and its KernelInfo."""
    node: str
    stage: int
    info: KernelInfo
    first_step_check: KernelInfo | None
    def __getitem__(self, key: str) -> Any: ...  # deprecated: the attributes

class Source:
    """A kernel's text and its slot tables, for Engine.kernel and Engine.kernels."""
    def __init__(self, text: str, entry: str | None = None, state_in: Iterable[SlotSpec] = (),
                 state_out: Iterable[SlotSpec] = (), statics: Iterable[SlotSpec] = (),
                 extents: Iterable[str] = (), integrals: Iterable[str] = ()) -> None: ...
    @property
    def canonical(self) -> str: ...
    @property
    def body(self) -> str: ...

class Kernel:
    """A loaded kernel: call it with numpy arrays (keywords state_in, state_out, statics, extents,
    dt, step, domain, params); returns its integrals."""
    def __call__(self, *, state_in: Sequence[np.ndarray] = (), state_out: Sequence[np.ndarray] = (),
                 statics: Sequence[np.ndarray] = (), extents: Sequence[int] = (), dt: float = 1.0,
                 step: int = 0, domain: Sequence[int] | None = None,
                 run_time_params: Mapping[str, float] | None = None,
                 params: Mapping[str, float] | None = None) -> dict[str, float]: ...
    @property
    def info(self) -> KernelInfo: ...
    @property
    def slots(self) -> dict[str, list[str]]: ...
    def _native_call_seconds(self, count: int, state_in: Sequence[np.ndarray] = (),
                             state_out: Sequence[np.ndarray] = (),
                             statics: Sequence[np.ndarray] = (),
                             extents: Sequence[int] = ()) -> float: ...

class Engine:
    """The compiler and its cache: Engine(cache_dir=None, disk_cache=True, lock_timeout=None,
    dump_dir=None); unset arguments come from the environment."""
    def __init__(self, cache_dir: PathLike | None = None, disk_cache: bool = True,
                 lock_timeout: float | None = None, dump_dir: PathLike | None = None) -> None: ...
    def kernel(self, source: Union[str, Source], entry: str | None = None,
               state_in: Iterable[SlotSpec] = (), state_out: Iterable[SlotSpec] = (),
               statics: Iterable[SlotSpec] = (), extents: Iterable[str] = (),
               integrals: Iterable[str] = ()) -> Kernel: ...
    def kernels(self, sources: Iterable[Source], comm: Any = None) -> list[Kernel]: ...
    @overload
    def ptx(self, sources: Source, target: str, comm: Any = None) -> tuple[str, KernelInfo]: ...
    @overload
    def ptx(self, sources: Iterable[Source], target: str,
            comm: Any = None) -> list[tuple[str, KernelInfo]]: ...
    def key_of(self, source: Source) -> str: ...
    def stats(self) -> dict[str, int]: ...
    @property
    def cache_dir(self) -> os.PathLike[str] | None: ...
    @property
    def site_cache_dirs(self) -> list[os.PathLike[str]]: ...

class StaticArray:
    """Data a kernel reads but does not update, bound as a buffer (never compiled in): a
    C-contiguous numpy array or a number (a scalar), replicated or sharded."""
    def __init__(self, value: Union[np.ndarray, float, int], replication: str = "replicate",
                 shard_axis: int | None = None) -> None: ...
    @property
    def value(self) -> np.ndarray: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def replication(self) -> str: ...
    @property
    def shard_axis(self) -> int | None: ...

def empty(shape: int | Sequence[int], dtype: DtypeLike = float) -> np.ndarray:
    """A new uninitialised C-contiguous array whose data is 64-byte aligned, as kernels made by a
    KernelWriter need."""
def zeros(shape: int | Sequence[int], dtype: DtypeLike = float) -> np.ndarray:
    """As empty(), filled with zeros."""

def static_data_hash(data: Mapping[str, Union[StaticArray, Scalar]]) -> str:
    """The hash of a node's static data declarations (keys, shapes, dtypes, replication; never
    contents), equal to C++'s."""

class Extent:
    """A handle on an extent declared on a KernelWriter."""
    id: int
class Axis:
    """One axis of a buffer a KernelWriter declares: an Extent and a halo width."""
    def __init__(self, extent: Extent, halo: int = 0) -> None: ...
    extent: Extent
    halo: int

AxisLike = Union[Axis, Extent]

class KernelWriter:
    """Writes one generated kernel: extents, accessors, static arrays, run-time params, integrals,
    then the node's text."""
    def __init__(self, origin: str) -> None: ...
    def extent(self, name: str, value: int, mode: str = "compiled") -> Extent: ...
    def domain_extent(self, axis: int, name: str, value: int, mode: str = "compiled") -> Extent: ...
    def constant(self, value: int) -> Extent: ...
    def domain(self, axis: int) -> Extent: ...
    def state_in(self, field: str, dtype: DtypeLike, axes: Iterable[AxisLike]) -> None: ...
    def state_out(self, field: str, dtype: DtypeLike | None = None,
                  axes: Iterable[AxisLike] | None = None) -> None: ...
    def provide_static(self, key: str, dtype: DtypeLike, shape: Sequence[int]) -> None: ...
    def provided_shape(self, key: str) -> tuple[int, ...] | None: ...
    def provided_dtype(self, key: str) -> str | None: ...
    def static_array(self, key: str, dtype: DtypeLike | None = None,
                     axes: Iterable[AxisLike] | None = None) -> None: ...
    def param(self, name: str, value: float) -> None: ...
    @property
    def checked(self) -> bool: ...
    def update_box(self) -> None: ...
    def integral(self, name: str, reduction: Literal["sum", "max"] = "sum") -> None: ...
    def comment(self, line: str) -> None: ...
    def helpers(self, text: str) -> None: ...
    def body(self, text: str) -> None: ...
    def for_each_cell(self, indices: Sequence[str], text: str, *,
                      masked_remainder: bool = False) -> None: ...
    @property
    def cell_form(self) -> bool: ...
    @property
    def gpu(self) -> bool: ...
    def finish(self) -> Source: ...

class BoundaryFace:
    """What the halo beyond one face of a domain axis holds: periodic(), edge(), dirichlet(value) or
    neumann(gradient)."""
    @staticmethod
    def periodic() -> BoundaryFace: ...
    @staticmethod
    def edge() -> BoundaryFace: ...
    @staticmethod
    def dirichlet(value: float) -> BoundaryFace: ...
    @staticmethod
    def neumann(gradient: float) -> BoundaryFace: ...
    @property
    def kind(self) -> str: ...
    value: float

class Boundary:
    """How the halos of one domain axis are filled: a BoundaryFace for its low end and one for its
    high end."""
    def __init__(self, low: BoundaryFace = ..., high: BoundaryFace = ...) -> None: ...
    @staticmethod
    def both(face: BoundaryFace) -> Boundary: ...
    @staticmethod
    def periodic() -> Boundary: ...
    @staticmethod
    def edge() -> Boundary: ...
    low: BoundaryFace
    high: BoundaryFace

BoundaryLike = Union[str, BoundaryFace, Boundary]

class DomainAxis:
    """One domain axis of a node: cells, halo width, boundary, extent mode (compiled or runtime) and
    the kernel's name for it."""
    def __init__(self, cells: int, halo: int = 0, boundary: BoundaryLike = "edge",
                 extent: str = "compiled", name: str = "") -> None: ...
    cells: int
    halo: int
    boundary: Boundary
    name: str

class StateField:
    """A state field of a node: name, dtype and leading component extents."""
    def __init__(self, name: str, dtype: DtypeLike = "f64",
                 components: Sequence[int] = ()) -> None: ...
    name: str

class NodeInput:
    """A state field of another node that this node's kernels read (coupling), named `as_` in the
    kernel."""
    def __init__(self, node: str, field: str, as_: str = "") -> None: ...
    node: str
    field: str
    as_: str

class Layout:
    """What a node declares about its data: domain axes, state fields, integrals, time step, stages
    and inputs."""
    def __init__(self, axes: Sequence[DomainAxis], fields: Sequence[StateField],
                 integrals: Sequence[str] = (), dt: float | None = None, stages: int = 1,
                 inputs: Sequence[NodeInput] = (), slab_initial_state: bool = False) -> None: ...
    axes: list[DomainAxis]
    fields: list[StateField]
    integrals: list[str]
    dt: float | None
    stages: int
    inputs: list[NodeInput]
    slab_initial_state: bool

class Slab:
    """Which cells of the domain a State holds, per domain axis: offset, extent, global_extent."""
    offset: tuple[int, ...]
    extent: tuple[int, ...]
    global_extent: tuple[int, ...]

class State(dict[str, np.ndarray]):
    """What Node.initial_state fills: each state field's interior by name, and the slab it holds."""
    slab: Slab

def grid(cells: Sequence[int], halo: int = 0, boundary: BoundaryLike = "edge",
         extent: str = "compiled") -> list[DomainAxis]:
    """One DomainAxis per entry of `cells` (named nx, ny, nz), each with the same halo, boundary and
    extent mode."""

class Node:
    """A simulation component: subclass it and define layout(), initial_state(state),
    emit_update(writer) and, optionally, build_static_data(); its params are its node params."""
    def __init__(self, type: str, name: str, node_params: Mapping[str, Scalar] | None = None, *,
                 params: Mapping[str, Scalar] | None = None) -> None: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def params(self) -> dict[str, Scalar]: ...
    @property
    def updates_per_step(self) -> int: ...
    def static_data_hash(self) -> str: ...
    # Defined by subclasses:
    def layout(self) -> Layout: ...
    def initial_state(self, state: State) -> None: ...
    def emit_update(self, writer: KernelWriter) -> None: ...
    def emit_stage(self, writer: KernelWriter, stage: int) -> None: ...
    def build_static_data(self) -> Mapping[str, Union[StaticArray, Scalar]]: ...

def node(type: str, name: str | None = None, size: int | Sequence[int] | None = None,
         **params: Scalar) -> Node:
    """A built-in node ('heat', 'pipe-flow', 'fvm', 'mlp') by type, with a size and node params by
    keyword."""
def node_types() -> dict[str, str]:
    """The built-in node types, each with its one-line summary."""
def node_kernels(node: Node, gpu: bool = False) -> list[Source]:
    """The kernels a simulation of `node` alone would request, as Sources (gpu=True: written for a
    GPU)."""
def default_params(type: str) -> dict[str, Scalar]:
    """A built-in node type's default node params."""

class Ensemble:
    """Many members of one node type, differing in node params, stepped as one batch; each
    member stops by the rule `until` and leaves with its fields, the next takes its slot."""
    def __init__(self, engine: Engine, make: Callable[[dict[str, Scalar]], Node],
                 params: Mapping[str, Scalar],
                 vary: Mapping[str, tuple[float, float, int] | tuple[float, float]] | None = None,
                 samples: Iterable[Mapping[str, float]] | None = None,
                 random: tuple[int, int] | None = None, until: Sequence[str] = (),
                 batch: int = 0, threads: int | None = None, output: PathLike | None = None,
                 keep: bool = True, capacity: int | None = None,
                 comm: Any = None, resume: PathLike | None = None,
                 vtk: PathLike | None = None,
                 stages: Sequence[Mapping[str, Any]] | None = None,
                 mode: str = "async_recv", buffer: int = 0, device: str = "cpu") -> None: ...
    def step(self) -> bool: ...
    def advance(self, steps: int) -> bool: ...
    def checkpoint(self, path: PathLike) -> None: ...
    def run(self, callback: Callable[[], Any] | None = None) -> None: ...
    def take(self) -> list[dict[str, Any]]: ...
    @property
    def summaries(self) -> list[dict[str, Any]]: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def batch_reason(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def finished(self) -> int: ...
    @property
    def active(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def member_steps(self) -> int: ...
    @property
    def varied(self) -> list[str]: ...
    @property
    def integrals(self) -> list[str]: ...
    @property
    def kernel_reports(self) -> list[KernelReport]: ...

class Simulation:
    """Runs nodes step by step: serially, on threads, sharded over MPI ranks (comm=) or on a GPU
    (device=); checkpoints, restores and writes VTK."""
    def __init__(self, engine: Engine, nodes: list[Node], comm: Any = None,
                 shard_axes: Sequence[int] | None = None, threads: int | None = None,
                 exchange: str = "sync", checked: bool = False, device: str = "cpu") -> None: ...
    def step(self, count: int = 1) -> None: ...
    def run(self, count: int, callback: Callable[["Simulation"], Any] | None = None) -> None: ...
    @property
    def steps_taken(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def checked(self) -> bool: ...
    @property
    def nodes(self) -> list[Node]: ...
    def field(self, node: str, field: str) -> np.ndarray: ...
    def gather(self, node: str, field: str) -> np.ndarray: ...
    def shard(self, node: str) -> dict[str, tuple[int, ...]]: ...
    def integrals(self, node: str) -> dict[str, float]: ...
    def kernel_reports(self) -> list[KernelReport]: ...
    def kernels(self) -> dict[str, KernelInfo]: ...  # deprecated: kernel_reports()
    def gathered(self) -> Snapshot: ...
    def rebound_statics(self, node: str) -> list[str]: ...
    def rebind_static(self, node: str, key: str, array: StaticArray) -> dict[str, Any]: ...
    def checkpoint(self, path: PathLike) -> None: ...
    @staticmethod
    def restore(engine: Engine, path: PathLike,
                factory: Callable[[str, str, dict[str, Scalar]], Node | None] | None = None,
                comm: Any = None, shard_axes: Sequence[int] | None = None,
                threads: int | None = None, exchange: str = "sync",
                checked: bool = False, device: str = "cpu") -> "Simulation": ...
    def write_vtk(self, directory: PathLike, stem: str = "") -> list[os.PathLike[str]]: ...

class ParamDoc:
    """One node param of a NodeKind, for --set help: name, meaning, unit and accepted range."""
    def __init__(self, name: str, meaning: str, unit: str = "", range: str = "") -> None: ...
    name: str
    meaning: str
    unit: str
    range: str

class Measurement:
    """One quantity a physics check measured, with its limit and whether it passed."""
    name: str
    metric: str
    value: float
    limit: float
    passed: bool

class Verdict:
    """A node kind's physics check: its measurements, notes and whether the run could be judged."""
    def __init__(self) -> None: ...
    def add(self, name: str, metric: str, value: float, limit: float) -> None: ...
    passed: bool
    measurements: list[Measurement]
    notes: list[str]
    needs_steps: int
    @property
    def judged(self) -> bool: ...

class Trace:
    """The domain integrals of a run, step by step, that a check may read."""
    names: list[str]
    steps: list[int]
    def series(self, name: str) -> list[float]: ...

class Snapshot:
    """A simulation's whole state at one step (Simulation.gathered()): fields and integrals."""
    @property
    def steps_taken(self) -> int: ...
    @property
    def nodes(self) -> list[Node]: ...
    def field(self, node: str, field: str) -> np.ndarray: ...
    def integrals(self, node: str) -> dict[str, float]: ...

class NodeKind:
    """A kind of node for run_cli: its type, summary, default node params and how to make one."""
    def __init__(self, type: str, summary: str, node_params: Mapping[str, Scalar],
                 make: Callable[[str, str, dict[str, Scalar]], Node], *,
                 param_docs: Sequence[ParamDoc] = (),
                 sized: Callable[[tuple[int, ...]], Mapping[str, Scalar]] | None = None,
                 size_help: str = "", shard_help: str = "",
                 default_steps: int | Callable[[Node], int] | None = None,
                 updates_per_step: Callable[[Node], int] | None = None,
                 check: Callable[[Node, Snapshot, Trace], Verdict] | None = None) -> None: ...
    type: str
    summary: str
    @property
    def node_params(self) -> dict[str, Scalar]: ...
    param_docs: list[ParamDoc]
    size_help: str
    shard_help: str

def run_cli(kinds: NodeKind | Sequence[NodeKind], argv: Sequence[str] | None = None, *,
            program: str | None = None, summary: str = "", epilog: str = "") -> int:
    """Runs node kinds as `uwjit run` runs the built-in ones (--set, --steps, --output-every,
    --checkpoint/--restore, --shard, --json, Ctrl-C); returns the exit code."""

