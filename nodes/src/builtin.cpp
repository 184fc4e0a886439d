#include <uwjit/nodes/builtin.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cmath>

namespace uwjit::nodes {

std::int64_t BuiltinNode::steps_to_judge() const {
  return 0;
}

Verdict BuiltinNode::judge(const runtime::Snapshot& simulation, const Trace& trace) const {
  const std::int64_t needed = steps_to_judge();
  if (simulation.steps_taken() < needed) {
    Verdict verdict;
    verdict.needs_steps = needed;
    return verdict;
  }
  return check(simulation, trace);
}

std::int64_t BuiltinNode::updates_per_step() const {
  std::int64_t cells = 1;
  for (const std::int64_t n : domain()) {
    cells *= n;
  }
  return cells;
}

Figures BuiltinNode::figures(const runtime::Snapshot& simulation) const {
  return driver::default_figures(*this, simulation);
}

std::vector<runtime::VtkFieldValue>
BuiltinNode::field_data(const runtime::Snapshot& simulation) const {
  return runtime::vtk_field_data(*this, simulation);
}

} // namespace uwjit::nodes
