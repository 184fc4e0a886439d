// The step loop of a Simulation: halos filled (or exchanged with the neighbouring ranks, in
// sync or overlap mode), the kernel called through the CPU executor, and the step ended alike on
// every rank.
#include "simulation_impl.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <chrono>
#include <exception>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {
using Clock = std::chrono::steady_clock;
} // namespace

void Simulation::Impl::step_node(NodeState& s) {
  const int axis = overlap_axis(s);
  if (axis >= 0) {
    step_overlapped(s, static_cast<std::size_t>(axis));
    return;
  }
  if (decomposition) {
    exchange_halos(s);
  } else {
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.has_halo[i]) {
        s.current[i]->fill_halos(s.boundaries[i]);
      }
    }
  }
  bind_state(s);
  std::fill(s.binding.kernel_integrals.begin(), s.binding.kernel_integrals.end(), 0.0);
  finish_step(s, call_kernel(s));
}

// The axis to overlap for node `s` this step, or -1. Overlapping needs a kernel that updates
// the box it is given, and an exchanged axis whose narrowest shard has cells that read no halo
// of it. The choice depends only on what every rank knows alike (the global extents and the
// grid), so that all ranks defer the same axis: the last one that qualifies (any order of the
// axes gives the same halos, corners included).
int Simulation::Impl::overlap_axis(NodeState& s) {
  if (!decomposition || exchange_mode != ExchangeMode::overlap || !s.writer ||
      !s.writer->updates_box()) {
    return -1;
  }
  if (s.overlap_axis == -2) {
    for (std::size_t d = s.plans.size(); d-- > 0;) {
      const std::int64_t narrowest = s.shard.global[d] / s.shard.grid[d];
      if (s.plans[d].exchange && narrowest > 2 * std::int64_t{s.layout.halo[d]}) {
        s.overlap_axis = static_cast<int>(d);
        break;
      }
    }
    if (s.overlap_axis == -2) {
      s.overlap_axis = -1;
    }
  }
  return s.overlap_axis;
}

// One step that updates the cells that read no halo of `axis` while that axis's transfers are
// in flight, then the two boundary slabs. Every cell is computed by the same code from the
// same inputs as in one call, so the state is the same bit for bit; the integrals are the sums
// of three partial sums.
void Simulation::Impl::step_overlapped(NodeState& s, std::size_t axis) {
  const auto start = Clock::now();
  prepare_exchange(s);
  const std::size_t from_end = s.plans.size() - 1 - axis;
  s.exchanger->start_fill(s.halo_fields, exchange_mode, from_end);
  double exchanging = std::chrono::duration<double>(Clock::now() - start).count();
  bind_state(s);
  const std::int64_t h = s.layout.halo[axis];
  const std::int64_t n = s.shard.extent[axis];
  // The step's integrals replace the last ones only if every call succeeds.
  std::fill(s.binding.kernel_integrals.begin(), s.binding.kernel_integrals.end(), 0.0);
  s.args.update_begin[axis] = h;
  s.args.update_end[axis] = n - h;
  const int interior = call_kernel(s);
  const auto waiting = Clock::now();
  // Even after a failed call: no transfer may outlive the step.
  s.exchanger->finish_fill(s.halo_fields);
  exchanging += std::chrono::duration<double>(Clock::now() - waiting).count();
  exchange.seconds += exchanging;
  ++exchange.exchanges;
  ++exchange.overlapped;
  int status = interior;
  if (status == UWJIT_KERNEL_OK) {
    s.args.update_begin[axis] = 0;
    s.args.update_end[axis] = h;
    status = call_kernel(s);
  }
  if (status == UWJIT_KERNEL_OK) {
    s.args.update_begin[axis] = n - h;
    s.args.update_end[axis] = n;
    status = call_kernel(s);
  }
  s.args.update_begin[axis] = 0;
  s.args.update_end[axis] = n;
  finish_step(s, status);
}

// Points the kernel's state tables at the current and next buffers.
void Simulation::Impl::bind_state(NodeState& s) {
  for (std::size_t slot = 0; slot < s.binding.in_field.size(); ++slot) {
    s.in_ptrs[slot] = s.current[s.binding.in_field[slot]]->data();
  }
  for (std::size_t slot = 0; slot < s.binding.out_field.size(); ++slot) {
    s.out_ptrs[slot] = s.next[s.binding.out_field[slot]]->data();
  }
}

// Calls the kernel on the box in s.args, through the executor's threads, and, if it succeeds,
// adds its integrals to s.binding.kernel_integrals (kernel slot order); returns its status.
int Simulation::Impl::call_kernel(NodeState& s) {
  s.args.step = steps;
  return executor->call(*s.binding.kernel, s.args, s.layout.domain.size(),
                        s.writer && s.writer->updates_box(), s.binding.kernel_integrals);
}

Error Simulation::Impl::kernel_failed(const NodeState& s, int status) const {
  return Error(ErrorKind::kernel,
               format("node \"{}\": kernel returned status {} at step {}{}", s.node->name(), status,
                      steps,
                      decomposition ? format(" on rank {}", decomposition->comm->rank()) : ""));
}

// Ends node `s`'s step whose kernel calls returned `status`. Sharded, the ranks add up their
// integrals and count the failed kernels in one all-reduce, so that a kernel failing on some
// ranks raises the same Error(kernel) on every rank (the lowest failing rank's) instead of
// leaving the others waiting in the next exchange. On a failure the node keeps the state it
// had; otherwise the new state becomes current and the integrals are the step's.
void Simulation::Impl::finish_step(NodeState& s, int status) {
  const std::size_t count = s.integrals.size();
  if (decomposition) {
    // integrals, then the number of ranks whose kernel failed (sized on the first step)
    s.reduced.resize(count + 1);
    for (std::size_t i = 0; i < count; ++i) {
      s.reduced[i] = s.binding.kernel_integrals[s.binding.integral_slot[i]];
    }
    s.reduced[count] = status == UWJIT_KERNEL_OK ? 0.0 : 1.0;
    decomposition->comm->all_reduce_sum(s.reduced);
    if (s.reduced[count] != 0.0) {
      comm::agree(*decomposition->comm, status == UWJIT_KERNEL_OK
                                            ? nullptr
                                            : std::make_exception_ptr(kernel_failed(s, status)));
    }
    std::copy_n(s.reduced.begin(), count, s.integrals.begin());
  } else {
    if (status != UWJIT_KERNEL_OK) {
      throw kernel_failed(s, status);
    }
    for (std::size_t i = 0; i < count; ++i) {
      s.integrals[i] = s.binding.kernel_integrals[s.binding.integral_slot[i]];
    }
  }
  for (const std::size_t i : s.binding.out_field) {
    std::swap(s.current[i], s.next[i]);
  }
}

// The exchanger and its buffers are made on the first step, from the state's actual layout,
// and reused; its field list points at the current buffers.
void Simulation::Impl::prepare_exchange(NodeState& s) {
  if (!s.exchanger) {
    std::vector<std::vector<detail::AxisPlan>> plans;
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.has_halo[i]) {
        std::vector<detail::AxisPlan> field_plans(s.layout.fields[i].components.size());
        field_plans.insert(field_plans.end(), s.plans.begin(), s.plans.end());
        plans.push_back(std::move(field_plans));
        s.halo_fields.push_back(nullptr);
      }
    }
    s.exchanger.emplace(*decomposition->comm, std::move(plans));
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    if (s.has_halo[i]) {
      s.halo_fields[at++] = s.current[i].get();
    }
  }
}

// Fills the state halos of node `s` from the neighbouring ranks (and locally on axes that are
// not split).
void Simulation::Impl::exchange_halos(NodeState& s) {
  const auto start = Clock::now();
  prepare_exchange(s);
  s.exchanger->fill(s.halo_fields, exchange_mode);
  exchange.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  ++exchange.exchanges;
}

} // namespace uwjit::runtime
