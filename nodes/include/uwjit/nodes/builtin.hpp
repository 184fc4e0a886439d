// BuiltinNode: what the built-in nodes add to runtime::Node: a physics check, default run
// length, output files and pictures (what their driver::NodeKind reads).
#pragma once

#include <uwjit/driver/check.hpp>
#include <uwjit/driver/figures.hpp>
#include <uwjit/driver/node_kind.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::nodes {

// The vocabulary of checks, param documentation and pictures is the driver's (every node kind
// has it); these names stay for the built-in nodes' code and their users.
using driver::Chart;
using driver::Curve;
using driver::Figures;
using driver::Measurement;
using driver::ParamDoc;
using driver::Slice;
using driver::Trace;
using driver::Verdict;

/// A built-in node: a runtime::Node with a physics check of its own results.
class BuiltinNode : public runtime::Node {
public:
  using Node::Node;

  /// One line: what the node simulates.
  [[nodiscard]] virtual std::string summary() const = 0;

  /// Steps a default run takes: enough for the check to be meaningful (e.g. to reach a steady
  /// state), derived from the params.
  [[nodiscard]] virtual std::int64_t default_steps() const = 0;

  /// Cell (or point, or lattice-site) updates per step, for throughput (MLUPS). Default: the
  /// number of domain cells.
  [[nodiscard]] virtual std::int64_t updates_per_step() const;

  /// Checks the physics of the node's current state in `simulation` (which holds this node) and
  /// of `trace`, its integrals as recorded (possibly only since a restore). `simulation` holds
  /// the whole domain (Simulation::gathered()) or one rank's slab (local_snapshot()): heat,
  /// pipe-flow and mlp measure over Snapshot::slab and add up over the ranks (collective then:
  /// every rank calls it, and gets the same verdict); fvm judges only a whole mesh. Thread-safe.
  [[nodiscard]] virtual Verdict check(const runtime::Snapshot& simulation,
                                      const Trace& trace) const = 0;

  /// The steps a run must have taken before check() can judge it (e.g. to reach the steady
  /// state it compares with); 0: any run. Default 0.
  [[nodiscard]] virtual std::int64_t steps_to_judge() const;

  /// check(), or, for a run shorter than steps_to_judge(), a verdict that says so
  /// (needs_steps) instead of failing it.
  [[nodiscard]] Verdict judge(const runtime::Snapshot& simulation, const Trace& trace) const;

  /// Deprecated (uwjit 0.1; removed in the next release): write_vtk, which every runtime::Node
  /// now has.
  [[deprecated("use write_vtk")]] std::vector<std::filesystem::path>
  write_output(const runtime::Snapshot& simulation, const std::filesystem::path& directory,
               std::string_view stem) const {
    return write_vtk(simulation, directory, stem);
  }

  /// The pictures of the node's current state in `simulation`: a mid-plane slice of each field
  /// and, where the check compares with a reference, a chart of the two. The default: a slice
  /// through the middle of the last axis of each f64 state field (one per component).
  [[nodiscard]] virtual Figures figures(const runtime::Snapshot& simulation) const;

  /// What a VTK file of this node records about its dataset: runtime::vtk_field_data.
  [[nodiscard]] std::vector<runtime::VtkFieldValue>
  field_data(const runtime::Snapshot& simulation) const;
};

} // namespace uwjit::nodes
