// The ranks of a sharded simulation build the same nodes: every rank describes its nodes (type,
// name, params and layout) and the simulation's options, the ranks compare digests, and either
// all go on or all raise the same Error(usage) naming the first difference and each rank's value.
#pragma once

#include <uwjit/comm/comm.hpp>
#include <uwjit/runtime/node.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace uwjit::runtime::detail {

/// One thing a rank says about its simulation: what it is ("param \"nx\"") and its value as text.
using Fact = std::pair<std::string, std::string>;

/// What a rank builds: one list of facts per node (type, name, each param in key order, then the
/// layout: domain, halos, boundaries, extent modes, axis names, fields with dtypes and components,
/// integrals, dt, stages, inputs), after one list about the simulation itself (`setup`).
struct Description {
  std::vector<Fact> setup;
  std::vector<std::vector<Fact>> nodes;
};

/// The facts of `node`; throws what its layout() throws (Error(usage) for an invalid layout).
[[nodiscard]] std::vector<Fact> describe(const Node& node);

/// The first difference between the ranks' descriptions (one per rank, in rank order), as the
/// message every rank raises, or "" when they agree. A pure function of its input, so every rank
/// that has the same gathered descriptions reaches the same verdict.
[[nodiscard]] std::string first_difference(const std::vector<Description>& ranks);

/// Collective: every rank describes `nodes` (with `setup`, the options every rank must share) and
/// the ranks agree: either every rank returns, or every rank throws the same Error(usage) naming
/// the node, the first fact that differs and each rank's value (or the same error a layout raised
/// on the lowest failing rank). One all-gather of a digest when the ranks agree.
void agree_on_nodes(comm::Collectives& comm, const std::vector<Fact>& setup,
                    const std::vector<std::shared_ptr<const Node>>& nodes);

} // namespace uwjit::runtime::detail
