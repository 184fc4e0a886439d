#include "node_layout.hpp"

#include "face_fill.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <set>

namespace uwjit::runtime::detail {

[[noreturn]] void node_error(const Node& node, std::string_view message) {
  throw Error(ErrorKind::usage, format("node \"{}\": {}", node.name(), message));
}

Layout read_layout(const Node& node) {
  const NodeLayout declared = node.layout();
  Layout layout;
  const std::size_t axes = declared.axes.size();
  if (axes < 1 || axes > UWJIT_MAX_AXES) {
    node_error(node, format("the domain needs 1 to {} axes, got {}", UWJIT_MAX_AXES, axes));
  }
  static constexpr const char* k_default_names[] = {"nx", "ny", "nz"};
  for (std::size_t d = 0; d < axes; ++d) {
    const DomainAxis& axis = declared.axes[d];
    if (axis.cells < 1) {
      node_error(node, format("domain axis {} has {} cells (need >= 1)", d, axis.cells));
    }
    if (axis.halo < 0) {
      node_error(node, format("halo width {} on axis {} is negative", axis.halo, d));
    }
    const std::string name = axis.name.empty() ? k_default_names[d] : axis.name;
    if (axis.halo == 0 && !(axis.boundary == Boundary::edge)) {
      // A boundary fills halo cells; with none it fills nothing, and a stencil that reads across
      // the face (the usual reason to give one) would read outside the field, silently.
      node_error(node, format("axis {} ({}): a {} boundary with halo 0 fills nothing, and a "
                              "kernel that reads across the face (u(i - 1) at the first cell) "
                              "would read outside the field; declare the halo the kernel's "
                              "stencil reads (DomainAxis::halo, NodeLayout::grid(cells, 1, "
                              "boundary); in Python uwjit.grid(cells, halo=1, boundary=...)), or "
                              "leave the boundary at its default, edge, on an axis the kernel "
                              "does not read across",
                              d, name, to_string(axis.boundary)));
    }
    if (const auto problem = boundary_problem(axis.boundary, axis.cells, axis.halo);
        !problem.empty()) {
      node_error(node, format("axis {} ({}): {}", d, name, problem));
    }
    layout.domain.push_back(axis.cells);
    layout.halo.push_back(axis.halo);
    layout.boundary.push_back(axis.boundary);
    layout.modes.push_back(axis.extent);
    layout.axis_names.push_back(name);
  }
  layout.fields = declared.fields;
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
    std::int64_t components = 1;
    for (const std::int64_t c : f.components) {
      if (c < 1) {
        node_error(node, format("state field \"{}\" has a component extent {}", f.name, c));
      }
      components *= c;
    }
    if (!f.halo_axes.empty() && static_cast<std::int64_t>(f.halo_axes.size()) != components) {
      node_error(node, format("state field \"{}\": halo_axes has {} masks, but the field has {} "
                              "component{} (one mask each, or none for every halo)",
                              f.name, f.halo_axes.size(), components, components == 1 ? "" : "s"));
    }
    for (std::size_t c = 0; c < f.halo_axes.size(); ++c) {
      if ((f.halo_axes[c] >> axes) != 0) {
        node_error(node, format("state field \"{}\": halo_axes[{}] is {}, which names an axis "
                                "beyond the domain's {} (bit d is domain axis d)",
                                f.name, c, f.halo_axes[c], axes));
      }
    }
  }
  for (std::size_t d = 0; d < axes; ++d) {
    const Boundary& boundary = layout.boundary[d];
    if (layout.halo[d] == 0 || !(boundary.low.computed() || boundary.high.computed())) {
      continue;
    }
    for (const auto& f : layout.fields) {
      if (!takes_computed_faces(f.dtype)) {
        node_error(node, format("axis {} ({}): a {} boundary needs floating-point state fields, "
                                "but \"{}\" is {}",
                                d, layout.axis_names[d], to_string(boundary), f.name,
                                codegen::to_string(f.dtype)));
      }
      if (const auto problem = f32_problem(boundary, f.dtype); !problem.empty()) {
        node_error(node, format("axis {} ({}), field \"{}\": {}", d, layout.axis_names[d], f.name,
                                problem));
      }
    }
  }
  layout.integrals = declared.integrals;
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
  check_dt(layout.dt, format("node \"{}\": dt", node.name()));
  if (declared.stages < 1) {
    node_error(node, format("declares {} stages (need >= 1)", declared.stages));
  }
  layout.stages = declared.stages;
  layout.slab_initial_state = declared.slab_initial_state;
  for (NodeInput input : declared.inputs) {
    if (input.node.empty() || input.field.empty()) {
      node_error(node, "declares an input without a node or field name");
    }
    if (input.as.empty()) {
      input.as = input.field;
    }
    if (names.count(input.as) != 0 || integral_names.count(input.as) != 0) {
      node_error(node, format("input \"{}\" (field \"{}\" of node \"{}\") has the name of one "
                              "of its own state fields or integrals (name it with `as`)",
                              input.as, input.field, input.node));
    }
    for (const auto& other : layout.declared_inputs) {
      if (other.as == input.as) {
        node_error(node, format("input \"{}\" is declared twice", input.as));
      }
    }
    layout.declared_inputs.push_back(std::move(input));
  }
  return layout;
}

} // namespace uwjit::runtime::detail
