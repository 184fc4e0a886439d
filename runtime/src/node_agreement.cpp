#include "node_agreement.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace uwjit::runtime::detail {

namespace {

std::string in_quotes(std::string_view text) {
  return format("\"{}\"", text);
}

std::string names_of(const std::vector<std::string>& names) {
  if (names.empty()) {
    return "(none)";
  }
  std::vector<std::string> items;
  for (const auto& name : names) {
    items.push_back(in_quotes(name));
  }
  return join(items);
}

std::string encode(const Description& description) {
  ByteWriter writer;
  auto facts = [&](const std::vector<Fact>& list) {
    writer.u32(static_cast<std::uint32_t>(list.size()));
    for (const auto& [what, value] : list) {
      writer.str(what);
      writer.str(value);
    }
  };
  facts(description.setup);
  writer.u32(static_cast<std::uint32_t>(description.nodes.size()));
  for (const auto& node : description.nodes) {
    facts(node);
  }
  return std::move(writer.bytes());
}

Description decode(std::string_view bytes, int rank) {
  ByteReader reader(bytes, format("simulation: the description of rank {}'s nodes", rank));
  auto facts = [&] {
    std::vector<Fact> list(reader.u32());
    for (auto& [what, value] : list) {
      what = reader.str();
      value = reader.str();
    }
    return list;
  };
  Description description;
  description.setup = facts();
  description.nodes.resize(reader.u32());
  for (auto& node : description.nodes) {
    node = facts();
  }
  return description;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> numbers;
  for (const int r : ranks) {
    numbers.push_back(std::to_string(r));
  }
  return format("{} {}", ranks.size() == 1 ? "rank" : "ranks", join(numbers, ","));
}

// "8 on ranks 0,2 and 12 on rank 1": each distinct value once, in the order of the first rank
// that has it.
std::string values_by_rank(const std::vector<std::string>& values) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (std::size_t r = 0; r < values.size(); ++r) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == values[r]; });
    if (group == groups.end()) {
      groups.push_back({values[r], {}});
      group = groups.end() - 1;
    }
    group->second.push_back(static_cast<int>(r));
  }
  std::string out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    out += g == 0 ? "" : g + 1 == groups.size() ? " and " : ", ";
    out += format("{} on {}", groups[g].first, rank_list(groups[g].second));
  }
  return out;
}

// The first fact (in the order of the first rank that states it) whose value is not the same on
// every rank: "what is A on rank 0 and B on rank 1".
std::optional<std::string>
first_fact_difference(const std::vector<const std::vector<Fact>*>& lists) {
  std::vector<std::string> order;
  for (const auto* list : lists) {
    for (const auto& fact : *list) {
      if (std::find(order.begin(), order.end(), fact.first) == order.end()) {
        order.push_back(fact.first);
      }
    }
  }
  for (const auto& what : order) {
    std::vector<std::string> values;
    for (const auto* list : lists) {
      const auto found = std::find_if(list->begin(), list->end(),
                                      [&](const Fact& fact) { return fact.first == what; });
      values.push_back(found == list->end() ? "(not set)" : found->second);
    }
    if (std::any_of(values.begin(), values.end(), [&](const auto& v) { return v != values[0]; })) {
      return format("{} is {}", what, values_by_rank(values));
    }
  }
  return std::nullopt;
}

std::string value_of(const std::vector<Fact>& facts, std::string_view what) {
  for (const auto& [name, value] : facts) {
    if (name == what) {
      return value;
    }
  }
  return "?";
}

constexpr std::string_view k_rule =
    "every rank must build the same nodes (type, name, params and layout) with the same options";

} // namespace

std::vector<Fact> describe(const Node& node) {
  std::vector<Fact> facts;
  facts.emplace_back("type", in_quotes(node.type()));
  facts.emplace_back("name", in_quotes(node.name()));
  for (const auto& [key, value] : node.params().values()) {
    facts.emplace_back(format("param \"{}\"", key), value.text());
  }
  const NodeLayout layout = node.layout();
  std::vector<std::int64_t> cells;
  for (const auto& axis : layout.axes) {
    cells.push_back(axis.cells);
  }
  facts.emplace_back("the domain", shape_text(cells));
  for (std::size_t d = 0; d < layout.axes.size(); ++d) {
    const DomainAxis& axis = layout.axes[d];
    facts.emplace_back(format("the halo of axis {}", d), std::to_string(axis.halo));
    facts.emplace_back(format("the boundary of axis {}", d), to_string(axis.boundary));
    facts.emplace_back(format("the extent of axis {}", d),
                       std::string(codegen::to_string(axis.extent)));
    facts.emplace_back(format("the name of axis {}", d), in_quotes(axis.name));
  }
  std::vector<std::string> fields;
  for (const auto& f : layout.fields) {
    fields.push_back(f.name);
  }
  facts.emplace_back("the state fields", names_of(fields));
  for (const auto& f : layout.fields) {
    facts.emplace_back(format("the dtype of field \"{}\"", f.name),
                       std::string(codegen::to_string(f.dtype)));
    facts.emplace_back(format("the components of field \"{}\"", f.name), shape_text(f.components));
  }
  facts.emplace_back("the integrals", names_of(layout.integrals));
  facts.emplace_back("dt", Value(node.dt()).text());
  facts.emplace_back("the stages", std::to_string(layout.stages));
  std::vector<std::string> inputs;
  for (const auto& input : layout.inputs) {
    inputs.push_back(format("{}.{} as {}", input.node, input.field, input.as));
  }
  facts.emplace_back("the inputs", names_of(inputs));
  return facts;
}

std::string first_difference(const std::vector<Description>& ranks) {
  std::vector<const std::vector<Fact>*> setups;
  for (const auto& rank : ranks) {
    setups.push_back(&rank.setup);
  }
  if (const auto difference = first_fact_difference(setups)) {
    return format("simulation: the ranks disagree on its options: {}; {}", *difference, k_rule);
  }
  std::vector<std::string> counts;
  for (const auto& rank : ranks) {
    std::vector<std::string> names;
    for (const auto& node : rank.nodes) {
      names.push_back(value_of(node, "name"));
    }
    counts.push_back(format("{} node{} ({})", rank.nodes.size(), rank.nodes.size() == 1 ? "" : "s",
                            join(names)));
  }
  if (std::any_of(counts.begin(), counts.end(), [&](const auto& c) { return c != counts[0]; })) {
    return format("simulation: the ranks build different nodes: {}; {}", values_by_rank(counts),
                  k_rule);
  }
  const std::size_t count = ranks.empty() ? 0 : ranks[0].nodes.size();
  for (std::size_t n = 0; n < count; ++n) {
    std::vector<const std::vector<Fact>*> lists;
    for (const auto& rank : ranks) {
      lists.push_back(&rank.nodes[n]);
    }
    if (const auto difference = first_fact_difference(lists)) {
      return format("simulation: the ranks disagree on node {} of {} ({}): {}; {}", n + 1, count,
                    value_of(ranks[0].nodes[n], "name"), *difference, k_rule);
    }
  }
  return {};
}

void agree_on_nodes(comm::Collectives& comm, const std::vector<Fact>& setup,
                    const std::vector<std::shared_ptr<const Node>>& nodes) {
  // A node's layout() is its own code: it may fail on some ranks only.
  const std::string mine = comm::together(comm, [&] {
    Description description{setup, {}};
    for (const auto& node : nodes) {
      if (node == nullptr) {
        throw Error(ErrorKind::usage, "simulation: a null node");
      }
      description.nodes.push_back(describe(*node));
    }
    return encode(description);
  });
  const auto digests = comm.all_gather(cache::sha256_hex(mine));
  if (std::all_of(digests.begin(), digests.end(), [&](const auto& d) { return d == digests[0]; })) {
    return;
  }
  // Every rank knows that they differ: every rank takes part in the second gather.
  const auto all = comm.all_gather(mine);
  std::vector<Description> ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    ranks.push_back(decode(all[r], static_cast<int>(r)));
  }
  const std::string message = first_difference(ranks);
  throw Error(ErrorKind::usage, message.empty()
                                    ? format("simulation: the ranks' descriptions of their nodes "
                                             "differ; {}",
                                             k_rule)
                                    : message);
}

} // namespace uwjit::runtime::detail
