#include <uwjit/nodes/builtin.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cmath>

namespace uwjit::nodes {

void Verdict::add(std::string name, std::string metric, double value, double limit) {
  const bool ok = value <= limit; // false for NaN
  measurements.push_back({std::move(name), std::move(metric), value, limit, ok});
  passed = passed && ok;
}

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

std::int64_t BuiltinNode::updates_per_step() const {
  std::int64_t cells = 1;
  for (const std::int64_t n : domain()) {
    cells *= n;
  }
  return cells;
}

Figures BuiltinNode::figures(const runtime::Snapshot& simulation) const {
  Figures figures;
  const auto extents = domain();
  if (extents.size() < 2) {
    return figures;
  }
  static constexpr std::string_view k_axes[] = {"x", "y", "z"};
  const std::size_t axes = extents.size();
  for (const auto& state : layout().fields) {
    if (state.dtype != runtime::Dtype::f64) {
      continue;
    }
    const runtime::Field& field = simulation.field(name(), state.name);
    std::int64_t components = 1;
    for (const std::int64_t c : state.components) {
      components *= c;
    }
    const std::size_t lead = state.components.size();
    std::vector<std::int64_t> index(lead + axes, 0);
    const std::int64_t width = extents[0];
    const std::int64_t height = extents[1];
    const std::int64_t middle = axes > 2 ? extents[2] / 2 : 0;
    for (std::int64_t c = 0; c < std::min<std::int64_t>(components, 3); ++c) {
      Slice slice;
      slice.field = components == 1 ? state.name : format("{}[{}]", state.name, c);
      slice.name = components == 1 ? state.name : format("{}{}", state.name, c);
      slice.where = axes > 2 ? format("z = {} (mid-plane)", middle) : "";
      slice.x_label = std::string(k_axes[0]) + " (cells)";
      slice.y_label = std::string(k_axes[1]) + " (cells)";
      slice.width = width;
      slice.height = height;
      std::int64_t rest = c; // the component index, row-major over the leading axes
      for (std::size_t d = lead; d-- > 0;) {
        index[d] = rest % state.components[d];
        rest /= state.components[d];
      }
      if (axes > 2) {
        index[lead + 2] = middle;
      }
      for (std::int64_t y = 0; y < height; ++y) {
        for (std::int64_t x = 0; x < width; ++x) {
          index[lead] = x;
          index[lead + 1] = y;
          slice.values.push_back(static_cast<const double*>(field.data())[field.offset(index)]);
        }
      }
      figures.slices.push_back(std::move(slice));
    }
  }
  return figures;
}

std::vector<runtime::VtkFieldValue>
BuiltinNode::field_data(const runtime::Snapshot& simulation) const {
  const std::int64_t step = simulation.steps_taken();
  std::vector<runtime::VtkFieldValue> values = {
      {"step", step},        {"time", static_cast<double>(step) * dt()},
      {"dt", dt()},          {"node_type", type()},
      {"node_name", name()},
  };
  for (const auto& report : simulation.kernels()) {
    if (report.node == name()) {
      values.push_back({"kernel_key", report.info.key});
    }
  }
  for (const auto& [key, value] : params().values()) {
    const auto& v = value.variant();
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      values.push_back({"param_" + key, *i});
    } else if (const auto* d = std::get_if<double>(&v)) {
      values.push_back({"param_" + key, *d});
    } else if (const auto* text = std::get_if<std::string>(&v)) {
      values.push_back({"param_" + key, *text});
    } else {
      values.push_back({"param_" + key, value.text()});
    }
  }
  return values;
}

} // namespace uwjit::nodes
