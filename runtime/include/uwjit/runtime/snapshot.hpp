// Snapshot: a serial copy of a simulation's whole state at one step, to check, write or keep.
#pragma once

#include <uwjit/engine/kernel.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::comm {
class Collectives;
} // namespace uwjit::comm

namespace uwjit::runtime {

/// One node's kernel request: which node, its source, and what the engine did (key, tier,
/// timings).
struct KernelReport {
  std::string node;
  engine::KernelInfo info;
  std::shared_ptr<const codegen::KernelSource> source;
  int stage = 0; ///< which stage of the node's step (0 for a node of one stage)
  /// The checked kernel (KernelWriter::checked) that runs this kernel's first step in place of
  /// it, because its text does not show that its reads stay within their halos
  /// (KernelWriter::halo_reads() is unknown); nullopt when the text shows it, in checked mode
  /// (every step is checked) and on a CUDA device. See SimulationOptions::checked.
  std::optional<engine::KernelInfo> first_step_check;
};

/// The state of a simulation at one step: each node's state fields (interiors; halos zero) over
/// its slab, the integrals of the last step, the static data and the kernel reports.
/// Simulation::gathered() copies the whole domain (under MPI, gathered from every rank);
/// Simulation::local_snapshot() copies one rank's slab, nothing gathered. It cannot step; it can
/// be checked, written (write_vtk) and checkpointed (a whole one). Copies share the fields,
/// which never change. The const member functions are thread-safe.
class Snapshot {
public:
  /// One node's part of a snapshot.
  struct NodeData {
    std::shared_ptr<const Node> node;
    std::vector<std::shared_ptr<const Field>> fields; ///< in the node's layout order
    std::vector<double> integrals;                    ///< in the layout's integrals order
    StaticData bound;                                 ///< the static data its kernel read
    KernelReport report;                              ///< its (first stage's) kernel
    /// Keys of static arrays that were rebound (Simulation::rebound_statics), sorted.
    std::vector<std::string> rebound = {};
    /// Every stage's kernel, in stage order; empty: `report` alone.
    std::vector<KernelReport> stage_reports = {};
    /// The cells `fields` hold; empty (the default): the whole domain.
    Slab slab = {};
  };

  /// Made by Simulation::gathered() and local_snapshot(). Error(usage) if two nodes share a
  /// name or a slab is not one of its node's domain. `ranks`: the ranks whose slabs make the
  /// whole (local_snapshot() of a sharded simulation; it must outlive the snapshot), over which
  /// sum_over_ranks and max_over_ranks reduce; null for a snapshot that holds the whole domain.
  Snapshot(std::int64_t steps, std::vector<NodeData> nodes, comm::Collectives* ranks = nullptr);

  /// Steps taken since the initial state.
  [[nodiscard]] std::int64_t steps_taken() const noexcept { return m_steps; }

  [[nodiscard]] const std::vector<std::shared_ptr<const Node>>& nodes() const noexcept {
    return m_node_list;
  }
  /// The node named `name`; Error(usage) if there is none.
  [[nodiscard]] const Node& node(std::string_view name) const;

  /// State field `field` of node `node` over its slab (the whole domain for gathered());
  /// Error(usage) naming what is missing. Its index i on domain axis d is the global cell
  /// slab(node).offset[d] + i.
  [[nodiscard]] const Field& field(std::string_view node, std::string_view field) const;

  /// The cells of node `node` this snapshot holds: Slab::whole of its domain for gathered(),
  /// the rank's slab for local_snapshot(). Error(usage) if there is no such node.
  [[nodiscard]] const Slab& slab(std::string_view node) const;

  /// Adds up each of `values` (this rank's partial sums over its slab) over the ranks, in place,
  /// so that code that sums over slab(node) gets the whole domain's sums. For a local_snapshot()
  /// of a sharded simulation: collective (every rank calls it in the same order, with as many
  /// values), the partials added in rank order on every rank, so that every rank gets the same
  /// bits; for a snapshot of the whole domain: nothing to add.
  void sum_over_ranks(std::span<double> values) const;

  /// The largest of `value` over the ranks, as sum_over_ranks (NaN if any rank's is NaN).
  [[nodiscard]] double max_over_ranks(double value) const;

  /// Adds up `values` over the ranks as sum_over_ranks does, with one all-reduce: its memory is
  /// that of `values`, not `values` times the ranks, for a plane or a profile; the rounding of a
  /// sum of several non-zero partials may differ from rank to rank, so that it serves pictures,
  /// not verdicts. Where each value is non-zero on one rank alone (a slice of the domain that
  /// each rank fills where its slab lies, 0 elsewhere), the result is that value, exactly.
  void total_over_ranks(std::span<double> values) const;

  /// The node's domain integrals of the last step (summed over the ranks), in layout order.
  [[nodiscard]] std::span<const double> integrals(std::string_view node) const;
  /// The same, by node index (the order of nodes()).
  [[nodiscard]] std::span<const double> integrals(std::size_t node_index) const;

  /// One report per kernel, in node order and, within a node, stage order: the kernels the
  /// nodes used, as Simulation::kernel_reports() gave them.
  [[nodiscard]] const std::vector<KernelReport>& kernel_reports() const noexcept {
    return m_kernel_reports;
  }

  /// Deprecated (uwjit 0.1; removed in the next release): one report per node, its first
  /// stage's; kernel_reports() has every kernel.
  [[deprecated("use kernel_reports()")]] [[nodiscard]] const std::vector<KernelReport>&
  kernels() const noexcept {
    return m_reports;
  }

  /// The static data the node's kernel read: serially the data bound at the time (rebound
  /// arrays included), sharded the node's own whole static data.
  [[nodiscard]] const StaticData& bound_static_data(std::string_view node) const;

  /// Writes every node's state as VTK files in `directory` (created if missing): each node's
  /// Node::write_vtk, named after the node (NODE.vti), or STEM_NODE when `stem` is not empty;
  /// returns their paths in node order. Throws Error(io) naming the directory or the file that
  /// cannot be written. Serial: Simulation::write_vtk is the collective form.
  std::vector<std::filesystem::path> write_vtk(const std::filesystem::path& directory,
                                               std::string_view stem = {}) const;

  /// Writes the checkpoint file of simulation.hpp (atomically: a temporary in the same
  /// directory, fsync, rename; a symlink at `path` is never followed). Throws Error(io), and
  /// Error(usage) for a snapshot of a slab (local_snapshot()).
  void checkpoint(const std::filesystem::path& path) const;

private:
  [[nodiscard]] const NodeData& data_of(std::string_view name) const;

  std::int64_t m_steps = 0;
  std::vector<NodeData> m_nodes;
  comm::Collectives* m_ranks = nullptr;
  std::vector<std::shared_ptr<const Node>> m_node_list;
  std::vector<KernelReport> m_reports; // one per node
  std::vector<KernelReport> m_kernel_reports;
};

} // namespace uwjit::runtime
