#include <uwjit/driver/check.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>

namespace uwjit::driver {

void Verdict::add(std::string name, std::string metric, double value, double limit) {
  const bool ok = value <= limit; // false for NaN
  measurements.push_back({std::move(name), std::move(metric), value, limit, ok});
  passed = passed && ok;
}

void Trace::record(const runtime::Simulation& simulation, std::size_t node_index) {
  if (steps.empty()) {
    names = simulation.nodes().at(node_index)->layout().integrals;
  }
  const auto now = simulation.integrals(node_index);
  steps.push_back(simulation.steps_taken());
  values.insert(values.end(), now.begin(), now.end());
}

std::vector<double> Trace::series(std::string_view name) const {
  const auto at = std::find(names.begin(), names.end(), name);
  if (at == names.end()) {
    if (steps.empty()) {
      return {}; // nothing recorded yet, so nothing known of the names either
    }
    throw Error(ErrorKind::usage, format("trace has no integral \"{}\"", name));
  }
  const auto i = static_cast<std::size_t>(at - names.begin());
  std::vector<double> out;
  out.reserve(steps.size());
  for (std::size_t r = 0; r < steps.size(); ++r) {
    out.push_back(values[r * names.size() + i]);
  }
  return out;
}

} // namespace uwjit::driver
