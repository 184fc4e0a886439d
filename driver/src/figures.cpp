#include <uwjit/driver/figures.hpp>

#include <uwjit/common/format.hpp>

#include <algorithm>
#include <string_view>

namespace uwjit::driver {

Figures default_figures(const runtime::Node& node, const runtime::Snapshot& snapshot) {
  Figures figures;
  const auto extents = node.domain();
  if (extents.size() < 2) {
    return figures;
  }
  static constexpr std::string_view k_axes[] = {"x", "y", "z"};
  const std::size_t axes = extents.size();
  for (const auto& state : node.layout().fields) {
    if (state.dtype != runtime::Dtype::f64) {
      continue;
    }
    // The snapshot's slab of the field: each rank fills the plane's cells its slab holds, and
    // the ranks' planes are joined (nothing else is gathered).
    const runtime::Field& field = snapshot.field(node.name(), state.name);
    const runtime::Slab& slab = snapshot.slab(node.name());
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
      const auto holds = [&](std::size_t axis, std::int64_t cell) {
        return cell >= slab.offset[axis] && cell < slab.offset[axis] + slab.extent[axis];
      };
      slice.values.assign(static_cast<std::size_t>(width * height), 0.0);
      if (axes <= 2 || holds(2, middle)) {
        if (axes > 2) {
          index[lead + 2] = middle - slab.offset[2];
        }
        for (std::int64_t y = 0; y < height; ++y) {
          for (std::int64_t x = 0; x < width; ++x) {
            if (!holds(0, x) || !holds(1, y)) {
              continue;
            }
            index[lead] = x - slab.offset[0];
            index[lead + 1] = y - slab.offset[1];
            slice.values[static_cast<std::size_t>(y * width + x)] =
                static_cast<const double*>(field.data())[field.offset(index)];
          }
        }
      }
      snapshot.total_over_ranks(slice.values);
      figures.slices.push_back(std::move(slice));
    }
  }
  return figures;
}

} // namespace uwjit::driver
