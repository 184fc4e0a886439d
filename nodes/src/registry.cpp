#include <uwjit/nodes/registry.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/nodes/fvm.hpp>
#include <uwjit/nodes/heat.hpp>
#include <uwjit/nodes/mlp.hpp>
#include <uwjit/nodes/pipe_flow.hpp>

#include <algorithm>
#include <array>
#include <new>

namespace uwjit::nodes {

namespace {

constexpr std::string_view k_along_x = "x, alone or with y and/or z";

struct Described {
  std::string_view type, summary, size_help, shard_help;
};

constexpr std::array<Described, 4> k_described = {{
    {"heat", "3-D diffusion (7-point stencil) with a static conductivity field",
     "N for an N^3 grid, or NXxNYxNZ (default 32)", k_along_x},
    {"pipe-flow", "D3Q19 lattice Boltzmann flow in a circular pipe, driven by a body force",
     "N for an N x 3N/4 x 3N/4 lattice (pipe along x), or NXxNYxNZ (default 32x24x24)", k_along_x},
    {"fvm", "finite-volume diffusion on an unstructured Voronoi mesh, to a steady state",
     "N generator points per row of the mesh (default 32)", ""},
    {"mlp", "an MLP surrogate right-hand side, integrated pointwise over a field",
     "N for an N^3 grid, or NXxNYxNZ (default 16)", ""},
}};

const BuiltinNode& builtin(const runtime::Node& node) {
  return dynamic_cast<const BuiltinNode&>(node);
}

// The kinds, made once: what each built-in node gives the driver.
std::vector<NodeKind> make_kinds() {
  std::vector<NodeKind> kinds;
  for (const auto& d : k_described) {
    const std::string type(d.type);
    const auto docs = param_docs(type);
    kinds.push_back({
        .type = type,
        .summary = std::string(d.summary),
        .node_params = default_params(type),
        .param_docs = std::vector<ParamDoc>(docs.begin(), docs.end()),
        .make = [](const std::string& t, const std::string& name, const runtime::Params& params)
            -> std::shared_ptr<const runtime::Node> { return make(t, name, params); },
        .sized = [type](std::span<const std::int64_t> size) { return sized_params(type, size); },
        .size_help = std::string(d.size_help),
        .shard_help = std::string(d.shard_help),
        .shard_problem =
            [type](std::span<const int> axes) {
              return shard_problem(type, std::vector<int>(axes.begin(), axes.end()));
            },
        .default_steps = [](const runtime::Node& node) { return builtin(node).default_steps(); },
        .updates_per_step =
            [](const runtime::Node& node) { return builtin(node).updates_per_step(); },
        .check = [](const runtime::Node& node, const runtime::Snapshot& snapshot,
                    const Trace& trace) { return builtin(node).judge(snapshot, trace); },
        .reads_slabs = true,
        .figures =
            [](const runtime::Node& node, const runtime::Snapshot& snapshot) {
              return builtin(node).figures(snapshot);
            },
    });
  }
  return kinds;
}

std::string known_types() {
  std::string out;
  for (const auto& kind : k_described) {
    out += out.empty() ? "" : ", ";
    out += kind.type;
  }
  return out;
}

[[noreturn]] void unknown(std::string_view type) {
  throw Error(ErrorKind::usage,
              format("unknown node type \"{}\" (built-in: {})", type, known_types()));
}

} // namespace

std::span<const NodeKind> kinds() noexcept {
  static const std::vector<NodeKind> k_kinds = make_kinds();
  return k_kinds;
}

runtime::Params default_params(std::string_view type) {
  if (type == "heat") {
    return HeatNode::defaults();
  }
  if (type == "pipe-flow") {
    return PipeFlowNode::defaults();
  }
  if (type == "fvm") {
    return FvmNode::defaults();
  }
  if (type == "mlp") {
    return MlpNode::defaults();
  }
  unknown(type);
}

std::span<const ParamDoc> param_docs(std::string_view type) {
  if (type == "heat") {
    return HeatNode::param_docs();
  }
  if (type == "pipe-flow") {
    return PipeFlowNode::param_docs();
  }
  if (type == "fvm") {
    return FvmNode::param_docs();
  }
  if (type == "mlp") {
    return MlpNode::param_docs();
  }
  unknown(type);
}

runtime::Params sized_params(std::string_view type, std::span<const std::int64_t> size) {
  runtime::Params params = default_params(type);
  if (size.size() != 1 && size.size() != 3) {
    throw Error(ErrorKind::usage, format("{}: a size is N or NXxNYxNZ", type));
  }
  for (const std::int64_t n : size) {
    if (n < 1) {
      throw Error(ErrorKind::usage, format("{}: size {} must be positive", type, n));
    }
  }
  if (type == "fvm") {
    if (size.size() != 1) {
      throw Error(ErrorKind::usage,
                  format("fvm: the size is one number, the generator points per mesh row"));
    }
    params.set("n", size[0]);
    return params;
  }
  std::array<std::int64_t, 3> n = {size[0], size[0], size[0]};
  if (size.size() == 3) {
    n = {size[0], size[1], size[2]};
  } else if (type == "pipe-flow") {
    n[1] = n[2] = std::max<std::int64_t>(1, (3 * size[0] + 3) / 4);
  }
  params.set("nx", n[0]).set("ny", n[1]).set("nz", n[2]);
  if (type == "pipe-flow") {
    PipeFlowNode::derive_from_size(params);
  }
  return params;
}

std::vector<std::string> size_params(std::string_view type) {
  (void)default_params(type); // an unknown type is an error here too
  if (type == "fvm") {
    return {"n"};
  }
  return {"nx", "ny", "nz"};
}

namespace {

std::shared_ptr<const BuiltinNode> make_node(std::string_view type, std::string name,
                                             const runtime::Params& params) {
  // A param the node does not know would be kept, written to checkpoints and ignored: refused.
  const auto docs = param_docs(type);
  for (const auto& [key, value] : params.values()) {
    if (std::none_of(docs.begin(), docs.end(), [&](const ParamDoc& d) { return d.name == key; })) {
      std::vector<std::string> known;
      for (const auto& d : docs) {
        known.emplace_back(d.name);
      }
      throw Error(ErrorKind::usage, format("{}: unknown param \"{}\" (known: {})", type,
                                           printable(key), join(known)));
    }
  }
  if (type == "heat") {
    return std::make_shared<HeatNode>(std::move(name), params);
  }
  if (type == "pipe-flow") {
    return std::make_shared<PipeFlowNode>(std::move(name), params);
  }
  if (type == "fvm") {
    return std::make_shared<FvmNode>(std::move(name), params);
  }
  if (type == "mlp") {
    return std::make_shared<MlpNode>(std::move(name), params);
  }
  unknown(type);
}

} // namespace

std::shared_ptr<const BuiltinNode> make(std::string_view type, std::string name,
                                        const runtime::Params& params) {
  try {
    return make_node(type, std::move(name), params);
  } catch (const std::bad_alloc&) {
    // fvm builds its mesh here.
    throw Error(ErrorKind::usage, format("{}: out of memory while building the node", type));
  }
}

std::string shard_problem(std::string_view type, const std::vector<int>& axes) {
  const Described* kind = nullptr;
  for (const auto& k : k_described) {
    if (k.type == type) {
      kind = &k;
    }
  }
  if (kind == nullptr) {
    unknown(type);
  }
  static constexpr std::string_view k_names[] = {"x", "y", "z"};
  std::string asked;
  for (const int axis : axes) {
    asked += asked.empty() ? "" : ",";
    asked += axis >= 0 && axis < 3 ? std::string(k_names[axis]) : std::to_string(axis);
  }
  std::string shardable;
  for (const auto& k : k_described) {
    if (!k.shard_help.empty()) {
      shardable += format("{}{}", shardable.empty() ? "" : " and ", k.type);
    }
  }
  if (kind->shard_help.empty()) {
    return format("{} cannot be sharded: none of its domain axes has a halo to exchange (only {} "
                  "can be sharded, along {})",
                  type, shardable, k_along_x);
  }
  if (std::find(axes.begin(), axes.end(), 0) == axes.end()) {
    return format("{} can be sharded along {} (its static arrays are cut along x), not along {}",
                  type, kind->shard_help, asked);
  }
  return {};
}

runtime::NodeFactory factory() {
  return [](const std::string& type, const std::string& name,
            const runtime::Params& params) -> std::shared_ptr<const runtime::Node> {
    return make(type, name, params);
  };
}

} // namespace uwjit::nodes
