// BuiltinNode: what the built-in nodes add to runtime::Node: a physics check, default run
// length, and output files.
#pragma once

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

/// One quantitative test of a run: `value` must not exceed `limit`.
struct Measurement {
  std::string name;   ///< e.g. "heat conservation"
  std::string metric; ///< what value is, e.g. "max |H(t) - H(0)| / |H(0)|"
  double value = 0;
  double limit = 0;
  bool passed = false;
};

/// The outcome of a physics check: every measurement, and notes on what could not be checked
/// (e.g. "mode decay: not checked, the conductivity is not uniform").
struct Verdict {
  bool passed = true;
  std::vector<Measurement> measurements;
  std::vector<std::string> notes;
  /// Non-zero when the run was too short for the check to judge it (e.g. a flow that has not
  /// developed yet): the steps it needs. Such a verdict has no measurements and passes.
  std::int64_t needs_steps = 0;

  /// Whether the check judged the run (needs_steps == 0).
  [[nodiscard]] bool judged() const noexcept { return needs_steps == 0; }

  /// Adds a measurement; passed = value <= limit (a NaN fails).
  void add(std::string name, std::string metric, double value, double limit);
};

/// The domain integrals of one node, step by step, as a run recorded them (8 bytes per
/// integral and step, plus the step count).
struct Trace {
  std::vector<std::string> names;  ///< the node's layout().integrals
  std::vector<std::int64_t> steps; ///< the step count after each recorded step
  std::vector<double> values;      ///< record r, integral i at [r * names.size() + i]

  /// Appends the node's integrals after the simulation's latest step.
  void record(const runtime::Simulation& simulation, std::size_t node_index);
  /// The values of integral `name`, one per record (Error(usage) if it is not one).
  [[nodiscard]] std::vector<double> series(std::string_view name) const;
};

/// What one param means, for people (`uwjit run NODE --set help`).
struct ParamDoc {
  std::string_view name;
  std::string_view meaning;
  std::string_view unit;  ///< e.g. "cells", "lattice units"; "" for a pure number or a choice
  std::string_view range; ///< the accepted values, e.g. "[3, 16384]", "insulating, periodic"
};

/// A picture of one scalar: `width` × `height` values, row-major with x fastest and row 0 at the
/// bottom; NaN where there is nothing to show (e.g. inside a wall).
struct Slice {
  std::string name;             ///< for the file name, e.g. "u", "velocity_x-section"
  std::string field;            ///< e.g. "u", "velocity_x"
  std::string where;            ///< e.g. "z = 16 (mid-plane)"
  std::string x_label, y_label; ///< e.g. "x (cells)"
  std::int64_t width = 0, height = 0;
  std::vector<double> values;
  /// The raster's extent in the axes' units; x0 == x1: cells, 0 to width and 0 to height.
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

/// One line or set of points of a Chart.
struct Curve {
  std::string label;
  std::vector<double> x, y;
  bool points = false; ///< markers (measured), else a line (reference)
};

/// A plot of a quantity a node's check tests, measured against its reference.
struct Chart {
  std::string name;  ///< for the file name, e.g. "profile"
  std::string title; ///< e.g. "axial velocity across the pipe"
  std::string x_label, y_label;
  std::vector<Curve> curves;
};

/// What `uwjit run --plot` draws for a node.
struct Figures {
  std::vector<Slice> slices;
  std::vector<Chart> charts;
};

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
  /// of `trace`, its integrals as recorded (possibly only since a restore). Thread-safe.
  [[nodiscard]] virtual Verdict check(const runtime::Snapshot& simulation,
                                      const Trace& trace) const = 0;

  /// The steps a run must have taken before check() can judge it (e.g. to reach the steady
  /// state it compares with); 0: any run. Default 0.
  [[nodiscard]] virtual std::int64_t steps_to_judge() const;

  /// check(), or, for a run shorter than steps_to_judge(), a verdict that says so
  /// (needs_steps) instead of failing it.
  [[nodiscard]] Verdict judge(const runtime::Snapshot& simulation, const Trace& trace) const;

  /// Writes the node's current fields to VTK files in `directory` (created if missing), named
  /// `stem` plus the format's suffix (.vti, .vtu), with field_data(simulation) as their
  /// FieldData, and returns their paths. Throws Error(io).
  virtual std::vector<std::filesystem::path> write_output(const runtime::Snapshot& simulation,
                                                          const std::filesystem::path& directory,
                                                          std::string_view stem) const = 0;

  /// The pictures of the node's current state in `simulation`: a mid-plane slice of each field
  /// and, where the check compares with a reference, a chart of the two. The default: a slice
  /// through the middle of the last axis of each f64 state field (one per component).
  [[nodiscard]] virtual Figures figures(const runtime::Snapshot& simulation) const;

  /// What a VTK file of this node records about its dataset: step, time (step × dt), dt, the
  /// node's type and name, its kernel's key, and each param as "param_NAME".
  [[nodiscard]] std::vector<runtime::VtkFieldValue>
  field_data(const runtime::Snapshot& simulation) const;
};

} // namespace uwjit::nodes
