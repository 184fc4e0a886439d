// BuiltinNode: what the built-in nodes add to runtime::Node: a physics check, default run
// length, and output files.
#pragma once

#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
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

  /// Adds a measurement; passed = value <= limit (a NaN fails).
  void add(std::string name, std::string metric, double value, double limit);
};

/// The domain integrals of one node, step by step, as a run recorded them (8 bytes per
/// integral and step, plus the step count).
struct Trace {
  std::vector<std::string> names;  ///< the node's domain_integral_fields()
  std::vector<std::int64_t> steps; ///< the step count after each recorded step
  std::vector<double> values;      ///< record r, integral i at [r * names.size() + i]

  /// Appends the node's integrals after the simulation's latest step.
  void record(const runtime::Simulation& simulation, std::size_t node_index);
  /// The values of integral `name`, one per record (Error(usage) if it is not one).
  [[nodiscard]] std::vector<double> series(std::string_view name) const;
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
  [[nodiscard]] virtual Verdict check(const runtime::Simulation& simulation,
                                      const Trace& trace) const = 0;

  /// Writes the node's current fields to VTK files in `directory` (created if missing) and
  /// returns their paths. Throws Error(io).
  virtual std::vector<std::filesystem::path>
  write_output(const runtime::Simulation& simulation,
               const std::filesystem::path& directory) const = 0;
};

} // namespace uwjit::nodes
