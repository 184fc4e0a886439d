#include <uwjit/runtime/snapshot.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <uwjit/comm/comm.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace uwjit::runtime {

Snapshot::Snapshot(std::int64_t steps, std::vector<NodeData> nodes, comm::Collectives* ranks)
    : m_steps(steps), m_nodes(std::move(nodes)), m_ranks(ranks) {
  std::set<std::string> names;
  for (auto& data : m_nodes) {
    if (data.node == nullptr) {
      throw Error(ErrorKind::usage, "snapshot: a null node");
    }
    if (!names.insert(data.node->name()).second) {
      throw Error(ErrorKind::usage,
                  format("snapshot: two nodes are named \"{}\"", data.node->name()));
    }
    const auto domain = data.node->domain();
    if (data.slab.global.empty()) {
      data.slab = Slab::whole(domain);
    } else if (data.slab.global != domain || data.slab.offset.size() != domain.size() ||
               data.slab.extent.size() != domain.size()) {
      throw Error(
          ErrorKind::usage,
          format("snapshot: node \"{}\": its slab is not one of its domain", data.node->name()));
    }
    m_node_list.push_back(data.node);
    m_reports.push_back(data.report);
    if (data.stage_reports.empty()) {
      m_kernel_reports.push_back(data.report);
    } else {
      m_kernel_reports.insert(m_kernel_reports.end(), data.stage_reports.begin(),
                              data.stage_reports.end());
    }
  }
}

const Snapshot::NodeData& Snapshot::data_of(std::string_view name) const {
  for (const auto& data : m_nodes) {
    if (data.node->name() == name) {
      return data;
    }
  }
  throw Error(ErrorKind::usage, format("snapshot has no node \"{}\"", name));
}

const Node& Snapshot::node(std::string_view name) const {
  return *data_of(name).node;
}

const Field& Snapshot::field(std::string_view node, std::string_view field) const {
  for (const auto& f : data_of(node).fields) {
    if (f->name() == field) {
      return *f;
    }
  }
  throw Error(ErrorKind::usage, format("node \"{}\" has no state field \"{}\"", node, field));
}

std::span<const double> Snapshot::integrals(std::string_view node) const {
  return data_of(node).integrals;
}

std::span<const double> Snapshot::integrals(std::size_t node_index) const {
  if (node_index >= m_nodes.size()) {
    throw Error(ErrorKind::usage, format("snapshot: node index {} out of range ({} nodes)",
                                         node_index, m_nodes.size()));
  }
  return m_nodes[node_index].integrals;
}

const Slab& Snapshot::slab(std::string_view node) const {
  return data_of(node).slab;
}

void Snapshot::sum_over_ranks(std::span<double> values) const {
  if (m_ranks == nullptr) {
    return;
  }
  const auto all = m_ranks->all_gather(
      std::string_view(reinterpret_cast<const char*>(values.data()), values.size_bytes()));
  std::vector<double> sums(values.size(), 0.0);
  for (const auto& part : all) { // in rank order: the same bits on every rank
    if (part.size() != values.size_bytes()) {
      throw Error(ErrorKind::usage, format("sum_over_ranks: a rank gave {} values, this rank {}",
                                           part.size() / sizeof(double), values.size()));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      double value = 0;
      std::memcpy(&value, part.data() + i * sizeof(double), sizeof(double));
      sums[i] += value;
    }
  }
  std::copy(sums.begin(), sums.end(), values.begin());
}

double Snapshot::max_over_ranks(double value) const {
  if (m_ranks == nullptr) {
    return value;
  }
  double most = value;
  for (const auto& part :
       m_ranks->all_gather(std::string_view(reinterpret_cast<const char*>(&value), sizeof value))) {
    double other = 0;
    std::memcpy(&other, part.data(), sizeof other);
    most = std::isnan(most) || std::isnan(other) ? std::numeric_limits<double>::quiet_NaN()
                                                 : std::max(most, other);
  }
  return most;
}

void Snapshot::total_over_ranks(std::span<double> values) const {
  if (m_ranks != nullptr) {
    m_ranks->all_reduce_sum(values);
  }
}

const StaticData& Snapshot::bound_static_data(std::string_view node) const {
  return data_of(node).bound;
}

} // namespace uwjit::runtime
