// The built-in nodes by type name: their kinds (what `uwjit run` runs), defaults, sizes,
// construction, and the checkpoint factory.
#pragma once

#include <uwjit/driver/node_kind.hpp>
#include <uwjit/nodes/builtin.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/value.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::nodes {

/// A built-in node type: a driver::NodeKind (what `uwjit run` runs), with the built-in node's
/// check, default run length, updates per step and pictures.
using NodeKind = driver::NodeKind;

/// Every built-in node type, in a fixed order.
[[nodiscard]] std::span<const NodeKind> kinds() noexcept;

/// The complete default params of `type`. Throws Error(usage) for an unknown type, listing the
/// known ones.
[[nodiscard]] runtime::Params default_params(std::string_view type);

/// What each param of `type` means, its unit and accepted range, in the order of
/// default_params. Throws Error(usage) for an unknown type.
[[nodiscard]] std::span<const ParamDoc> param_docs(std::string_view type);

/// The default params of `type` for a size: one number N or three NX, NY, NZ (what each means
/// is the kind's size_help; params that follow from the size, such as a pipe's radius, follow
/// it). Throws Error(usage) for a size the type does not take.
[[nodiscard]] runtime::Params sized_params(std::string_view type,
                                           std::span<const std::int64_t> size);

/// The params a size gives (sized_params): "nx", "ny" and "nz", or "n" for fvm. Those that merely
/// follow from it (a pipe's radius) are not among them. Throws Error(usage) for an unknown type.
[[nodiscard]] std::vector<std::string> size_params(std::string_view type);

/// A node of `type` named `name` with `params` (complete: start from default_params). Throws
/// Error(usage) naming the param for a missing or out-of-range value.
[[nodiscard]] std::shared_ptr<const BuiltinNode> make(std::string_view type, std::string name,
                                                      const runtime::Params& params);

/// What is wrong with sharding a node of `type` along `axes` (0 x, 1 y, 2 z), or "" if nothing:
/// fvm and mlp cannot be sharded (no domain axis with a halo to exchange), heat and pipe-flow
/// only along x, alone or with y and/or z (their static arrays are cut along x). The message
/// names the node, the axes asked for and what it accepts. Error(usage) for an unknown type.
[[nodiscard]] std::string shard_problem(std::string_view type, const std::vector<int>& axes);

/// A NodeFactory for Simulation::restore that builds the built-in nodes.
[[nodiscard]] runtime::NodeFactory factory();

} // namespace uwjit::nodes
