// The decomposition: how the ranks split a node's domain into a Cartesian grid of shards, as
// pure functions of the layout, the options and a rank (no communication), and the copies
// between a whole domain and a shard.
#pragma once

#include "halo_exchange.hpp"
#include "node_layout.hpp"

#include <uwjit/comm/comm.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

/// The whole domain as one shard on a grid of one rank.
[[nodiscard]] ShardInfo serial_shard(const Layout& layout);

/// The most even split of `ranks` over `axes` counts, larger first (as MPI_Dims_create).
[[nodiscard]] std::vector<int> balanced_grid(int ranks, std::size_t axes);

/// "2x3".
[[nodiscard]] std::string grid_text(const std::vector<int>& grid);

// How the ranks split every node's domain: the sharded axes and the ranks along each.
struct Decomposition {
  comm::Comm* comm = nullptr;
  std::vector<int> axes;
  std::vector<int> grid;

  // Checks the options against the communicator; the same verdict on every rank: it reads only
  // the options and the rank count.
  static Decomposition make(const SimulationOptions& options);

  // Rank `rank`'s coordinates along each shard axis (row-major: the last varies fastest).
  [[nodiscard]] std::vector<int> coords_of(int rank) const;
  [[nodiscard]] int rank_of(const std::vector<int>& coords) const;

  // Checks that `node` can be split so (every rank reaches the same verdict: it reads only the
  // node and the options).
  void check(const Node& node, const Layout& layout, const StaticData& data) const;

  // Checked mode, serially too: every shard-mode array of `data` is sharded along one of its
  // trailing (domain) axes, with the domain's extent there, as a sharded run will slice it.
  // Error(usage) naming the node, the key and what differs.
  static void check_shard_axes(const Node& node, const Layout& layout, const StaticData& data);

  // The domain axis a shard-mode array's shard_axis stands for (its trailing axes are the
  // domain), or -1.
  static int domain_axis_of(const StaticArray& array, std::size_t dims);

  // Where rank `rank`'s shard of `layout`'s domain lies.
  [[nodiscard]] ShardInfo shard_of(const Layout& layout, int rank) const;

  // The rank `step` (+1 or -1) from `rank` along shard axis i, wrapping if `wrap`; -1 past an
  // edge.
  [[nodiscard]] int neighbour(std::size_t i, int step, bool wrap, int rank) const;

  // How each domain axis's halos are filled. Sharded axes over more than one rank exchange
  // (static data: never wrapping, always edge at the global boundary); a sharded axis over one
  // rank and every other axis is filled locally.
  enum class For { state, statics };
  // As seen from `rank`.
  [[nodiscard]] std::vector<AxisPlan> plans(const Layout& layout, For what, int rank) const;
};

/// This rank's part of a shard-mode array: its trailing axes are the domain, cut to the shard
/// along every sharded axis (not only along shard_axis, so that it matches the state's slab when
/// the domain is split along several axes).
[[nodiscard]] StaticArray slice(const StaticArray& array, const ShardInfo& shard);

/// Copies `global`'s interior cells that lie in `local`'s shard (its domain axes are the trailing
/// ones, starting at `offset`) into `local`'s interior, or the other way round.
enum class Direction { global_to_local, local_to_global };
void copy_slab(Field& global, Field& local, const std::vector<std::int64_t>& offset,
               Direction direction);

} // namespace uwjit::runtime::detail
