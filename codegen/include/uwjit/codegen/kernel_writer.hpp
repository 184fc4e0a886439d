// KernelWriter: how node authors emit a kernel with named, halo-offset accessors and slot tables.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/codegen/reduction.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::codegen {

/// Whether an extent is a constant in the kernel text (constant loop bounds: faster, but every
/// value is its own kernel) or read from args->extents when the kernel runs (one kernel for all
/// values, e.g. for uneven shards).
enum class ExtentMode { compiled, runtime };

/// "compiled" or "runtime".
[[nodiscard]] std::string_view to_string(ExtentMode mode) noexcept;

/// A handle on an extent declared on one KernelWriter.
struct Extent {
  int id = -1;
};

/// One axis of a buffer: its interior extent and its halo width (cells on each side). Halo
/// cells are addressed with indices -halo..-1 and n..n+halo-1.
struct Axis {
  Extent extent;
  int halo = 0;
};

/// Which ABI table a buffer is bound through.
enum class BufferRole { state_in, state_out, statics };

/// "state_in", "state_out" or "statics".
[[nodiscard]] std::string_view to_string(BufferRole role) noexcept;

/// An extent as declared: what the kernel text calls it and how it gets its value.
struct ExtentDecl {
  std::string name;   ///< the local constant in kernel text ("" for an anonymous constant)
  std::int64_t value; ///< compiled in, or (run-time extents) the value the caller will pass
  ExtentMode mode;    ///< compiled in or read from args->extents
  int domain_axis;    ///< the domain axis this extent spans, or -1 (e.g. a component axis)
  int slot;           ///< index into args->extents for run-time extents, else -1
};

/// A buffer as declared: its slot, its accessor's name, its element type and its padded layout.
struct BufferDecl {
  BufferRole role;
  std::string name;     ///< the state field or static key (the slot name)
  std::string accessor; ///< the accessor's name in kernel text
  Dtype dtype;
  std::vector<Axis> axes;
  int slot; ///< index into the role's pointer table
};

/// A run-time param as declared (KernelWriter::param): its local's name, the value the caller
/// will pass, its slot. Not a node param (runtime::Params, a node's construction values).
struct ParamDecl {
  std::string name; ///< the local `const double` in kernel text
  double value;     ///< what the runtime passes in args->params (never written into the text)
  int slot;         ///< index into args->params
};

/// The loops of a cell-form kernel (KernelWriter::for_each_cell).
struct CellLoop {
  /// The names of the cell's indices, one per domain axis in axis order, e.g. {"i", "j", "k"}.
  std::vector<std::string> indices;
  /// CPU form: fold the innermost loop's remainder into masked vector iterations, one copy of
  /// the cell's code instead of a vector loop and a scalar remainder loop (for long cells, whose
  /// second copy would double the machine code and the compile time), where masked memory
  /// operations are cheap: on x86-64 with AVX-512, and on other architectures. AVX2's masked
  /// moves are microcoded on AMD's cores, so with AVX2 the loop keeps its remainder (and is
  /// vectorised whatever the cost model says of its run-time checks). The text sees the choice
  /// as the macro UWJIT_MASKED_MOVES (1 where the remainder is masked, else 0). No effect on a
  /// GPU (1 there). Where the innermost extent is compiled in and a multiple of 16 (whole
  /// 64-byte vectors of f32 or f64, so the remainder never runs when the box spans the row), AMD's
  /// Zen 4 and Zen 5 keep the unmasked loop too: there masked iterations cost pipe-flow a sixth
  /// (Zen 5) and an eighth (Zen 4) of its speed on one thread.
  bool masked_remainder = false;
};

/// What a kernel's text shows about how far its accessors reach along the domain axes
/// (KernelWriter::halo_reads).
enum class HaloReads {
  /// A cell-form text whose every accessor call names, on each domain axis, the cell's own index
  /// plus a constant within the buffer's halo (a state output: the cell itself): no cell can
  /// read outside a field's layout along the domain, whatever the extents.
  within,
  /// Anything else: a body() with its own loops, an index computed otherwise (from a table, a
  /// loop variable, another axis's index), an accessor passed on rather than called, or a text
  /// that may skip the call that would reach too far. Only a run can tell.
  unknown,
};

/// "within" or "unknown".
[[nodiscard]] std::string_view to_string(HaloReads reads) noexcept;

/// A GPU launch of a cell-form kernel: blocks of `block` threads on x over `grid`.
struct CellLaunch {
  std::array<unsigned, 3> grid{};
  unsigned block = 0;
};

/// The launch of a cell-form kernel (KernelWriter::for_each_cell, written for a GPU) over the
/// update box in `args`, for a domain of `rank` axes, with at most `most_threads` threads per
/// block (a multiple of 32): each row of n cells along the last axis gets b = ceil(n /
/// most_threads) blocks of ceil(n / b) threads rounded up to a warp, so that no more warps run
/// than the row needs (192 cells: two blocks of 96, not two of 128 with a quarter idle); the
/// box's extent on the axis before is the grid's y, that of the first of three its z (1 where
/// the domain has no such axis). An empty box gives a grid with a 0.
[[nodiscard]] CellLaunch cell_launch(const uwjit_kernel_args& args, std::size_t rank,
                                     unsigned most_threads = 128) noexcept;

/// Whether a kernel written by a KernelWriter assumes `buffer` 64-byte aligned: every state
/// buffer, and static arrays with halos (the runtime pads those into a copy of its own); a static
/// array without halos is the caller's memory. A host that calls such a kernel itself must pass
/// these buffers aligned (the runtime's are).
[[nodiscard]] bool assumes_aligned(const BufferDecl& buffer) noexcept;

/// Writes one generated kernel: extents, buffers, integrals, then the node's text.
///
/// For each buffer the kernel text gets, inside the entry function:
///   - `NAME(i0, i1, ...)`: an inline accessor taking interior-relative indices (a halo cell is
///     `u(-1, j, k)`); it returns the value for inputs and static arrays, and a reference for
///     outputs (`u_out(i, j, k) = ...`);
///   - `NAME_data` (the pointer), `NAME_n<d>` (interior extent of axis d) and `NAME_s<d>` (its
///     stride in elements), for code that walks the memory itself.
/// A static array of no axes (a scalar, shape ()) is read as `NAME()`.
/// Buffers are row-major (the last axis is contiguous), each axis padded by its halo on both
/// sides. The kernel assumes every state output apart from every other buffer of the call (it
/// vectorises on that), and its state buffers 64-byte aligned: a host calling it directly passes
/// each output an array of its own (an update in place writes a second array, then swaps them;
/// Python's Kernel call refuses shared memory). Accessor names: a state input is named after its
/// field, a state output is the field name followed by "_out", a static array is named after its
/// key. Each extent named `nx` is a
/// local `nx` (constexpr when compiled in); a domain extent `nx` also gives `nx_offset` (the
/// global index of this shard's first cell, args->shard_offset) and `nx_global` (the whole
/// domain's extent, args->global_extent), so that a kernel can compute global coordinates
/// that stay right when a sharded runtime splits the domain. Each integral `name` is a local sum,
/// starting at 0, that the text adds to (`name += x`, `name -= x`; it reads as a double); its value
/// is stored to args->integrals after the text has run. Its additions may be reassociated, so that
/// loops that sum it still vectorise: its last bits depend on the kernel (the CPU, the extents),
/// not only on the data; everything else in the kernel is evaluated in strict order, each
/// operation rounded as written (no fused multiply-add unless the node's kernel_options() ask
/// for fp contraction: the engine's default is FpContract::off). The text may
/// `return` a non-zero status of its own (the integrals are not stored then); it must not return
/// UWJIT_KERNEL_OK itself. A kernel that calls update_box() gets, per domain extent `nx`, the
/// locals `nx_begin` and `nx_end` (args->update_begin/update_end): the box it must update.
///
/// The output is deterministic: declarations in their order, numbers through literal(), no
/// addresses, no macros (nothing leaks from one kernel to the next), no standard headers.
/// Declarations throw Error(usage) naming the kernel (its origin) and the offending name.
/// Not thread-safe; use one writer per kernel.
class KernelWriter {
public:
  /// A writer for the kernel that `origin` (a node's name) emits.
  explicit KernelWriter(std::string origin);

  /// Declares an extent `name` (a C identifier) of `value` (>= 1). A compiled extent is a
  /// constant in the text; a run-time one takes the next slot of args->extents and its value is
  /// never written into the text.
  Extent extent(std::string name, std::int64_t value, ExtentMode mode);

  /// Declares the extent of domain axis `axis` (0..UWJIT_MAX_AXES-1), as extent() does.
  /// Throws Error(usage) if that axis is already declared.
  Extent domain_extent(int axis, std::string name, std::int64_t value, ExtentMode mode);

  /// An anonymous compiled-in extent of `value` (>= 1), e.g. the 19 directions of a D3Q19
  /// field. Constants of the same value share one handle.
  Extent constant(std::int64_t value);

  /// The extent of domain axis `axis`; throws Error(usage) if it was not declared.
  [[nodiscard]] Extent domain(int axis) const;

  /// Declares a state input `field` read through the accessor `field(...)`.
  void state_in(std::string field, Dtype dtype, std::vector<Axis> axes);

  /// Declares that the kernel writes state field `field`, with the layout of its state input,
  /// through the accessor `field_out(...)`. Throws Error(usage) if `field` is not a declared
  /// state field (see restrict_outputs) or has no state input.
  void state_out(std::string field);

  /// Declares a state output with its own layout (kernels without a matching input).
  void state_out(std::string field, Dtype dtype, std::vector<Axis> axes);

  /// Tells the writer the dtype and shape of a static array the caller will bind (the runtime
  /// does this for every array of a node's static data). A later static_array(key, ...) is
  /// checked against it.
  void provide_static(std::string key, Dtype dtype, std::vector<std::int64_t> shape);

  /// The shape given to provide_static(key), or nullopt.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> provided_shape(std::string_view key) const;

  /// The dtype given to provide_static(key), or nullopt: a node can follow the dtype of an array
  /// a host swapped in (Simulation::rebind_static) as it follows its shape.
  [[nodiscard]] std::optional<Dtype> provided_dtype(std::string_view key) const;

  /// Declares that the kernel reads static array `key` through the accessor `key(...)`, with
  /// the given axes. If the key was provided, the dtype must match and each axis's extent must
  /// equal the provided shape; otherwise Error(usage) naming the key and both shapes.
  void static_array(std::string key, Dtype dtype, std::vector<Axis> axes);

  /// Declares a provided static array with its provided dtype and shape, each axis a compiled
  /// constant without halo (e.g. the weights of a network). Throws Error(usage) if `key` was not
  /// provided.
  void static_array(std::string key);

  /// Declares a run-time parameter: the kernel text gets a local `const double name` read from
  /// args->params when the kernel runs, and `value` is what the runtime passes there. The value
  /// is never written into the text, so kernels that differ only in it are one kernel, one key:
  /// sweeping it compiles nothing. A value written into the text instead (with literal()) is a
  /// constant the compiler may fold, at the price of one kernel per value: declare as run-time
  /// the coefficients a user sweeps, keep compiled what shapes the code (counts, switches).
  /// Throws Error(usage) if `name` is not a free C identifier.
  void param(std::string name, double value);

  /// Declares that the kernel updates exactly the cells of the box args->update_begin ..
  /// update_end (and sums its integrals over those cells only), through the locals `nx_begin`
  /// and `nx_end` this gives each domain extent `nx`, e.g. `for (uw_i64 i = nx_begin; i <
  /// nx_end; ++i)`. A runtime may then call the kernel several times per step on boxes that tile
  /// the interior, e.g. to update the interior while halos are still in flight; without it, the
  /// kernel is called once per step on the whole interior. Declare the domain extents first;
  /// Error(usage) if there are none or the names clash.
  void update_box();

  /// Whether update_box() was declared.
  [[nodiscard]] bool updates_box() const noexcept { return m_update_box; }

  /// Checked mode (off by default; a runtime sets it before the node writes): every accessor
  /// tests its indices against the buffer's declared layout. A read of a state input or static
  /// array must lie within -halo .. n+halo-1 on each axis; an access to a state output within
  /// the update box (args->update_begin .. update_end, the whole interior for a kernel without
  /// update_box()) on domain axes and 0 .. n-1 on others. An access outside is never made (a
  /// read gives 0, a write goes to a dummy); the first is recorded in args->check (see
  /// kernel_abi.h) and the kernel returns UWJIT_KERNEL_CHECK_FAILED after its text has run. The
  /// text, and so the key, differs from the unchecked kernel's, which this leaves unchanged.
  /// Code that walks `NAME_data` itself is not checked.
  void checked(bool on) noexcept { m_checked = on; }

  /// Whether checked mode is on.
  [[nodiscard]] bool is_checked() const noexcept { return m_checked; }

  /// The update of one cell, the writer owning the iteration (the cell form). `text` runs once
  /// for each cell of the update box (declared here if it was not), its indices the locals named
  /// `loop.indices` (interior-relative, as the accessors take them), with every accessor, extent,
  /// param and integral in scope. On a CPU the writer emits loops over the box, the last axis
  /// innermost (vectorised; a runtime slices the box over its threads); for a GPU (gpu(true)),
  /// one thread per cell of the box, launched in blocks of B threads on x (B a multiple of 32)
  /// over the grid cell_launch() gives; the integrals (args->integrals, device memory, zeroed
  /// before the launch) receive each warp's sum, folded by shuffles, through one atomic addition
  /// per warp. The text must not `return`, `break` or `continue` out of the cell. A kernel has
  /// either a body() or one for_each_cell(); Error(usage) naming the kernel if it has both, if the
  /// index count is not the domain's or an index name is not free.
  void for_each_cell(CellLoop loop, std::string_view text);

  /// Whether the kernel is written in the cell form.
  [[nodiscard]] bool is_cell_form() const noexcept { return !m_cell.empty(); }

  /// How far the cell-form text's accessor calls reach along the domain axes, judged from the
  /// text against the buffers declared so far (see HaloReads; a body() is always `unknown`). A
  /// call whose index on a domain axis is the cell's index plus a constant beyond the buffer's
  /// halo (a read) or off the cell (a write), in a text without branches, loops or lambdas (so
  /// that it runs for every cell, the cells at the faces included), is Error(usage) here and in
  /// finish(), naming the kernel, the call, its line and column in the cell's text, the buffer,
  /// the domain axis and its halo, and the halo that would do. A runtime checks the first step
  /// of an `unknown` kernel (SimulationOptions::checked).
  [[nodiscard]] HaloReads halo_reads() const;

  /// Writes the kernel for a GPU (off by default; a runtime sets it before the node writes): the
  /// entry is a GPU kernel, `extern "C" __attribute__((nvptx_kernel)) void ENTRY(const
  /// uwjit_kernel_args)`, with `args` a pointer to its argument in the text as on a CPU, and the
  /// iteration is one thread per cell. Only cell-form kernels can be written for a GPU: finish()
  /// throws Error(usage) for a body() (its own loops run on CPUs only) or in checked mode.
  void gpu(bool on) noexcept { m_gpu = on; }

  /// Whether the kernel is written for a GPU.
  [[nodiscard]] bool is_gpu() const noexcept { return m_gpu; }
  /// Writes the kernel as a batch (off by default; an ensemble sets it before the node writes):
  /// the entry makes, in one call, the calls listed in args->members, each the kernel's update
  /// of one member exactly as the plain kernel would make it on that struct (see kernel_abi.h),
  /// each call's status in args->member_status. The node's text is the same; the member's update
  /// is a function of its own, kept out of line so that it is compiled as the plain entry is, and
  /// so computes the same bits. The text, and so the key, differs from the plain kernel's and
  /// never depends on how many members a call lists. For a GPU, one launch covers the members:
  /// they share the update box, given in the batch's own args (update_begin, update_end), and
  /// member m is the m-th run of b blocks along x, b the blocks of one member's row
  /// (cell_launch's grid x for that box), so the grid's x is b times args->n_members; each
  /// thread runs the cell of its member as the plain kernel would, its integrals added to that
  /// member's (member_status is not written: a GPU kernel has no status).
  void batch(bool on) noexcept { m_batch = on; }
  /// Whether the kernel is written as a batch.
  [[nodiscard]] bool is_batch() const noexcept { return m_batch; }

  /// Declares a domain integral `name`: a local sum the kernel text adds to (name += x), or, with
  /// Reduction::max, a local maximum the text offers values to (name.max(x)), e.g. the largest
  /// |u_new - u_old| of the cells; either reads as a double. A maximum is the same bits for any
  /// split of the cells (threads, ranks, slabs, GPU blocks); its value with no cell is -inf.
  /// Throws Error(usage) if restrict_outputs is in force and `name` is not among its integrals.
  void integral(std::string name, Reduction reduction = Reduction::sum);

  /// From now on, state outputs must be among `state_fields` and integrals among `integrals`;
  /// any other output is an Error(usage) naming it, at the moment it is declared.
  void restrict_outputs(std::vector<std::string> state_fields, std::vector<std::string> integrals);

  /// Appends a `// line` comment at the top of the text (part of the key). No newlines.
  void comment(std::string_view line);

  /// Appends text at namespace scope before the entry (helper functions, constant tables).
  void helpers(std::string_view text);

  /// Appends text to the body of the entry, after the accessors.
  void body(std::string_view text);

  /// The kernel: its text, its slot tables (state_in, state_out, statics, run-time extents,
  /// integrals, params, each in declaration order) and the map from its lines to those of the
  /// texts given to body(), for_each_cell() and helpers(), so that a compile error names the
  /// node's own line. Throws Error(usage) if neither a body nor a cell was written.
  [[nodiscard]] KernelSource finish() const;

  [[nodiscard]] const std::string& origin() const noexcept { return m_origin; }
  [[nodiscard]] const std::vector<ExtentDecl>& extents() const noexcept { return m_extents; }
  [[nodiscard]] const std::vector<BufferDecl>& buffers() const noexcept { return m_buffers; }
  [[nodiscard]] const std::vector<std::string>& integrals() const noexcept { return m_integrals; }
  /// The reduction of each integral, in the order of integrals().
  [[nodiscard]] const std::vector<Reduction>& integral_reductions() const noexcept {
    return m_integral_reductions;
  }
  /// The run-time params declared with param(), in slot order (values the kernel reads when it
  /// runs; not a node's params, its construction values).
  [[nodiscard]] const std::vector<ParamDecl>& run_time_params() const noexcept { return m_params; }
  /// Deprecated (uwjit 0.1; removed in the next release): run_time_params().
  [[deprecated("use run_time_params()")]] [[nodiscard]] const std::vector<ParamDecl>&
  params() const noexcept {
    return m_params;
  }
  /// What a caller passes in args->extents: the run-time extents' values, in slot order.
  [[nodiscard]] std::vector<uw_i64> runtime_extent_values() const;
  /// What a caller passes in args->params: the run-time params' values, in slot order.
  [[nodiscard]] std::vector<double> param_values() const;
  /// The declared buffer of `role` named `name`, or nullptr.
  [[nodiscard]] const BufferDecl* find(BufferRole role, std::string_view name) const;
  /// The interior shape of a declared buffer: the values of its axes' extents.
  [[nodiscard]] std::vector<std::int64_t> interior_shape(const BufferDecl& buffer) const;

private:
  struct Provided {
    std::string key;
    Dtype dtype;
    std::vector<std::int64_t> shape;
  };
  void declare_buffer(BufferRole role, std::string name, std::string accessor, Dtype dtype,
                      std::vector<Axis> axes);
  void claim(const std::string& identifier, std::string_view what);
  [[noreturn]] void fail(std::string_view message) const;
  [[nodiscard]] const ExtentDecl& extent_of(Extent extent) const;
  [[nodiscard]] std::string extent_text(const ExtentDecl& extent) const;
  [[nodiscard]] std::string buffer_text(const BufferDecl& buffer) const;
  [[nodiscard]] std::string checks_text(const BufferDecl& buffer) const;
  [[nodiscard]] std::string update_head() const;
  // The cell form's iteration (kernel_writer_cells.cpp): the text before and after the cell.
  [[nodiscard]] std::pair<std::string, std::string> cell_loops() const;
  [[nodiscard]] std::pair<std::string, std::string> cell_threads() const;
  [[nodiscard]] std::string gpu_batch_head() const;
  [[nodiscard]] std::string masked_form_text() const;
  // The cell form's accessor reaches (kernel_writer_cells.cpp): throws for one that is certain.
  [[nodiscard]] HaloReads judge_reads() const;

  std::string m_origin;
  std::vector<ExtentDecl> m_extents;
  std::vector<BufferDecl> m_buffers;
  std::vector<std::string> m_integrals;
  std::vector<Reduction> m_integral_reductions;
  std::vector<ParamDecl> m_params;
  std::vector<Provided> m_provided;
  std::optional<std::vector<std::string>> m_allowed_state;
  std::vector<std::string> m_allowed_integrals;
  std::set<std::string> m_identifiers;
  std::vector<std::string> m_comments;
  std::string m_helpers;
  std::string m_body;
  std::string m_cell; // the cell form's text
  CellLoop m_cell_loop;
  int m_runtime_extents = 0;
  bool m_update_box = false;
  bool m_checked = false;
  bool m_gpu = false;
  bool m_batch = false;
  int m_domain[3] = {-1, -1, -1};
};

} // namespace uwjit::codegen
