#include <uwjit/runtime/node_kernels.hpp>

#include "decomposition.hpp"
#include "kernel_binding.hpp"
#include "node_layout.hpp"

#include <algorithm>

namespace uwjit::runtime {

std::vector<NodeKernel> node_kernels(const Node& node, bool gpu) {
  return node_kernels(node, gpu, false);
}

std::vector<NodeKernel> node_kernels(const Node& node, bool gpu, bool checked) {
  const detail::Layout layout = detail::read_layout(node);
  if (!layout.declared_inputs.empty()) {
    detail::node_error(node, "reads fields of other nodes (NodeLayout::inputs): its kernels are "
                             "emitted by the simulation that holds those nodes");
  }
  const StaticData& whole = node.static_data();
  if (checked) {
    detail::Decomposition::check_shard_axes(node, layout, whole);
  }
  std::vector<NodeKernel> kernels;
  auto emitted = detail::emit(node, layout, whole, whole, checked, gpu);
  // What a Simulation checks the first step with (none in checked mode, none on a GPU).
  auto probes = checked || gpu ? std::vector<detail::Probe>()
                               : detail::emit_probes(node, layout, whole, whole, emitted);
  for (auto& stage : emitted) {
    kernels.push_back({std::move(stage.writer), std::move(stage.source)});
  }
  for (auto& probe : probes) {
    kernels[probe.stage].first_step_check = std::move(probe.checked.source);
  }
  return kernels;
}

std::vector<codegen::Dtype> halo_dtypes(const Node& node) {
  const detail::Layout layout = detail::read_layout(node);
  std::vector<codegen::Dtype> dtypes;
  for (const auto& f : layout.fields) {
    const auto halos = layout.halos(f);
    if (std::any_of(halos.begin(), halos.end(), [](int h) { return h > 0; }) &&
        std::find(dtypes.begin(), dtypes.end(), f.dtype) == dtypes.end()) {
      dtypes.push_back(f.dtype);
    }
  }
  return dtypes;
}

} // namespace uwjit::runtime
