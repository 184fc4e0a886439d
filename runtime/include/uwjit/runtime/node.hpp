// Node: one simulation component: its parameters, state, static data and the kernel of a step.
#pragma once

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/static_data.hpp>
#include <uwjit/runtime/value.hpp>
#include <uwjit/runtime/vtk_image.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

class Snapshot;

/// A state field: a name (a C identifier), an element type, and the extents of its leading
/// component axes (e.g. {19} for the D3Q19 populations; empty for a scalar field). The domain
/// axes follow, padded by the node's halo widths: a field's shape is components + domain.
struct StateField {
  std::string name;
  Dtype dtype = Dtype::f64;
  std::vector<std::int64_t> components = {};
  /// Which halos the node's kernels read, one mask per component (components flattened in
  /// row-major order; a scalar field has one): bit d set where some stage reads the component
  /// across domain axis d, in a face halo of axis d or a corner through it (a corner needs the
  /// bits of all its axes). Empty: every component reads every halo. A step fills only these
  /// halos, and a sharded rank sends only these components' layers to its neighbours: D3Q19's
  /// population q streams only along the axes where its velocity is not 0, so pipe-flow fills
  /// (and exchanges) 10 of its 19 populations' halos along x, not 19. Checked mode fills every
  /// halo, so a declaration that leaves out a halo the kernel reads shows as a run whose results
  /// differ from the checked run's.
  std::vector<std::uint32_t> halo_axes = {};
};

/// One domain axis of a node: its interior cells, its halo, how the halo is filled, whether the
/// extent is compiled into the kernel, and the kernel's name for it.
struct DomainAxis {
  std::int64_t cells = 1; ///< interior cells (>= 1)
  int halo = 0;           ///< halo width: cells on each side (>= 0)
  Boundary boundary =
      Boundary::edge; ///< how the halo is filled (periodic: wider than cells is refused)
  /// Compiled in (constant loop bounds: faster, one kernel per value) or read when the kernel
  /// runs (one kernel for all values). A sharded axis is always run-time.
  codegen::ExtentMode extent = codegen::ExtentMode::compiled;
  std::string name = {}; ///< the kernel's name for the extent (a C identifier); "": nx, ny, nz
};

/// A state field of another node that this node's kernels read (coupling). The runtime binds it
/// as a state input named `as` (default: `field`), over the owner's layout of that field (its
/// components, then the domain with the owner's halos), with its halos filled as the owner's
/// boundaries say (sharded: exchanged with the neighbouring ranks like the owner's own state).
///
/// Which values a stage reads: the owner's field as it is when that stage runs. A Simulation
/// steps its nodes in order, each node all its stages, so a node reads a node before it after
/// that node's step, and a node after it (or itself in a cycle through others) as it was
/// before this step. The reading node and the owner must have the same domain cells (and so the
/// same decomposition): Error(usage) naming both otherwise, or if the owner or its field does
/// not exist, or `as` names one of the reader's own state fields.
struct NodeInput {
  std::string node;    ///< the owning node's name
  std::string field;   ///< the owner's state field
  std::string as = {}; ///< the kernel's name for it; "": `field`
};

/// Everything a node declares about its data, in one value: the domain, the state fields, the
/// domain integrals, the time step, the inputs from other nodes and the stages of a step.
struct NodeLayout {
  std::vector<DomainAxis> axes;       ///< the domain axes, 1 to 3
  std::vector<StateField> fields;     ///< the state fields, in the kernel's table order (>= 1)
  std::vector<std::string> integrals; ///< the domain integrals the kernel computes (partial sums
                                      ///< or maxima over the cells it updates, as its writer
                                      ///< declares each; shards are combined alike)
  std::optional<double> dt = {};      ///< args->dt (see check_dt); unset: the param "dt" if
                                      ///< present, else 1.0
  std::vector<NodeInput> inputs = {}; ///< other nodes' state fields the kernels read
  int stages = 1; ///< kernels per step (>= 1), emitted by emit_stage(writer, stage)
  /// Whether initial_state fills the slab its State holds, reading State::slab() for where it
  /// lies: sharded, each rank is then handed its own slab and nothing of the whole domain is
  /// allocated. False (nodes written before slabs): sharded, every rank has the node fill the
  /// whole domain (State::slab() is the whole domain) and keeps its slab, holding a whole copy
  /// of the state while it does.
  bool slab_initial_state = false;

  /// One axis per entry of `cells` (named nx, ny, nz), each with the same halo, boundary and
  /// extent mode: the common case of a grid.
  [[nodiscard]] static std::vector<DomainAxis>
  grid(const std::vector<std::int64_t>& cells, int halo = 0, Boundary boundary = Boundary::edge,
       codegen::ExtentMode extent = codegen::ExtentMode::compiled);
};

/// The rule for a time step (NodeLayout::dt, or the param "dt" that stands in for it): a finite
/// number > 0. Throws Error(usage) `WHAT: expected a finite number > 0, got VALUE` otherwise; a
/// Simulation checks every node's (`node "NAME": dt: ...`). Thread-safe.
void check_dt(double dt, std::string_view what);

/// Which cells of the domain a State holds, per domain axis: the global index of its first cell
/// (offset), how many (extent), and the whole domain's cells (global). Serially, and for a node
/// that fills the whole domain, offset is 0 and extent is global.
struct Slab {
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> extent;
  std::vector<std::int64_t> global;
  /// The slab of the whole domain of `cells`.
  [[nodiscard]] static Slab whole(const std::vector<std::int64_t>& cells);
  friend bool operator==(const Slab&, const Slab&) = default;
};

/// The state of one node: a Field per state field, by name, over the cells of slab(). Handed to
/// Node::initial_state. A field's trailing axes are the domain's, with the slab's extents; its
/// index i on domain axis d is the global cell slab().offset[d] + i.
class State {
public:
  State(std::vector<Field*> fields, Slab slab)
      : m_fields(std::move(fields)), m_slab(std::move(slab)) {}
  /// The field named `name`; throws Error(usage) naming it if there is none.
  [[nodiscard]] Field& operator[](std::string_view name) const;
  [[nodiscard]] const std::vector<Field*>& fields() const noexcept { return m_fields; }
  /// The cells the fields hold.
  [[nodiscard]] const Slab& slab() const noexcept { return m_slab; }

private:
  std::vector<Field*> m_fields;
  Slab m_slab;
};

/// A simulation node. A subclass declares its state, its static data and how one step updates
/// the state (emit_update, the text of one kernel, or emit_stage, one kernel per stage); the
/// runtime allocates the state, fills the halos, binds the buffers and calls the kernels.
///
/// The static data is built once, by build_static_data(), on the first call of static_data(),
/// and kept by this base class: static_data() returns it by reference and cannot be overridden,
/// so nothing rebuilds it per call. Everything build_static_data() needs must be in params(),
/// which is what a checkpoint stores: a restored node rebuilds its static data from its params.
///
/// Nodes are immutable once constructed; the const member functions are thread-safe.
class Node {
public:
  /// `type` names the kind of node (e.g. "heat", what a checkpoint's factory is asked for);
  /// `name` names this instance (unique within a Simulation); both must be non-empty
  /// (Error(usage)). `node_params` are the node's construction values, everything needed to
  /// rebuild it (what params() returns and a checkpoint stores); not a kernel's run-time params
  /// (KernelWriter::param), which a node declares from them in emit_update.
  Node(std::string type, std::string name, Params node_params);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  [[nodiscard]] const std::string& type() const noexcept { return m_type; }
  [[nodiscard]] const std::string& name() const noexcept { return m_name; }
  /// The node params: everything needed to rebuild this node (checkpointed).
  [[nodiscard]] const Params& params() const noexcept { return m_params; }

  /// The node's domain axes, state fields, integrals and time step. Read once by a Simulation
  /// (which checks it: Error(usage) naming the node and what is wrong).
  [[nodiscard]] virtual NodeLayout layout() const = 0;

  /// The cells of each domain axis of layout().
  [[nodiscard]] std::vector<std::int64_t> domain() const;

  /// The time step a kernel gets as args->dt: layout().dt, else the param "dt", else 1.0 (a
  /// Simulation refuses one that is not finite and > 0: check_dt).
  [[nodiscard]] double dt() const;

  /// Fills the interior of every state field (the halos are filled by the runtime).
  virtual void initial_state(State& state) const = 0;

  /// Writes the kernel of one step. The writer arrives with the domain extents declared (named
  /// and compiled in or not as layout() says), every state field declared as a state input over
  /// its halo-padded layout (then every input of layout().inputs, under its `as` name), every
  /// static array of the bound static data provided, and the outputs restricted to the state
  /// fields and the layout's integrals (the runtime adds the static_data_hash in a comment
  /// afterwards, with the static axes declared over run-time domain extents recorded as following
  /// the domain, not by their values). The node declares its
  /// outputs (writer.state_out(field), writer.integral(name)), the static arrays it reads, and the
  /// body. The kernel must write every interior cell of each state field it outputs; fields it does
  /// not output keep their values. A kernel that declares writer.update_box() must instead write
  /// exactly the cells of the box it is given (nx_begin..nx_end per axis) and sum its integrals
  /// over them: a sharded runtime in ExchangeMode::overlap then calls it on several boxes per step.
  /// It reads shard information from args->shard_offset/shard_extent/global_extent and must not
  /// depend on their values being serial ones (a sharded runtime will pass others). Take static
  /// shapes from writer.provided_shape(key), not from static_data(): a Simulation may rebind other
  /// arrays.
  ///
  /// The default throws Error(usage): a node overrides this or, for several stages,
  /// emit_stage.
  virtual void emit_update(codegen::KernelWriter& writer) const;

  /// Writes the kernel of stage `stage` (0 to layout().stages - 1) of a step; each stage is a
  /// kernel of its own (its own key; all are requested when the Simulation is built). The writer
  /// arrives as above; a node with several stages also gets a comment naming the stage. The
  /// runtime calls the stages in order; each reads the current state (with halos filled) and the
  /// inputs, and the fields it writes become current when it returns, their halos filled again
  /// before the next stage: so a two-stage scheme keeps its intermediate value in a state field
  /// of its own (e.g. a predictor field written by stage 0 and read by stage 1). Each declared
  /// domain integral is computed by exactly one stage (Error(usage) otherwise); its value is that
  /// stage's sum. A failing stage ends the step: fields written by earlier stages stay written.
  /// The default calls emit_update(writer) for stage 0 (the single-kernel form).
  virtual void emit_stage(codegen::KernelWriter& writer, int stage) const;

  /// The static data, built once by build_static_data() and kept; returned by reference.
  /// Throws what build_static_data() throws (and tries again on the next call).
  [[nodiscard]] const StaticData& static_data() const;

  /// static_data_hash(static_data()).
  [[nodiscard]] std::string static_data_hash() const;

  /// How this node's kernel is compiled (fp contraction, fast-math, -O level, defines), over the
  /// engine's options; part of the kernel's key. Default: none (the engine's options).
  [[nodiscard]] virtual codegen::KernelOptions kernel_options() const;

  /// This node's state in `snapshot` (a snapshot that holds this node) as an ImageData: the
  /// cells of the snapshot's slab (Snapshot::slab: the whole domain for a gathered snapshot,
  /// one rank's slab for Simulation::local_snapshot), with geometry.first its offset, so that
  /// the slabs of all ranks are the pieces of one image. The default: every state field as
  /// cell data (the domain axes as x, y, z; a field's component axes as the array's components,
  /// at most 9; its dtype kept), with vtk_field_data(*this, snapshot) as the FieldData. A grid
  /// node that writes other arrays (derived quantities, static data) overrides this; a node
  /// whose cells are not a grid (a mesh) returns nullopt and overrides write_vtk. Sharded,
  /// Simulation::write_vtk has every rank write this image of its own slab (nothing gathered).
  /// Throws Error(usage) for a field VTK cannot hold. Thread-safe.
  [[nodiscard]] virtual std::optional<VtkImage> vtk_image(const Snapshot& snapshot) const;

  /// Writes this node's state in `snapshot` as VTK XML files in `directory` (which must exist),
  /// named `stem` plus the format's suffix, and returns their paths. The default writes
  /// vtk_image(snapshot) as one ImageData file, STEM.vti (Error(usage) if it is nullopt). A node
  /// whose cells are not a grid overrides it. Writes each file atomically (a temporary name,
  /// then a rename; a symlink at the name is replaced, never followed). Throws Error(io) for a
  /// file that cannot be written. Thread-safe. Simulation::write_vtk calls it for every node
  /// serially, and sharded for a node without an image (its state gathered on rank 0).
  virtual std::vector<std::filesystem::path> write_vtk(const Snapshot& snapshot,
                                                       const std::filesystem::path& directory,
                                                       std::string_view stem) const;

protected:
  /// Builds the static data from params(); called once, by static_data(). Default: empty.
  [[nodiscard]] virtual StaticData build_static_data() const;

private:
  std::string m_type;
  std::string m_name;
  Params m_params;
  mutable std::once_flag m_static_once;
  mutable std::optional<StaticData> m_static;
};

} // namespace uwjit::runtime
