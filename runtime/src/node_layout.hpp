// Layout: what a node declares about its domain (extents, halos, boundaries, extent modes, axis
// names), its state fields, integrals and time step, read once through its hooks and checked.
#pragma once

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/runtime/node.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime::detail {

/// Throws Error(usage) with `message` after the node's name: `node "NAME": MESSAGE`.
[[noreturn]] void node_error(const Node& node, std::string_view message);

// A coupled input resolved against its owner (Simulation::Impl does it, knowing every node).
struct Input {
  StateField field;      // named as the reader's kernel names it; the owner's dtype, components
  std::vector<int> halo; // the owner's halo per domain axis
  std::size_t owner = 0; // the owner's index in the simulation
  std::size_t owner_field = 0;
};

// What a node declares about its layout, read once and checked.
struct Layout {
  std::vector<std::int64_t> domain;
  std::vector<int> halo;
  std::vector<Boundary> boundary;
  std::vector<codegen::ExtentMode> modes;
  std::vector<std::string> axis_names;
  std::vector<StateField> fields;
  std::vector<std::string> integrals;
  double dt = 1.0;
  int stages = 1;
  bool slab_initial_state = false;
  std::vector<NodeInput> declared_inputs; // as declared, `as` filled in
  std::vector<Input> inputs;              // resolved: empty until the simulation resolves them

  [[nodiscard]] std::vector<std::int64_t> shape(const StateField& f) const {
    std::vector<std::int64_t> out = f.components;
    out.insert(out.end(), domain.begin(), domain.end());
    return out;
  }
  [[nodiscard]] std::vector<int> halos(const StateField& f) const {
    std::vector<int> out(f.components.size(), 0);
    out.insert(out.end(), halo.begin(), halo.end());
    return out;
  }
  [[nodiscard]] std::vector<Boundary> boundaries(const StateField& f) const {
    std::vector<Boundary> out(f.components.size(), Boundary::edge);
    out.insert(out.end(), boundary.begin(), boundary.end());
    return out;
  }
};

/// The node's layout; Error(usage) naming the node and what is wrong with it.
[[nodiscard]] Layout read_layout(const Node& node);

} // namespace uwjit::runtime::detail
