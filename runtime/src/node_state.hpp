// NodeState: everything a Simulation keeps for one node: its layout and shard, the bound static
// data and kernel, the ping-pong state buffers, the halo exchanger and the kernel's arguments.
#pragma once

#include "cuda_device.hpp"
#include "halo_exchange.hpp"
#include "kernel_binding.hpp"
#include "node_layout.hpp"

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

// One stage's kernel: its declarations, binding, state tables and arguments.
struct StageKernel {
  std::optional<codegen::KernelWriter> writer;
  Binding binding;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  uwjit_kernel_args args{};
  // Sharded: the exchanger of the state halos this stage fills (see NodeState::refills), made
  // on the first step, and its fields, refreshed per step.
  std::optional<HaloExchanger> exchanger;
  std::vector<Field*> halo_fields;
  // On a CUDA device: the kernel's code, static arrays and tables there.
  std::optional<DeviceStage> device;
  // The first step's check of a kernel whose text does not show its reads within their halos
  // (KernelWriter::halo_reads() unknown): the same kernel written checked, with the same slots,
  // called in its place until one of its steps succeeds (again after a rebind).
  std::optional<engine::Kernel> probe;
  bool probe_due = false;
  std::vector<double> probe_sums; // its integrals, dropped (sized with the probe)
  [[nodiscard]] bool updates_box() const { return writer && writer->updates_box(); }
  [[nodiscard]] bool probing() const { return probe_due && probe.has_value(); }
};

struct NodeState {
  std::shared_ptr<const Node> node;
  Layout layout; // sharded: this rank's extents; shard.global holds the whole domain's
  ShardInfo shard;
  StaticData bound; // sharded: shard-mode arrays as this rank's slabs
  // Keys of static arrays replaced by rebind_static in this state's history (this run, or the
  // run a restored checkpoint came from): what a checkpoint records.
  std::set<std::string> rebound;
  std::vector<AxisPlan> plans;                 // per domain axis, for the state's halos
  std::vector<StageKernel> stages;             // one per stage, in order
  std::vector<std::unique_ptr<Field>> current; // per state field
  std::vector<std::unique_ptr<Field>> next;    // per state field, null unless the kernel writes it
  // On a CUDA device: each state field's current and next buffers there (next null as above);
  // `current` and `next` are then the host's copies, brought up to date when asked.
  DeviceBuffers device_current;
  DeviceBuffers device_next;
  std::vector<std::vector<Boundary>> boundaries; // per state field, per axis
  std::vector<bool> has_halo;                    // per state field
  // Per state field: the halos its kernels read (StateField::halo_axes), the ones a step fills;
  // checked mode fills every halo, so that a run whose declaration is wrong differs from it.
  std::vector<ReadHalos> read_halos;
  std::vector<double> integrals; // declared order
  bool checked = false;          // checked mode: every stage's args.check points at check_record
  std::array<uw_i64, UWJIT_CHECK_RECORD_SIZE> check_record{};
  // Coupled inputs (layout.inputs order): the owners' current fields, refreshed per stage, and,
  // sharded, the exchanger that fills their halos (made on the first step).
  std::vector<Field*> input_fields;
  std::optional<HaloExchanger> input_exchanger;
  // Overlap mode: the domain axis whose halos are exchanged while the kernel updates the cells
  // that do not read them (the same axis on every rank), or -1 to call the kernel once per step.
  int overlap_axis = -2;       // -2: not yet chosen
  std::vector<double> reduced; // sharded: the step's integrals and failure count, all-reduced
  std::vector<std::uint64_t> reduced_keys; // sharded: the step's maxima's keys, all-reduced

  // Whether stage `stage` fills the halos of state field `i` before it runs: stage 0 those of
  // every field with a halo, a later stage those of the fields the stage before it wrote (the
  // others' are still right).
  [[nodiscard]] bool refills(std::size_t stage, std::size_t i) const;

  // Appends state field f's boundaries, halo flag and read halos (the next field's, in layout
  // order).
  void add_halo_rules(const StateField& f);
  // Allocates the current buffer of every state field over the layout (halos poisoned in
  // checked mode), with its boundaries; returns the fields, for initial_state.
  std::vector<Field*> allocate_fields();
  // Points each stage's ABI struct at its binding's tables (allocating the output buffers a
  // new binding writes); called whenever a binding changes.
  void wire();
};

} // namespace uwjit::runtime::detail
