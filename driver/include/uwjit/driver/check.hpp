// What a run of a node is checked against: measurements and the verdict a node kind's check
// gives, and the trace of integrals it judges from.
#pragma once

#include <uwjit/runtime/simulation.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::driver {

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
  /// Why the run was not judged at all, e.g. "node kind \"advect\" has no physics check"; ""
  /// when it was judged or needs_steps says why not. Such a verdict passes.
  std::string not_judged = {};

  /// Whether the check judged the run (needs_steps == 0 and not_judged is empty).
  [[nodiscard]] bool judged() const noexcept { return needs_steps == 0 && not_judged.empty(); }

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

} // namespace uwjit::driver
