// The step loop of a Simulation: halos filled (or exchanged with the neighbouring ranks, in
// sync or overlap mode), the kernel called through the CPU executor, and the step ended alike on
// every rank.
#include "simulation_impl.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {
using Clock = std::chrono::steady_clock;

// The halos of the axes a rank does not exchange are filled on the executor's threads, as a
// serial run's are, not on the calling thread alone.
HaloExchanger::LocalFill on_threads(CpuExecutor& executor) {
  return [&executor](Field& field, std::size_t axis, const Boundary& boundary,
                     const ReadHalos& read) { executor.fill_axis(field, axis, boundary, read); };
}
} // namespace

// One step of node `s`: its stages in order. Before each, the state halos that may be stale are
// filled (NodeState::refills), and so are those of the coupled inputs.
void Simulation::Impl::step_node(NodeState& s) {
  for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
    fill_inputs(s);
    if (decomposition) {
      // Every rank fills the same fields: the choice depends on the kernels only.
      const bool exchanges = prepare_exchange(s, stage);
      const int axis = exchanges && s.stages[stage].updates_box() ? overlap_axis(s) : -1;
      if (axis >= 0) {
        step_overlapped(s, stage, static_cast<std::size_t>(axis));
        continue;
      }
      if (exchanges) {
        exchange_halos(s, stage);
      }
    } else {
      for (std::size_t i = 0; i < s.current.size(); ++i) {
        if (s.refills(stage, i)) {
          executor->fill_halos(*s.current[i], s.boundaries[i], s.read_halos[i]);
        }
      }
    }
    bind_state(s, stage);
    auto& sums = s.stages[stage].binding.kernel_integrals;
    std::fill(sums.begin(), sums.end(), 0.0);
    finish_stage(s, stage,
                 checked && s.stages[stage].updates_box() ? call_split(s, stage)
                                                          : call_kernel(s, stage));
  }
}

// Checked mode: a kernel that honours its box is called on boxes that tile the interior, as
// overlap mode would call it (the cells that read no halo of the last wide enough axis, then its
// two boundary slabs; else two halves of an axis), so that a kernel that ignores its box writes
// outside it and fails the write check, serially too.
int Simulation::Impl::call_split(NodeState& s, std::size_t stage) {
  uwjit_kernel_args& args = s.stages[stage].args;
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
    return call_kernel(s, stage); // a single cell
  }
  int status = UWJIT_KERNEL_OK;
  for (std::size_t b = 0; b < count && status == UWJIT_KERNEL_OK; ++b) {
    args.update_begin[axis] = boxes[b].first;
    args.update_end[axis] = boxes[b].second;
    status = call_kernel(s, stage);
  }
  args.update_begin[axis] = 0;
  args.update_end[axis] = s.shard.extent[axis];
  return status;
}

// Points node `s`'s inputs at their owners' current fields and fills their halos: serially
// from the owner's interior with the owner's boundaries, sharded by an exchange with the
// neighbouring ranks over the owner's plans (the same on every rank, which steps the nodes in
// the same order). The owner refills its own halos before it reads them, so filling them here
// changes nothing it computes.
void Simulation::Impl::fill_inputs(NodeState& s) {
  if (s.layout.inputs.empty()) {
    return;
  }
  point_inputs(s);
  if (!decomposition) {
    for (std::size_t k = 0; k < s.layout.inputs.size(); ++k) {
      const Input& input = s.layout.inputs[k];
      s.input_fields[k]->fill_halos(states[input.owner].boundaries[input.owner_field]);
    }
    return;
  }
  exchange_inputs(s);
}

// Points node `s`'s input fields at their owners' current (host) fields.
void Simulation::Impl::point_inputs(NodeState& s) {
  for (std::size_t k = 0; k < s.layout.inputs.size(); ++k) {
    const Input& input = s.layout.inputs[k];
    s.input_fields[k] = states[input.owner].current[input.owner_field].get();
  }
}

// Fills the halos of node `s`'s input fields by an exchange with the neighbouring ranks over
// their owners' plans.
void Simulation::Impl::exchange_inputs(NodeState& s) {
  const auto start = Clock::now();
  if (!s.input_exchanger) {
    std::vector<std::vector<detail::AxisPlan>> plans;
    for (const Input& input : s.layout.inputs) {
      std::vector<detail::AxisPlan> field_plans(input.field.components.size());
      const auto& owner = states[input.owner].plans;
      field_plans.insert(field_plans.end(), owner.begin(), owner.end());
      plans.push_back(std::move(field_plans));
    }
    s.input_exchanger.emplace(*decomposition->comm, std::move(plans), on_threads(*executor));
  }
  s.input_exchanger->fill(s.input_fields, exchange_mode);
  exchange.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

// The axis to overlap for node `s`, or -1, for a stage whose kernel updates the box it is given.
// Overlapping needs an exchanged axis whose narrowest shard has cells that read no halo of it.
// The choice depends only on what every rank knows alike (the global extents and the grid), so
// that all ranks defer the same axis: the last one that qualifies (any order of the axes gives
// the same halos, corners included).
int Simulation::Impl::overlap_axis(NodeState& s) {
  if (!decomposition || exchange_mode != ExchangeMode::overlap) {
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

// One stage that updates the cells that read no halo of `axis` while that axis's transfers are
// in flight, then the two boundary slabs. Every cell is computed by the same code from the
// same inputs as in one call, so the state is the same bit for bit; the integrals are the sums
// of three partial sums.
void Simulation::Impl::step_overlapped(NodeState& s, std::size_t stage, std::size_t axis) {
  const auto start = Clock::now();
  StageKernel& k = s.stages[stage];
  const std::size_t from_end = s.plans.size() - 1 - axis;
  k.exchanger->start_fill(k.halo_fields, exchange_mode, from_end);
  double exchanging = std::chrono::duration<double>(Clock::now() - start).count();
  bind_state(s, stage);
  uwjit_kernel_args& args = k.args;
  auto& sums = k.binding.kernel_integrals;
  const std::int64_t h = s.layout.halo[axis];
  const std::int64_t n = s.shard.extent[axis];
  // The stage's integrals replace the last ones only if every call succeeds.
  std::fill(sums.begin(), sums.end(), 0.0);
  args.update_begin[axis] = h;
  args.update_end[axis] = n - h;
  const int interior = call_kernel(s, stage);
  const auto waiting = Clock::now();
  // Even after a failed call: no transfer may outlive the step.
  k.exchanger->finish_fill(k.halo_fields);
  exchanging += std::chrono::duration<double>(Clock::now() - waiting).count();
  exchange.seconds += exchanging;
  ++exchange.exchanges;
  ++exchange.overlapped;
  int status = interior;
  if (status == UWJIT_KERNEL_OK) {
    args.update_begin[axis] = 0;
    args.update_end[axis] = h;
    status = call_kernel(s, stage);
  }
  if (status == UWJIT_KERNEL_OK) {
    args.update_begin[axis] = n - h;
    args.update_end[axis] = n;
    status = call_kernel(s, stage);
  }
  args.update_begin[axis] = 0;
  args.update_end[axis] = n;
  finish_stage(s, stage, status);
}

// Points the stage's state tables at the current and next buffers and the inputs. Checked
// mode poisons the halos of the buffers the kernel writes (they hold older halos otherwise) and
// marks their interiors, so that a cell the kernel leaves unwritten is found when it returns.
void Simulation::Impl::bind_state(NodeState& s, std::size_t stage) {
  StageKernel& k = s.stages[stage];
  const std::size_t fields = s.current.size();
  for (std::size_t slot = 0; slot < k.binding.in_field.size(); ++slot) {
    const std::size_t i = k.binding.in_field[slot];
    k.in_ptrs[slot] = i < fields ? s.current[i]->data() : s.input_fields[i - fields]->data();
  }
  for (std::size_t slot = 0; slot < k.binding.out_field.size(); ++slot) {
    Field& out = *s.next[k.binding.out_field[slot]];
    if (s.checked && s.has_halo[k.binding.out_field[slot]]) {
      out.poison_halos();
    }
    if (s.checked) {
      out.mark_interior_unwritten();
    }
    k.out_ptrs[slot] = out.data();
  }
}

// Calls the stage's kernel on the box in its args, through the executor's threads, and, if it
// succeeds, adds its integrals to its binding's kernel_integrals (kernel slot order); returns
// its status.
int Simulation::Impl::call_kernel(NodeState& s, std::size_t stage) {
  StageKernel& k = s.stages[stage];
  k.args.step = steps;
  if (k.probing()) {
    // The first-step check: the same kernel written checked (same slots) runs first, with sums
    // of its own; only if no access was bad does the kernel itself run, so that the state and
    // the integrals are its own, bit for bit, as on every later step.
    s.check_record[0] = UWJIT_CHECK_NONE;
    k.args.check = s.check_record.data();
    std::fill(k.probe_sums.begin(), k.probe_sums.end(), 0.0);
    const int status = executor->call(*k.probe, k.args, s.layout.domain.size(), k.updates_box(),
                                      k.probe_sums, k.binding.integral_reductions);
    k.args.check = s.checked ? s.check_record.data() : nullptr;
    if (status != UWJIT_KERNEL_OK) {
      return status;
    }
  }
  return executor->call(*k.binding.kernel, k.args, s.layout.domain.size(), k.updates_box(),
                        k.binding.kernel_integrals, k.binding.integral_reductions);
}

// Checked mode: the first bad access the stage's kernel recorded, in words, or "" if none.
std::string Simulation::Impl::violation(const NodeState& s, std::size_t stage) const {
  const auto& r = s.check_record;
  const auto& writer = s.stages[stage].writer;
  if ((!s.checked && !s.stages[stage].probing()) || !writer || r[0] == UWJIT_CHECK_NONE) {
    return "";
  }
  const auto role = r[1] == 0   ? codegen::BufferRole::state_in
                    : r[1] == 1 ? codegen::BufferRole::state_out
                                : codegen::BufferRole::statics;
  const codegen::BufferDecl* buffer = nullptr;
  for (const auto& b : writer->buffers()) {
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
        writer->extents()[static_cast<std::size_t>(buffer->axes[axis].extent.id)].domain_axis >= 0;
    return format("kernel wrote {} at ({}), outside its {} ([{}, {}) on axis {})", what, at,
                  domain ? "update box" : "layout", r[4], r[5], axis);
  }
  return format("kernel read {} at ({}), outside its layout (halo {} on axis {})", what, at,
                buffer->axes[axis].halo, axis);
}

// Checked mode, after a stage's kernel returned success: Error(kernel) naming the first state
// output cell it left unwritten (a cell text that returns, breaks or skips a cell), or nullopt.
// Only f32 and f64 outputs can be marked (Field::mark_interior_unwritten).
std::optional<Error> Simulation::Impl::unwritten_cells(const NodeState& s,
                                                       std::size_t stage) const {
  for (const std::size_t i : s.stages[stage].binding.out_field) {
    const Field& out = *s.next[i];
    if (const auto found = out.find_unwritten()) {
      // Global indices (a field's trailing axes are the domain), as the node's author counts.
      std::vector<std::string> at;
      const std::size_t lead =
          found->first.size() - std::min(found->first.size(), s.shard.offset.size());
      for (std::size_t d = 0; d < found->first.size(); ++d) {
        at.push_back(std::to_string(found->first[d] + (d >= lead ? s.shard.offset[d - lead] : 0)));
      }
      return Error(ErrorKind::kernel,
                   format("node \"{}\", step {}{}{}: kernel returned without writing \"{}\" at "
                          "({}) nor {} other cell{} of the update box (a state output's every "
                          "cell is written each step; does the cell's text return, break or "
                          "continue?)",
                          s.node->name(), steps,
                          decomposition ? format(", rank {}", decomposition->comm->rank()) : "",
                          s.stages.size() > 1 ? format(", stage {}", stage) : "", out.name(),
                          join(at), found->count - 1, found->count == 2 ? "" : "s"));
    }
  }
  return std::nullopt;
}

Error Simulation::Impl::kernel_failed(const NodeState& s, std::size_t stage, int status) const {
  const std::string bad = violation(s, stage);
  if (!bad.empty()) {
    // Outside checked mode, say what found it and what to do.
    const bool read = s.check_record[0] != UWJIT_CHECK_WRITE;
    const std::string found_by =
        s.checked ? ""
                  : format("; found by the check of the first step, which a kernel gets when its "
                           "text does not show its reads within their halos: {} (checked mode "
                           "checks every step)",
                           read ? "declare the halos the kernel reads"
                                : "a kernel writes only the cells of the update box it is given");
    return Error(ErrorKind::kernel,
                 format("node \"{}\", step {}{}{}: {}{}", s.node->name(), steps,
                        decomposition ? format(", rank {}", decomposition->comm->rank()) : "",
                        s.stages.size() > 1 ? format(", stage {}", stage) : "", bad, found_by));
  }
  return Error(ErrorKind::kernel,
               format("node \"{}\": kernel{} returned status {} at step {}{}", s.node->name(),
                      s.stages.size() > 1 ? format(" of stage {}", stage) : "", status, steps,
                      decomposition ? format(" on rank {}", decomposition->comm->rank()) : ""));
}

// Ends the stage of node `s` whose kernel calls returned `status`. Sharded, the ranks add up
// their integrals and count the failed kernels in one all-reduce, so that a kernel failing on
// some ranks raises the same Error(kernel) on every rank (the lowest failing rank's) instead of
// leaving the others waiting in the next exchange (a stage with maxima takes their keys'
// maximum in the same collective). On a failure the node keeps the state it had before the stage;
// otherwise the fields the stage wrote become current and the integrals it computes are the
// stage's.
void Simulation::Impl::finish_stage(NodeState& s, std::size_t stage, int status,
                                    std::exception_ptr failure) {
  const Binding& binding = s.stages[stage].binding;
  const std::size_t count = s.integrals.size();
  auto stored = [&](std::size_t i) {
    const std::size_t slot = binding.integral_slot[i];
    return slot == k_no_slot ? 0.0 : binding.kernel_integrals[slot];
  };
  auto is_max = [&](std::size_t i) {
    const std::size_t slot = binding.integral_slot[i];
    return slot != k_no_slot && binding.integral_reductions[slot] == codegen::Reduction::max;
  };
  if (!failure && status != UWJIT_KERNEL_OK) {
    failure = std::make_exception_ptr(kernel_failed(s, stage, status));
  }
  if (!failure && s.checked) {
    if (auto unwritten = unwritten_cells(s, stage)) {
      failure = std::make_exception_ptr(std::move(*unwritten));
    }
  }
  if (decomposition) {
    // integrals, then the number of ranks whose kernel failed (sized on the first step)
    s.reduced.resize(count + 1);
    bool maxima = false;
    for (std::size_t i = 0; i < count; ++i) {
      maxima = maxima || is_max(i);
      s.reduced[i] = is_max(i) ? 0.0 : stored(i);
    }
    s.reduced[count] = failure ? 1.0 : 0.0;
    if (maxima) { // the same on every rank: the layout and the kernel are
      s.reduced_keys.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        s.reduced_keys[i] = is_max(i) ? std::bit_cast<std::uint64_t>(stored(i)) : 0;
      }
      decomposition->comm->all_reduce_sum_max(s.reduced, s.reduced_keys);
      for (std::size_t i = 0; i < count; ++i) {
        if (is_max(i)) {
          s.reduced[i] = std::bit_cast<double>(s.reduced_keys[i]);
        }
      }
    } else {
      decomposition->comm->all_reduce_sum(s.reduced);
    }
    if (s.reduced[count] != 0.0) {
      comm::agree(*decomposition->comm, failure);
    }
  } else if (failure) {
    std::rethrow_exception(failure);
  }
  // The first-step check passed (on every rank): the unchecked kernel takes over.
  s.stages[stage].probe_due = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (binding.integral_slot[i] != k_no_slot) {
      s.integrals[i] = codegen::value_of(binding.integral_reductions[binding.integral_slot[i]],
                                         decomposition ? s.reduced[i] : stored(i));
    }
  }
  for (const std::size_t i : binding.out_field) {
    std::swap(s.current[i], s.next[i]);
    if (!s.device_current.empty()) {
      std::swap(s.device_current[i], s.device_next[i]);
    }
  }
}

// A stage's exchanger and its buffers are made on the first step, from the state's actual
// layout, and reused; its field list points at the current buffers. Returns whether the stage
// fills any halo.
bool Simulation::Impl::prepare_exchange(NodeState& s, std::size_t stage) {
  StageKernel& k = s.stages[stage];
  if (!k.exchanger) {
    std::vector<std::vector<detail::AxisPlan>> plans;
    std::vector<ReadHalos> reads;
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.refills(stage, i)) {
        std::vector<detail::AxisPlan> field_plans(s.layout.fields[i].components.size());
        field_plans.insert(field_plans.end(), s.plans.begin(), s.plans.end());
        plans.push_back(std::move(field_plans));
        reads.push_back(s.read_halos[i]);
        k.halo_fields.push_back(nullptr);
      }
    }
    k.exchanger.emplace(*decomposition->comm, std::move(plans), on_threads(*executor),
                        std::move(reads));
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    if (s.refills(stage, i)) {
      k.halo_fields[at++] = s.current[i].get();
    }
  }
  return !k.halo_fields.empty();
}

// Fills the stage's state halos of node `s` from the neighbouring ranks (and locally on axes
// that are not split).
void Simulation::Impl::exchange_halos(NodeState& s, std::size_t stage) {
  const auto start = Clock::now();
  StageKernel& k = s.stages[stage];
  k.exchanger->fill(k.halo_fields, exchange_mode);
  exchange.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  ++exchange.exchanges;
}

} // namespace uwjit::runtime
