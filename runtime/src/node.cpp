#include <uwjit/runtime/node.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <cmath>

#include <new>

namespace uwjit::runtime {

Slab Slab::whole(const std::vector<std::int64_t>& cells) {
  return {std::vector<std::int64_t>(cells.size(), 0), cells, cells};
}

Field& State::operator[](std::string_view name) const {
  for (Field* field : m_fields) {
    if (field->name() == name) {
      return *field;
    }
  }
  throw Error(ErrorKind::usage, format("state has no field \"{}\"", name));
}

std::vector<DomainAxis> NodeLayout::grid(const std::vector<std::int64_t>& cells, int halo,
                                         Boundary boundary, codegen::ExtentMode extent) {
  std::vector<DomainAxis> axes;
  for (const std::int64_t n : cells) {
    axes.push_back({.cells = n, .halo = halo, .boundary = boundary, .extent = extent});
  }
  return axes;
}

Node::Node(std::string type, std::string name, Params node_params)
    : m_type(std::move(type)), m_name(std::move(name)), m_params(std::move(node_params)) {
  // Output files are named after the node: a name is one plain file name, whoever chose it.
  for (const auto& [what, text] : {std::pair{"type", &m_type}, std::pair{"name", &m_name}}) {
    if (!is_safe_name(*text)) {
      throw Error(ErrorKind::usage,
                  format("node {} \"{}\": expected 1 to 64 letters, digits, '_', '-' or '.', "
                         "starting with a letter, a digit or '_'",
                         what, printable(*text)));
    }
  }
}

Node::~Node() = default;

const StaticData& Node::static_data() const {
  std::call_once(m_static_once, [this] {
    try {
      m_static.emplace(build_static_data());
    } catch (const std::bad_alloc&) {
      throw Error(ErrorKind::usage,
                  format("node \"{}\": out of memory while building its static data", m_name));
    }
  });
  return *m_static;
}

std::string Node::static_data_hash() const {
  return runtime::static_data_hash(static_data());
}

StaticData Node::build_static_data() const {
  return {};
}

std::vector<std::int64_t> Node::domain() const {
  std::vector<std::int64_t> cells;
  for (const auto& axis : layout().axes) {
    cells.push_back(axis.cells);
  }
  return cells;
}

void check_dt(double dt, std::string_view what) {
  if (!std::isfinite(dt) || dt <= 0) {
    throw Error(ErrorKind::usage, format("{}: expected a finite number > 0, got {}", what, dt));
  }
}

double Node::dt() const {
  if (const auto dt = layout().dt) {
    return *dt;
  }
  return m_params.contains("dt") ? m_params.get_double("dt") : 1.0;
}

void Node::emit_update(codegen::KernelWriter& /*writer*/) const {
  throw Error(ErrorKind::usage, format("node \"{}\": emits no kernel (override emit_update, or "
                                       "emit_stage for a node with several stages)",
                                       m_name));
}

void Node::emit_stage(codegen::KernelWriter& writer, int stage) const {
  if (stage != 0) {
    throw Error(
        ErrorKind::usage,
        format("node \"{}\": declares several stages but does not override emit_stage", m_name));
  }
  emit_update(writer);
}

codegen::KernelOptions Node::kernel_options() const {
  return {};
}

} // namespace uwjit::runtime
