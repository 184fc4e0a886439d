#include "node_layout.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <set>

namespace uwjit::runtime::detail {

[[noreturn]] void node_error(const Node& node, std::string_view message) {
  throw Error(ErrorKind::usage, format("node \"{}\": {}", node.name(), message));
}

Layout read_layout(const Node& node) {
  Layout layout;
  layout.domain = node.domain();
  const std::size_t axes = layout.domain.size();
  if (axes < 1 || axes > UWJIT_MAX_AXES) {
    node_error(node, format("the domain needs 1 to {} axes, got {}", UWJIT_MAX_AXES, axes));
  }
  for (std::size_t d = 0; d < axes; ++d) {
    if (layout.domain[d] < 1) {
      node_error(node, format("domain axis {} has extent {} (need >= 1)", d, layout.domain[d]));
    }
  }
  layout.halo = node.halo_width();
  layout.boundary = node.boundary();
  layout.modes = node.extent_modes();
  layout.axis_names = node.axis_names();
  auto check_length = [&](std::size_t size, std::string_view what) {
    if (size != axes) {
      node_error(node, format("{} has {} entries for {} domain axes", what, size, axes));
    }
  };
  check_length(layout.halo.size(), "halo_width()");
  check_length(layout.boundary.size(), "boundary()");
  check_length(layout.modes.size(), "extent_modes()");
  check_length(layout.axis_names.size(), "axis_names()");
  for (std::size_t d = 0; d < axes; ++d) {
    if (layout.halo[d] < 0) {
      node_error(node, format("halo width {} on axis {} is negative", layout.halo[d], d));
    }
    if (layout.boundary[d] == Boundary::periodic && layout.halo[d] > layout.domain[d]) {
      node_error(node, format("a periodic halo of {} on axis {} is wider than the extent {}",
                              layout.halo[d], d, layout.domain[d]));
    }
  }
  layout.fields = node.state_fields();
  if (layout.fields.empty()) {
    node_error(node, "declares no state field");
  }
  std::set<std::string> names;
  for (const auto& f : layout.fields) {
    if (!names.insert(f.name).second) {
      node_error(node, format("state field \"{}\" is declared twice", f.name));
    }
    if (!codegen::is_supported(f.dtype)) {
      node_error(node, format("state field \"{}\" has an unsupported dtype", f.name));
    }
    for (const std::int64_t c : f.components) {
      if (c < 1) {
        node_error(node, format("state field \"{}\" has a component extent {}", f.name, c));
      }
    }
  }
  layout.integrals = node.domain_integral_fields();
  std::set<std::string> integral_names;
  for (const auto& name : layout.integrals) {
    if (!integral_names.insert(name).second) {
      node_error(node, format("domain integral \"{}\" is declared twice", name));
    }
    if (names.count(name) != 0) {
      node_error(node, format("\"{}\" is both a state field and a domain integral", name));
    }
  }
  layout.dt = node.dt();
  return layout;
}

} // namespace uwjit::runtime::detail
