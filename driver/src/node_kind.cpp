#include <uwjit/driver/node_kind.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <new>

namespace uwjit::driver {

const NodeKind& find_kind(std::span<const NodeKind> kinds, std::string_view type) {
  std::vector<std::string> types;
  for (const auto& kind : kinds) {
    if (kind.type == type) {
      return kind;
    }
    types.push_back(kind.type);
  }
  throw Error(ErrorKind::usage, format("unknown node type \"{}\" (known: {}){}", printable(type),
                                       join(types), did_you_mean(type, types)));
}

std::string params_help(const NodeKind& kind, const runtime::Params& params) {
  std::string out =
      format("{} params (--set NAME=VALUE; the defaults are for this --size):\n", kind.type);
  const auto& values = params.values();
  std::vector<std::string> documented;
  auto line = [&](std::string_view name, const ParamDoc* doc) {
    const auto it = values.find(name);
    out += format("  {} = {}", name, it == values.end() ? "" : it->second.text());
    if (doc == nullptr) {
      out += "\n";
      return;
    }
    if (!doc->range.empty()) {
      out += doc->unit.empty() ? format("  (accepted: {})", doc->range)
                               : format("  ({}; accepted: {})", doc->unit, doc->range);
    } else if (!doc->unit.empty()) {
      out += format("  ({})", doc->unit);
    }
    out += format("\n      {}\n", doc->meaning);
  };
  for (const auto& doc : kind.param_docs) {
    line(doc.name, &doc);
    documented.push_back(doc.name);
  }
  for (const auto& [name, value] : values) { // a param the kind does not document
    if (std::find(documented.begin(), documented.end(), name) == documented.end()) {
      line(name, nullptr);
    }
  }
  return out;
}

bool wants_params_help(std::span<const std::string> sets) {
  return std::find(sets.begin(), sets.end(), "help") != sets.end();
}

runtime::Params sized_params(const NodeKind& kind, std::span<const std::int64_t> size) {
  if (!kind.sized) {
    throw Error(ErrorKind::usage,
                format("{}: takes no --size (set its node params with --set)", kind.type));
  }
  return kind.sized(size);
}

std::shared_ptr<const runtime::Node> make_node(const NodeKind& kind, std::string name,
                                               const runtime::Params& node_params) {
  // A param the kind does not have would be kept, written to checkpoints and ignored: refused.
  const auto& known = kind.node_params.values();
  for (const auto& [key, value] : node_params.values()) {
    if (known.find(key) == known.end()) {
      std::vector<std::string> names;
      for (const auto& [k, v] : known) {
        names.push_back(k);
      }
      throw Error(ErrorKind::usage, format("{}: unknown param \"{}\" (known: {})", kind.type,
                                           printable(key), join(names)));
    }
  }
  if (!kind.make) {
    throw Error(ErrorKind::usage, format("node kind \"{}\" has no make function", kind.type));
  }
  try {
    auto node = kind.make(kind.type, std::move(name), node_params);
    if (!node) {
      throw Error(ErrorKind::usage, format("node kind \"{}\": make returned no node", kind.type));
    }
    return node;
  } catch (const std::bad_alloc&) {
    // A node may build large things (a mesh) when it is made.
    throw Error(ErrorKind::usage, format("{}: out of memory while building the node", kind.type));
  }
}

runtime::NodeFactory factory(std::span<const NodeKind> kinds) {
  auto copy = std::make_shared<const std::vector<NodeKind>>(kinds.begin(), kinds.end());
  return [copy](const std::string& type, const std::string& name,
                const runtime::Params& node_params) -> std::shared_ptr<const runtime::Node> {
    return make_node(find_kind(*copy, type), name, node_params);
  };
}

} // namespace uwjit::driver
