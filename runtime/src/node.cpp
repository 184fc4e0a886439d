#include <uwjit/runtime/node.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

namespace uwjit::runtime {

Field& State::operator[](std::string_view name) const {
  for (Field* field : m_fields) {
    if (field->name() == name) {
      return *field;
    }
  }
  throw Error(ErrorKind::usage, format("state has no field \"{}\"", name));
}

Node::Node(std::string type, std::string name, Params params)
    : m_type(std::move(type)), m_name(std::move(name)), m_params(std::move(params)) {
  if (m_type.empty() || m_name.empty()) {
    throw Error(ErrorKind::usage,
                format("node type \"{}\", name \"{}\": both must be non-empty", m_type, m_name));
  }
}

Node::~Node() = default;

const StaticData& Node::static_data() const {
  std::call_once(m_static_once, [this] { m_static.emplace(build_static_data()); });
  return *m_static;
}

std::string Node::static_data_hash() const {
  return runtime::static_data_hash(static_data());
}

StaticData Node::build_static_data() const {
  return {};
}

std::vector<int> Node::halo_width() const {
  return std::vector<int>(domain().size(), 0);
}

std::vector<Boundary> Node::boundary() const {
  return std::vector<Boundary>(domain().size(), Boundary::edge);
}

std::vector<codegen::ExtentMode> Node::extent_modes() const {
  return std::vector<codegen::ExtentMode>(domain().size(), codegen::ExtentMode::compiled);
}

std::vector<std::string> Node::axis_names() const {
  std::vector<std::string> names = {"nx", "ny", "nz"};
  names.resize(std::min(domain().size(), names.size()));
  return names;
}

std::vector<std::string> Node::domain_integral_fields() const {
  return {};
}

double Node::dt() const {
  return m_params.contains("dt") ? m_params.get_double("dt") : 1.0;
}

codegen::KernelOptions Node::kernel_options() const {
  return {};
}

} // namespace uwjit::runtime
