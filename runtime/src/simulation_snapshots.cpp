// A simulation's snapshots: gathered() copies the whole domain (under MPI, all-gathered from the
// ranks), local_snapshot() a rank's slab alone; both describe each node alike (described()).
#include <uwjit/runtime/simulation.hpp>

#include "decomposition.hpp"
#include "node_layout.hpp"
#include "simulation_impl.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace uwjit::runtime {

using namespace detail; // the runtime's own

namespace {

// Node state `s` in a snapshot, all but its fields and slab: its integrals, reports, rebound keys
// and static data (serially the data bound now; sharded, the node's own arrays, built lazily, so
// that a slab's part of one computed by box computes that slab alone).
Snapshot::NodeData described(const NodeState& s, bool sharded) {
  Snapshot::NodeData data{s.node,
                          {},
                          s.integrals,
                          sharded ? s.node->static_data() : s.bound,
                          s.stages[0].binding.report,
                          std::vector<std::string>(s.rebound.begin(), s.rebound.end())};
  for (const auto& stage : s.stages) {
    data.stage_reports.push_back(stage.binding.report);
  }
  return data;
}

} // namespace

Snapshot Simulation::gathered() const {
  m_impl->pull_state();
  std::vector<Snapshot::NodeData> nodes;
  for (const NodeState& s : m_impl->states) {
    Snapshot::NodeData data = described(s, m_impl->decomposition.has_value());
    const Layout whole = read_layout(*s.node);
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      const Field& mine = *s.current[i];
      const StateField& f = whole.fields[i];
      auto field = std::make_shared<Field>(f.name, f.dtype, whole.shape(f), whole.halos(f));
      std::string bytes(
          static_cast<std::size_t>(mine.interior_count()) * codegen::size_of(mine.dtype()), '\0');
      mine.copy_interior_to(std::as_writable_bytes(std::span(bytes)));
      if (!m_impl->decomposition) {
        field->copy_interior_from(std::as_bytes(std::span(bytes)));
      } else {
        const auto all = m_impl->decomposition->comm->all_gather(bytes);
        for (std::size_t r = 0; r < all.size(); ++r) {
          const ShardInfo info = m_impl->decomposition->shard_of(whole, static_cast<int>(r));
          std::vector<std::int64_t> shape = f.components;
          shape.insert(shape.end(), info.extent.begin(), info.extent.end());
          Field slab(f.name, f.dtype, std::move(shape),
                     std::vector<int>(f.components.size() + info.extent.size(), 0));
          slab.copy_interior_from(std::as_bytes(std::span(all[r])));
          copy_slab(*field, slab, info.offset, Direction::local_to_global);
        }
      }
      data.fields.push_back(std::move(field));
    }
    nodes.push_back(std::move(data));
  }
  return Snapshot(m_impl->steps, std::move(nodes));
}

Snapshot Simulation::local_snapshot() const {
  if (!m_impl->decomposition) {
    return gathered();
  }
  return m_impl->slab_snapshot();
}

Snapshot Simulation::Impl::slab_snapshot(std::string_view only) {
  pull_state();
  const int rank = decomposition->comm->rank();
  std::vector<Snapshot::NodeData> nodes;
  for (const NodeState& s : states) {
    if (!only.empty() && s.node->name() != only) {
      continue;
    }
    Snapshot::NodeData data = described(s, true);
    const Layout whole = read_layout(*s.node);
    const ShardInfo info = decomposition->shard_of(whole, rank);
    data.slab = Slab{info.offset, info.extent, info.global};
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      const Field& mine = *s.current[i];
      const StateField& f = whole.fields[i];
      std::vector<std::int64_t> shape = f.components;
      shape.insert(shape.end(), info.extent.begin(), info.extent.end());
      std::vector<int> no_halo(shape.size(), 0);
      auto field = std::make_shared<Field>(f.name, f.dtype, std::move(shape), std::move(no_halo));
      std::string bytes(
          static_cast<std::size_t>(mine.interior_count()) * codegen::size_of(mine.dtype()), '\0');
      mine.copy_interior_to(std::as_writable_bytes(std::span(bytes)));
      field->copy_interior_from(std::as_bytes(std::span(bytes)));
      data.fields.push_back(std::move(field));
    }
    nodes.push_back(std::move(data));
  }
  return Snapshot(steps, std::move(nodes), decomposition->comm);
}

} // namespace uwjit::runtime
