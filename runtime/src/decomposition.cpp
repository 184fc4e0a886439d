#include "decomposition.hpp"

#include "face_fill.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

namespace uwjit::runtime::detail {

ShardInfo serial_shard(const Layout& layout) {
  ShardInfo info;
  const std::size_t axes = layout.domain.size();
  info.grid.assign(axes, 1);
  info.coords.assign(axes, 0);
  info.offset.assign(axes, 0);
  info.extent = layout.domain;
  info.global = layout.domain;
  return info;
}

std::vector<int> balanced_grid(int ranks, std::size_t axes) {
  std::vector<int> best;
  std::vector<int> current;
  std::function<void(int, int)> search = [&](int remaining, int cap) {
    if (current.size() + 1 == axes) {
      if (remaining <= cap) {
        current.push_back(remaining);
        if (best.empty() || current.front() - current.back() < best.front() - best.back()) {
          best = current;
        }
        current.pop_back();
      }
      return;
    }
    for (int d = std::min(cap, remaining); d >= 1; --d) {
      if (remaining % d == 0) {
        current.push_back(d);
        search(remaining / d, d);
        current.pop_back();
      }
    }
  };
  search(ranks, ranks);
  return best;
}

std::string grid_text(const std::vector<int>& grid) {
  std::string out;
  for (const int n : grid) {
    out += (out.empty() ? "" : "x") + std::to_string(n);
  }
  return out;
}

Decomposition Decomposition::make(const SimulationOptions& options) {
  Decomposition out;
  out.comm = options.comm;
  out.axes = options.shard_axes.empty() ? std::vector<int>{0} : options.shard_axes;
  if (out.axes.size() > 3) {
    throw Error(ErrorKind::usage, format("simulation: {} shard axes (at most 3)", out.axes.size()));
  }
  for (std::size_t i = 0; i < out.axes.size(); ++i) {
    if (out.axes[i] < 0 || out.axes[i] >= UWJIT_MAX_AXES) {
      throw Error(ErrorKind::usage,
                  format("simulation: shard axis {} is not a domain axis (0 to {})", out.axes[i],
                         UWJIT_MAX_AXES - 1));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (out.axes[j] == out.axes[i]) {
        throw Error(ErrorKind::usage,
                    format("simulation: shard axis {} is given twice", out.axes[i]));
      }
    }
  }
  const int ranks = out.comm->size();
  out.grid = options.grid.empty() ? balanced_grid(ranks, out.axes.size()) : options.grid;
  if (out.grid.size() != out.axes.size()) {
    throw Error(ErrorKind::usage, format("simulation: a grid of {} axes for {} shard axes",
                                         out.grid.size(), out.axes.size()));
  }
  std::int64_t product = 1;
  for (const int n : out.grid) {
    if (n < 1) {
      throw Error(ErrorKind::usage, format("simulation: the grid {} has an axis of {} ranks",
                                           grid_text(out.grid), n));
    }
    product *= n;
  }
  if (product != ranks) {
    throw Error(ErrorKind::usage,
                format("simulation: the grid {} has {} ranks but the communicator has {}",
                       grid_text(out.grid), product, ranks));
  }
  return out;
}

std::vector<int> Decomposition::coords_of(int rank) const {
  std::vector<int> coords(axes.size());
  for (std::size_t i = axes.size(); i-- > 0;) {
    coords[i] = rank % grid[i];
    rank /= grid[i];
  }
  return coords;
}

int Decomposition::rank_of(const std::vector<int>& coords) const {
  int rank = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    rank = rank * grid[i] + coords[i];
  }
  return rank;
}

void Decomposition::check(const Node& node, const Layout& layout, const StaticData& data) const {
  const std::size_t dims = layout.domain.size();
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = static_cast<std::size_t>(axes[i]);
    if (d >= dims) {
      node_error(node, format("shard axis {} is not one of its {} domain axes", d, dims));
    }
    const std::string& name = layout.axis_names[d];
    const int h = layout.halo[d];
    if (h == 0) {
      node_error(node, format("sharded axis {} ({}) has halo width 0; a sharded axis needs a "
                              "halo of at least one cell to exchange",
                              d, name));
    }
    const std::int64_t n = layout.domain[d];
    if (grid[i] > n) {
      node_error(node, format("axis {} ({}) has {} cells for {} ranks along it; use at most {} "
                              "ranks there",
                              d, name, n, grid[i], n));
    }
    if (n / grid[i] < h) {
      node_error(node, format("axis {} ({}) of {} cells over {} ranks gives shards of {} cells, "
                              "fewer than the halo width {}",
                              d, name, n, grid[i], n / grid[i], h));
    }
  }
  for (const auto& [key, entry] : data.entries()) {
    const auto* array = std::get_if<StaticArray>(&entry);
    if (array == nullptr || array->replication() != Replication::shard) {
      continue;
    }
    const int d = domain_axis_of(*array, dims);
    const bool sharded = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!sharded) {
      std::string names;
      for (const int a : axes) {
        names += (names.empty() ? "" : ", ") + std::to_string(a) + " (" +
                 layout.axis_names[static_cast<std::size_t>(a)] + ")";
      }
      const std::string hint = d >= 0 ? format("; shard the domain along axis {} ({}) too", d,
                                               layout.axis_names[static_cast<std::size_t>(d)])
                                      : std::string();
      node_error(node, format("static array \"{}\" is sharded along its axis {}, which is "
                              "not a sharded domain axis (an array's trailing axes are the "
                              "domain; sharded: {}){}",
                              key, *array->shard_axis(), names, hint));
    }
    // Sliced like the domain along every sharded axis: the trailing extents must be the
    // domain's there.
    const std::size_t lead = static_cast<std::size_t>(array->ndim()) - dims;
    for (const int a : axes) {
      const std::int64_t cells = array->shape()[lead + static_cast<std::size_t>(a)];
      if (cells != layout.domain[static_cast<std::size_t>(a)]) {
        node_error(node, format("static array \"{}\" {} has {} cells along its axis {}, but "
                                "the sharded domain axis {} has {}",
                                key, shape_text(array->shape()), cells,
                                lead + static_cast<std::size_t>(a), a,
                                layout.domain[static_cast<std::size_t>(a)]));
      }
    }
  }
}

void Decomposition::check_shard_axes(const Node& node, const Layout& layout,
                                     const StaticData& data) {
  const std::size_t dims = layout.domain.size();
  for (const auto& [key, entry] : data.entries()) {
    const auto* array = std::get_if<StaticArray>(&entry);
    if (array == nullptr || array->replication() != Replication::shard) {
      continue;
    }
    const int axis = *array->shard_axis();
    const int d = domain_axis_of(*array, dims);
    const std::int64_t lead = array->ndim() - static_cast<std::int64_t>(dims);
    if (d < 0) {
      node_error(node, format("static array \"{}\" {} is sharded along its axis {}, which is not a "
                              "domain axis (an array's trailing axes are the domain: its axes {} "
                              "to {})",
                              key, shape_text(array->shape()), axis,
                              std::max<std::int64_t>(lead, 0), array->ndim() - 1));
    }
    const std::int64_t cells = array->shape()[static_cast<std::size_t>(axis)];
    const std::int64_t domain = layout.domain[static_cast<std::size_t>(d)];
    if (cells != domain) {
      node_error(node, format("static array \"{}\" {} is sharded along its axis {} of {} cells, "
                              "but that axis stands for domain axis {} ({}) of {} cells (an "
                              "array's trailing axes are the domain)",
                              key, shape_text(array->shape()), axis, cells, d,
                              layout.axis_names[static_cast<std::size_t>(d)], domain));
    }
  }
}

int Decomposition::domain_axis_of(const StaticArray& array, std::size_t dims) {
  const int d = *array.shard_axis() - (array.ndim() - static_cast<int>(dims));
  return d >= 0 && d < static_cast<int>(dims) ? d : -1;
}

ShardInfo Decomposition::shard_of(const Layout& layout, int rank) const {
  ShardInfo info = serial_shard(layout);
  const auto coords = coords_of(rank);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = static_cast<std::size_t>(axes[i]);
    const std::int64_t n = layout.domain[d];
    const std::int64_t p = grid[i];
    const std::int64_t c = coords[i];
    info.grid[d] = grid[i];
    info.coords[d] = coords[i];
    // The first n % p ranks take one cell more.
    info.extent[d] = n / p + (c < n % p ? 1 : 0);
    info.offset[d] = c * (n / p) + std::min(c, n % p);
  }
  return info;
}

int Decomposition::neighbour(std::size_t i, int step, bool wrap, int rank) const {
  auto coords = coords_of(rank);
  int c = coords[i] + step;
  if (c < 0 || c >= grid[i]) {
    if (!wrap) {
      return -1;
    }
    c = (c + grid[i]) % grid[i];
  }
  coords[i] = c;
  return rank_of(coords);
}

std::vector<AxisPlan> Decomposition::plans(const Layout& layout, For what, int rank) const {
  std::vector<AxisPlan> out(layout.domain.size());
  for (std::size_t d = 0; d < out.size(); ++d) {
    out[d].boundary = what == For::state ? layout.boundary[d] : static_padding(layout.boundary[d]);
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    auto& plan = out[static_cast<std::size_t>(axes[i])];
    // A periodic axis wraps for static arrays too, as their serial padding does.
    const bool wrap = plan.boundary == Boundary::periodic;
    if (grid[i] > 1) {
      plan.exchange = true;
      plan.low = neighbour(i, -1, wrap, rank);
      plan.high = neighbour(i, +1, wrap, rank);
    }
  }
  return out;
}

StaticArray slice(const StaticArray& array, const ShardInfo& shard) {
  // The array's trailing axes are the domain's: they take the shard's offsets and extents.
  const auto& shape = array.shape();
  const std::size_t lead = shape.size() - shard.extent.size();
  ArrayBox box{std::vector<std::int64_t>(shape.size(), 0), shape};
  for (std::size_t d = 0; d < shard.extent.size(); ++d) {
    box.offset[lead + d] = shard.offset[d];
    box.extent[lead + d] = shard.extent[d];
  }
  return array.part(box);
}

void copy_slab(Field& global, Field& local, const std::vector<std::int64_t>& offset,
               Direction direction) {
  const std::size_t element = codegen::size_of(local.dtype());
  const std::size_t lead = static_cast<std::size_t>(local.rank()) - offset.size();
  std::vector<std::int64_t> at(static_cast<std::size_t>(local.rank()));
  auto* g = static_cast<std::byte*>(global.data());
  auto* l = static_cast<std::byte*>(local.data());
  local.for_each_interior([&](std::span<const std::int64_t> index) {
    for (std::size_t a = 0; a < at.size(); ++a) {
      at[a] = index[a] + (a >= lead ? offset[a - lead] : 0);
    }
    std::byte* gp = g + static_cast<std::size_t>(global.offset(at)) * element;
    std::byte* lp = l + static_cast<std::size_t>(local.offset(index)) * element;
    if (direction == Direction::global_to_local) {
      std::memcpy(lp, gp, element);
    } else {
      std::memcpy(gp, lp, element);
    }
  });
}

} // namespace uwjit::runtime::detail
