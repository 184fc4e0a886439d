// NodeState: everything a Simulation keeps for one node: its layout and shard, the bound static
// data and kernel, the ping-pong state buffers, the halo exchanger and the kernel's arguments.
#pragma once

#include "halo_exchange.hpp"
#include "kernel_binding.hpp"
#include "node_layout.hpp"

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <array>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

struct NodeState {
  std::shared_ptr<const Node> node;
  Layout layout; // sharded: this rank's extents; shard.global holds the whole domain's
  ShardInfo shard;
  StaticData bound; // sharded: shard-mode arrays as this rank's slabs
  // Keys of static arrays replaced by rebind_static in this state's history (this run, or the
  // run a restored checkpoint came from): what a checkpoint records.
  std::set<std::string> rebound;
  std::vector<AxisPlan> plans;                 // per domain axis, for the state's halos
  std::optional<HaloExchanger> exchanger;      // sharded: made on the first step
  std::vector<Field*> halo_fields;             // the exchanger's fields, refreshed per step
  std::optional<codegen::KernelWriter> writer; // the current kernel's declarations
  Binding binding;
  std::vector<std::unique_ptr<Field>> current; // per state field
  std::vector<std::unique_ptr<Field>> next;    // per state field, null unless the kernel writes it
  std::vector<std::vector<Boundary>> boundaries; // per state field, per axis
  std::vector<bool> has_halo;                    // per state field
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  std::vector<double> integrals; // declared order
  uwjit_kernel_args args{};
  bool checked = false; // checked mode: args.check points at check_record
  std::array<uw_i64, UWJIT_CHECK_RECORD_SIZE> check_record{};
  // Overlap mode: the domain axis whose halos are exchanged while the kernel updates the cells
  // that do not read them (the same axis on every rank), or -1 to call the kernel once per step.
  int overlap_axis = -2;       // -2: not yet chosen
  std::vector<double> reduced; // sharded: the step's integrals and failure count, all-reduced

  // Points the ABI struct at the binding's tables (allocating the output buffers a new
  // binding writes); called whenever the binding changes.
  void wire();
};

} // namespace uwjit::runtime::detail
