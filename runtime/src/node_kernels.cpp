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
  for (auto& stage : detail::emit(node, layout, whole, whole, checked, gpu)) {
    kernels.push_back({std::move(stage.writer), std::move(stage.source)});
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
