#include <uwjit/runtime/simulation.hpp>

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/common/posix_file.hpp>

#include "byte_io.hpp"
#include "halo_exchange.hpp"
#include "node_shared.hpp"
#include "parallel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace uwjit::runtime {

std::string_view to_string(ExchangeMode mode) noexcept {
  return mode == ExchangeMode::sync ? "sync" : "overlap";
}

using codegen::BufferDecl;
using codegen::BufferRole;
using codegen::KernelWriter;

namespace {

constexpr std::string_view k_magic = "UWJITCKP";

log::Logger& logger() {
  static log::Logger instance = log::get("uwjit.runtime");
  return instance;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += i == 0 ? "" : ", ";
    out += std::to_string(shape[i]);
  }
  return out + ")";
}

[[noreturn]] void node_error(const Node& node, std::string_view message) {
  throw Error(ErrorKind::usage, format("node \"{}\": {}", node.name(), message));
}

// What a node declares about its layout, read once and checked.
struct Layout {
  std::vector<std::int64_t> domain;
  std::vector<int> halo;
  std::vector<Boundary> boundary;
  std::vector<codegen::ExtentMode> modes;
  std::vector<std::string> axis_names;
  std::vector<StateField> fields;
  std::vector<std::string> integrals;
  double dt = 1.0;

  [[nodiscard]] std::vector<std::int64_t> shape(const StateField& f) const {
    std::vector<std::int64_t> out = f.components;
    out.insert(out.end(), domain.begin(), domain.end());
    return out;
  }
  [[nodiscard]] std::vector<int> halos(const StateField& f) const {
    std::vector<int> out(f.components.size(), 0);
    out.insert(out.end(), halo.begin(), halo.end());
    return out;
  }
  [[nodiscard]] std::vector<Boundary> boundaries(const StateField& f) const {
    std::vector<Boundary> out(f.components.size(), Boundary::edge);
    out.insert(out.end(), boundary.begin(), boundary.end());
    return out;
  }
};

Layout read_layout(const Node& node) {
  Layout layout;
  layout.domain = node.domain();
  const std::size_t axes = layout.domain.size();
  if (axes < 1 || axes > UWJIT_MAX_AXES) {
    node_error(node, format("the domain needs 1 to {} axes, got {}", UWJIT_MAX_AXES, axes));
  }
  for (std::size_t d = 0; d < axes; ++d) {
    if (layout.domain[d] < 1) {
      node_error(node, format("domain axis {} has extent {} (need >= 1)", d, layout.domain[d]));
    }
  }
  layout.halo = node.halo_width();
  layout.boundary = node.boundary();
  layout.modes = node.extent_modes();
  layout.axis_names = node.axis_names();
  auto check_length = [&](std::size_t size, std::string_view what) {
    if (size != axes) {
      node_error(node, format("{} has {} entries for {} domain axes", what, size, axes));
    }
  };
  check_length(layout.halo.size(), "halo_width()");
  check_length(layout.boundary.size(), "boundary()");
  check_length(layout.modes.size(), "extent_modes()");
  check_length(layout.axis_names.size(), "axis_names()");
  for (std::size_t d = 0; d < axes; ++d) {
    if (layout.halo[d] < 0) {
      node_error(node, format("halo width {} on axis {} is negative", layout.halo[d], d));
    }
    if (layout.boundary[d] == Boundary::periodic && layout.halo[d] > layout.domain[d]) {
      node_error(node, format("a periodic halo of {} on axis {} is wider than the extent {}",
                              layout.halo[d], d, layout.domain[d]));
    }
  }
  layout.fields = node.state_fields();
  if (layout.fields.empty()) {
    node_error(node, "declares no state field");
  }
  std::set<std::string> names;
  for (const auto& f : layout.fields) {
    if (!names.insert(f.name).second) {
      node_error(node, format("state field \"{}\" is declared twice", f.name));
    }
    if (!codegen::is_supported(f.dtype)) {
      node_error(node, format("state field \"{}\" has an unsupported dtype", f.name));
    }
    for (const std::int64_t c : f.components) {
      if (c < 1) {
        node_error(node, format("state field \"{}\" has a component extent {}", f.name, c));
      }
    }
  }
  layout.integrals = node.domain_integral_fields();
  std::set<std::string> integral_names;
  for (const auto& name : layout.integrals) {
    if (!integral_names.insert(name).second) {
      node_error(node, format("domain integral \"{}\" is declared twice", name));
    }
    if (names.count(name) != 0) {
      node_error(node, format("\"{}\" is both a state field and a domain integral", name));
    }
  }
  layout.dt = node.dt();
  return layout;
}

// A node's kernel as emitted: the writer (its declarations, for binding) and the source.
struct Emitted {
  KernelWriter writer;
  codegen::KernelSource source;
};

// `hash` is the static_data_hash the kernel text names: that of the node's whole static data,
// also when `bound` holds a rank's slabs, so that every rank emits the same text.
Emitted emit(const Node& node, const Layout& layout, const StaticData& bound,
             const std::string& hash) {
  KernelWriter writer(node.name());
  writer.comment("static_data_hash " + hash);
  for (std::size_t d = 0; d < layout.domain.size(); ++d) {
    (void)writer.domain_extent(static_cast<int>(d), layout.axis_names[d], layout.domain[d],
                               layout.modes[d]);
  }
  std::vector<std::string> field_names;
  for (const auto& f : layout.fields) {
    std::vector<codegen::Axis> axes;
    for (const std::int64_t c : f.components) {
      axes.push_back({writer.constant(c), 0});
    }
    for (std::size_t d = 0; d < layout.domain.size(); ++d) {
      axes.push_back({writer.domain(static_cast<int>(d)), layout.halo[d]});
    }
    writer.state_in(f.name, f.dtype, std::move(axes));
    field_names.push_back(f.name);
  }
  for (const auto& [key, entry] : bound.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      writer.provide_static(key, array->dtype(), array->shape());
    }
  }
  writer.restrict_outputs(field_names, layout.integrals);
  node.emit_update(writer);
  for (const auto& name : layout.integrals) {
    if (std::find(writer.integrals().begin(), writer.integrals().end(), name) ==
        writer.integrals().end()) {
      node_error(node, format("declares domain integral \"{}\" but its kernel does not compute it "
                              "(writer.integral(\"{}\"))",
                              name, name));
    }
  }
  auto source = writer.finish();
  return Emitted{std::move(writer), std::move(source)};
}

// How one node's kernel is bound: buffer slots to fields, static pointers, run-time extents and
// integral slots. Built completely before it replaces a previous binding.
struct Binding {
  std::optional<engine::Kernel> kernel;
  KernelReport report;
  std::vector<std::size_t> in_field;          // state_in slot -> field index
  std::vector<std::size_t> out_field;         // state_out slot -> field index
  std::vector<const void*> statics;           // statics slot -> pointer
  std::vector<StaticArray> held;              // keeps the bound arrays alive
  std::vector<std::unique_ptr<Field>> padded; // halo-padded copies of static arrays
  std::vector<uw_i64> extents;                // run-time extents, slot order
  std::vector<std::size_t> integral_slot;     // declared integral -> kernel slot
  std::vector<double> kernel_integrals;       // kernel slot order
};

// Fills the halos of a padded static array; domain_axes[a] is the domain axis of its axis a
// (-1 for other axes).
using StaticPadder = std::function<void(Field&, const std::vector<int>& domain_axes)>;

// Serial: the halos follow the node's boundaries (a periodic axis wraps, others repeat the
// edge), so stencils may read one cell beyond the domain.
StaticPadder serial_padder(const Layout& layout) {
  return [&layout](Field& field, const std::vector<int>& domain_axes) {
    std::vector<Boundary> boundaries;
    for (const int d : domain_axes) {
      boundaries.push_back(d >= 0 ? layout.boundary[static_cast<std::size_t>(d)] : Boundary::edge);
    }
    field.fill_halos(boundaries);
  };
}

Binding bind_kernel(const Node& node, const Layout& layout, const KernelWriter& writer,
                    const StaticData& bound, const StaticPadder& pad) {
  Binding b;
  auto field_index = [&](const BufferDecl& buffer) {
    for (std::size_t i = 0; i < layout.fields.size(); ++i) {
      const StateField& f = layout.fields[i];
      if (f.name != buffer.name) {
        continue;
      }
      std::vector<int> halos;
      for (const auto& axis : buffer.axes) {
        halos.push_back(axis.halo);
      }
      if (buffer.dtype != f.dtype || writer.interior_shape(buffer) != layout.shape(f) ||
          halos != layout.halos(f)) {
        node_error(node, format("its kernel declares {} \"{}\" with another layout than the "
                                "state field ({} {} with halos per axis)",
                                codegen::to_string(buffer.role), buffer.name,
                                codegen::to_string(f.dtype), shape_text(layout.shape(f))));
      }
      return i;
    }
    node_error(node, format("its kernel declares {} \"{}\", which is not a state field",
                            codegen::to_string(buffer.role), buffer.name));
  };
  for (const BufferDecl& buffer : writer.buffers()) {
    switch (buffer.role) {
    case BufferRole::state_in:
      b.in_field.push_back(field_index(buffer));
      break;
    case BufferRole::state_out:
      b.out_field.push_back(field_index(buffer));
      break;
    case BufferRole::statics: {
      const StaticArray* array = bound.array(buffer.name);
      if (array == nullptr) {
        node_error(node, format("its kernel reads static array \"{}\", which its static data "
                                "does not hold",
                                buffer.name));
      }
      const auto shape = writer.interior_shape(buffer);
      if (array->dtype() != buffer.dtype || array->shape() != shape) {
        node_error(node,
                   format("static array \"{}\" is {} {} but the kernel reads {} {}", buffer.name,
                          codegen::to_string(array->dtype()), shape_text(array->shape()),
                          codegen::to_string(buffer.dtype), shape_text(shape)));
      }
      b.held.push_back(*array);
      bool has_halo = false;
      std::vector<int> halos;
      std::vector<int> domain_axes;
      for (const auto& axis : buffer.axes) {
        has_halo = has_halo || axis.halo > 0;
        halos.push_back(axis.halo);
        domain_axes.push_back(
            writer.extents()[static_cast<std::size_t>(axis.extent.id)].domain_axis);
      }
      if (!has_halo) {
        b.statics.push_back(array->data()); // bound in place: the kernel reads the caller's data
        break;
      }
      // A halo-padded copy, made once here.
      auto padded = std::make_unique<Field>(buffer.name, array->dtype(), shape, halos);
      padded->copy_interior_from(std::span<const std::byte>(
          static_cast<const std::byte*>(array->data()), array->size_bytes()));
      pad(*padded, domain_axes);
      b.statics.push_back(padded->data());
      b.padded.push_back(std::move(padded));
      break;
    }
    }
  }
  for (const auto& e : writer.extents()) {
    if (e.mode == codegen::ExtentMode::runtime) {
      b.extents.push_back(e.value);
    }
  }
  for (const auto& name : layout.integrals) {
    const auto& declared = writer.integrals();
    b.integral_slot.push_back(static_cast<std::size_t>(
        std::find(declared.begin(), declared.end(), name) - declared.begin()));
  }
  b.kernel_integrals.assign(writer.integrals().size(), 0.0);
  return b;
}

struct NodeState {
  std::shared_ptr<const Node> node;
  Layout layout; // sharded: this rank's extents; shard.global holds the whole domain's
  ShardInfo shard;
  StaticData bound;                               // sharded: shard-mode arrays as this rank's slabs
  std::vector<detail::AxisPlan> plans;            // per domain axis, for the state's halos
  std::optional<detail::HaloExchanger> exchanger; // sharded: made on the first step
  std::vector<Field*> halo_fields;                // the exchanger's fields, refreshed per step
  std::optional<KernelWriter> writer;             // the current kernel's declarations
  Binding binding;
  std::vector<std::unique_ptr<Field>> current; // per state field
  std::vector<std::unique_ptr<Field>> next;    // per state field, null unless the kernel writes it
  std::vector<std::vector<Boundary>> boundaries; // per state field, per axis
  std::vector<bool> has_halo;                    // per state field
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  std::vector<double> integrals; // declared order
  uwjit_kernel_args args{};
  // Overlap mode: the domain axis whose halos are exchanged while the kernel updates the cells
  // that do not read them (the same axis on every rank), or -1 to call the kernel once per step.
  int overlap_axis = -2;                 // -2: not yet chosen
  std::vector<double> overlap_integrals; // overlap mode: the partial sums of one step's calls

  // Points the ABI struct at the binding's tables; called whenever the binding changes.
  void wire() {
    in_ptrs.assign(binding.in_field.size(), nullptr);
    out_ptrs.assign(binding.out_field.size(), nullptr);
    for (std::size_t i = 0; i < layout.fields.size(); ++i) {
      const bool written = std::find(binding.out_field.begin(), binding.out_field.end(), i) !=
                           binding.out_field.end();
      if (written && next[i] == nullptr) {
        const StateField& f = layout.fields[i];
        next[i] = std::make_unique<Field>(f.name, f.dtype, layout.shape(f), layout.halos(f));
        const std::size_t bytes =
            static_cast<std::size_t>(current[i]->interior_count()) * codegen::size_of(f.dtype);
        std::vector<std::byte> interior(bytes);
        current[i]->copy_interior_to(interior);
        next[i]->copy_interior_from(interior);
      }
    }
    args = {};
    args.state_in = in_ptrs.data();
    args.state_out = out_ptrs.data();
    args.statics = binding.statics.data();
    args.extents = binding.extents.data();
    args.integrals = binding.kernel_integrals.data();
    args.dt = layout.dt;
    for (std::size_t d = 0; d < layout.domain.size(); ++d) {
      args.shard_offset[d] = shard.offset[d];
      args.shard_extent[d] = shard.extent[d];
      args.global_extent[d] = shard.global[d];
      args.update_begin[d] = 0;
      args.update_end[d] = shard.extent[d];
    }
  }
};

using Clock = std::chrono::steady_clock;

// The whole domain as one shard on a grid of one rank.
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

// The most even split of `ranks` over `axes` counts, larger first (as MPI_Dims_create).
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

// How the ranks split every node's domain: the sharded axes and the ranks along each.
struct Decomposition {
  engine::Comm* comm = nullptr;
  std::vector<int> axes;
  std::vector<int> grid;

  // Checks the options against the communicator; the same verdict on every rank.
  static Decomposition make(const SimulationOptions& options) {
    Decomposition out;
    out.comm = options.comm;
    out.axes = options.shard_axes.empty() ? std::vector<int>{0} : options.shard_axes;
    if (out.axes.size() > 3) {
      throw Error(ErrorKind::usage,
                  format("simulation: {} shard axes (at most 3)", out.axes.size()));
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

  // Rank `rank`'s coordinates along each shard axis (row-major: the last varies fastest).
  [[nodiscard]] std::vector<int> coords_of(int rank) const {
    std::vector<int> coords(axes.size());
    for (std::size_t i = axes.size(); i-- > 0;) {
      coords[i] = rank % grid[i];
      rank /= grid[i];
    }
    return coords;
  }
  [[nodiscard]] int rank_of(const std::vector<int>& coords) const {
    int rank = 0;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      rank = rank * grid[i] + coords[i];
    }
    return rank;
  }

  // Checks that `node` can be split so (every rank reaches the same verdict: it reads only the
  // node and the options).
  void check(const Node& node, const Layout& layout, const StaticData& data) const {
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
        node_error(node, format("static array \"{}\" is sharded along its axis {}, which is "
                                "not a sharded domain axis (an array's trailing axes are the "
                                "domain; sharded: {})",
                                key, *array->shard_axis(), names));
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

  // The domain axis a shard-mode array's shard_axis stands for (its trailing axes are the
  // domain), or -1.
  static int domain_axis_of(const StaticArray& array, std::size_t dims) {
    const int d = *array.shard_axis() - (array.ndim() - static_cast<int>(dims));
    return d >= 0 && d < static_cast<int>(dims) ? d : -1;
  }

  // Where rank `rank`'s shard of `layout`'s domain lies.
  [[nodiscard]] ShardInfo shard_of(const Layout& layout, int rank) const {
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

  // The rank `step` (+1 or -1) along shard axis i, wrapping if `wrap`; -1 past an edge.
  [[nodiscard]] int neighbour(std::size_t i, int step, bool wrap) const {
    auto coords = coords_of(comm->rank());
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

  // How each domain axis's halos are filled. Sharded axes over more than one rank exchange
  // (static data: never wrapping, always edge at the global boundary); a sharded axis over one
  // rank and every other axis is filled locally.
  enum class For { state, statics };
  [[nodiscard]] std::vector<detail::AxisPlan> plans(const Layout& layout, For what) const {
    std::vector<detail::AxisPlan> out(layout.domain.size());
    for (std::size_t d = 0; d < out.size(); ++d) {
      out[d].boundary = layout.boundary[d];
    }
    for (std::size_t i = 0; i < axes.size(); ++i) {
      auto& plan = out[static_cast<std::size_t>(axes[i])];
      const bool wrap = what == For::state && plan.boundary == Boundary::periodic;
      if (what == For::statics) {
        plan.boundary = Boundary::edge;
      }
      if (grid[i] > 1) {
        plan.exchange = true;
        plan.low = neighbour(i, -1, wrap);
        plan.high = neighbour(i, +1, wrap);
      }
    }
    return out;
  }
};

// This rank's part of a shard-mode array: its trailing axes are the domain, cut to the shard
// along every sharded axis (not only along shard_axis, so that it matches the state's slab when
// the domain is split along several axes).
StaticArray slice(const StaticArray& array, const ShardInfo& shard) {
  const auto& shape = array.shape();
  const std::size_t lead = shape.size() - shard.extent.size();
  std::vector<std::int64_t> local = shape;
  std::vector<std::int64_t> offset(shape.size(), 0);
  for (std::size_t d = 0; d < shard.extent.size(); ++d) {
    local[lead + d] = shard.extent[d];
    offset[lead + d] = shard.offset[d];
  }
  const std::size_t element = codegen::size_of(array.dtype());
  std::int64_t count = 1;
  for (const std::int64_t n : local) {
    count *= n;
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(count) * element);
  const auto* source = static_cast<const std::byte*>(array.data());
  // Row by row (the last axis is contiguous in both).
  const std::size_t row = static_cast<std::size_t>(local.back()) * element;
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::size_t written = 0; written < bytes->size(); written += row) {
    std::int64_t at = 0;
    for (std::size_t a = 0; a < shape.size(); ++a) {
      at = at * shape[a] + index[a] + offset[a];
    }
    std::memcpy(bytes->data() + written, source + static_cast<std::size_t>(at) * element, row);
    for (std::size_t a = shape.size() - 1; a-- > 0;) {
      if (++index[a] < local[a]) {
        break;
      }
      index[a] = 0;
    }
  }
  std::shared_ptr<const void> data(bytes, bytes->data());
  return StaticArray(array.key(), std::move(data), array.dtype(), std::move(local),
                     Replication::shard, array.shard_axis());
}

// Copies `from`'s interior cells that lie in `to`'s shard (its domain axes are the trailing
// ones, starting at `offset`) into `to`'s interior, or the other way round.
enum class Direction { global_to_local, local_to_global };
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

} // namespace

struct Simulation::Impl {
  engine::Engine* engine = nullptr;
  std::vector<std::shared_ptr<const Node>> nodes;
  std::vector<NodeState> states;
  std::vector<KernelReport> reports;
  std::int64_t steps = 0;
  std::optional<Decomposition> decomposition; // sharded only
  ExchangeMode exchange_mode = ExchangeMode::sync;
  ExchangeStats exchange;
  NodeShared node_shared;
  bool snapshot = false; // a gathered snapshot: no kernels, cannot step

  // compute: the nodes' initial state; skip: zeros (restore fills it); snapshot: zeros and no
  // kernels requested.
  enum class Init { compute, skip, snapshot };

  Impl(engine::Engine& e, std::vector<std::shared_ptr<const Node>> list,
       const SimulationOptions& options, Init init)
      : engine(&e), nodes(std::move(list)), exchange_mode(options.exchange),
        snapshot(init == Init::snapshot) {
    if (options.comm != nullptr && init != Init::snapshot) {
      decomposition = Decomposition::make(options);
    }
    std::set<std::string> names;
    for (const auto& node : nodes) {
      if (node == nullptr) {
        throw Error(ErrorKind::usage, "simulation: a null node");
      }
      if (!names.insert(node->name()).second) {
        throw Error(ErrorKind::usage,
                    format("simulation: two nodes are named \"{}\"", node->name()));
      }
    }
    states.resize(nodes.size());
    std::vector<std::optional<Emitted>> emitted(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeState& s = states[n];
      s.node = nodes[n];
      s.layout = read_layout(*s.node);
      s.shard = serial_shard(s.layout);
      const StaticData& whole = s.node->static_data();
      s.bound = whole;
      if (decomposition) {
        // Every check reads only the node and the options, so every rank raises the same error
        // here, before the first collective.
        decomposition->check(*s.node, s.layout, whole);
        s.shard = decomposition->shard_of(s.layout, options.comm->rank());
        s.plans = decomposition->plans(s.layout, Decomposition::For::state);
        StaticData local;
        for (const auto& [key, entry] : whole.entries()) {
          const auto* array = std::get_if<StaticArray>(&entry);
          if (array == nullptr) {
            local.add(key, std::get<Value>(entry));
          } else if (array->replication() == Replication::shard) {
            local.add(slice(*array, s.shard));
          } else {
            local.add(*array);
          }
        }
        s.bound = std::move(local);
        // Run-time extents on sharded axes: one kernel text, and one key, for all ranks.
        s.layout.domain = s.shard.extent;
        for (const int d : decomposition->axes) {
          s.layout.modes[static_cast<std::size_t>(d)] = codegen::ExtentMode::runtime;
        }
      }
      emitted[n].emplace(emit(*s.node, s.layout, s.bound, static_data_hash(whole)));
    }
    if (decomposition && options.share_on_node) {
      share_replicate_arrays(*options.comm, options.share_min_bytes);
    }
    if (init != Init::snapshot) {
      request_all(emitted, options);
    } else {
      kernels_.assign(nodes.size(), std::nullopt);
      reports.assign(nodes.size(), {});
    }
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeState& s = states[n];
      StaticPadder pad = serial_padder(s.layout);
      if (decomposition) {
        const auto plans = decomposition->plans(s.layout, Decomposition::For::statics);
        pad = [plans, comm = options.comm](Field& field, const std::vector<int>& domain_axes) {
          std::vector<detail::AxisPlan> field_plans;
          for (const int d : domain_axes) {
            field_plans.push_back(d >= 0 ? plans[static_cast<std::size_t>(d)] : detail::AxisPlan{});
          }
          // Static data never changes: exchanged once, here.
          detail::HaloExchanger exchanger(*comm, {field_plans});
          Field* fields[] = {&field};
          exchanger.fill(fields, ExchangeMode::sync);
        };
      }
      Binding binding = bind_kernel(*s.node, s.layout, emitted[n]->writer, s.bound, pad);
      binding.kernel = std::move(kernels_[n]);
      binding.report = reports[n];
      s.binding = std::move(binding);
      s.writer.emplace(std::move(emitted[n]->writer));
      allocate_state(s, init == Init::compute ? Init::compute : Init::skip);
      s.integrals.assign(s.layout.integrals.size(), 0.0);
      s.wire();
    }
  }

  // One copy per node of the large computed replicate arrays, before anything reads them.
  void share_replicate_arrays(engine::Comm& comm, std::size_t min_bytes) {
    std::vector<detail::SharedCandidate> candidates;
    for (const auto& s : states) {
      for (const auto& [key, entry] : s.bound.entries()) {
        const auto* array = std::get_if<StaticArray>(&entry);
        if (array != nullptr && array->is_computed() &&
            array->replication() == Replication::replicate && array->size_bytes() >= min_bytes) {
          candidates.push_back({s.node->name(), array});
        }
      }
    }
    node_shared = detail::share_on_node(candidates, comm);
  }

  // Requests every kernel; distinct keys in parallel, repeats afterwards (memory hits).
  void request_all(std::vector<std::optional<Emitted>>& emitted, const SimulationOptions& options) {
    if (options.comm != nullptr) {
      // Collective: the ranks agree on the keys, one rank compiles, every rank loads.
      std::vector<codegen::KernelSource> sources;
      for (const auto& e : emitted) {
        sources.push_back(e->source);
      }
      auto loaded = engine->kernels(sources, *options.comm);
      kernels_.clear();
      for (auto& kernel : loaded) {
        kernels_.emplace_back(std::move(kernel));
      }
      report_all(emitted);
      return;
    }
    std::vector<std::string> keys;
    std::vector<std::size_t> firsts;
    std::map<std::string, std::size_t> first_of;
    for (std::size_t n = 0; n < emitted.size(); ++n) {
      keys.push_back(engine->key_of(emitted[n]->source).hex());
      if (first_of.emplace(keys.back(), n).second) {
        firsts.push_back(n);
      }
    }
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads =
        options.compile_threads > 0 ? options.compile_threads : std::min(hardware, 4);
    kernels_.assign(emitted.size(), std::nullopt);
    detail::parallel_for(firsts.size(), threads, [&](std::size_t i) {
      const std::size_t n = firsts[i];
      kernels_[n].emplace(engine->kernel(emitted[n]->source));
    });
    for (std::size_t n = 0; n < emitted.size(); ++n) {
      if (!kernels_[n]) {
        kernels_[n].emplace(engine->kernel(emitted[n]->source));
      }
    }
    report_all(emitted);
  }

  void report_all(std::vector<std::optional<Emitted>>& emitted) {
    reports.clear();
    for (std::size_t n = 0; n < emitted.size(); ++n) {
      const auto& info = kernels_[n]->info();
      reports.push_back({nodes[n]->name(), info,
                         std::make_shared<const codegen::KernelSource>(emitted[n]->source)});
      logger().info("node {}: kernel {} from {} in {} ms", nodes[n]->name(), info.key,
                    engine::to_string(info.tier), info.request_ms);
    }
  }

  static void allocate_state(NodeState& s, Init init) {
    const Layout& layout = s.layout;
    std::vector<Field*> fields;
    const bool sharded = layout.domain != s.shard.global;
    for (const auto& f : layout.fields) {
      s.current.push_back(
          std::make_unique<Field>(f.name, f.dtype, layout.shape(f), layout.halos(f)));
      s.next.push_back(nullptr);
      s.boundaries.push_back(layout.boundaries(f));
      const auto halos = layout.halos(f);
      s.has_halo.push_back(std::any_of(halos.begin(), halos.end(), [](int h) { return h > 0; }));
      fields.push_back(s.current.back().get());
    }
    if (init == Init::compute && !sharded) {
      State state(fields);
      s.node->initial_state(state);
    } else if (init == Init::compute) {
      // The node fills the whole domain; this rank keeps its slab.
      std::vector<std::unique_ptr<Field>> whole;
      std::vector<Field*> whole_fields;
      for (const auto& f : layout.fields) {
        std::vector<std::int64_t> shape = f.components;
        shape.insert(shape.end(), s.shard.global.begin(), s.shard.global.end());
        whole.push_back(std::make_unique<Field>(
            f.name, f.dtype, std::move(shape),
            std::vector<int>(f.components.size() + s.shard.global.size(), 0)));
        whole_fields.push_back(whole.back().get());
      }
      State state(whole_fields);
      s.node->initial_state(state);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        copy_slab(*whole[i], *fields[i], s.shard.offset, Direction::global_to_local);
      }
    }
  }

  NodeState& state_of(std::string_view name) {
    for (auto& s : states) {
      if (s.node->name() == name) {
        return s;
      }
    }
    throw Error(ErrorKind::usage, format("simulation has no node \"{}\"", name));
  }

  void step_node(NodeState& s) {
    if (snapshot) {
      throw Error(ErrorKind::usage, "simulation: a gathered snapshot cannot step");
    }
    const int axis = overlap_axis(s);
    if (axis >= 0) {
      step_overlapped(s, static_cast<std::size_t>(axis));
      return;
    }
    if (decomposition) {
      exchange_halos(s);
    } else {
      for (std::size_t i = 0; i < s.current.size(); ++i) {
        if (s.has_halo[i]) {
          s.current[i]->fill_halos(s.boundaries[i]);
        }
      }
    }
    bind_state(s);
    s.args.step = steps;
    const int status = (*s.binding.kernel)(s.args);
    check_status(s, status);
    for (std::size_t i = 0; i < s.integrals.size(); ++i) {
      s.integrals[i] = s.binding.kernel_integrals[s.binding.integral_slot[i]];
    }
    finish_step(s);
  }

  // The axis to overlap for node `s` this step, or -1. Overlapping needs a kernel that updates
  // the box it is given, and an exchanged axis whose narrowest shard has cells that read no halo
  // of it. The choice depends only on what every rank knows alike (the global extents and the
  // grid), so that all ranks defer the same axis: the last one that qualifies (any order of the
  // axes gives the same halos, corners included).
  int overlap_axis(NodeState& s) {
    if (!decomposition || exchange_mode != ExchangeMode::overlap || !s.writer ||
        !s.writer->updates_box()) {
      return -1;
    }
    if (s.overlap_axis == -2) {
      for (std::size_t d = s.plans.size(); d-- > 0;) {
        const std::int64_t narrowest = s.shard.global[d] / s.shard.grid[d];
        if (s.plans[d].exchange && narrowest > 2 * std::int64_t{s.layout.halo[d]}) {
          s.overlap_axis = static_cast<int>(d);
          break;
        }
      }
      if (s.overlap_axis == -2) {
        s.overlap_axis = -1;
      }
    }
    return s.overlap_axis;
  }

  // One step that updates the cells that read no halo of `axis` while that axis's transfers are
  // in flight, then the two boundary slabs. Every cell is computed by the same code from the
  // same inputs as in one call, so the state is the same bit for bit; the integrals are the sums
  // of three partial sums.
  void step_overlapped(NodeState& s, std::size_t axis) {
    const auto start = Clock::now();
    prepare_exchange(s);
    const std::size_t from_end = s.plans.size() - 1 - axis;
    s.exchanger->start_fill(s.halo_fields, exchange_mode, from_end);
    double exchanging = std::chrono::duration<double>(Clock::now() - start).count();
    bind_state(s);
    const std::int64_t h = s.layout.halo[axis];
    const std::int64_t n = s.shard.extent[axis];
    // Sized on the first step, like the halo buffers; the step's integrals replace the last
    // ones only if every call succeeds.
    s.overlap_integrals.assign(s.integrals.size(), 0.0);
    s.args.update_begin[axis] = h;
    s.args.update_end[axis] = n - h;
    const int interior = call_kernel(s, s.overlap_integrals);
    const auto waiting = Clock::now();
    // Even after a failed call: no transfer may outlive the step.
    s.exchanger->finish_fill(s.halo_fields);
    exchanging += std::chrono::duration<double>(Clock::now() - waiting).count();
    exchange.seconds += exchanging;
    ++exchange.exchanges;
    ++exchange.overlapped;
    int status = interior;
    if (status == UWJIT_KERNEL_OK) {
      s.args.update_begin[axis] = 0;
      s.args.update_end[axis] = h;
      status = call_kernel(s, s.overlap_integrals);
    }
    if (status == UWJIT_KERNEL_OK) {
      s.args.update_begin[axis] = n - h;
      s.args.update_end[axis] = n;
      status = call_kernel(s, s.overlap_integrals);
    }
    s.args.update_begin[axis] = 0;
    s.args.update_end[axis] = n;
    check_status(s, status);
    std::copy(s.overlap_integrals.begin(), s.overlap_integrals.end(), s.integrals.begin());
    finish_step(s);
  }

  // Points the kernel's state tables at the current and next buffers.
  static void bind_state(NodeState& s) {
    for (std::size_t slot = 0; slot < s.binding.in_field.size(); ++slot) {
      s.in_ptrs[slot] = s.current[s.binding.in_field[slot]]->data();
    }
    for (std::size_t slot = 0; slot < s.binding.out_field.size(); ++slot) {
      s.out_ptrs[slot] = s.next[s.binding.out_field[slot]]->data();
    }
  }

  // Calls the kernel on the box in s.args and, if it succeeds, adds its integrals to `sums`
  // (declared order); returns its status.
  int call_kernel(NodeState& s, std::span<double> sums) {
    s.args.step = steps;
    const int status = (*s.binding.kernel)(s.args);
    if (status == UWJIT_KERNEL_OK) {
      for (std::size_t i = 0; i < sums.size(); ++i) {
        sums[i] += s.binding.kernel_integrals[s.binding.integral_slot[i]];
      }
    }
    return status;
  }

  void check_status(const NodeState& s, int status) const {
    if (status != UWJIT_KERNEL_OK) {
      throw Error(ErrorKind::usage, format("node \"{}\": kernel returned status {} at step {}",
                                           s.node->name(), status, steps));
    }
  }

  // The new state becomes current; sharded, the integrals are summed over the ranks.
  void finish_step(NodeState& s) {
    for (const std::size_t i : s.binding.out_field) {
      std::swap(s.current[i], s.next[i]);
    }
    if (decomposition && !s.integrals.empty()) {
      // Partial sums of doubles (integrals are floating point: no wrap-around), added over the
      // decomposition's ranks.
      decomposition->comm->all_reduce_sum(s.integrals);
    }
  }

  // The exchanger and its buffers are made on the first step, from the state's actual layout,
  // and reused; its field list points at the current buffers.
  void prepare_exchange(NodeState& s) {
    if (!s.exchanger) {
      std::vector<std::vector<detail::AxisPlan>> plans;
      for (std::size_t i = 0; i < s.current.size(); ++i) {
        if (s.has_halo[i]) {
          std::vector<detail::AxisPlan> field_plans(s.layout.fields[i].components.size());
          field_plans.insert(field_plans.end(), s.plans.begin(), s.plans.end());
          plans.push_back(std::move(field_plans));
          s.halo_fields.push_back(nullptr);
        }
      }
      s.exchanger.emplace(*decomposition->comm, std::move(plans));
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.has_halo[i]) {
        s.halo_fields[at++] = s.current[i].get();
      }
    }
  }

  // Fills the state halos of node `s` from the neighbouring ranks (and locally on axes that are
  // not split).
  void exchange_halos(NodeState& s) {
    const auto start = Clock::now();
    prepare_exchange(s);
    s.exchanger->fill(s.halo_fields, exchange_mode);
    exchange.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    ++exchange.exchanges;
  }

  std::vector<std::optional<engine::Kernel>> kernels_;
};

Simulation::Simulation(engine::Engine& engine, std::vector<std::shared_ptr<const Node>> nodes,
                       SimulationOptions options)
    : m_impl(std::make_unique<Impl>(engine, std::move(nodes), options, Impl::Init::compute)) {}

Simulation::Simulation(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Simulation::~Simulation() = default;
Simulation::Simulation(Simulation&&) noexcept = default;
Simulation& Simulation::operator=(Simulation&&) noexcept = default;

const std::vector<KernelReport>& Simulation::kernels() const noexcept {
  return m_impl->reports;
}

void Simulation::step(std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    for (auto& s : m_impl->states) {
      m_impl->step_node(s);
    }
    ++m_impl->steps;
  }
}

void Simulation::run(std::int64_t count, const std::function<void(const Simulation&)>& after_step) {
  for (std::int64_t i = 0; i < count; ++i) {
    step(1);
    if (after_step) {
      after_step(*this);
    }
  }
}

const ShardInfo& Simulation::shard(std::string_view node) const {
  return m_impl->state_of(node).shard;
}

NodeShared Simulation::node_shared() const {
  return m_impl->node_shared;
}

ExchangeStats Simulation::exchange_stats() const noexcept {
  return m_impl->exchange;
}

Simulation Simulation::gathered() const {
  auto impl = std::make_unique<Impl>(*m_impl->engine, m_impl->nodes, SimulationOptions{},
                                     Impl::Init::snapshot);
  impl->steps = m_impl->steps;
  impl->reports = m_impl->reports;
  for (std::size_t n = 0; n < m_impl->states.size(); ++n) {
    NodeState& from = m_impl->states[n];
    NodeState& to = impl->states[n];
    to.integrals = from.integrals;
    to.binding.report = from.binding.report;
    for (std::size_t i = 0; i < from.current.size(); ++i) {
      const Field& mine = *from.current[i];
      std::string bytes(
          static_cast<std::size_t>(mine.interior_count()) * codegen::size_of(mine.dtype()), '\0');
      mine.copy_interior_to(std::as_writable_bytes(std::span(bytes)));
      if (!m_impl->decomposition) {
        to.current[i]->copy_interior_from(std::as_bytes(std::span(bytes)));
        continue;
      }
      const auto all = m_impl->decomposition->comm->all_gather(bytes);
      const StateField& f = to.layout.fields[i];
      for (std::size_t r = 0; r < all.size(); ++r) {
        const ShardInfo info = m_impl->decomposition->shard_of(to.layout, static_cast<int>(r));
        std::vector<std::int64_t> shape = f.components;
        shape.insert(shape.end(), info.extent.begin(), info.extent.end());
        Field slab(f.name, f.dtype, std::move(shape),
                   std::vector<int>(f.components.size() + info.extent.size(), 0));
        slab.copy_interior_from(std::as_bytes(std::span(all[r])));
        copy_slab(*to.current[i], slab, info.offset, Direction::local_to_global);
      }
    }
  }
  return Simulation(std::move(impl));
}

std::int64_t Simulation::steps_taken() const noexcept {
  return m_impl->steps;
}

const std::vector<std::shared_ptr<const Node>>& Simulation::nodes() const noexcept {
  return m_impl->nodes;
}

const Node& Simulation::node(std::string_view name) const {
  return *m_impl->state_of(name).node;
}

const Field& Simulation::field(std::string_view node, std::string_view field) const {
  NodeState& s = m_impl->state_of(node);
  for (const auto& f : s.current) {
    if (f->name() == field) {
      return *f;
    }
  }
  throw Error(ErrorKind::usage, format("node \"{}\" has no state field \"{}\"", node, field));
}

std::span<const double> Simulation::integrals(std::string_view node) const {
  return m_impl->state_of(node).integrals;
}

std::span<const double> Simulation::integrals(std::size_t node_index) const {
  UWJIT_ASSERT(node_index < m_impl->states.size(), "Simulation::integrals: index out of range");
  return m_impl->states[node_index].integrals;
}

const StaticData& Simulation::bound_static_data(std::string_view node) const {
  return m_impl->state_of(node).bound;
}

Simulation::Rebound Simulation::rebind_static(std::string_view node, StaticArray array) {
  if (m_impl->decomposition) {
    throw Error(ErrorKind::usage, format("rebind_static: node \"{}\": not supported on a sharded "
                                         "simulation (its static data is sliced per rank)",
                                         node));
  }
  NodeState& s = m_impl->state_of(node);
  StaticData bound = s.bound;
  bound.replace(std::move(array));
  const bool same_kernel = static_data_hash(bound) == static_data_hash(s.bound);
  std::optional<Emitted> emitted;
  if (!same_kernel) {
    emitted.emplace(emit(*s.node, s.layout, bound, static_data_hash(bound)));
  }
  const KernelWriter& writer = same_kernel ? *s.writer : emitted->writer;
  Binding binding = bind_kernel(*s.node, s.layout, writer, bound, serial_padder(s.layout));
  if (same_kernel) {
    binding.kernel = s.binding.kernel;
    binding.report = s.binding.report;
  } else {
    binding.kernel.emplace(m_impl->engine->kernel(emitted->source));
    binding.report = {s.node->name(), binding.kernel->info(),
                      std::make_shared<const codegen::KernelSource>(emitted->source)};
    logger().info("node {}: rebound, kernel {} from {}", s.node->name(), binding.report.info.key,
                  engine::to_string(binding.report.info.tier));
  }
  // Everything that can fail has; commit.
  s.bound = std::move(bound);
  s.binding = std::move(binding);
  if (emitted) {
    s.writer.emplace(std::move(emitted->writer));
  }
  s.wire();
  for (std::size_t n = 0; n < m_impl->states.size(); ++n) {
    if (&m_impl->states[n] == &s) {
      m_impl->reports[n] = s.binding.report;
    }
  }
  return Rebound{!same_kernel, s.binding.report};
}

void Simulation::checkpoint(const std::filesystem::path& path) const {
  if (m_impl->decomposition && m_impl->decomposition->comm->size() > 1) {
    // One file for the job: the whole domain gathered, written by rank 0, its outcome shared so
    // that a failure raises the same error on every rank.
    engine::Comm& comm = *m_impl->decomposition->comm;
    const Simulation whole = gathered();
    std::string outcome;
    if (comm.rank() == 0) {
      try {
        whole.checkpoint(path);
      } catch (const Error& error) {
        outcome = format("{}\n{}", static_cast<int>(error.kind()), error.what());
      }
    }
    outcome = comm.broadcast(std::move(outcome), 0);
    if (!outcome.empty()) {
      const std::size_t cut = outcome.find('\n');
      throw Error(static_cast<ErrorKind>(std::stoi(outcome.substr(0, cut))),
                  outcome.substr(cut + 1));
    }
    return;
  }
  detail::ByteWriter out;
  out.raw(k_magic.data(), k_magic.size());
  out.u32(k_checkpoint_version);
  out.i64(m_impl->steps);
  out.u32(static_cast<std::uint32_t>(m_impl->states.size()));
  for (const auto& s : m_impl->states) {
    out.str(s.node->type());
    out.str(s.node->name());
    const auto& params = s.node->params().values();
    out.u32(static_cast<std::uint32_t>(params.size()));
    for (const auto& [key, value] : params) {
      out.str(key);
      out.value(value);
    }
    out.u32(static_cast<std::uint32_t>(s.current.size()));
    for (const auto& f : s.current) {
      out.str(f->name());
      out.u8(static_cast<std::uint8_t>(f->dtype()));
      out.u32(static_cast<std::uint32_t>(f->rank()));
      for (const std::int64_t n : f->shape()) {
        out.i64(n);
      }
      const std::size_t bytes =
          static_cast<std::size_t>(f->interior_count()) * codegen::size_of(f->dtype());
      out.u64(bytes);
      const std::size_t at = out.bytes().size();
      out.bytes().resize(at + bytes);
      f->copy_interior_to(
          std::span<std::byte>(reinterpret_cast<std::byte*>(out.bytes().data() + at), bytes));
    }
    out.u32(static_cast<std::uint32_t>(s.integrals.size()));
    for (std::size_t i = 0; i < s.integrals.size(); ++i) {
      out.str(s.layout.integrals[i]);
      out.f64(s.integrals[i]);
    }
  }
  const std::string checksum = cache::sha256_hex(out.bytes());
  out.raw(checksum.data(), checksum.size());

  // A reader never sees a torn checkpoint, and a symlink at its name is never followed.
  const std::string& bytes = out.bytes();
  try {
    posix::write_file_atomically(path, bytes, {.mode = 0644});
  } catch (const Error& e) {
    throw Error(ErrorKind::io, format("checkpoint {}: {}", path.string(), e.what()));
  }
  logger().info("checkpoint {} written at step {} ({} bytes)", path.string(), m_impl->steps,
                bytes.size());
}

namespace {

struct FieldRecord {
  std::string name;
  std::uint8_t dtype;
  std::vector<std::int64_t> shape;
  std::string_view bytes;
};

struct NodeRecord {
  std::string type;
  std::string name;
  Params params;
  std::vector<FieldRecord> fields;
  std::vector<std::pair<std::string, double>> integrals;
};

} // namespace

Simulation Simulation::restore(engine::Engine& engine, const std::filesystem::path& path,
                               const NodeFactory& factory, SimulationOptions options) {
  const std::string what = "checkpoint " + path.string();
  const auto read_file = [&] {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw Error(ErrorKind::io, format("{}: cannot open", what));
    }
    std::ostringstream slurp;
    slurp << in.rdbuf();
    return std::move(slurp).str();
  };
  std::string file;
  if (options.comm != nullptr && options.comm->size() > 1) {
    // Rank 0 reads (the ranks need not share a file system) and broadcasts the bytes, or why it
    // could not; every rank then parses the same bytes and raises the same errors.
    std::string message;
    if (options.comm->rank() == 0) {
      try {
        message = "1" + read_file();
      } catch (const Error& error) {
        message = std::string("0") + error.what();
      }
    }
    message = options.comm->broadcast(std::move(message), 0);
    if (message.front() == '0') {
      throw Error(ErrorKind::io, message.substr(1));
    }
    file = message.substr(1);
  } else {
    file = read_file();
  }
  if (file.size() < k_magic.size() || file.compare(0, k_magic.size(), k_magic) != 0) {
    throw Error(ErrorKind::io, format("{}: not a uwjit checkpoint (bad magic)", what));
  }
  if (file.size() < k_magic.size() + 4 + 64) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  const std::string_view body(file.data(), file.size() - 64);
  if (cache::sha256_hex(body) != std::string_view(file).substr(file.size() - 64)) {
    throw Error(ErrorKind::io, format("{}: truncated or corrupt (checksum mismatch)", what));
  }
  detail::ByteReader reader(body, what);
  (void)reader.raw(k_magic.size());
  const std::uint32_t version = reader.u32();
  if (version != k_checkpoint_version) {
    throw Error(ErrorKind::io, format("{}: format version {} (this uwjit reads version {})", what,
                                      version, k_checkpoint_version));
  }
  const std::int64_t steps = reader.i64();
  const std::uint32_t node_count = reader.u32();
  std::vector<NodeRecord> records;
  for (std::uint32_t n = 0; n < node_count; ++n) {
    NodeRecord record;
    record.type = reader.str();
    record.name = reader.str();
    const std::uint32_t param_count = reader.u32();
    for (std::uint32_t p = 0; p < param_count; ++p) {
      std::string key = reader.str();
      record.params.set(std::move(key), reader.value());
    }
    const std::uint32_t field_count = reader.u32();
    for (std::uint32_t f = 0; f < field_count; ++f) {
      FieldRecord field;
      field.name = reader.str();
      field.dtype = reader.u8();
      const std::uint32_t rank = reader.u32();
      for (std::uint32_t d = 0; d < rank && d < 16; ++d) {
        field.shape.push_back(reader.i64());
      }
      if (rank > 16) {
        throw Error(ErrorKind::io, format("{}: field \"{}\" has rank {}", what, field.name, rank));
      }
      field.bytes = reader.raw(reader.u64());
      record.fields.push_back(std::move(field));
    }
    const std::uint32_t integral_count = reader.u32();
    for (std::uint32_t i = 0; i < integral_count; ++i) {
      std::string name = reader.str();
      record.integrals.emplace_back(std::move(name), reader.f64());
    }
    records.push_back(std::move(record));
  }
  if (!reader.at_end()) {
    throw Error(ErrorKind::io, format("{}: unexpected bytes after the last node", what));
  }

  std::vector<std::shared_ptr<const Node>> nodes;
  for (const auto& record : records) {
    auto node = factory(record.type, record.name, record.params);
    if (node == nullptr || node->type() != record.type || node->name() != record.name) {
      throw Error(ErrorKind::usage, format("{}: the factory did not rebuild node \"{}\" of type "
                                           "\"{}\"",
                                           what, record.name, record.type));
    }
    nodes.push_back(std::move(node));
  }
  auto impl = std::make_unique<Impl>(engine, std::move(nodes), options, Impl::Init::skip);
  impl->steps = steps;
  for (std::size_t n = 0; n < records.size(); ++n) {
    NodeState& s = impl->states[n];
    const NodeRecord& record = records[n];
    if (record.fields.size() != s.current.size()) {
      throw Error(ErrorKind::usage,
                  format("{}: node \"{}\" has {} fields in the file, {} now", what, record.name,
                         record.fields.size(), s.current.size()));
    }
    for (const auto& saved : record.fields) {
      Field* target = nullptr;
      for (std::size_t i = 0; i < s.current.size(); ++i) {
        if (s.current[i]->name() == saved.name) {
          target = s.current[i].get();
        }
      }
      // The file holds the whole domain; a sharded rank keeps its slab of it.
      std::vector<std::int64_t> whole_shape;
      if (target != nullptr) {
        whole_shape = target->shape();
        const std::size_t lead = whole_shape.size() - s.shard.global.size();
        std::copy(s.shard.global.begin(), s.shard.global.end(), whole_shape.begin() + lead);
      }
      std::int64_t whole_count = 1;
      for (const std::int64_t n : whole_shape) {
        whole_count *= n;
      }
      if (target == nullptr || static_cast<std::uint8_t>(target->dtype()) != saved.dtype ||
          whole_shape != saved.shape ||
          saved.bytes.size() !=
              static_cast<std::size_t>(whole_count) * codegen::size_of(target->dtype())) {
        throw Error(ErrorKind::usage,
                    format("{}: field \"{}\" of node \"{}\" ({}) does not match the node's "
                           "state field",
                           what, saved.name, record.name, shape_text(saved.shape)));
      }
      const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(saved.bytes.data()),
                                             saved.bytes.size());
      if (whole_shape == target->shape()) {
        target->copy_interior_from(bytes);
      } else {
        Field whole(saved.name, target->dtype(), whole_shape,
                    std::vector<int>(whole_shape.size(), 0));
        whole.copy_interior_from(bytes);
        copy_slab(whole, *target, s.shard.offset, Direction::global_to_local);
      }
    }
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.next[i] != nullptr) {
        const std::size_t size = static_cast<std::size_t>(s.current[i]->interior_count()) *
                                 codegen::size_of(s.current[i]->dtype());
        std::vector<std::byte> interior(size);
        s.current[i]->copy_interior_to(interior);
        s.next[i]->copy_interior_from(interior);
      }
    }
    for (const auto& [name, value] : record.integrals) {
      const auto& declared = s.layout.integrals;
      const auto at = std::find(declared.begin(), declared.end(), name);
      if (at == declared.end()) {
        throw Error(ErrorKind::usage, format("{}: node \"{}\" has no domain integral \"{}\"", what,
                                             record.name, name));
      }
      s.integrals[static_cast<std::size_t>(at - declared.begin())] = value;
    }
  }
  logger().info("restored {} at step {}", path.string(), steps);
  return Simulation(std::move(impl));
}

} // namespace uwjit::runtime
