// Ensemble: its members (built from the factory, checked against the first), the batch size from
// memory, the batch step (one batch-kernel call per stage over the thread pool, each member's
// integrals summed as a Simulation sums them), the stop rule, the sinks and the refill.
#include <uwjit/runtime/ensemble.hpp>

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

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <span>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

// The steps run() takes between refills (and, over ranks, between the ranks' exchanges): a
// member that stops waits at most this many steps for its slot to refill.
constexpr std::int64_t k_steps_per_round = 16;

// The last-level cache of this machine's first CPU (sysfs), 8 MiB when it does not say.
std::size_t last_level_cache_bytes() {
  for (int index = 4; index >= 0; --index) {
    std::ifstream in(format("/sys/devices/system/cpu/cpu0/cache/index{}/size", index));
    std::string text;
    if (in >> text && !text.empty()) {
      const char unit = text.back();
      const std::size_t number = std::strtoull(text.c_str(), nullptr, 10);
      const std::size_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
      if (number > 0) {
        return number * scale;
      }
    }
  }
  return std::size_t{8} << 20;
}

// The most members a batch sized from memory holds: beyond, a step's work is already far above
// its fixed cost, and building members up front only delays the first step.
constexpr std::int64_t k_most_members = 4096;

// One member in the batch.
struct Member {
  std::int64_t id = 0;
  std::vector<double> values;
  NodeState state;
  std::int64_t steps = 0;
  std::vector<double> previous; // the integrals after the step before the last
  bool stopped = false;         // no longer stepped: it waits for a sink
  MemberStatus status = MemberStatus::step_cap;
  std::string reason;
};

// What members must share of a layout, in words (boundaries, dt and values may differ).
std::string shared_layout(const Layout& l) {
  std::string text = format("domain {}, halo", shape_text(l.domain));
  for (const int h : l.halo) {
    text += format(" {}", h);
  }
  text += ", fields";
  for (const auto& f : l.fields) {
    text += format(" {}:{}{}", f.name, codegen::to_string(f.dtype), shape_text(f.components));
  }
  text += format(", integrals ({}), {} stage(s)", join(l.integrals), l.stages);
  for (const auto mode : l.modes) {
    text += format(" {}", codegen::to_string(mode));
  }
  return text;
}

std::string values_text(const std::vector<std::string>& names, const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    parts.push_back(format("{}={}", names[i], general(values[i])));
  }
  return join(parts, " ");
}

} // namespace

struct Ensemble::Impl {
  engine::Engine* engine;
  MemberFactory make;
  Params base;
  std::unique_ptr<MemberSampler> sampler;
  std::vector<std::shared_ptr<MemberSink>> sinks;
  EnsembleOptions options;

  std::string type;
  std::vector<std::string> varied;
  std::vector<std::string> integral_names;
  std::vector<std::size_t> change_index; // per change rule: its integral's index
  std::string layout_text;               // the first member's, as members must share it
  std::vector<std::string> texts;        // per stage: the first member's kernel text
  std::vector<engine::Kernel> kernels;   // per stage: the batch kernel
  std::vector<codegen::SlotTables> slots;
  std::vector<KernelReport> reports;
  std::int64_t batch = 0;
  std::string batch_reason;
  double bytes_per_member = 0;
  std::vector<std::unique_ptr<Member>> members; // the batch's slots; null: empty
  std::vector<MemberResult> summaries;
  std::int64_t next_id = 0;
  std::int64_t steps_taken = 0;
  std::int64_t batch_steps = 0;
  std::int64_t left = 0;
  std::optional<ThreadPool> pool;
  // One stage's calls of a group of members: each stepping member's slabs, in member order.
  struct Calls {
    std::vector<uwjit_kernel_args> args;
    std::vector<int> status;
    std::vector<double> sums; // call-major: call c's integral slots at c * slot count
    std::vector<std::size_t> member;
  };
  std::vector<Calls> scratch; // per group, kept from step to step
  // The state buffers of members that left, for the members that take their slots (the same
  // layout): a refill allocates nothing.
  std::vector<std::pair<std::vector<std::unique_ptr<Field>>, std::vector<std::unique_ptr<Field>>>>
      spare;
  std::vector<std::byte> interior;    // a field's interior, on its way from current to next
  std::vector<char> failed_now;       // per slot: its kernel failed in this step
  std::vector<MemberResult> unplaced; // serially, members never built, waiting for a sink;
                                      // over ranks, what leaves this rank next (rank 0: what
                                      // waits for room in its sinks)
  MemberColumns columns;              // what every member holds
  bool mismatch = false;              // build() is throwing: a member differs from the first
  std::vector<codegen::KernelSource> sources; // per stage: the first member's batch kernel
  bool exhausted = false;                     // the sampler has given its last member
  bool ended = false;                         // the sinks have ended
  comm::Comm* comm = nullptr;                 // the ranks the members are spread over, or null
  std::int64_t departed = 0;                  // members that left this rank since the last step

  Impl(engine::Engine& e, MemberFactory factory, Params params,
       std::unique_ptr<MemberSampler> source, std::vector<std::shared_ptr<MemberSink>> outs,
       EnsembleOptions opts);
  [[nodiscard]] Params member_params(const std::vector<double>& values) const;
  std::unique_ptr<Member> build(std::int64_t id, std::vector<double> values);
  void load_kernels(const Node& node);
  void choose_batch(const Member& first);
  void begin_sinks(const Member& first);
  void allocate();
  void leave_unbuilt(MemberResult result);
  void leave();
  void end_sinks();
  template <class Body> void collectively(Body&& body) {
    if (comm != nullptr) {
      comm::together(*comm, body);
    } else {
      body();
    }
  }
  [[nodiscard]] bool lead() const { return comm == nullptr || comm->rank() == 0; }
  void retire(std::unique_ptr<Member> member);
  std::vector<Field*> reuse_fields(NodeState& s);
  void call_stage(std::span<const std::size_t> group, std::size_t stage, Calls& c,
                  std::size_t parts);
  std::int64_t advance(std::span<const std::size_t> group, std::int64_t steps, Calls& c,
                       std::size_t parts);
  std::int64_t advance_all(std::int64_t steps);
  void judge(Member& m) const;
  [[nodiscard]] MemberResult result_of(const Member& m, bool with_fields) const;
  bool place(MemberResult& result);
  bool step(std::int64_t steps);
  [[nodiscard]] std::int64_t waiting_count() const;
};

Ensemble::Impl::Impl(engine::Engine& e, MemberFactory factory, Params params,
                     std::unique_ptr<MemberSampler> source,
                     std::vector<std::shared_ptr<MemberSink>> outs, EnsembleOptions opts)
    : engine(&e), make(std::move(factory)), base(std::move(params)), sampler(std::move(source)),
      sinks(std::move(outs)), options(std::move(opts)) {
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
  if (lead()) {
    members[0] = std::move(first);
  }
  allocate();
}

Params Ensemble::Impl::member_params(const std::vector<double>& values) const {
  Params params = base;
  for (std::size_t i = 0; i < varied.size(); ++i) {
    const Value& was = base.at(varied[i]);
    if (was.is_int()) {
      const double v = values[i];
      if (v != std::floor(v) || std::abs(v) > 9.0e15) {
        throw Error(ErrorKind::usage,
                    format("param \"{}\" is a whole number; {} is not", varied[i], general(v)));
      }
      params.set(varied[i], static_cast<std::int64_t>(v));
    } else if (was.is_double()) {
      params.set(varied[i], values[i]);
    } else {
      throw Error(ErrorKind::usage, format("param \"{}\" is a {}; an ensemble varies numbers",
                                           varied[i], was.type_name()));
    }
  }
  return params;
}

std::unique_ptr<Member> Ensemble::Impl::build(std::int64_t id, std::vector<double> values) {
  auto m = std::make_unique<Member>();
  m->id = id;
  m->values = std::move(values);
  const std::shared_ptr<const Node> node = make(member_params(m->values));
  if (!node) {
    throw Error(ErrorKind::usage, "ensemble: the member factory gave no node");
  }
  NodeState& s = m->state;
  s.node = node;
  s.layout = read_layout(*node);
  const bool first = texts.empty();
  auto differs = [&](std::string_view what) {
    mismatch = true;
    return Error(
        ErrorKind::usage,
        format("ensemble of {}: member {} ({}) {} member 0's; the params an ensemble varies "
               "may change run-time params, static data, boundary values and initial "
               "states, never the layout or what is compiled into the kernel",
               type, id, values_text(varied, m->values), what));
  };
  if (first) {
    type = node->type();
    integral_names = s.layout.integrals;
    layout_text = shared_layout(s.layout);
    if (!s.layout.inputs.empty()) {
      throw Error(ErrorKind::usage,
                  format("ensemble of {}: the node reads other nodes' fields (inputs); an "
                         "ensemble holds members of one node type alone",
                         type));
    }
    for (const auto& change : options.until.changes) {
      const auto at = std::find(integral_names.begin(), integral_names.end(), change.integral);
      if (at == integral_names.end()) {
        throw Error(ErrorKind::usage,
                    format("stop rule \"change:{}<{}\": {} has no integral \"{}\"{}; its "
                           "integrals are {}",
                           change.integral, general(change.tolerance), type, change.integral,
                           did_you_mean(change.integral, integral_names),
                           integral_names.empty() ? "none" : join(integral_names)));
      }
      change_index.push_back(static_cast<std::size_t>(at - integral_names.begin()));
    }
  } else if (node->type() != type) {
    throw differs(format("is a {} node, not a {} like", node->type(), type));
  } else if (shared_layout(s.layout) != layout_text) {
    throw differs(format("has the layout {}, not that of", shared_layout(s.layout)));
  }
  s.shard = serial_shard(s.layout);
  s.bound = node->static_data();
  std::vector<Emitted> emitted =
      emit(*node, s.layout, s.bound, node->static_data(), false, false, true);
  if (first) {
    for (const auto& e : emitted) {
      texts.push_back(e.source.canonical());
      slots.push_back(e.source.slots());
      sources.push_back(e.source);
    }
  } else {
    for (std::size_t stage = 0; stage < emitted.size(); ++stage) {
      if (emitted[stage].source.canonical() != texts[stage]) {
        throw differs("writes a kernel text other than");
      }
    }
  }
  for (auto& e : emitted) {
    Binding binding = bind_kernel(*node, s.layout, e.writer, s.bound, serial_padder(s.layout));
    s.stages.emplace_back();
    s.stages.back().binding = std::move(binding);
    s.stages.back().writer.emplace(std::move(e.writer));
  }
  const std::vector<Field*> fields = reuse_fields(s);
  State state(fields, Slab{s.shard.offset, s.shard.extent, s.shard.global});
  node->initial_state(state);
  // A retired member's next buffers start as a new member's would (wire() copies the interior
  // into those it makes), so that a cell a kernel leaves unwritten is the same as alone.
  for (std::size_t i = 0; i < s.next.size(); ++i) {
    if (s.next[i] != nullptr) {
      interior.resize(static_cast<std::size_t>(s.current[i]->interior_count()) *
                      codegen::size_of(s.current[i]->dtype()));
      s.current[i]->copy_interior_to(interior);
      s.next[i]->copy_interior_from(interior);
    }
  }
  s.integrals.assign(s.layout.integrals.size(), 0.0);
  s.wire();
  for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
    codegen::set_table_lengths(s.stages[stage].args, slots[stage]);
  }
  m->previous = s.integrals;
  return m;
}

// The first member's kernels, written as a batch: one request per stage, whatever the members
// (over ranks, one request for the job: one rank compiles, every rank loads).
void Ensemble::Impl::load_kernels(const Node& node) {
  kernels = engine->kernels(sources, comm);
  for (std::size_t stage = 0; stage < sources.size(); ++stage) {
    reports.push_back({node.name(), kernels[stage].info(),
                       std::make_shared<const codegen::KernelSource>(sources[stage]),
                       static_cast<int>(stage)});
  }
}

namespace {

// What one member holds: its state buffers (halos included), its static arrays and their
// halo-padded copies.
double member_memory(const NodeState& s) {
  double bytes = 0;
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    const double one = static_cast<double>(s.current[i]->padded_count()) *
                       static_cast<double>(codegen::size_of(s.current[i]->dtype()));
    bytes += s.next[i] ? 2 * one : one;
  }
  for (const auto& [key, entry] : s.bound.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      bytes += static_cast<double>(array->size_bytes());
    }
  }
  for (const auto& stage : s.stages) {
    for (const auto& padded : stage.binding.padded) {
      bytes += static_cast<double>(padded->padded_count()) *
               static_cast<double>(codegen::size_of(padded->dtype()));
    }
  }
  return bytes;
}

} // namespace

// The batch: as set, or what fits in the stated fraction of the memory this process can use,
// computed from the first member's buffers (never probed); never more than the sampler's
// members. A batch that cannot fit is refused with the figures.
void Ensemble::Impl::choose_batch(const Member& first) {
  bytes_per_member = std::max(member_memory(first.state), 1.0);
  const MemoryLimits limits = available_memory();
  const bool process_lower = limits.process.bytes < limits.machine.bytes;
  const MemoryLimit& limit = process_lower ? limits.process : limits.machine;
  const double usable = limit.bytes * options.memory_fraction;
  const double fit_bytes = std::floor(usable / bytes_per_member);
  const std::int64_t fit = std::isfinite(fit_bytes)
                               ? static_cast<std::int64_t>(std::min(fit_bytes, 1e15))
                               : std::numeric_limits<std::int64_t>::max();
  const std::optional<std::int64_t> size = sampler->size();
  const std::string memory =
      std::isfinite(usable)
          ? format("{} of {} ({}) fits {} of {} each",
                   fixed(options.memory_fraction * 100, 0) + "%", bytes_text(limit.bytes),
                   limit.source, fit, bytes_text(bytes_per_member))
          : format("nothing is known of this machine's memory; {} each",
                   bytes_text(bytes_per_member));
  if (options.batch > 0) {
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
    throw Error(ErrorKind::usage,
                format("ensemble of {}: one member needs about {}, above the {} it may use "
                       "({}% of {}, {})",
                       type, bytes_text(bytes_per_member), bytes_text(usable),
                       fixed(options.memory_fraction * 100, 0), bytes_text(limit.bytes),
                       limit.source));
  } else {
    batch = std::min(fit, k_most_members);
    batch_reason = fit <= k_most_members ? format("{} from memory: {}", batch, memory)
                                         : format("{}, the most a batch sized from memory holds "
                                                  "({})",
                                                  batch, memory);
  }
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

// The free slots take the sampler's next members, until it is exhausted; only those members'
// states are built. Serially, in slot order, and none while a member waits for a sink. Over
// ranks, every rank draws the same members from its own sampler, the ranks' free slots numbered
// in rank order (an all-gather of one count per rank), each building only its own: no member
// twice, none lost, and slots refilled wherever members finish first. A member the node's own
// code cannot build (its factory or initial state refusing its params) leaves at once as
// failed; one that differs from the first is an error (on every rank).
void Ensemble::Impl::allocate() {
  std::vector<std::size_t> free;
  if (comm != nullptr || unplaced.empty()) {
    for (std::size_t slot = 0; slot < members.size(); ++slot) {
      if (!members[slot]) {
        free.push_back(slot);
      }
    }
  }
  if (exhausted) {
    return; // every rank alike
  }
  std::int64_t before = 0;
  auto total = static_cast<std::int64_t>(free.size());
  if (comm != nullptr) {
    const auto counts = comm->all_gather(std::to_string(free.size()));
    total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      const std::int64_t count = std::stoll(counts[r]);
      before += static_cast<int>(r) < comm->rank() ? count : 0;
      total += count;
    }
  }
  std::vector<std::pair<std::int64_t, std::vector<double>>> mine;
  for (std::int64_t k = 0; k < total; ++k) {
    auto values = sampler->next();
    if (!values) {
      exhausted = true;
      break;
    }
    const std::int64_t id = next_id++;
    if (k >= before && k < before + static_cast<std::int64_t>(free.size())) {
      mine.emplace_back(id, std::move(*values));
    }
  }
  collectively([&] {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      auto& [id, values] = mine[i];
      try {
        members[free[i]] = build(id, values);
      } catch (const Error& error) {
        if (mismatch) {
          throw;
        }
        MemberResult r;
        r.id = id;
        r.values = values;
        r.status = MemberStatus::failed;
        r.reason = format("not built: {}", error.what());
        r.integrals.assign(integral_names.size(), std::nan(""));
        leave_unbuilt(std::move(r));
      }
    }
  });
}

// A member that has left: its state buffers are kept for the next member built.
void Ensemble::Impl::retire(std::unique_ptr<Member> member) {
  if (member != nullptr && spare.size() < members.size()) {
    spare.emplace_back(std::move(member->state.current), std::move(member->state.next));
  }
}

// A member's current buffers (with its boundaries): a retired member's when there is one (its
// interior is overwritten by initial_state, its halos filled before they are read, and its next
// buffers are written whole by each step), else new ones.
std::vector<Field*> Ensemble::Impl::reuse_fields(NodeState& s) {
  if (spare.empty()) {
    return s.allocate_fields();
  }
  auto [current, next] = std::move(spare.back());
  spare.pop_back();
  std::vector<Field*> fields;
  for (std::size_t i = 0; i < s.layout.fields.size(); ++i) {
    const StateField& f = s.layout.fields[i];
    s.boundaries.push_back(s.layout.boundaries(f));
    const auto halos = s.layout.halos(f);
    s.has_halo.push_back(std::any_of(halos.begin(), halos.end(), [](int h) { return h > 0; }));
    fields.push_back(current[i].get());
  }
  s.current = std::move(current);
  s.next = std::move(next);
  return fields;
}

// A member that was never built: its fields are zeros of the members' shapes, so that every
// member has a row in every sink.
void Ensemble::Impl::leave_unbuilt(MemberResult result) {
  for (const auto& column : columns.fields) {
    std::int64_t count = 1;
    for (const auto n : column.shape) {
      count *= n;
    }
    result.fields.push_back(
        {column.name, column.dtype, column.shape,
         std::vector<std::byte>(static_cast<std::size_t>(count) * codegen::size_of(column.dtype))});
  }
  unplaced.push_back(std::move(result));
  ++departed;
}

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
        s.current[i]->fill_halos(s.boundaries[i]);
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
      for (std::size_t i = 0; i < sums; ++i) {
        binding.kernel_integrals[i] += c.sums[j * sums + i];
      }
    }
    for (std::size_t i = 0; i < s.integrals.size(); ++i) {
      if (binding.integral_slot[i] != k_no_slot) {
        s.integrals[i] = binding.kernel_integrals[binding.integral_slot[i]];
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
  const auto threads = static_cast<std::size_t>(pool->size());
  if (stepping.size() < threads) {
    scratch.resize(1);
    return advance(stepping, steps, scratch[0], threads);
  }
  // Groups of at most a cache share each, and at least one group per thread.
  const double share = static_cast<double>(last_level_cache_bytes()) / (2.0 * threads);
  const auto fits = static_cast<std::size_t>(std::max(1.0, share / bytes_per_member));
  const std::size_t size = std::min(fits, (stepping.size() + threads - 1) / threads);
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

// After a member's step: whether it stops, and why (StopRule).
void Ensemble::Impl::judge(Member& m) const {
  const StopRule& rule = options.until;
  const bool capped = m.steps >= rule.max_steps;
  if (!capped && m.steps % rule.every != 0) {
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
    return now[i] == m.previous[i] ? 0.0 : std::abs(now[i] - m.previous[i]) / std::abs(now[i]);
  };
  // A first step has no step before it to compare with.
  bool converged = !rule.changes.empty() && m.steps >= 2;
  for (std::size_t r = 0; r < rule.changes.size() && converged; ++r) {
    converged = change_of(r) < rule.changes[r].tolerance;
  }
  if (!converged && !capped) {
    return;
  }
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < rule.changes.size(); ++r) {
    parts.push_back(format("change of {} {} {} {}", integral_names[change_index[r]],
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
  r.reason = m.reason;
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
      for (auto& m : decode_members(from)) {
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
      end_sinks();
      return false;
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
  if (!remain) {
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

Ensemble::~Ensemble() = default;

bool Ensemble::step() {
  return m_impl->step(1);
}

void Ensemble::run(const std::function<void(const Ensemble&)>& progress) {
  // Several steps at a time: members stay in the cache over them, and stop at the step their
  // rule says all the same; slots refill between.
  while (m_impl->step(k_steps_per_round)) {
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

} // namespace uwjit::runtime
