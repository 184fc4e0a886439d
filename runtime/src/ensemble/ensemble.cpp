// Ensemble: its construction (the first member, the batch kernels requested once, the batch size
// from memory, the sinks begun), a step (the members advanced, judged by the stop rule, leaving
// for the sinks, their slots refilled; over ranks, each phase agreed), and the public accessors.
#include "ensemble_impl.hpp"

#include "../cpu_executor.hpp"
#include "../decomposition.hpp"
#include "../kernel_binding.hpp"
#include "../memory_budget.hpp"
#include "../node_layout.hpp"
#include "../node_state.hpp"
#include "../thread_pool.hpp"
#include "member_transfer.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <span>
#include <system_error>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

// The most members a batch sized from memory holds: beyond, a step's work is already far above
// its fixed cost, and building members up front only delays the first step.
constexpr std::int64_t k_most_members = 4096;

} // namespace

Ensemble::Impl::Impl(engine::Engine& e, MemberFactory factory, Params params,
                     std::unique_ptr<MemberSampler> source,
                     std::vector<std::shared_ptr<MemberSink>> outs, EnsembleOptions opts,
                     StageRole stage)
    : engine(&e), make(std::move(factory)), base(std::move(params)), sampler(std::move(source)),
      sinks(std::move(outs)), options(std::move(opts)), role(std::move(stage)) {
  if (!make) {
    throw Error(ErrorKind::usage, "ensemble: no member factory");
  }
  if (!sampler) {
    throw Error(ErrorKind::usage, "ensemble: no sampler");
  }
  comm = options.comm;
  if (std::any_of(sinks.begin(), sinks.end(), [](auto& s) { return !s; }) ||
      (sinks.empty() && lead())) {
    throw Error(ErrorKind::usage, format("ensemble: no sink for its members (memory or a file){}",
                                         comm != nullptr ? " on rank 0" : ""));
  }
  if (options.until.max_steps < 1 || options.until.every < 1) {
    throw Error(ErrorKind::usage, format("ensemble: stop rule \"{}\": a step cap of at least 1 "
                                         "and checks every 1 or more steps",
                                         options.until.text()));
  }
  if (!(options.memory_fraction > 0 && options.memory_fraction <= 1)) {
    throw Error(ErrorKind::usage, format("ensemble: memory fraction {}: expected (0, 1]",
                                         general(options.memory_fraction)));
  }
  if (options.batch < 0) {
    throw Error(ErrorKind::usage,
                format("ensemble: batch {}: expected 0 (from memory) or more", options.batch));
  }
  if (std::error_code error;
      !options.vtk.empty() && !std::filesystem::is_directory(options.vtk, error)) {
    throw Error(ErrorKind::usage,
                format("ensemble: vtk {}: not a directory (make it first)", options.vtk.string()));
  }
  varied = sampler->names();
  for (const auto& name : varied) {
    if (!base.contains(name)) {
      std::vector<std::string> known;
      for (const auto& [key, value] : base.values()) {
        known.push_back(key);
      }
      throw Error(ErrorKind::usage,
                  format("ensemble: unknown param \"{}\" to vary{}; the node's params are {}", name,
                         did_you_mean(name, known), join(known)));
    }
  }
  auto first_values = sampler->next();
  if (!first_values) {
    throw Error(ErrorKind::usage, "ensemble: the sampler gives no members");
  }
  int threads = options.threads;
  if (threads < 0) {
    throw Error(ErrorKind::usage, format("ensemble: {} threads", threads));
  }
  pool.emplace(threads == 0 ? default_threads(comm != nullptr ? comm->node_size() : 1) : threads);
  // On a device the batch kernels are written for it (the first member's text), so it opens
  // first; a rank without one fails every rank alike.
  if (const DeviceChoice choice = parse_device(options.device, "ensemble"); choice.cuda) {
    collectively([&] { device = std::make_unique<MemberDevice>(choice, comm); });
  }
  // The first member is the template: its kernels are the batch's, requested once (over ranks:
  // every rank builds it, one compiles, all load; rank 0 keeps it as member 0). It is an error
  // if it cannot be built; later members that cannot are recorded as failed.
  std::unique_ptr<Member> first;
  collectively([&] { first = build(next_id++, std::move(*first_values)); });
  load_kernels(*first->state.node);
  collectively([&] {
    choose_batch(*first);
    if (lead()) {
      begin_sinks(*first);
    }
  });
  members.resize(static_cast<std::size_t>(batch));
  if (role.fed()) {
    retire(std::move(first)); // the template only: this stage's members come from the one before
  } else if (lead()) {
    members[0] = std::move(first);
  }
  if (!options.resume.empty()) {
    restore(options.resume);
  }
  if (!role.unfilled) {
    allocate();
  }
}

// The first member's kernels, written as a batch: one request per stage, whatever the members
// (over ranks, one request for the job: one rank compiles, every rank loads).
void Ensemble::Impl::load_kernels(const Node& node) {
  if (!device) {
    kernels = engine->kernels(sources, comm);
    for (std::size_t stage = 0; stage < sources.size(); ++stage) {
      reports.push_back({node.name(), kernels[stage].info(),
                         std::make_shared<const codegen::KernelSource>(sources[stage]),
                         static_cast<int>(stage)});
    }
    return;
  }
  // On a device: the PTX of each stage's batch kernel, then of the members' halo kernel of each
  // dtype of a state field with halos.
  std::vector<codegen::KernelSource> all = sources;
  const std::vector<codegen::Dtype> dtypes = halo_dtypes(node);
  for (const codegen::Dtype dtype : dtypes) {
    all.push_back(halo_fill_kernel(dtype, true));
  }
  const std::vector<engine::PtxKernel> ptx = engine->ptx(all, device->target(), comm);
  collectively([&] { device->load(*engine, ptx, slots, dtypes); });
  for (std::size_t stage = 0; stage < sources.size(); ++stage) {
    reports.push_back({node.name(), *ptx[stage].info,
                       std::make_shared<const codegen::KernelSource>(sources[stage]),
                       static_cast<int>(stage)});
  }
}

// The batch: as set, or what the threads step from their caches, at most what fits in the stated
// fraction of the memory this process can use, computed from the first member's buffers (never
// probed); never more than the sampler's members. A batch that cannot fit is refused with the
// figures.
void Ensemble::Impl::choose_batch(const Member& first) {
  bytes_per_member = std::max(member_memory(first.state), 1.0);
  const MemoryLimits limits = available_memory();
  const bool process_lower = limits.process.bytes < limits.machine.bytes;
  const MemoryLimit& limit = process_lower ? limits.process : limits.machine;
  const double usable = limit.bytes * options.memory_fraction;
  const double fit_bytes = std::floor(usable / bytes_per_member);
  std::int64_t fit = std::isfinite(fit_bytes) ? static_cast<std::int64_t>(std::min(fit_bytes, 1e15))
                                              : std::numeric_limits<std::int64_t>::max();
  const std::optional<std::int64_t> size = sampler->size();
  const std::string percent = fixed(options.memory_fraction * 100, 0) + "%";
  std::string memory =
      std::isfinite(usable)
          ? format("{} of {} ({}) fits {} of {} each", percent, bytes_text(limit.bytes),
                   limit.source, fit, bytes_text(bytes_per_member))
          : format("nothing is known of this machine's memory; {} each",
                   bytes_text(bytes_per_member));
  if (device) {
    // A member on the device holds there what it holds on the host (its state buffers, its
    // static arrays); the host keeps its copy too. The device's free memory, asked now.
    const auto [free, total] = device->memory();
    const auto on_device = static_cast<std::int64_t>(
        std::min(std::floor(free * options.memory_fraction / bytes_per_member), 1e15));
    memory = format("{} of the {} free of {} on {} (cuMemGetInfo) fits {}; on the host {}", percent,
                    bytes_text(free), bytes_text(total), device->description(), on_device, memory);
    fit = std::min(fit, on_device);
  }
  if (options.batch > 0) {
    if (options.batch > fit && device) {
      throw Error(ErrorKind::usage,
                  format("ensemble of {}: a batch of {} members needs about {} ({} each), and {}: "
                         "a batch of at most {}",
                         type, options.batch, bytes_text(bytes_per_member * options.batch),
                         bytes_text(bytes_per_member), memory, fit));
    }
    if (options.batch > fit) {
      throw Error(ErrorKind::usage,
                  format("ensemble of {}: a batch of {} members needs about {} ({} each), and {} "
                         "of what this process can use ({}, {}) is {}: a batch of at most {}",
                         type, options.batch, bytes_text(bytes_per_member * options.batch),
                         bytes_text(bytes_per_member),
                         fixed(options.memory_fraction * 100, 0) + "%", bytes_text(limit.bytes),
                         limit.source, bytes_text(usable), fit));
    }
    batch = options.batch;
    batch_reason = format("{} as set ({})", batch, memory);
  } else if (fit < 1) {
    throw Error(ErrorKind::usage, format("ensemble of {}: one member needs about {}, above what "
                                         "it may use: {}",
                                         type, bytes_text(bytes_per_member), memory));
  } else if (device) {
    // One launch covers the batch: as many members as memory holds keep the device busy.
    batch = std::min(fit, k_most_members);
    batch_reason = fit <= k_most_members
                       ? format("{} from memory: {}", batch, memory)
                       : format("{}, the most a batch sized from memory holds ({})", batch, memory);
  } else {
    // On CPUs a batch beyond what the threads step from their caches only adds memory to touch
    // and to keep: each thread steps groups of members that fit its cache (advance_all, with
    // thread_cache's measurements), and two groups a thread keep every thread busy as members
    // leave. A member larger than that cache is its thread's only one: two would take turns each
    // round, each bringing its state back from further away (pipe-flow 32×24×24, 7 MB a member,
    // on a 2-core AMD EPYC Zen 5: 1.13× the member-steps on 2 threads, 1.17× on 1; heat 48³ on
    // Zen 4 1.11×; performance.md).
    const auto threads = static_cast<std::size_t>(pool->size());
    const std::size_t group = cache_group(bytes_per_member, threads);
    const ThreadCache cache = thread_cache(threads);
    const bool fits = bytes_per_member <= cache.bytes;
    const auto from_caches = static_cast<std::int64_t>(threads * (fits ? 2 * group : 1));
    const std::string thread_count = format("{} thread{}", threads, threads == 1 ? "" : "s");
    batch = std::min({fit, k_most_members, from_caches});
    if (batch == from_caches && from_caches < fit && fits) {
      batch_reason = format("{}: two groups a thread for {}, each of {} member{} in {} ({})", batch,
                            thread_count, group, group == 1 ? "" : "s", cache.text, memory);
    } else if (batch == from_caches && from_caches < fit) {
      batch_reason = format("{}: one member a thread for {}, each larger than {} ({})", batch,
                            thread_count, cache.text, memory);
    } else {
      batch_reason = fit <= k_most_members ? format("{} from memory: {}", batch, memory)
                                           : format("{}, the most a batch sized from memory "
                                                    "holds ({})",
                                                    batch, memory);
    }
  }
  memory_fit = fit;
  const std::int64_t ranks = comm != nullptr ? comm->size() : 1;
  if (size && (*size + ranks - 1) / ranks < batch) {
    batch = (*size + ranks - 1) / ranks;
    batch_reason =
        ranks == 1 ? format("{}: the sampler's members ({})", batch, memory)
                   : format("{}: the sampler's members over {} ranks ({})", batch, ranks, memory);
  }
}

// Every sink begins before any member runs, with the columns of every member.
void Ensemble::Impl::begin_sinks(const Member& first) {
  columns.params = varied;
  columns.integrals = integral_names;
  for (const auto& field : first.state.current) {
    columns.fields.push_back({field->name(), field->dtype(), field->shape()});
  }
  std::vector<std::pair<std::string, std::string>> attributes = {{"node", type},
                                                                 {"until", options.until.text()}};
  for (const auto& report : reports) {
    attributes.emplace_back(format("kernel.stage{}", report.stage), report.info.key);
  }
  for (const auto& [key, value] : base.values()) {
    attributes.emplace_back("param." + key, value.text());
  }
  for (const auto& sink : sinks) {
    sink->begin(columns, attributes);
  }
}

// After a member's step: whether it stops, and why (StopRule).
void Ensemble::Impl::judge(Member& m) const {
  const StopRule& rule = options.until;
  const std::int64_t steps = m.steps - m.entered; // in a pipeline, the steps in this stage
  const bool capped = steps >= rule.max_steps;
  if (!capped && steps % rule.every != 0) {
    return;
  }
  const auto& now = m.state.integrals;
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (!std::isfinite(now[i])) {
      m.stopped = true;
      m.status = MemberStatus::failed;
      m.reason =
          format("integral {} is {} at step {}", integral_names[i], general(now[i]), m.steps);
      return;
    }
  }
  // Numbers only on every check; the words only for a member that stops.
  auto change_of = [&](std::size_t r) {
    const std::size_t i = change_index[r];
    if (rule.changes[r].below) {
      return std::abs(now[i]);
    }
    return now[i] == m.previous[i] ? 0.0 : std::abs(now[i] - m.previous[i]) / std::abs(now[i]);
  };
  // A first step has no step before it to compare with.
  bool converged = !rule.changes.empty();
  for (std::size_t r = 0; r < rule.changes.size() && converged; ++r) {
    converged = (rule.changes[r].below || steps >= 2) && change_of(r) < rule.changes[r].tolerance;
  }
  if (!converged && !capped) {
    return;
  }
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < rule.changes.size(); ++r) {
    const std::string& name = integral_names[change_index[r]];
    parts.push_back(format("{} {} {} {}",
                           rule.changes[r].below ? format("|{}|", name) : "change of " + name,
                           general(change_of(r)), converged ? "<" : "(not <",
                           general(rule.changes[r].tolerance)) +
                    (converged ? "" : ")"));
  }
  m.stopped = true;
  if (converged) {
    m.status = MemberStatus::converged;
    m.reason = join(parts, ", ");
  } else {
    m.status = MemberStatus::step_cap;
    m.reason = parts.empty() ? format("step cap {}", rule.max_steps)
                             : format("step cap {}; {}", rule.max_steps, join(parts, ", "));
  }
}

MemberResult Ensemble::Impl::result_of(const Member& m, bool with_fields) const {
  MemberResult r;
  r.id = m.id;
  r.values = m.values;
  r.steps = m.steps;
  r.status = m.status;
  r.reason = role.label() + m.reason;
  r.integrals = m.state.integrals;
  if (with_fields) {
    for (const auto& field : m.state.current) {
      MemberField f{field->name(), field->dtype(), field->shape(), {}};
      f.data.resize(static_cast<std::size_t>(field->interior_count()) *
                    codegen::size_of(field->dtype()));
      field->copy_interior_to(f.data);
      r.fields.push_back(std::move(f));
    }
  }
  return r;
}

// Puts `result` in the first sink with room; false if every sink is full.
bool Ensemble::Impl::place(MemberResult& result) {
  for (const auto& sink : sinks) {
    if (!sink->full()) {
      MemberResult summary = result;
      summary.fields.clear();
      sink->put(std::move(result));
      summaries.push_back(std::move(summary));
      left += comm == nullptr ? 1 : 0; // over ranks, counted where members leave their rank
      return true;
    }
  }
  return false;
}

// Members that stopped leave their batch. Serially, each goes to the first sink with room, or
// waits in the batch. Over ranks, every one leaves its rank at once for rank 0 (one gather),
// whose sinks take them in the order of the ranks; rank 0 holds those they have no room for.
void Ensemble::Impl::leave() {
  if (comm == nullptr) {
    while (!unplaced.empty() && place(unplaced.front())) {
      unplaced.erase(unplaced.begin());
    }
    for (auto& m : members) {
      if (m != nullptr && m->stopped && unplaced.empty()) {
        MemberResult result = result_of(*m, true);
        if (place(result)) {
          write_vtk(*m);
          retire(std::move(m));
        }
      }
    }
    return;
  }
  std::string bytes;
  collectively([&] {
    std::vector<MemberResult> going;
    if (!lead()) {
      going = std::move(unplaced);
      unplaced.clear();
    }
    for (auto& m : members) {
      if (m != nullptr && m->stopped) {
        going.push_back(result_of(*m, true));
        write_vtk(*m);
        retire(std::move(m));
        ++departed;
      }
    }
    bytes = encode_members(going);
  });
  const auto all = gather_to_root(*comm, bytes);
  collectively([&] {
    if (!lead()) {
      return;
    }
    // Rank 0's own unbuilt members first, then every rank's in rank order.
    for (const auto& from : all) {
      for (auto& m : decode_members(from, "ensemble: members from another rank")) {
        unplaced.push_back(std::move(m));
      }
    }
    std::size_t placed = 0;
    while (placed < unplaced.size() && place(unplaced[placed])) {
      ++placed;
    }
    unplaced.erase(unplaced.begin(), unplaced.begin() + static_cast<std::ptrdiff_t>(placed));
  });
}

void Ensemble::Impl::end_sinks() {
  if (!ended) {
    ended = true;
    for (const auto& sink : sinks) {
      sink->end();
    }
  }
}

bool Ensemble::Impl::step(std::int64_t steps) {
  if (ended) {
    return false;
  }
  if (comm == nullptr) {
    // Members that stopped earlier leave first, if a sink has room now; their slots refill.
    leave();
    allocate();
    if (role.fed()) {
      leave(); // members that failed in a stage before pass on as they came
    }
  }
  // Nothing stepping: members that wait can only wait for the host (a full memory sink), and
  // an ensemble alone has drained. (A stage of a pipeline before the last sends its members on
  // each round, and the pipeline agrees when every stage has drained.)
  if (comm == nullptr && (!role.piped() || role.last())) {
    const bool stepping = std::any_of(members.begin(), members.end(),
                                      [](const auto& m) { return m != nullptr && !m->stopped; });
    if (!stepping) {
      if (!unplaced.empty() ||
          std::any_of(members.begin(), members.end(), [](const auto& m) { return m != nullptr; })) {
        throw Error(ErrorKind::usage,
                    format("ensemble of {}: every sink is full ({}) and {} member(s) wait for "
                           "room; take members from a memory sink, or give a file sink after it",
                           type, sinks.front()->describe(), waiting_count()));
      }
      if (!role.piped()) {
        end_sinks();
        return false;
      }
    }
  }
  std::int64_t taken = 0;
  collectively([&] { taken = advance_all(steps); });
  ++batch_steps;
  // Those that stopped now leave at once where a sink has room, and their slots refill.
  leave();
  allocate();
  bool remain = !unplaced.empty() || std::any_of(members.begin(), members.end(),
                                                 [](const auto& m) { return m != nullptr; });
  if (comm == nullptr) {
    steps_taken += taken;
  } else {
    // Over ranks: what remains anywhere, and the member-steps and departures of every rank.
    const bool holding = lead() && !unplaced.empty();
    std::vector<double> sums = {remain && !holding ? 1.0 : 0.0, holding ? 1.0 : 0.0,
                                static_cast<double>(taken), static_cast<double>(departed)};
    comm->all_reduce_sum(sums);
    departed = 0;
    steps_taken += static_cast<std::int64_t>(sums[2]);
    left += static_cast<std::int64_t>(sums[3]);
    if (sums[0] == 0 && sums[1] != 0) {
      throw Error(ErrorKind::usage,
                  format("ensemble of {}: every sink of rank 0 is full and members wait for room; "
                         "take members from its memory sink, or give a file sink after it",
                         type));
    }
    remain = sums[0] != 0 || sums[1] != 0;
  }
  if (!remain && !role.piped()) {
    end_sinks();
  }
  return remain;
}

std::int64_t Ensemble::Impl::waiting_count() const {
  return static_cast<std::int64_t>(unplaced.size()) +
         std::count_if(members.begin(), members.end(),
                       [](const auto& m) { return m != nullptr && m->stopped; });
}

Ensemble::Ensemble(engine::Engine& engine, MemberFactory make, Params base,
                   std::unique_ptr<MemberSampler> sampler,
                   std::vector<std::shared_ptr<MemberSink>> sinks, EnsembleOptions options)
    : m_impl(std::make_unique<Impl>(engine, std::move(make), std::move(base), std::move(sampler),
                                    std::move(sinks), std::move(options))) {}

Ensemble::Ensemble(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

Ensemble::~Ensemble() = default;

void Ensemble::checkpoint(const std::filesystem::path& path) const {
  m_impl->save(path);
}

bool Ensemble::step() {
  return m_impl->step(1);
}

bool Ensemble::advance(std::int64_t steps) {
  if (steps < 1) {
    throw Error(ErrorKind::usage, format("ensemble: advance by {} steps: at least 1", steps));
  }
  return m_impl->step(steps);
}

void Ensemble::run(const std::function<void(const Ensemble&)>& progress) {
  // Several steps at a time: members stay in the cache over them, and stop at the step their
  // rule says all the same; slots refill between.
  while (advance(round_steps)) {
    if (progress) {
      progress(*this);
    }
  }
  if (progress) {
    progress(*this);
  }
}

const std::string& Ensemble::node_type() const noexcept {
  return m_impl->type;
}
const std::vector<std::string>& Ensemble::varied() const noexcept {
  return m_impl->varied;
}
const std::vector<std::string>& Ensemble::integrals() const noexcept {
  return m_impl->integral_names;
}
std::int64_t Ensemble::batch_size() const noexcept {
  return m_impl->batch;
}
const std::string& Ensemble::batch_reason() const noexcept {
  return m_impl->batch_reason;
}
double Ensemble::member_bytes() const noexcept {
  return m_impl->bytes_per_member;
}
std::int64_t Ensemble::active() const noexcept {
  return std::count_if(m_impl->members.begin(), m_impl->members.end(),
                       [](const auto& m) { return m != nullptr; });
}
std::int64_t Ensemble::waiting() const noexcept {
  return m_impl->waiting_count();
}
std::int64_t Ensemble::finished() const noexcept {
  return m_impl->left;
}
std::optional<std::int64_t> Ensemble::total() const {
  return m_impl->sampler->size();
}
std::int64_t Ensemble::member_steps() const noexcept {
  return m_impl->steps_taken;
}
std::int64_t Ensemble::batch_steps() const noexcept {
  return m_impl->batch_steps;
}
const std::vector<MemberResult>& Ensemble::summaries() const noexcept {
  return m_impl->summaries;
}
const std::vector<KernelReport>& Ensemble::kernel_reports() const noexcept {
  return m_impl->reports;
}
int Ensemble::threads() const noexcept {
  return m_impl->pool->size();
}

std::string Ensemble::device() const {
  return m_impl->device ? m_impl->device->description() : std::string("cpu");
}

} // namespace uwjit::runtime
