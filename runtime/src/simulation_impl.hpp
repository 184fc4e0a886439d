// Simulation::Impl: the state of a Simulation and the member functions its files share
// (simulation.cpp: construction and the public API; stepper.cpp: the step loop; checkpoint.cpp:
// checkpoint and restore).
#pragma once

#include "cpu_executor.hpp"
#include "decomposition.hpp"
#include "kernel_binding.hpp"
#include "node_state.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

struct Simulation::Impl {
  using Decomposition = detail::Decomposition;
  using Emitted = detail::Emitted;
  using NodeState = detail::NodeState;

  engine::Engine* engine = nullptr;
  std::vector<std::shared_ptr<const Node>> nodes;
  std::vector<NodeState> states;
  std::vector<KernelReport> reports;
  std::int64_t steps = 0;
  std::optional<Decomposition> decomposition; // sharded only
  ExchangeMode exchange_mode = ExchangeMode::sync;
  bool checked = false; // SimulationOptions::checked or UWJIT_CHECK
  ExchangeStats exchange;
  NodeShared node_shared;
  std::optional<detail::CpuExecutor> executor; // made in the constructor, once its size is known
  std::optional<detail::CudaDevice> cuda;      // SimulationOptions::device names a CUDA device
  std::int64_t pulled_at = -1; // on a device: the step whose state the host copies hold

  // compute: the nodes' initial state; skip: zeros (restore fills it).
  enum class Init { compute, skip };

  // Validates the nodes (and, sharded, the decomposition), emits and requests every kernel,
  // binds it and allocates the state (see Simulation's constructor). Collective when sharded.
  Impl(engine::Engine& e, std::vector<std::shared_ptr<const Node>> list,
       const SimulationOptions& options, Init init);

  // Runs `body`; sharded, every rank then raises the same error if it failed on any rank.
  template <class Body> void collectively(const SimulationOptions& options, Body&& body) {
    if (decomposition) {
      comm::together(*options.comm, body);
    } else {
      body();
    }
  }

  // Runs `body`; sharded, every rank then raises the same error if it failed on any rank.
  template <class Body> void together(Body&& body) {
    if (decomposition) {
      comm::together(*decomposition->comm, body);
    } else {
      body();
    }
  }

  // One copy per node of the large computed replicate arrays, before anything reads them.
  void share_replicate_arrays(comm::Comm& comm, std::size_t min_bytes);
  // Fills the computed static arrays that the kernels in `emitted` (every stage of every node,
  // flattened in that order) read and that are not filled yet (not shared on the node): each
  // rank its own copy. A fill that throws is an Error naming the rank (sharded), the node and
  // the array.
  void fill_computed_arrays(const std::vector<Emitted>& emitted) const;
  // Requests every kernel (every stage of every node, flattened in that order); distinct keys in
  // parallel, repeats afterwards (memory hits).
  void request_all(std::vector<Emitted>& emitted, const SimulationOptions& options);
  // Requests the kernels of `emitted` (serially: distinct keys in parallel, repeats
  // afterwards; sharded: collectively) and returns them in its order.
  std::vector<std::optional<engine::Kernel>> request(const std::vector<Emitted>& emitted,
                                                     const SimulationOptions& options);
  void report_all(std::vector<Emitted>& emitted, const std::vector<engine::KernelInfo>& infos);
  // On a CUDA device (device_stepper.cpp): opens the device the options name; requests every
  // kernel's PTX and the halo kernels and loads them; makes each node's device buffers and
  // stages; uploads the host's state, or brings the host's copies up to date; one step.
  void open_device(const SimulationOptions& options);
  void request_on_device(std::vector<Emitted>& emitted, const SimulationOptions& options);
  void make_device_state(NodeState& s);
  void push_state();
  void pull_state();
  // Simulation::local_snapshot of a sharded simulation, of node `only` alone when it is not
  // empty (what writing one node's output needs).
  [[nodiscard]] Snapshot slab_snapshot(std::string_view only = {});
  void step_node_on_device(NodeState& s);
  template <class Attempt> void fill_inputs_on_device(NodeState& s, Attempt& attempt);
  template <class FacesDown, class HalosUp, class Launch>
  void step_overlapped_on_device(NodeState& s, std::size_t stage, std::size_t axis,
                                 FacesDown& faces_down, HalosUp& halos_up, Launch& launch);
  // Resolves every node's declared inputs against the other nodes; Error(usage) naming both.
  void resolve_inputs();
  static void allocate_state(NodeState& s, Init init);
  NodeState& state_of(std::string_view name);

  // The step loop (stepper.cpp).
  void step_node(NodeState& s);
  int overlap_axis(NodeState& s);
  void step_overlapped(NodeState& s, std::size_t stage, std::size_t axis);
  static void bind_state(NodeState& s, std::size_t stage);
  int call_kernel(NodeState& s, std::size_t stage);
  int call_split(NodeState& s, std::size_t stage);
  [[nodiscard]] std::string violation(const NodeState& s, std::size_t stage) const;
  [[nodiscard]] Error kernel_failed(const NodeState& s, std::size_t stage, int status) const;
  [[nodiscard]] std::optional<Error> unwritten_cells(const NodeState& s, std::size_t stage) const;
  // `failure`: what failed instead of the kernel (on a device), raised in place of its status.
  void finish_stage(NodeState& s, std::size_t stage, int status,
                    std::exception_ptr failure = nullptr);
  bool prepare_exchange(NodeState& s, std::size_t stage);
  void exchange_halos(NodeState& s, std::size_t stage);
  void fill_inputs(NodeState& s);
  void point_inputs(NodeState& s);
  void exchange_inputs(NodeState& s);

  std::vector<std::optional<engine::Kernel>> kernels_; // per kernel, as request_all orders them
  // On a device: per kernel, as request_all orders them, its loaded module.
  std::vector<std::shared_ptr<const detail::LoadedModule>> device_code_;
};

} // namespace uwjit::runtime
