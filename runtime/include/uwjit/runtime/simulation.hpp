// Simulation: the single-process runtime: kernels requested up front, the step loop over
// ping-pong state buffers, halo filling, domain integrals, checkpoints.
#pragma once

#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/snapshot.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

/// How a sharded simulation exchanges halos each step.
///
/// `sync`: each axis's layers are sent and received with blocking calls, then the kernel is
/// called once on the whole local interior.
///
/// `overlap`: for a node whose kernel updates the box it is given (KernelWriter::update_box(),
/// as the built-in heat and pipe-flow kernels do), the halos of every axis but one, A, are
/// filled first; then A's receives are posted and its layers packed and sent, the kernel
/// updates the cells that read no halo of A while those transfers are in flight, the runtime
/// waits and unpacks, and the kernel updates the two boundary slabs along A (halo-width thick).
/// A is the last sharded axis whose narrowest shard is wider than twice its halo; every rank
/// picks the same. A node whose kernel does not update a box, or whose shards are too thin on
/// every sharded axis, is stepped with one kernel call after all halos are filled (every
/// transfer of an axis, all fields and both directions, started before waiting for any).
///
/// Both modes give the same state, bit for bit: each cell is computed by the same code from the
/// same inputs. A domain integral that overlap computes as the sum of three calls' partial sums
/// is reassociated, so it may differ from sync's in the last bits (relative ~1e-12 or less).
enum class ExchangeMode { sync, overlap };

/// "sync" or "overlap".
[[nodiscard]] std::string_view to_string(ExchangeMode mode) noexcept;

/// The most threads a simulation runs its kernels on when asked (SimulationOptions::threads).
inline constexpr int k_max_threads = 4096;

/// The one rule for a thread count someone asks for (uwjit run --threads, Python's threads=,
/// SimulationOptions::threads other than 0): a whole number from 1 to k_max_threads, written in
/// decimal. Returns it; throws Error(usage) `WHAT: expected a whole number from 1 to 4096, got
/// "TEXT"` otherwise. Thread-safe.
[[nodiscard]] int parse_threads(std::string_view text, std::string_view what);

struct SimulationOptions {
  /// Threads that compile distinct kernels in parallel when the simulation is built; 0 means
  /// min(hardware threads, 4).
  int compile_threads = 0;
  /// The ranks to shard the domain over, or nullptr for a serial simulation. Must outlive the
  /// simulation. With a comm, construction, step(), run() and gathered() are collective over
  /// it (every rank calls them, in the same order).
  comm::Comm* comm = nullptr;
  /// The domain axes to split over the ranks of `comm` (1 to 3 distinct axes; ignored without a
  /// comm). Empty with a comm: axis 0.
  std::vector<int> shard_axes;
  /// Ranks along each axis of shard_axes (their product must be comm->size()); empty: a
  /// balanced factorisation, larger counts first (like MPI_Dims_create).
  std::vector<int> grid;
  ExchangeMode exchange = ExchangeMode::sync;
  /// Threads that run each step's kernels (a persistent team, made once). 0: the cores this
  /// process may use (its CPU affinity); when the launcher did not bind the process to cores,
  /// they are shared among the ranks of its node. A kernel that honours its update box
  /// (KernelWriter::update_box()) is called on slabs of the box spread over the threads; other
  /// kernels run on one thread. The slabs depend only on the box, and integrals are summed slab
  /// by slab in a fixed order, so state and integrals are the same bit for bit for any thread
  /// count. Otherwise parse_threads' rule (1 to k_max_threads): Error(usage) naming it.
  int threads = 0;
  /// Sharded: replicate static arrays made with StaticArray::computed() and at least
  /// share_min_bytes large are computed once per node, by the node's first rank, into shared
  /// memory that the node's other ranks map read-only: one copy per node instead of one per
  /// rank. Without shared memory (or if the ranks list different such arrays) each rank computes
  /// its own copy and a warning says why; results are the same either way.
  bool share_on_node = true;
  std::size_t share_min_bytes = std::size_t{1} << 20;
  /// Checked mode, for people who write nodes (also on when UWJIT_CHECK is on): each kernel is
  /// emitted with KernelWriter::checked(true), so a read beyond a buffer's declared halo or a
  /// write to a state output outside the update box fails the step with Error(kernel) naming
  /// the node, the step, the field or static key and the index (e.g. `node "advect", step 3:
  /// kernel read "u" at (-1, 4), outside its layout (halo 0 on axis 0)`); the access itself is
  /// never made. Halos the runtime does not fill are poisoned (NaN for f32/f64, the lowest value
  /// for signed integers, 255 for u8): those of new state buffers and, before every kernel call,
  /// of the buffers the kernel writes (so Simulation::field() shows poisoned halos after a
  /// step). A kernel that declares update_box() is called on several boxes that tile the
  /// interior (as overlap mode would), serially too, so one that ignores its box fails the write
  /// check; a shard-mode static array whose shard axis does not follow the domain is
  /// Error(usage) serially too. Checked kernels are other text, so other keys; the state is the
  /// same bit for bit as unchecked (integrals, summed in another order, to the last bits). The
  /// same on every rank (a collective key check refuses ranks that differ).
  ///
  /// Off, reads beyond a halo still never pass silently: a layout with a periodic, dirichlet or
  /// neumann boundary on an axis of halo 0 is refused; a cell-form text that reads beyond a halo
  /// in every cell is refused when the kernel is written (KernelWriter::halo_reads); and a CPU
  /// kernel whose text does not show how far it reads (a body() of its own loops, indices it
  /// computes) gets a checked copy that runs its first step (and the first after a
  /// rebind_static) before the kernel itself, a bad access then failing the step as here
  /// (KernelReport::first_step_check; one more compile, cached as any kernel).
  bool checked = false;
  /// Where the kernels run: "cpu" (this process's cores, the default), "cuda" (NVIDIA GPU 0;
  /// sharded, the rank's place among its node's ranks modulo the node's GPUs) or "cuda:N". On a
  /// CUDA device every node's kernels are written for the GPU (KernelWriter::gpu; a node that
  /// writes its own loops with KernelWriter::body() is refused, naming for_each_cell), compiled
  /// to PTX for its sm through the engine's tiers (one compile per job under MPI) and loaded
  /// through the driver; state and static arrays live in device memory (static arrays uploaded
  /// when bound, rebind_static uploads the new contents); halos are filled there by a small GPU
  /// kernel, sharded ones exchanged through host memory; integrals are read back each step that
  /// computes them; fields are copied to the host only when asked (field(), gathered(),
  /// checkpoint()); coupled inputs are read from their owners' device fields. The state is the
  /// same bit for bit as on the CPU (floating-point contraction is off in both unless a node
  /// opts in), but for kernels calling functions libdevice implements (exp, log, pow, tanh, ...:
  /// libdevice's on the GPU, the C library's on the CPU, each within a few ulp); integrals,
  /// summed in another order, agree to about 1e-12. libcuda.so.1 is opened only when a CUDA
  /// device is asked for. Error(usage) for another text, with checked mode, for more than 65535
  /// cells along an axis but the last (in a rank's shard), or naming what is missing when there
  /// is no driver or no such device (sharded: on every rank alike).
  std::string device = "cpu";
};

/// What SimulationOptions::share_on_node did on this rank.
struct NodeShared {
  std::int64_t arrays = 0;  ///< replicate arrays this rank reads from its node's shared copy
  std::int64_t bytes = 0;   ///< their size (held once per node)
  std::string kept_private; ///< why arrays that qualified stay private (empty: none do)
};

/// Where this rank's shard of a node's domain lies.
struct ShardInfo {
  std::vector<int> grid;            ///< ranks per domain axis (1 where not sharded)
  std::vector<int> coords;          ///< this rank's position in the grid, per domain axis
  std::vector<std::int64_t> offset; ///< global index of the first local cell, per axis
  std::vector<std::int64_t> extent; ///< local interior extent, per axis
  std::vector<std::int64_t> global; ///< the whole domain's extent, per axis
};

/// Halo exchanges of state on this rank, summed over nodes and steps.
struct ExchangeStats {
  /// Time spent exchanging (seconds): packing, transfers, waiting, unpacking; not the kernel
  /// calls that overlap mode makes while transfers are in flight.
  double seconds = 0;
  /// Node steps whose halos were exchanged (a node of several stages: stages).
  std::int64_t exchanges = 0;
  /// Of those, node steps in which the kernel updated the interior while halo transfers were in
  /// flight (overlap mode only).
  std::int64_t overlapped = 0;
};

/// Rebuilds a node from what a checkpoint stores: its type, name and params.
using NodeFactory = std::function<std::shared_ptr<const Node>(
    const std::string& type, const std::string& name, const Params& params)>;

/// The checkpoint file format, version 3. Little-endian; f64 is IEEE-754 binary64. A head, then
/// each field's data where the head says, so that each rank of a job writes and reads its own
/// slab of every field at its place, and no rank holds the whole domain.
///
/// | field        | type                 | meaning                                             |
/// |--------------|----------------------|-----------------------------------------------------|
/// | magic        | 8 bytes "UWJITCKP"   |                                                     |
/// | version      | u32                  | k_checkpoint_version (3; versions 1 and 2 are read) |
/// | head_length  | u64                  | bytes of the head, this checksum included           |
/// | step         | i64                  | steps taken                                         |
/// | node_count   | u32                  |                                                     |
/// | nodes        | node_count × node    | in the simulation's order                           |
/// | checksum     | 64 bytes             | SHA-256 of the head before it, lowercase hex        |
/// | data         |                      | each field's bytes at its offset (multiples of 4096 |
/// |              |                      | after the head, in the head's order; zeros between) |
///
/// node:      str type, str name, u32 param_count, param_count × (str key, value) sorted by key,
///            u32 field_count, field_count × field, u32 integral_count,
///            integral_count × (str name, f64 value of the last step),
///            u32 rebound_count, rebound_count × str key (sorted)
/// field:     str name, u8 dtype (0 f32, 1 f64, 2 i8, 3 u8, 4 i32, 5 i64), u32 rank,
///            rank × i64 shape (components, then domain), u64 byte_count, u64 offset of its data
///            in the file, u64 CRC-64 of its data (crc64_update from 0 of common/crc64.hpp: it
///            combines over the ranks' slabs); the data is the interior as row-major bytes
///            without halos
/// value:     u8 tag, then 0: i64 | 1: f64 | 2: str | 3: u32 count, count × value
/// str:       u32 byte length, the bytes (UTF-8, no terminator)
///
/// Static data is not stored: a restored node is rebuilt from its params by a NodeFactory, and
/// rebuilds its static data from them. Arrays given with Simulation::rebind_static are not
/// restored: the file records their keys (a node's "rebound" list), and a restore that finds any
/// warns, naming the node and keys, and reports them through Simulation::rebound_statics();
/// rebind them again. Versions 1 and 2 (2026) are one stream without head_length: the nodes, each
/// field's byte_count followed by its data, and a SHA-256 of the whole file; version 1 lacks the
/// rebound list. A job restoring them reads the file whole on rank 0 and broadcasts it.
inline constexpr std::uint32_t k_checkpoint_version = 3;
/// The first bytes of every checkpoint: a file at a checkpoint's path that is not empty and does
/// not start with them is never replaced (Error(io) instead).
inline constexpr std::string_view k_checkpoint_magic = "UWJITCKP";

/// The most steps a simulation counts: 2^53, so that every count is exact as a double (a time is
/// steps × dt) and no sum of counts overflows. A checkpoint whose count is negative or larger is
/// refused, and step() refuses to pass it.
inline constexpr std::int64_t k_max_steps = std::int64_t{1} << 53;

/// Runs nodes step by step in this process, or sharded over the ranks of options.comm.
///
/// Sharded: each node's domain is split along options.shard_axes over a Cartesian grid of ranks
/// (row-major rank order; an axis of n cells over p ranks gives the first n % p ranks one cell
/// more). Sharded axes take their extents at run time, so every rank emits the same kernel
/// source and key, and the kernels are requested collectively (one compile per job). A node
/// whose layout says slab_initial_state fills its rank's slab only (State::slab()); any other
/// node fills the whole domain on each rank, which keeps its slab. Shard-mode static arrays are
/// cut to the slab along their trailing (domain) axes: an array made by
/// StaticArray::computed_by_box computes the slab alone, any other is computed or given whole and
/// copied from; replicate arrays stay whole. Static halos are exchanged once, edge at the global
/// boundary; state halos every step, axis by axis (so corners are right), periodic or edge per
/// node. Domain integrals are summed over the ranks (so their last bits may differ from a serial
/// run's), those declared maxima taken as the maximum (the serial run's bits). checkpoint() and
/// restore() are collective and use one file for the job, the same file a serial run writes (each
/// rank writing and reading its slab), so a job may be resumed on another rank count or serially;
/// rebind_static() is serial-only (Error(usage) with a comm of more than one rank); gathered()
/// gives a serial snapshot of the whole domain that can be checked or written. Construction emits
/// every node's kernel and requests all of them from the engine up front; distinct kernels compile
/// in parallel. A step fills each node's halos, calls its kernel on ping-pong state buffers
/// (sharded in overlap mode, possibly in three calls on boxes that tile the interior; see
/// ExchangeMode) and keeps the domain integrals; serially it allocates nothing (sharded, halo
/// buffers are sized on the first step and reused; the communicator's request handles are its own).
/// Not thread-safe: use one thread per Simulation. The engine must outlive the simulation.
class Simulation {
public:
  /// Validates every node (names unique, 1-3 domain axes, per-axis lists of the right length,
  /// state fields, the kernel's bindings; Error(usage) naming the node and what is wrong),
  /// and, sharded, the decomposition (valid distinct shard axes, a grid whose product is the
  /// rank count, a non-zero halo on every sharded axis, no more ranks than cells and no shard
  /// narrower than the halo, every shard-mode static array's shard axis a sharded axis; in
  /// checked mode, serially too, every shard-mode static array's shard axis a domain axis of the
  /// domain's extent): the
  /// same Error(usage) on every rank, raised before any collective,
  /// allocates and initialises the state, and requests the kernels (Error(compile) or
  /// Error(jit) from the engine).
  Simulation(engine::Engine& engine, std::vector<std::shared_ptr<const Node>> nodes,
             SimulationOptions options = {});
  ~Simulation();
  Simulation(Simulation&&) noexcept;
  Simulation& operator=(Simulation&&) noexcept;

  /// One report per kernel, in node order and, within a node, stage order (one per node when
  /// every node has one stage): the kernels the nodes use now (Python: kernel_reports()).
  [[nodiscard]] const std::vector<KernelReport>& kernel_reports() const noexcept;

  /// Deprecated (uwjit 0.1; removed in the next release): kernel_reports(). (`kernels` names
  /// Kernel objects elsewhere, e.g. Engine::kernels.)
  [[deprecated("use kernel_reports()")]] [[nodiscard]] const std::vector<KernelReport>&
  kernels() const noexcept {
    return kernel_reports();
  }

  /// Takes `count` steps; each steps every node, in order. Throws Error(kernel) naming the node
  /// and step if a kernel returns a non-zero status: that node keeps the state it had before
  /// the step (nodes before it in order have taken it; a node of several stages keeps what the
  /// stages before the failing one wrote), and steps_taken() does not advance. Each node takes
  /// its stages in order; a coupled input is read as it is when the reading stage runs (see
  /// NodeInput).
  /// Sharded: collective; fills halos from the neighbouring ranks and sums the integrals over
  /// the ranks. A kernel that fails on some ranks only raises the same Error(kernel) on every
  /// rank (the message of the lowest failing rank, which it names), in the same step: the ranks
  /// learn each other's status in the all-reduce that sums the integrals. Error(usage) if
  /// `count` is negative or would take steps_taken() past k_max_steps (nothing is stepped), and
  /// sharded, on every rank alike, if the ranks ask for other counts (a rank that stopped sooner
  /// would leave the others waiting for its halos for ever).
  void step(std::int64_t count = 1);

  /// Takes `count` steps, calling after_step(*this) after each. Sharded: collective; `count` is
  /// checked as step() checks it, once.
  void run(std::int64_t count, const std::function<void(const Simulation&)>& after_step);

  /// Where this rank's shard of node `node` lies (serial: the whole domain on a 1-rank grid).
  [[nodiscard]] const ShardInfo& shard(std::string_view node) const;

  /// The replicate arrays this rank shares with its node (see SimulationOptions::share_on_node).
  [[nodiscard]] NodeShared node_shared() const;

  /// The threads that run each step's kernels on this rank (see SimulationOptions::threads).
  [[nodiscard]] int threads() const noexcept;

  /// Where the kernels run: "cpu", or the CUDA device in words, e.g. "cuda:0 (NVIDIA H100 80GB
  /// HBM3, sm_90)".
  [[nodiscard]] std::string device() const;

  /// Whether the simulation runs in checked mode (SimulationOptions::checked or UWJIT_CHECK).
  [[nodiscard]] bool checked() const noexcept;

  /// This rank's state halo exchanges since construction: time, count, overlapped steps.
  [[nodiscard]] ExchangeStats exchange_stats() const noexcept;

  /// A serial snapshot of the whole simulation (see Snapshot): every node's state gathered from
  /// the ranks, the step count, the integrals, the static data and the kernel reports. Collective
  /// when sharded; every rank gets the snapshot. Requests no kernel. Sharded, each rank then
  /// holds a copy of the whole state (the memory of one serial run, on every rank): ask for it
  /// only for domains that fit one process; local_snapshot() and the collective checkpoint()
  /// and write_vtk() gather nothing.
  [[nodiscard]] Snapshot gathered() const;

  /// A snapshot of this rank's slab (see Snapshot::slab): every node's state fields over the
  /// cells this rank updates (a copy of its interiors), the integrals (summed over the ranks, as
  /// integrals() gives them), the node's own static data and the kernel reports. Not collective
  /// and nothing is gathered: its memory is this rank's share. Serially, gathered().
  [[nodiscard]] Snapshot local_snapshot() const;

  /// Steps taken since the initial state.
  [[nodiscard]] std::int64_t steps_taken() const noexcept;

  [[nodiscard]] const std::vector<std::shared_ptr<const Node>>& nodes() const noexcept;
  /// The node named `name`; Error(usage) if there is none.
  [[nodiscard]] const Node& node(std::string_view name) const;

  /// The current state field `field` of node `node` (interiors are the state after the last
  /// step; halos are as last filled). Error(usage) naming what is missing.
  [[nodiscard]] const Field& field(std::string_view node, std::string_view field) const;

  /// The domain integrals of the last step (zeros before the first), in the order of the node's
  /// layout().integrals. Error(usage) if there is no such node.
  [[nodiscard]] std::span<const double> integrals(std::string_view node) const;
  /// The same, by node index (the order of nodes()); no lookup.
  [[nodiscard]] std::span<const double> integrals(std::size_t node_index) const;

  /// The static data bound to node `node`'s kernel: the node's own, unless rebound.
  [[nodiscard]] const StaticData& bound_static_data(std::string_view node) const;

  /// The keys (sorted) of node `node`'s static arrays that rebind_static replaced in the history
  /// of this state: in this simulation, or in the run that wrote the checkpoint it was restored
  /// from (a restore binds the node's own arrays, warns, and lists them here: rebind them
  /// again). A checkpoint records them. Error(usage) if there is no such node.
  [[nodiscard]] std::vector<std::string> rebound_statics(std::string_view node) const;

  /// What rebind_static did.
  struct Rebound {
    bool new_kernel = false; ///< false: the same kernel reads the new array, nothing was asked
    KernelReport report;     ///< the kernel now in use (if new, report.info.tier says whence)
  };

  /// Binds `array` in place of the node's array of the same key. If its shape, dtype and
  /// sharding are those of the array it replaces, the static_data_hash and so the kernel stay
  /// the same: the engine is not asked, nothing is compiled, and the next step reads the new
  /// contents. Otherwise the node emits its kernel again and the engine serves it (compiled
  /// once, or from a cache tier). On an error (Error(usage): no such node or key, a shape the
  /// node's kernel rejects; or the engine's errors) the simulation is unchanged.
  Rebound rebind_static(std::string_view node, StaticArray array);

  /// Writes the state and params to `path` (format above), atomically: a temporary file in the
  /// same directory, fsync, rename. Throws Error(io). Sharded: collective; each rank writes its
  /// slab of every field into the one file at its offsets (the bytes a serial run writes for the
  /// same state; the ranks must share the file system of `path`), every rank syncs, and rank 0
  /// renames; nothing is gathered, and an error is raised on every rank alike.
  void checkpoint(const std::filesystem::path& path) const;

  /// Writes every node's state as VTK XML files in `directory` (created if missing): each node's
  /// Node::write_vtk (by default an ImageData file of every state field; the built-in nodes
  /// write theirs), named after the node (NODE.vti), or STEM_NODE when `stem` is not empty, and
  /// returns their paths in node order. Throws Error(io) naming the directory or the file that
  /// cannot be written. Sharded: collective, write_node_vtk for each node; every rank returns
  /// the same paths or raises the same error.
  std::vector<std::filesystem::path> write_vtk(const std::filesystem::path& directory,
                                               std::string_view stem = {}) const;

  /// Writes node `node`'s state as VTK XML files in `directory` (created if missing) named
  /// `stem` plus the format's suffix, and returns their paths. Serially, Node::write_vtk.
  /// Sharded (collective): a node with an image (Node::vtk_image) is written in pieces, nothing
  /// gathered: each rank writes the image of its slab as STEM/STEM_RANK.vti (RANK in 4 digits
  /// or more) and, when every piece is written, rank 0 writes STEM.pvti, the parallel ImageData
  /// that ParaView opens as one dataset (one line per rank), which is the path returned; the
  /// ranks must share `directory` (rank 0 checks that it sees every piece: Error(io) saying so
  /// otherwise). A node without an image (a mesh) is gathered and rank 0 writes its files.
  /// Throws Error(usage) if there is no such node, Error(io) naming what cannot be written, on
  /// every rank alike.
  std::vector<std::filesystem::path> write_node_vtk(std::string_view node,
                                                    const std::filesystem::path& directory,
                                                    std::string_view stem) const;

  /// Rebuilds a simulation from a checkpoint: nodes from `factory`, their kernels from `engine`,
  /// their state and step count from the file. Stepping it on gives, bit for bit, what the
  /// uninterrupted simulation gives. Throws Error(io) for an unreadable, truncated, corrupt or
  /// foreign file, Error(usage) if a node rebuilt by the factory does not match the file.
  /// With options.comm: collective; rank 0 reads the head and broadcasts it, and every rank reads
  /// its own slab of each field from the file (written at any rank count and grid, or serially)
  /// and checks it against the file's checksums together with the others; every error is raised
  /// on every rank alike. A version 1 or 2 file is read whole by rank 0 and broadcast.
  [[nodiscard]] static Simulation restore(engine::Engine& engine, const std::filesystem::path& path,
                                          const NodeFactory& factory,
                                          SimulationOptions options = {});

private:
  struct Impl;
  explicit Simulation(std::unique_ptr<Impl> impl);
  void step_count_check(std::int64_t count) const;
  void take_steps(std::int64_t count); // checked
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::runtime
