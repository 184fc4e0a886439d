// The step loop of a Simulation: halos filled (or exchanged with the neighbouring ranks, in
// sync or overlap mode), the kernel called through the CPU executor, and the step ended alike on
// every rank.
#include "simulation_impl.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <array>
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
  finish_step(s, checked && s.writer && s.writer->updates_box() ? call_split(s) : call_kernel(s));
}

// Checked mode: a kernel that honours its box is called on boxes that tile the interior, as
// overlap mode would call it (the cells that read no halo of the last wide enough axis, then its
// two boundary slabs; else two halves of an axis), so that a kernel that ignores its box writes
// outside it and fails the write check, serially too.
int Simulation::Impl::call_split(NodeState& s) {
  std::array<std::pair<std::int64_t, std::int64_t>, 3> boxes{};
  std::size_t count = 0;
  std::size_t axis = 0;
  for (std::size_t d = s.layout.domain.size(); d-- > 0 && count == 0;) {
    const std::int64_t n = s.shard.extent[d];
    const std::int64_t h = std::max<std::int64_t>(s.layout.halo[d], 1);
    if (n > 2 * h) {
      axis = d;
      boxes = {{{h, n - h}, {0, h}, {n - h, n}}};
      count = 3;
    }
  }
  for (std::size_t d = s.layout.domain.size(); d-- > 0 && count == 0;) {
    const std::int64_t n = s.shard.extent[d];
    if (n >= 2) {
      axis = d;
      boxes = {{{0, n / 2}, {n / 2, n}, {}}};
      count = 2;
    }
  }
  if (count == 0) {
    return call_kernel(s); // a single cell
  }
  int status = UWJIT_KERNEL_OK;
  for (std::size_t b = 0; b < count && status == UWJIT_KERNEL_OK; ++b) {
    s.args.update_begin[axis] = boxes[b].first;
    s.args.update_end[axis] = boxes[b].second;
    status = call_kernel(s);
  }
  s.args.update_begin[axis] = 0;
  s.args.update_end[axis] = s.shard.extent[axis];
  return status;
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

// Points the kernel's state tables at the current and next buffers. Checked mode poisons the
// halos of the buffers the kernel writes: they hold the halos of an older step otherwise.
void Simulation::Impl::bind_state(NodeState& s) {
  for (std::size_t slot = 0; slot < s.binding.in_field.size(); ++slot) {
    s.in_ptrs[slot] = s.current[s.binding.in_field[slot]]->data();
  }
  for (std::size_t slot = 0; slot < s.binding.out_field.size(); ++slot) {
    Field& out = *s.next[s.binding.out_field[slot]];
    if (s.checked && s.has_halo[s.binding.out_field[slot]]) {
      out.poison_halos();
    }
    s.out_ptrs[slot] = out.data();
  }
}

// Calls the kernel on the box in s.args, through the executor's threads, and, if it succeeds,
// adds its integrals to s.binding.kernel_integrals (kernel slot order); returns its status.
int Simulation::Impl::call_kernel(NodeState& s) {
  s.args.step = steps;
  return executor->call(*s.binding.kernel, s.args, s.layout.domain.size(),
                        s.writer && s.writer->updates_box(), s.binding.kernel_integrals);
}

// Checked mode: the first bad access the kernel recorded, in words, or "" if none.
std::string Simulation::Impl::violation(const NodeState& s) const {
  const auto& r = s.check_record;
  if (!s.checked || !s.writer || r[0] == UWJIT_CHECK_NONE) {
    return "";
  }
  const auto role = r[1] == 0   ? codegen::BufferRole::state_in
                    : r[1] == 1 ? codegen::BufferRole::state_out
                                : codegen::BufferRole::statics;
  const codegen::BufferDecl* buffer = nullptr;
  for (const auto& b : s.writer->buffers()) {
    if (b.role == role && b.slot == r[2]) {
      buffer = &b;
    }
  }
  if (buffer == nullptr || r[3] < 0 || r[3] >= static_cast<std::int64_t>(buffer->axes.size())) {
    return format("kernel recorded a bad access to {} slot {}", codegen::to_string(role), r[2]);
  }
  std::string at;
  const std::int64_t rank = std::min<std::int64_t>(r[6], UWJIT_CHECK_MAX_INDICES);
  for (std::int64_t k = 0; k < rank; ++k) {
    at += (k == 0 ? "" : ", ") + std::to_string(r[static_cast<std::size_t>(7 + k)]);
  }
  at += r[6] > rank ? ", ..." : "";
  const std::string what = role == codegen::BufferRole::statics
                               ? "static array \"" + buffer->name + "\""
                               : "\"" + buffer->name + "\"";
  const auto axis = static_cast<std::size_t>(r[3]);
  if (r[0] == UWJIT_CHECK_WRITE) {
    const bool domain =
        s.writer->extents()[static_cast<std::size_t>(buffer->axes[axis].extent.id)].domain_axis >=
        0;
    return format("kernel wrote {} at ({}), outside its {} ([{}, {}) on axis {})", what, at,
                  domain ? "update box" : "layout", r[4], r[5], axis);
  }
  return format("kernel read {} at ({}), outside its layout (halo {} on axis {})", what, at,
                buffer->axes[axis].halo, axis);
}

Error Simulation::Impl::kernel_failed(const NodeState& s, int status) const {
  const std::string bad = violation(s);
  if (!bad.empty()) {
    return Error(ErrorKind::kernel,
                 format("node \"{}\", step {}{}: {}", s.node->name(), steps,
                        decomposition ? format(", rank {}", decomposition->comm->rank()) : "",
                        bad));
  }
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
