// Simulation: its construction (node agreement, decomposition, memory estimate, kernel requests,
// static data, binding, state) and the public accessors. One idea, building a simulation, whose
// stages share Impl's state and run in this file's order, which is why it is over 700 lines; the
// step loop is stepper.cpp, checkpoints checkpoint.cpp, its snapshots (whole or a rank's
// slab) simulation_snapshots.cpp.
#include <uwjit/runtime/simulation.hpp>

#include "memory_budget.hpp"
#include "node_agreement.hpp"
#include "node_shared.hpp"
#include "runtime_log.hpp"
#include "simulation_impl.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <span>
#include <thread>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

std::string_view to_string(ExchangeMode mode) noexcept {
  return mode == ExchangeMode::sync ? "sync" : "overlap";
}

int parse_threads(std::string_view text, std::string_view what) {
  int threads = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), threads);
  if (ec != std::errc{} || end != text.data() + text.size() || threads < 1 ||
      threads > k_max_threads) {
    throw Error(ErrorKind::usage, format("{}: expected a whole number from 1 to {}, got \"{}\"",
                                         what, k_max_threads, text));
  }
  return threads;
}

namespace {

// What one process holds for a node while it steps: its state fields' two buffers over the
// shard with halos, and the static arrays it binds (a shard-mode array's slab when sharded;
// one not computed by box is also built whole, and stays); sharded, a node that does not fill
// by slab also holds its whole state while it is filled (the largest such node counts).
void add_need(MemoryNeed& need, const Layout& layout, const ShardInfo& shard,
              const StaticData& whole) {
  const bool sharded = shard.extent != shard.global;
  double whole_state = 0;
  for (const auto& f : layout.fields) {
    double cells = codegen::size_of(f.dtype);
    double global = cells;
    for (const std::int64_t c : f.components) {
      cells *= static_cast<double>(c);
      global *= static_cast<double>(c);
    }
    for (std::size_t d = 0; d < shard.extent.size(); ++d) {
      cells *= static_cast<double>(shard.extent[d] + 2 * std::int64_t{layout.halo[d]});
      global *= static_cast<double>(shard.global[d]);
    }
    need.state += 2 * cells;
    whole_state += global;
  }
  if (sharded && !layout.slab_initial_state) {
    need.fill = std::max(need.fill, whole_state);
  }
  for (const auto& [key, entry] : whole.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      const auto all = static_cast<double>(array->size_bytes());
      double bytes = all;
      if (array->replication() == Replication::shard) {
        for (std::size_t d = 0; d < shard.extent.size(); ++d) {
          bytes *= static_cast<double>(shard.extent[d]) / static_cast<double>(shard.global[d]);
        }
        if (sharded && !array->is_computed_by_box()) {
          bytes += all;
        }
      }
      need.statics += bytes;
    }
  }
}

// What every rank of a sharded simulation must choose alike, besides its nodes.
std::vector<Fact> setup_facts(const SimulationOptions& options, bool checked) {
  std::vector<std::string> axes;
  for (const int axis : options.shard_axes) {
    axes.push_back(std::to_string(axis));
  }
  return {{"the shard axes", axes.empty() ? "(default: 0)" : join(axes)},
          {"the grid", options.grid.empty() ? "(balanced)" : grid_text(options.grid)},
          {"the exchange mode", std::string(to_string(options.exchange))},
          {"checked mode", checked ? "on" : "off"},
          {"the device kind", options.device.substr(0, options.device.find(':'))}};
}

} // namespace

Simulation::Impl::Impl(engine::Engine& e, std::vector<std::shared_ptr<const Node>> list,
                       const SimulationOptions& options, Init init)
    : engine(&e), nodes(std::move(list)), exchange_mode(options.exchange),
      checked(options.checked || env::get_bool(env::vars::checked)) {
  if (options.threads != 0) {
    (void)parse_threads(std::to_string(options.threads), "simulation: threads (0: the default)");
  }
  if (options.comm != nullptr) {
    // Before anything that reads a node's layout: ranks that build different nodes (or the same
    // with other params) would otherwise split different domains, or silently run different
    // physics. Every rank raises the same error naming the first difference.
    agree_on_nodes(*options.comm, setup_facts(options, checked), nodes);
  }
  if (options.comm != nullptr) {
    decomposition = Decomposition::make(options);
  }
  int threads = options.threads;
  if (threads == 0) {
    // The ranks of this node share its cores.
    threads = detail::default_threads(decomposition ? options.comm->node_size() : 1);
  }
  executor.emplace(threads);
  std::set<std::string> names;
  for (const auto& node : nodes) {
    if (node == nullptr) {
      throw Error(ErrorKind::usage, "simulation: a null node");
    }
    if (!names.insert(node->name()).second) {
      throw Error(ErrorKind::usage, format("simulation: two nodes are named \"{}\"", node->name()));
    }
  }
  states.resize(nodes.size());
  std::vector<std::vector<Emitted>> emitted(nodes.size());
  std::vector<std::vector<detail::Probe>> probes(nodes.size());
  // A node's own code (emit_update, its static data) may fail on some ranks only: the ranks
  // agree before the first collective that needs every rank.
  collectively(options, [&] {
    open_device(options);
    MemoryNeed need;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeState& s = states[n];
      s.node = nodes[n];
      s.layout = read_layout(*s.node);
      s.shard = serial_shard(s.layout);
      const StaticData& whole = s.node->static_data();
      s.bound = whole;
      s.checked = checked;
      if (checked) {
        Decomposition::check_shard_axes(*s.node, s.layout, whole);
      }
      if (decomposition) {
        // Every check reads only the node and the options, so every rank raises the same error
        // here, before the first collective.
        decomposition->check(*s.node, s.layout, whole);
        s.shard = decomposition->shard_of(s.layout, options.comm->rank());
      }
      add_need(need, s.layout, s.shard, whole);
    }
    // From the layouts alone, before any state is allocated or static array computed (a node's
    // computed arrays are built when first read): a run that cannot fit is refused now, with
    // the figures, instead of failing in an allocation (or being killed) later.
    check_fits(need, decomposition ? options.comm->node_size() : 1, available_memory());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeState& s = states[n];
      const StaticData& whole = s.node->static_data();
      if (decomposition) {
        s.plans = decomposition->plans(s.layout, Decomposition::For::state, options.comm->rank());
        StaticData local;
        for (const auto& [key, entry] : whole.entries()) {
          const auto* array = std::get_if<StaticArray>(&entry);
          if (array == nullptr) {
            local.add(key, std::get<Value>(entry));
          } else if (array->replication() == Replication::shard) {
            local.add(slice(*array, s.shard));
          } else {
            local.add(*array);
          }
        }
        s.bound = std::move(local);
        // Run-time extents on sharded axes: one kernel text, and one key, for all ranks.
        s.layout.domain = s.shard.extent;
        for (const int d : decomposition->axes) {
          s.layout.modes[static_cast<std::size_t>(d)] = codegen::ExtentMode::runtime;
        }
      }
    }
    resolve_inputs();
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeState& s = states[n];
      emitted[n] =
          emit(*s.node, s.layout, s.bound, s.node->static_data(), checked, cuda.has_value());
      if (!checked && !cuda) {
        // Checked mode checks every step; on a device no step can be checked.
        probes[n] = emit_probes(*s.node, s.layout, s.bound, s.node->static_data(), emitted[n]);
      }
    }
  });
  if (decomposition && options.share_on_node) {
    share_replicate_arrays(*options.comm, options.share_min_bytes);
  }
  std::vector<Emitted> flat;
  for (auto& stages : emitted) {
    std::move(stages.begin(), stages.end(), std::back_inserter(flat));
  }
  // The first-step checks (every rank writes the same), requested once the kernels they check
  // are: a kernel that does not compile is reported as itself, never as its checked text.
  std::vector<Emitted> checks;
  for (auto& node_probes : probes) {
    for (auto& probe : node_probes) {
      checks.push_back(std::move(probe.checked));
    }
  }
  // A fill is the node's own code: one that throws on some ranks is the same error on every
  // rank, not one rank leaving while the others wait in the next collective.
  collectively(options, [&] { fill_computed_arrays(flat); });
  request_all(flat, options);
  auto check_kernels = request(checks, options);
  std::size_t next_kernel = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    NodeState& s = states[n];
    StaticPadder pad = serial_padder(s.layout);
    if (decomposition) {
      const auto plans =
          decomposition->plans(s.layout, Decomposition::For::statics, options.comm->rank());
      pad = [plans, comm = options.comm](Field& field, const std::vector<int>& domain_axes) {
        std::vector<detail::AxisPlan> field_plans;
        for (const int d : domain_axes) {
          field_plans.push_back(d >= 0 ? plans[static_cast<std::size_t>(d)] : detail::AxisPlan{});
        }
        // Static data never changes: exchanged once, here.
        detail::HaloExchanger exchanger(*comm, {field_plans});
        Field* fields[] = {&field};
        exchanger.fill(fields, ExchangeMode::sync);
      };
    }
    for (int stage = 0; stage < s.layout.stages; ++stage, ++next_kernel) {
      Emitted& e = flat[next_kernel];
      Binding binding = bind_kernel(*s.node, s.layout, e.writer, s.bound, pad);
      if (!cuda) {
        binding.kernel = std::move(kernels_[next_kernel]);
      }
      binding.report = reports[next_kernel];
      s.stages.emplace_back();
      s.stages.back().binding = std::move(binding);
      s.stages.back().writer.emplace(std::move(e.writer));
    }
  }
  std::size_t next_probe = 0;
  std::size_t first_report = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    NodeState& s = states[n];
    for (const auto& probe : probes[n]) {
      StageKernel& stage = s.stages[probe.stage];
      stage.probe = std::move(check_kernels[next_probe++]);
      stage.probe_due = true;
      stage.probe_sums.assign(stage.binding.kernel_integrals.size(), 0.0);
      reports[first_report + probe.stage].first_step_check = stage.probe->info();
      stage.binding.report.first_step_check = stage.probe->info();
      logger().info("node {}: kernel {}: its text does not show its reads within their halos; its "
                    "first step runs checked (kernel {})",
                    s.node->name(), stage.binding.report.info.key, stage.probe->info().key);
    }
    first_report += s.stages.size();
  }
  // initial_state is the node's own code too.
  collectively(options, [&] {
    for (auto& s : states) {
      allocate_state(s, init);
    }
  });
  for (auto& s : states) {
    s.integrals.assign(s.layout.integrals.size(), 0.0);
    s.input_fields.assign(s.layout.inputs.size(), nullptr);
    s.wire();
  }
  if (cuda) {
    collectively(options, [&] {
      for (auto& s : states) {
        make_device_state(s);
      }
    });
  }
}

void Simulation::Impl::share_replicate_arrays(comm::Comm& comm, std::size_t min_bytes) {
  std::vector<detail::SharedCandidate> candidates;
  for (const auto& s : states) {
    for (const auto& [key, entry] : s.bound.entries()) {
      const auto* array = std::get_if<StaticArray>(&entry);
      if (array != nullptr && array->is_computed() &&
          array->replication() == Replication::replicate && array->size_bytes() >= min_bytes) {
        candidates.push_back({s.node->name(), array});
      }
    }
  }
  node_shared = detail::share_on_node(candidates, comm);
}

void Simulation::Impl::fill_computed_arrays(const std::vector<Emitted>& emitted) const {
  std::size_t next = 0;
  for (const NodeState& s : states) {
    for (int stage = 0; stage < s.layout.stages; ++stage, ++next) {
      for (const auto& buffer : emitted[next].writer.buffers()) {
        const StaticArray* array =
            buffer.role == codegen::BufferRole::statics ? s.bound.array(buffer.name) : nullptr;
        if (array == nullptr || !array->is_computed()) {
          continue;
        }
        const auto failed = [&](ErrorKind kind, std::string_view what) {
          return Error(kind, format("{}node \"{}\": computing static array \"{}\": {}",
                                    decomposition ? format("rank {}: ", decomposition->comm->rank())
                                                  : std::string(),
                                    s.node->name(), array->key(), what));
        };
        try {
          (void)array->data(); // filled once, here or by an earlier stage
        } catch (const Error& error) {
          throw failed(error.kind(), error.what());
        } catch (const std::exception& error) {
          throw failed(ErrorKind::usage, error.what());
        } catch (...) {
          throw failed(ErrorKind::usage, "an exception that is not a std::exception");
        }
      }
    }
  }
}

void Simulation::Impl::resolve_inputs() {
  for (auto& s : states) {
    s.layout.inputs.clear();
    for (const NodeInput& declared : s.layout.declared_inputs) {
      const auto reader = [&] {
        return format("node \"{}\" reads field \"{}\" of node \"{}\"", s.node->name(),
                      declared.field, declared.node);
      };
      std::size_t owner = 0;
      while (owner < states.size() && states[owner].node->name() != declared.node) {
        ++owner;
      }
      if (owner == states.size()) {
        throw Error(ErrorKind::usage, reader() + ", but the simulation has no such node");
      }
      const NodeState& o = states[owner];
      if (&o == &s) {
        throw Error(ErrorKind::usage, reader() + ": a node reads its own fields as state");
      }
      std::size_t field = 0;
      while (field < o.layout.fields.size() && o.layout.fields[field].name != declared.field) {
        ++field;
      }
      if (field == o.layout.fields.size()) {
        throw Error(ErrorKind::usage,
                    reader() + format(", but \"{}\" has no such state field", declared.node));
      }
      if (o.shard.global != s.shard.global) {
        throw Error(ErrorKind::usage,
                    reader() + format(": the domains differ ({} cells and {}; a coupled input "
                                      "needs the same domain and decomposition)",
                                      shape_text(s.shard.global), shape_text(o.shard.global)));
      }
      StateField f = o.layout.fields[field];
      f.name = declared.as;
      s.layout.inputs.push_back({std::move(f), o.layout.halo, owner, field});
    }
  }
}

void Simulation::Impl::request_all(std::vector<Emitted>& emitted,
                                   const SimulationOptions& options) {
  if (cuda) {
    request_on_device(emitted, options);
    return;
  }
  kernels_ = request(emitted, options);
  std::vector<engine::KernelInfo> infos;
  for (const auto& kernel : kernels_) {
    infos.push_back(kernel->info());
  }
  report_all(emitted, infos);
}

std::vector<std::optional<engine::Kernel>>
Simulation::Impl::request(const std::vector<Emitted>& emitted, const SimulationOptions& options) {
  std::vector<std::optional<engine::Kernel>> kernels;
  if (emitted.empty()) {
    return kernels; // on every rank alike: the ranks write the same texts
  }
  if (options.comm != nullptr) {
    // Collective: the ranks agree on the keys, one rank compiles, every rank loads.
    std::vector<codegen::KernelSource> sources;
    for (const auto& e : emitted) {
      sources.push_back(e.source);
    }
    for (auto& kernel : engine->kernels(sources, options.comm)) {
      kernels.emplace_back(std::move(kernel));
    }
    return kernels;
  }
  std::vector<std::string> keys;
  std::vector<std::size_t> firsts;
  std::map<std::string, std::size_t> first_of;
  for (std::size_t n = 0; n < emitted.size(); ++n) {
    keys.push_back(engine->key_of(emitted[n].source).hex());
    if (first_of.emplace(keys.back(), n).second) {
      firsts.push_back(n);
    }
  }
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = options.compile_threads > 0 ? options.compile_threads : std::min(hardware, 4);
  kernels.assign(emitted.size(), std::nullopt);
  if (firsts.empty()) {
    return kernels;
  }
  // A team of its own for the compiles, sized for them, gone once they are done.
  detail::ThreadPool compilers(std::min(threads, static_cast<int>(firsts.size())));
  auto compile = [&](std::size_t i) {
    const std::size_t n = firsts[i];
    kernels[n].emplace(engine->kernel(emitted[n].source));
  };
  compilers.run(firsts.size(), compile);
  for (std::size_t n = 0; n < emitted.size(); ++n) {
    if (!kernels[n]) {
      kernels[n].emplace(engine->kernel(emitted[n].source));
    }
  }
  return kernels;
}

void Simulation::Impl::report_all(std::vector<Emitted>& emitted,
                                  const std::vector<engine::KernelInfo>& infos) {
  reports.clear();
  std::size_t k = 0;
  for (const auto& s : states) {
    for (int stage = 0; stage < s.layout.stages; ++stage, ++k) {
      const auto& info = infos[k];
      reports.push_back({s.node->name(), info,
                         std::make_shared<const codegen::KernelSource>(emitted[k].source), stage});
      logger().info("node {}: kernel {}{} from {} in {} ms", s.node->name(), info.key,
                    s.layout.stages > 1 ? format(" (stage {})", stage) : "",
                    engine::to_string(info.tier), info.request_ms);
    }
  }
}

void Simulation::Impl::allocate_state(NodeState& s, Init init) {
  const Layout& layout = s.layout;
  const std::vector<Field*> fields = s.allocate_fields();
  const bool sharded = layout.domain != s.shard.global;
  if (init == Init::compute && (!sharded || layout.slab_initial_state)) {
    State state(fields, Slab{s.shard.offset, s.shard.extent, s.shard.global});
    s.node->initial_state(state);
  } else if (init == Init::compute) {
    // The node fills the whole domain; this rank keeps its slab.
    std::vector<std::unique_ptr<Field>> whole;
    std::vector<Field*> whole_fields;
    for (const auto& f : layout.fields) {
      std::vector<std::int64_t> shape = f.components;
      shape.insert(shape.end(), s.shard.global.begin(), s.shard.global.end());
      whole.push_back(std::make_unique<Field>(
          f.name, f.dtype, std::move(shape),
          std::vector<int>(f.components.size() + s.shard.global.size(), 0)));
      whole_fields.push_back(whole.back().get());
    }
    State state(whole_fields, Slab::whole(s.shard.global));
    s.node->initial_state(state);
    for (std::size_t i = 0; i < fields.size(); ++i) {
      copy_slab(*whole[i], *fields[i], s.shard.offset, Direction::global_to_local);
    }
  }
}

Simulation::Impl::NodeState& Simulation::Impl::state_of(std::string_view name) {
  for (auto& s : states) {
    if (s.node->name() == name) {
      return s;
    }
  }
  throw Error(ErrorKind::usage, format("simulation has no node \"{}\"", name));
}

Simulation::Simulation(engine::Engine& engine, std::vector<std::shared_ptr<const Node>> nodes,
                       SimulationOptions options)
    : m_impl(std::make_unique<Impl>(engine, std::move(nodes), options, Impl::Init::compute)) {}

Simulation::Simulation(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Simulation::~Simulation() = default;
Simulation::Simulation(Simulation&&) noexcept = default;
Simulation& Simulation::operator=(Simulation&&) noexcept = default;

const std::vector<KernelReport>& Simulation::kernel_reports() const noexcept {
  return m_impl->reports;
}

void Simulation::step_count_check(std::int64_t count) const {
  if (m_impl->decomposition && m_impl->decomposition->comm->size() > 1) {
    // The fewest and the most steps the ranks ask for, in one all-reduce of their maxima (the
    // counts ordered as unsigned numbers, and their complements): the same on every rank.
    const auto ordered = [](std::int64_t n) {
      return static_cast<std::uint64_t>(n) ^ (std::uint64_t{1} << 63);
    };
    const auto signed_of = [](std::uint64_t u) {
      return static_cast<std::int64_t>(u ^ (std::uint64_t{1} << 63));
    };
    std::uint64_t extremes[2] = {ordered(count), ~ordered(count)};
    m_impl->decomposition->comm->all_reduce_sum_max({}, extremes);
    const std::int64_t most = signed_of(extremes[0]);
    const std::int64_t fewest = signed_of(~extremes[1]);
    if (fewest != most) {
      throw Error(ErrorKind::usage,
                  format("step count: the ranks ask for {} to {} steps; a sharded simulation "
                         "steps on every rank together: ask each rank for the same count",
                         fewest, most));
    }
  }
  if (count < 0 || count > k_max_steps - m_impl->steps) {
    throw Error(ErrorKind::usage,
                format("step count {}: expected 0 to {} (at most 2^53 steps in all; {} taken)",
                       count, k_max_steps - m_impl->steps, m_impl->steps));
  }
}

void Simulation::step(std::int64_t count) {
  step_count_check(count);
  take_steps(count);
}

void Simulation::take_steps(std::int64_t count) {
  if (m_impl->cuda && count > 0) {
    m_impl->pulled_at = -1; // the host's copies are behind from the first kernel on
    m_impl->cuda->bind();
  }
  for (std::int64_t i = 0; i < count; ++i) {
    for (auto& s : m_impl->states) {
      if (m_impl->cuda) {
        m_impl->step_node_on_device(s);
      } else {
        m_impl->step_node(s);
      }
    }
    ++m_impl->steps;
  }
  if (m_impl->cuda && count > 0) {
    // What was queued has run, or its failure is raised here (on every rank alike).
    m_impl->together([&] { m_impl->cuda->synchronize(); });
  }
}

void Simulation::run(std::int64_t count, const std::function<void(const Simulation&)>& after_step) {
  step_count_check(count);
  for (std::int64_t i = 0; i < count; ++i) {
    take_steps(1);
    if (after_step) {
      after_step(*this);
    }
  }
}

const ShardInfo& Simulation::shard(std::string_view node) const {
  return m_impl->state_of(node).shard;
}

NodeShared Simulation::node_shared() const {
  return m_impl->node_shared;
}

int Simulation::threads() const noexcept {
  return m_impl->executor->threads();
}

std::string Simulation::device() const {
  return m_impl->cuda ? m_impl->cuda->description() : "cpu";
}

bool Simulation::checked() const noexcept {
  return m_impl->checked;
}

ExchangeStats Simulation::exchange_stats() const noexcept {
  return m_impl->exchange;
}

std::int64_t Simulation::steps_taken() const noexcept {
  return m_impl->steps;
}

const std::vector<std::shared_ptr<const Node>>& Simulation::nodes() const noexcept {
  return m_impl->nodes;
}

const Node& Simulation::node(std::string_view name) const {
  return *m_impl->state_of(name).node;
}

const Field& Simulation::field(std::string_view node, std::string_view field) const {
  NodeState& s = m_impl->state_of(node);
  m_impl->pull_state();
  for (const auto& f : s.current) {
    if (f->name() == field) {
      return *f;
    }
  }
  throw Error(ErrorKind::usage, format("node \"{}\" has no state field \"{}\"", node, field));
}

std::span<const double> Simulation::integrals(std::string_view node) const {
  return m_impl->state_of(node).integrals;
}

std::span<const double> Simulation::integrals(std::size_t node_index) const {
  UWJIT_ASSERT(node_index < m_impl->states.size(), "Simulation::integrals: index out of range");
  return m_impl->states[node_index].integrals;
}

const StaticData& Simulation::bound_static_data(std::string_view node) const {
  return m_impl->state_of(node).bound;
}

std::vector<std::string> Simulation::rebound_statics(std::string_view node) const {
  const NodeState& s = m_impl->state_of(node);
  return {s.rebound.begin(), s.rebound.end()};
}

Simulation::Rebound Simulation::rebind_static(std::string_view node, StaticArray array) {
  if (m_impl->decomposition) {
    throw Error(ErrorKind::usage, format("rebind_static: node \"{}\": not supported on a sharded "
                                         "simulation (its static data is sliced per rank)",
                                         node));
  }
  NodeState& s = m_impl->state_of(node);
  if (m_impl->cuda) {
    m_impl->cuda->bind();
  }
  std::string key = array.key();
  StaticData bound = s.bound;
  bound.replace(std::move(array));
  // The same kernels if every stage's hash (with its domain-following axes) is unchanged.
  bool same_kernel = true;
  for (const auto& stage : s.stages) {
    const auto follows = static_follows(*stage.writer);
    same_kernel =
        same_kernel && static_data_hash(bound, follows) == static_data_hash(s.bound, follows);
  }
  std::vector<Emitted> emitted;
  // A new kernel whose reads its text does not show gets its own first-step check.
  std::vector<std::optional<engine::Kernel>> probes(s.stages.size());
  if (!same_kernel) {
    emitted = emit(*s.node, s.layout, bound, bound, m_impl->checked, m_impl->cuda.has_value());
    if (!m_impl->checked && !m_impl->cuda) {
      for (auto& probe : emit_probes(*s.node, s.layout, bound, bound, emitted)) {
        probes[probe.stage].emplace(m_impl->engine->kernel(probe.checked.source));
      }
    }
  }
  std::vector<Binding> bindings;
  std::vector<std::optional<detail::DeviceStage>> device_stages(s.stages.size());
  for (std::size_t k = 0; k < s.stages.size(); ++k) {
    const codegen::KernelWriter& writer = same_kernel ? *s.stages[k].writer : emitted[k].writer;
    Binding binding = bind_kernel(*s.node, s.layout, writer, bound, serial_padder(s.layout));
    std::shared_ptr<const detail::LoadedModule> code;
    if (same_kernel) {
      binding.kernel = s.stages[k].binding.kernel;
      binding.report = s.stages[k].binding.report;
      code = s.stages[k].device ? s.stages[k].device->code : nullptr;
    } else {
      engine::KernelInfo info;
      if (m_impl->cuda) {
        const auto ptx = m_impl->engine->ptx(emitted[k].source, m_impl->cuda->target());
        code = m_impl->cuda->load(*m_impl->engine, ptx);
        info = *ptx.info;
        info.load_ms = code->load_ms();
      } else {
        binding.kernel.emplace(m_impl->engine->kernel(emitted[k].source));
        info = binding.kernel->info();
      }
      binding.report = {
          s.node->name(), info, std::make_shared<const codegen::KernelSource>(emitted[k].source),
          static_cast<int>(k), probes[k] ? std::optional(probes[k]->info()) : std::nullopt};
      logger().info("node {}: rebound, kernel {} from {}", s.node->name(), binding.report.info.key,
                    engine::to_string(binding.report.info.tier));
    }
    if (m_impl->cuda) {
      device_stages[k].emplace(
          m_impl->cuda->stage(binding, binding.report.source->slots(), std::move(code)));
    }
    bindings.push_back(std::move(binding));
  }
  // Everything that can fail has; commit.
  s.rebound.insert(std::move(key));
  s.bound = std::move(bound);
  for (std::size_t k = 0; k < s.stages.size(); ++k) {
    s.stages[k].binding = std::move(bindings[k]);
    s.stages[k].device = std::move(device_stages[k]);
    if (!same_kernel) {
      s.stages[k].writer.emplace(std::move(emitted[k].writer));
      s.stages[k].probe = std::move(probes[k]);
      s.stages[k].probe_sums.assign(s.stages[k].binding.kernel_integrals.size(), 0.0);
    }
    // Other data may send a kernel's computed indices elsewhere: its next step is checked again.
    s.stages[k].probe_due = s.stages[k].probe.has_value();
  }
  s.wire();
  auto report = m_impl->reports.begin();
  for (const auto& other : m_impl->states) {
    if (&other == &s) {
      for (const auto& stage : s.stages) {
        *report++ = stage.binding.report;
      }
      break;
    }
    report += static_cast<std::ptrdiff_t>(other.stages.size());
  }
  return Rebound{!same_kernel, s.stages[0].binding.report};
}

} // namespace uwjit::runtime
