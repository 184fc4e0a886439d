// The static data whose hash is pinned by a golden value and compared across processes.
#pragma once

#include <uwjit/runtime/static_data.hpp>

#include <cstdint>
#include <vector>

namespace uwjit::tests {

/// Arrays of several dtypes and both replications, and scalars of every kind, added in an
/// order other than the sorted one. `fill` sets every array element (contents never enter the
/// hash).
inline runtime::StaticData sample_static_data(double fill = 1.0) {
  using runtime::Replication;
  using runtime::StaticArray;
  runtime::StaticData data;
  data.add(StaticArray::from_vector("pipe_wall", std::vector<std::uint8_t>(4 * 5 * 6, 1), {4, 5, 6},
                                    Replication::shard, 0));
  data.add(StaticArray::from_vector("mesh_area", std::vector<double>(10, fill), {10}));
  data.add(StaticArray::from_vector("owner", std::vector<std::int32_t>(10, 3), {10}));
  data.add("N_cells", std::int64_t{10});
  data.add("ratio", 0.1);
  data.add("name", "pipe");
  data.add("cartesian_shape", runtime::Value::Tuple{4, 5, 6.5, "x"});
  return data;
}

} // namespace uwjit::tests
