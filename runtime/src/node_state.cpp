#include "node_state.hpp"

#include <algorithm>
#include <cstddef>

namespace uwjit::runtime::detail {

bool NodeState::refills(std::size_t stage, std::size_t i) const {
  if (!has_halo[i]) {
    return false;
  }
  if (stage == 0) {
    return true;
  }
  const auto& wrote = stages[stage - 1].binding.out_field;
  return std::find(wrote.begin(), wrote.end(), i) != wrote.end();
}

void NodeState::add_halo_rules(const StateField& f) {
  boundaries.push_back(layout.boundaries(f));
  const auto halos = layout.halos(f);
  has_halo.push_back(std::any_of(halos.begin(), halos.end(), [](int h) { return h > 0; }));
  read_halos.push_back(checked ? ReadHalos() : ReadHalos(f.halo_axes, f.components.size()));
}

std::vector<Field*> NodeState::allocate_fields() {
  std::vector<Field*> fields;
  for (const auto& f : layout.fields) {
    current.push_back(std::make_unique<Field>(f.name, f.dtype, layout.shape(f), layout.halos(f)));
    next.push_back(nullptr);
    add_halo_rules(f);
    if (checked) {
      current.back()->poison_halos();
    }
    fields.push_back(current.back().get());
  }
  return fields;
}

void NodeState::wire() {
  for (StageKernel& stage : stages) {
    const Binding& binding = stage.binding;
    stage.in_ptrs.assign(binding.in_field.size(), nullptr);
    stage.out_ptrs.assign(binding.out_field.size(), nullptr);
    for (std::size_t i = 0; i < layout.fields.size(); ++i) {
      const bool written = std::find(binding.out_field.begin(), binding.out_field.end(), i) !=
                           binding.out_field.end();
      if (written && next[i] == nullptr) {
        // Every value as current's, in one pass over fresh memory: cells a kernel does not write
        // keep their values in both buffers; halos are filled before they are read (poisoned
        // in checked mode, as current's are).
        next[i] = std::make_unique<Field>(current[i]->clone());
        if (checked) {
          next[i]->poison_halos();
        }
      }
    }
    uwjit_kernel_args& args = stage.args;
    args = {};
    args.state_in = stage.in_ptrs.data();
    args.state_out = stage.out_ptrs.data();
    args.statics = binding.statics.data();
    args.extents = binding.extents.data();
    args.params = binding.params.data();
    args.integrals = nullptr; // the executor gives each call a table of its own
    args.check = checked ? check_record.data() : nullptr;
    args.dt = layout.dt;
    for (std::size_t d = 0; d < layout.domain.size(); ++d) {
      args.shard_offset[d] = shard.offset[d];
      args.shard_extent[d] = shard.extent[d];
      args.global_extent[d] = shard.global[d];
      args.update_begin[d] = 0;
      args.update_end[d] = shard.extent[d];
    }
  }
}

} // namespace uwjit::runtime::detail
