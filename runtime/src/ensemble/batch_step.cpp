// An ensemble's steps: the members' calls of the batch kernel (each member's slabs as a
// Simulation's executor cuts them, its integrals summed in slab order), several steps at a time
// in cache-sized groups, one thread per group, or each step's calls spread over the threads.
#include "ensemble_impl.hpp"

#include "../cpu_executor.hpp"
#include "../memory_budget.hpp"

#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace uwjit::runtime {

namespace {

// A size in sysfs's form ("1024K", "32M"), in bytes; 0 if unreadable.
std::size_t size_bytes(const std::string& text) {
  if (text.empty()) {
    return 0;
  }
  const char unit = text.back();
  const std::size_t number = std::strtoull(text.c_str(), nullptr, 10);
  return number * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
}

// How many CPUs a sysfs CPU list ("0", "0-1", "0,2-3") names; 1 if unreadable.
std::size_t cpu_count(const std::string& list) {
  std::size_t count = 0;
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string part = list.substr(at, comma - at);
    const std::size_t dash = part.find('-');
    const std::size_t first = std::strtoull(part.c_str(), nullptr, 10);
    const std::size_t last =
        dash == std::string::npos ? first : std::strtoull(part.c_str() + dash + 1, nullptr, 10);
    count += last >= first ? last - first + 1 : 1;
    at = comma + 1;
  }
  return std::max<std::size_t>(count, 1);
}

// The first CPU's caches as sysfs lists them (index0..): the last level's size, and the level-2
// cache's size and how many CPUs share it. Zero where sysfs does not say (some VMs list none).
struct CacheSizes {
  std::size_t last_level = 0;
  std::size_t level2 = 0;
  std::size_t level2_sharers = 1;
};

CacheSizes read_cache_sizes() {
  CacheSizes sizes;
  int deepest = 0;
  for (int index = 0; index <= 4; ++index) {
    const std::string dir = format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::string size, level, type, shared;
    std::ifstream(dir + "size") >> size;
    std::ifstream(dir + "level") >> level;
    std::ifstream(dir + "type") >> type;
    std::ifstream(dir + "shared_cpu_list") >> shared;
    const std::size_t bytes = size_bytes(size);
    const int depth = std::atoi(level.c_str());
    if (bytes == 0 || type == "Instruction") {
      continue;
    }
    if (depth >= deepest) {
      deepest = depth;
      sizes.last_level = bytes;
    }
    if (depth == 2) {
      sizes.level2 = bytes;
      sizes.level2_sharers = cpu_count(shared);
    }
  }
  return sizes;
}

// Read once per process: every round of every ensemble asks.
const CacheSizes& cache_sizes() {
  static const CacheSizes sizes = read_cache_sizes();
  return sizes;
}

// The last-level cache, 8 MiB where sysfs does not say.
std::size_t last_level_cache_bytes() {
  const std::size_t bytes = cache_sizes().last_level;
  return bytes > 0 ? bytes : std::size_t{8} << 20;
}

} // namespace

namespace detail {

// A group is stepped round after round by one thread, every member once a step, so each member's
// buffers come back after the whole group's: from the thread's level-2 cache where the group fits
// it. On a 2-core AMD EPYC Zen 4 (1 MiB of level 2 a core, 32 MiB of level 3), heat 16³ members
// (302 kB) in groups of 3 stepped 1.38× the member-steps of groups of 27 (a share of the last
// level); members of 2.25 to 7.4 MB (heat 32³ and 48³, pipe-flow 32×24×24) were fastest one a
// thread (performance.md).
double thread_cache_bytes(std::size_t threads) {
  const CacheSizes& sizes = cache_sizes();
  if (sizes.level2 > 0) {
    return static_cast<double>(sizes.level2) /
           static_cast<double>(std::min(sizes.level2_sharers, threads));
  }
  return static_cast<double>(last_level_cache_bytes()) / (2.0 * static_cast<double>(threads));
}

ThreadCache thread_cache(std::size_t threads) {
  const CacheSizes& sizes = cache_sizes();
  const double bytes = thread_cache_bytes(threads);
  if (sizes.level2 == 0) {
    return {bytes, format("a thread's share ({}) of the {} last-level cache", bytes_text(bytes),
                          bytes_text(static_cast<double>(last_level_cache_bytes())))};
  }
  return {bytes, sizes.level2_sharers > 1 && threads > 1
                     ? format("a thread's share ({}) of the {} level-2 cache", bytes_text(bytes),
                              bytes_text(static_cast<double>(sizes.level2)))
                     : format("a thread's {} level-2 cache", bytes_text(bytes))};
}

std::size_t cache_group(double member_bytes, std::size_t threads) {
  return static_cast<std::size_t>(
      std::max(1.0, std::floor(thread_cache_bytes(threads) / member_bytes)));
}

} // namespace detail

using namespace detail; // this file is the runtime's own

// One stage of the members in `slots` that are stepping, as the calls of batch kernels: each
// member's calls are the slabs a Simulation's executor would cut its box into, so that its
// integrals, summed over its slabs in slab order, are the Simulation's bit for bit. The calls
// are made as `parts` batch-kernel calls, on the pool when there are several.
void Ensemble::Impl::call_stage(std::span<const std::size_t> group, std::size_t stage, Calls& c,
                                std::size_t parts) {
  c.args.clear();
  c.member.clear();
  for (const std::size_t slot : group) {
    Member* m = members[slot].get();
    if (m == nullptr || m->stopped || failed_now[slot]) {
      continue;
    }
    NodeState& s = m->state;
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.refills(stage, i)) {
        fill_read_halos(*s.current[i], s.boundaries[i], s.read_halos[i]);
      }
    }
    StageKernel& k = s.stages[stage];
    for (std::size_t p = 0; p < k.binding.in_field.size(); ++p) {
      k.in_ptrs[p] = s.current[k.binding.in_field[p]]->data();
    }
    for (std::size_t p = 0; p < k.binding.out_field.size(); ++p) {
      k.out_ptrs[p] = s.next[k.binding.out_field[p]]->data();
    }
    k.args.step = m->steps;
    const bool splits = k.updates_box();
    const SlabPlan plan = splits ? plan_slabs(k.args, s.layout.domain.size()) : SlabPlan{};
    for (std::int64_t slab = 0; slab < plan.count; ++slab) {
      uwjit_kernel_args call = k.args;
      if (splits) {
        call.update_begin[plan.axis] = plan.bound(slab);
        call.update_end[plan.axis] = plan.bound(slab + 1);
      }
      c.args.push_back(call);
      c.member.push_back(slot);
    }
  }
  if (c.args.empty()) {
    return;
  }
  const std::size_t sums = slots[stage].integrals.size();
  c.sums.assign(c.args.size() * sums, 0.0);
  c.status.assign(c.args.size(), UWJIT_KERNEL_OK);
  for (std::size_t k = 0; k < c.args.size(); ++k) {
    c.args[k].integrals = c.sums.data() + k * sums;
  }
  const engine::Kernel& kernel = kernels[stage];
  parts = std::max<std::size_t>(1, std::min(parts, c.args.size()));
  auto run_part = [&](std::size_t part) {
    const std::size_t begin = c.args.size() * part / parts;
    const std::size_t end = c.args.size() * (part + 1) / parts;
    uwjit_kernel_args batch_args{};
    batch_args.n_members = static_cast<uw_i64>(end - begin);
    batch_args.members = c.args.data() + begin;
    batch_args.member_status = c.status.data() + begin;
    (void)kernel(batch_args);
  };
  if (parts == 1) {
    run_part(0);
  } else {
    pool->run(parts, run_part);
  }
  // Each member's calls are consecutive: their sums, in slab order, from 0 as the executor's.
  for (std::size_t k = 0; k < c.args.size();) {
    const std::size_t slot = c.member[k];
    Member& m = *members[slot];
    NodeState& s = m.state;
    Binding& binding = s.stages[stage].binding;
    std::fill(binding.kernel_integrals.begin(), binding.kernel_integrals.end(), 0.0);
    int status = UWJIT_KERNEL_OK;
    const std::size_t first = k;
    for (; k < c.args.size() && c.member[k] == slot; ++k) {
      if (status == UWJIT_KERNEL_OK) {
        status = c.status[k];
      }
    }
    if (status != UWJIT_KERNEL_OK) {
      failed_now[slot] = 1;
      m.status = MemberStatus::failed;
      m.reason = format("its kernel returned {} at step {}{}", status, m.steps,
                        s.stages.size() > 1 ? format(" (stage {})", stage) : "");
      continue;
    }
    for (std::size_t j = first; j < k; ++j) {
      codegen::combine(binding.kernel_integrals, std::span(c.sums).subspan(j * sums, sums),
                       binding.integral_reductions);
    }
    for (std::size_t i = 0; i < s.integrals.size(); ++i) {
      if (binding.integral_slot[i] != k_no_slot) {
        s.integrals[i] = integral_value(binding, i);
      }
    }
    for (const std::size_t i : binding.out_field) {
      std::swap(s.current[i], s.next[i]);
    }
  }
}

// Up to `steps` steps of the members in `group` that are stepping, each judged after each of its
// steps (a member stops at the very step its rule says); returns the member-steps taken.
std::int64_t Ensemble::Impl::advance(std::span<const std::size_t> group, std::int64_t steps,
                                     Calls& c, std::size_t parts) {
  std::int64_t taken = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    bool any = false;
    for (const std::size_t slot : group) {
      any = any || (members[slot] != nullptr && !members[slot]->stopped);
      failed_now[slot] = 0;
    }
    if (!any) {
      break;
    }
    for (std::size_t stage = 0; stage < kernels.size(); ++stage) {
      call_stage(group, stage, c, parts);
    }
    for (const std::size_t slot : group) {
      Member* m = members[slot].get();
      if (m == nullptr || m->stopped) {
        continue;
      }
      if (failed_now[slot]) {
        m->stopped = true;
        continue;
      }
      ++m->steps;
      ++taken;
      judge(*m);
      m->previous = m->state.integrals;
    }
  }
  return taken;
}

// Up to `steps` steps of every member that is stepping. With at least as many members as
// threads, the members are cut into groups that fit in a share of the last-level cache, each
// group stepped all its steps by one thread while its buffers stay in the cache (the members are
// independent; each still gets the same bits); else every step's calls are spread over the
// threads (a few large members, whose slabs then share the work).
std::int64_t Ensemble::Impl::advance_all(std::int64_t steps) {
  std::vector<std::size_t> stepping;
  for (std::size_t slot = 0; slot < members.size(); ++slot) {
    if (members[slot] != nullptr && !members[slot]->stopped) {
      stepping.push_back(slot);
    }
  }
  failed_now.resize(members.size(), 0);
  if (device) {
    return advance_on_device(stepping, steps);
  }
  const auto threads = static_cast<std::size_t>(pool->size());
  if (stepping.size() < threads) {
    scratch.resize(1);
    return advance(stepping, steps, scratch[0], threads);
  }
  // Groups of at most a cache share each, and at least one group per thread.
  const std::size_t size =
      std::min(cache_group(bytes_per_member, threads), (stepping.size() + threads - 1) / threads);
  const std::size_t groups = (stepping.size() + size - 1) / size;
  scratch.resize(std::max(scratch.size(), groups));
  std::vector<std::int64_t> taken(groups, 0);
  auto run_group = [&](std::size_t g) {
    const std::size_t begin = g * size;
    const std::size_t end = std::min(stepping.size(), begin + size);
    taken[g] = advance(std::span(stepping).subspan(begin, end - begin), steps, scratch[g], 1);
  };
  pool->run(groups, run_group);
  std::int64_t total = 0;
  for (const auto t : taken) {
    total += t;
  }
  return total;
}

// Up to `steps` steps of the members in `stepping` on the device: a member not there yet (new in
// its slot, or resumed) is uploaded first; each stage of a step is one launch for every member
// still stepping (MemberDevice::step); each member is judged after each of its steps, as on
// CPUs, and one that stops has its state brought back for the sinks.
std::int64_t Ensemble::Impl::advance_on_device(std::span<const std::size_t> stepping,
                                               std::int64_t steps) {
  for (const std::size_t slot : stepping) {
    Member& m = *members[slot];
    if (!m.on_device) {
      device->place(slot, m.state);
      m.on_device = true;
    }
  }
  std::vector<std::pair<std::size_t, NodeState*>> now;
  std::int64_t taken = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    now.clear();
    for (const std::size_t slot : stepping) {
      if (!members[slot]->stopped) {
        now.emplace_back(slot, &members[slot]->state);
      }
    }
    if (now.empty()) {
      break;
    }
    for (std::size_t stage = 0; stage < sources.size(); ++stage) {
      for (const auto& [slot, s] : now) {
        s->stages[stage].args.step = members[slot]->steps;
      }
      device->step(stage, now);
      for (const auto& [slot, s] : now) {
        const Binding& binding = s->stages[stage].binding;
        for (std::size_t i = 0; i < s->integrals.size(); ++i) {
          if (binding.integral_slot[i] != k_no_slot) {
            s->integrals[i] = integral_value(binding, i);
          }
        }
      }
    }
    for (const auto& [slot, s] : now) {
      Member& m = *members[slot];
      ++m.steps;
      ++taken;
      judge(m);
      m.previous = s->integrals;
      if (m.stopped) {
        device->pull(slot, m.state);
      }
    }
  }
  return taken;
}

void Ensemble::Impl::pull_stepping() const {
  if (!device) {
    return;
  }
  for (std::size_t slot = 0; slot < members.size(); ++slot) {
    const auto& m = members[slot];
    if (m != nullptr && m->on_device && !m->stopped) {
      device->pull(slot, m->state);
    }
  }
}

} // namespace uwjit::runtime
