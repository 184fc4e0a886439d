// Kernel speed: the JIT'd kernel against the same source compiled ahead of time by clang++-19
// into a .so in the same run, and a STREAM-like copy as the bandwidth limit, interleaved.
#include "bench.hpp"
#include "node_workload.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace uwjit::bench {

namespace {

// The buffers of one kernel and the arguments that point at them.
struct Workload {
  std::string name;
  std::vector<std::vector<double>> in, out;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  std::vector<uw_i64> extents;
  double integral = 0;
  double cells = 0; ///< interior cells updated per sweep
  double bytes = 0; ///< the least traffic per sweep: each input read once, each output written

  uwjit_kernel_args args() {
    uwjit_kernel_args a{};
    a.abi_version = UWJIT_KERNEL_ABI_VERSION;
    a.n_state_in = static_cast<int>(in_ptrs.size());
    a.n_state_out = static_cast<int>(out_ptrs.size());
    a.n_extents = static_cast<int>(extents.size());
    a.n_integrals = 1;
    a.state_in = in_ptrs.data();
    a.state_out = out_ptrs.data();
    a.extents = extents.data();
    a.dt = 0.1;
    a.integrals = &integral;
    return a;
  }
};

Workload grid_workload(const std::string& name, int fields, std::int64_t n, std::int64_t halo) {
  Workload w;
  w.name = name;
  const std::int64_t padded = n + 2 * halo;
  const auto total = static_cast<std::size_t>(padded * padded * padded);
  for (int f = 0; f < fields; ++f) {
    std::vector<double> u(total);
    for (std::size_t i = 0; i < total; ++i) {
      u[i] = 1.0 + 0.5 * std::sin(0.001 * static_cast<double>(i) + f);
    }
    w.in.push_back(std::move(u));
    w.out.emplace_back(total, 0.0);
  }
  for (int f = 0; f < fields; ++f) {
    w.in_ptrs.push_back(w.in[f].data());
    w.out_ptrs.push_back(w.out[f].data());
  }
  w.extents = {n, n, n};
  w.cells = static_cast<double>(n * n * n);
  w.bytes = fields * 8.0 * (static_cast<double>(total) + w.cells);
  return w;
}

Workload copy_workload(std::size_t count) {
  Workload w;
  w.name = "copy";
  w.in.emplace_back(count, 1.0);
  w.out.emplace_back(count, 0.0);
  w.in_ptrs = {w.in[0].data()};
  w.out_ptrs = {w.out[0].data()};
  w.extents = {static_cast<uw_i64>(count)};
  w.cells = static_cast<double>(count);
  w.bytes = 16.0 * static_cast<double>(count); // STREAM counts 8 read + 8 written per element
  return w;
}

// Milliseconds of one call of `fn` on `w`, the fastest of `reps` calls: on a shared machine a
// sweep is only ever slowed down (preempted, its cache evicted), never sped up.
double time_sweeps(uwjit_kernel_fn fn, Workload& w, int reps) {
  auto args = w.args();
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    if (fn(&args) != UWJIT_KERNEL_OK) {
      throw Error(ErrorKind::internal, "benchmark kernel " + w.name + " failed");
    }
    const double ms = ms_since(start);
    best = r == 0 ? ms : std::min(best, ms);
  }
  return best;
}

double max_difference(const std::vector<std::vector<double>>& a,
                      const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (std::size_t f = 0; f < a.size(); ++f) {
    for (std::size_t i = 0; i < a[f].size(); ++i) {
      worst = std::max(worst, std::fabs(a[f][i] - b[f][i]));
    }
  }
  return worst;
}

// The fastest of `reps` sweeps each of the JIT'd and the AOT build, `sweep(true)` timing the JIT's
// and `sweep(false)` the AOT's: they alternate one by one, the first way alternating between
// rounds and repetitions. Returns {jit ms, aot ms}.
template <class Sweep> std::pair<double, double> alternate(int round, int reps, Sweep&& sweep) {
  double jit_ms = 0, aot_ms = 0;
  for (int r = 0; r < reps; ++r) {
    const bool jit_first = (round + r) % 2 == 0;
    const double first = sweep(jit_first);
    const double second = sweep(!jit_first);
    const double jit = jit_first ? first : second;
    const double aot = jit_first ? second : first;
    jit_ms = r == 0 ? jit : std::min(jit_ms, jit);
    aot_ms = r == 0 ? aot : std::min(aot_ms, aot);
  }
  return {jit_ms, aot_ms};
}

// The instructions of an assembly listing, without labels, directives, comments or symbol names.
std::vector<std::string> instructions(const std::string& assembly, const std::string& entry) {
  std::vector<std::string> out;
  std::istringstream lines(assembly);
  std::string line;
  while (std::getline(lines, line)) {
    if (const auto hash = line.find('#'); hash != std::string::npos) {
      line.erase(hash);
    }
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '.' || line.find(':') != std::string::npos) {
      continue;
    }
    line = codegen::replace_all(line.substr(first), entry, "ENTRY");
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    out.push_back(line);
  }
  return out;
}

// Whether the JIT and clang++-19 emit the same instructions for `source` (the JIT's listing
// against `clang++-19 -S` with the AOT flags).
std::optional<bool> same_instructions(const engine::Engine& engine,
                                      const codegen::KernelSource& source,
                                      const std::filesystem::path& dir, const std::string& name) {
  const std::string entry = "bench_listing";
  const std::string text = source.instantiate(entry, "bench_listing");
  const auto jit = engine.compiler().compile(text, engine::Listing::ir_and_assembly);
  const auto file = dir / (name + "-listing.cpp");
  const auto listing = dir / (name + "-listing.s");
  {
    std::ofstream out(file, std::ios::binary);
    out << text;
  }
  std::vector<std::string> argv = {"clang++-19"};
  const auto flags = compile_only_flags();
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-S", "-o", listing.string(), file.string()});
  if (!run(argv).ok()) {
    return std::nullopt;
  }
  std::ifstream in(listing);
  std::ostringstream aot;
  aot << in.rdbuf();
  return instructions(jit.assembly, entry) == instructions(aot.str(), entry);
}

} // namespace

void speed_section(const Options& options, Report& report) {
  Json& section = report.section("kernel_speed");
  section["method"] =
      "per round: a STREAM copy of the stencil's footprint, pipe-flow steps through the runtime, "
      "and, sweep by sweep in alternating order on the same buffers, the JIT'd kernel and the "
      "same instantiated source compiled by clang++-19 into a .so (ahead of time, in this run); "
      "each figure of a round is its fastest sweep (a shared machine only slows sweeps down); "
      "JIT/AOT is t_aot / t_jit per round; bandwidth counts each input read once and each output "
      "written once";
  const auto dir = fresh_dir(options.work, "speed");
  engine::Engine engine({.disk_cache = engine::DiskCache::off});

  // JIT and AOT sweep the same buffers, so that only the code differs.
  struct Case {
    std::string name;
    Workload w;
    engine::Kernel jit;
    SubprocessBuild aot;
    std::optional<bool> same_code;
  };
  const std::int64_t n = options.grid;
  const std::int64_t n16 = options.fields_grid;
  std::vector<Case> cases;
  for (const auto& [name, fields, size, halo] :
       {std::tuple<std::string, int, std::int64_t, std::int64_t>{"stencil", 1, n, 1},
        {"fields16", 16, n16, 2}}) {
    const auto source = kernel_source(name);
    const std::string entry = "bench_aot_" + std::string(name == "stencil" ? "stencil" : "f16");
    auto jit = engine.kernel(source);
    auto aot = build_subprocess("clang++-19", source.instantiate(entry, "bench_aot"), entry, dir,
                                name + "-aot");
    cases.push_back({name, grid_workload(name, fields, size, halo), jit, aot,
                     same_instructions(engine, source, dir, name)});
  }
  const auto copy_kernel = engine.kernel(kernel_source("copy"));
  const std::int64_t padded = n + 2;
  Workload copy = copy_workload(static_cast<std::size_t>(padded * padded * padded));

  // Warm-up: first touches (page faults) and a check that both ways compute the same.
  Json checks = Json::object();
  for (auto& c : cases) {
    (void)time_sweeps(c.jit.function(), c.w, 1);
    const auto jit_out = c.w.out;
    (void)time_sweeps(c.aot.kernel.function, c.w, 1);
    checks[c.name] = {{"max_abs_difference_jit_vs_aot", max_difference(jit_out, c.w.out)},
                      {"same_instructions", c.same_code ? Json(*c.same_code) : Json(nullptr)}};
  }
  (void)time_sweeps(copy_kernel.function(), copy, 1);
  section["checks"] = std::move(checks);

  // pipe-flow through the runtime, as `uwjit run pipe-flow` steps it (halos, kernel, integrals),
  // on one thread like the copy it is compared with (the threads section runs more).
  const std::vector<std::int64_t> pipe_size = {options.pipe_grid};
  const auto pipe_node =
      nodes::make("pipe-flow", "pipe", nodes::sized_params("pipe-flow", pipe_size));
  runtime::Simulation pipe(engine, {pipe_node}, {.threads = 1});
  pipe.step(1);
  const double pipe_updates = static_cast<double>(pipe_node->updates_per_step());
  const auto pipe_domain = pipe_node->domain();
  // pipe-flow's kernel itself, JIT'd and built by clang++-19 from the same instantiated source,
  // called on the same buffers (the node's initial state), as the stencils are compared.
  const auto pipe_kernel = runtime::node_kernels(*pipe_node, false).at(0);
  NodeWorkload pipe_w(*pipe_node, pipe_kernel, pipe_node->dt());
  const auto pipe_jit = engine.kernel(pipe_kernel.source);
  const auto pipe_aot =
      build_subprocess("clang++-19", pipe_kernel.source.instantiate("bench_aot_pipe", "bench_aot"),
                       "bench_aot_pipe", dir, "pipe-flow-aot");
  {
    (void)pipe_w.time(pipe_jit.function(), 1);
    const auto jit_out = pipe_w.output_bytes();
    (void)pipe_w.time(pipe_aot.kernel.function, 1);
    const auto same_code = same_instructions(engine, pipe_kernel.source, dir, "pipe-flow");
    section["checks"]["pipe-flow"] = {
        {"same_outputs_jit_vs_aot", jit_out == pipe_w.output_bytes()},
        {"same_instructions", same_code ? Json(*same_code) : Json(nullptr)}};
  }

  Series series;
  const int reps = options.speed_reps;
  // A round takes milliseconds here, and a sweep's speed swings by ±5 % with where the machine's
  // other work lands: three times the rounds steady the medians.
  const int rounds = 3 * options.rounds;
  for (int round = 0; round < rounds; ++round) {
    const double copy_ms = time_sweeps(copy_kernel.function(), copy, reps);
    const double copy_gbs = copy.bytes / copy_ms / 1e6;
    series.add("copy_gb_s", copy_gbs);
    {
      double step_ms = 0;
      for (int r = 0; r < reps; ++r) {
        const auto start = Clock::now();
        pipe.step(1);
        step_ms = r == 0 ? ms_since(start) : std::min(step_ms, ms_since(start));
      }
      series.add("pipe_flow_step_ms", step_ms);
      series.add("pipe_flow_mlups", pipe_updates / step_ms / 1e3);
      // D3Q19: 19 populations read and 19 written per lattice update, 8 bytes each.
      const double gbs = pipe_updates * 19 * 8 * 2 / step_ms / 1e6;
      series.add("pipe_flow_gb_s", gbs);
      series.add("pipe_flow_fraction_of_copy", gbs / copy_gbs);
    }
    {
      const auto [jit_ms, aot_ms] = alternate(round, reps, [&](bool jit) {
        return pipe_w.time(jit ? pipe_jit.function() : pipe_aot.kernel.function, 1);
      });
      series.add("pipe_flow_kernel_jit_ms", jit_ms);
      series.add("pipe_flow_kernel_aot_ms", aot_ms);
      series.add("pipe_flow_kernel_jit_over_aot_speed", aot_ms / jit_ms);
      series.add("pipe_flow_kernel_jit_mlups", pipe_w.cells / jit_ms / 1e3);
    }
    for (auto& c : cases) {
      const auto [jit_ms, aot_ms] = alternate(round, reps, [&](bool jit) {
        return time_sweeps(jit ? c.jit.function() : c.aot.kernel.function, c.w, 1);
      });
      series.add(c.name + "_jit_ms", jit_ms);
      series.add(c.name + "_aot_ms", aot_ms);
      series.add(c.name + "_jit_over_aot_speed", aot_ms / jit_ms);
      series.add(c.name + "_jit_mlups", c.w.cells / jit_ms / 1e3);
      const double gbs = c.w.bytes / jit_ms / 1e6;
      series.add(c.name + "_jit_gb_s", gbs);
      series.add(c.name + "_fraction_of_copy", gbs / copy_gbs);
    }
  }
  section["series"] = series.to_json();
  section["grid"] = {
      {"stencil", n}, {"fields16", n16}, {"copy_elements", copy.cells}, {"pipe_flow", pipe_domain}};
  section["aot_command"] = cases.front().aot.command;
  const std::string command = options.command("--sections kernel_speed");
  report.add({.section = "kernel_speed",
              .figure = format("STREAM copy ({} MB per array)", number_text(copy.cells * 8 / 1e6)),
              .unit = "GB/s",
              .value = series.summary("copy_gb_s"),
              .command = command,
              .note = "JIT'd copy loop; the physical limit for the stencils below"});
  report.add({.section = "kernel_speed",
              .figure = format("pipe-flow {}×{}×{}: MLUPS through the runtime, 1 thread",
                               pipe_domain[0], pipe_domain[1], pipe_domain[2]),
              .unit = "MLUPS",
              .value = series.summary("pipe_flow_mlups"),
              .command = command,
              .note = format("{} ms per step; {} GB/s of populations (304 bytes per update), {} "
                             "of the copy bandwidth",
                             number_text(series.summary("pipe_flow_step_ms").median),
                             number_text(series.summary("pipe_flow_gb_s").median),
                             number_text(series.summary("pipe_flow_fraction_of_copy").median))});
  {
    const Summary ratio = series.summary("pipe_flow_kernel_jit_over_aot_speed");
    report.add({.section = "kernel_speed",
                .figure = format("pipe-flow {}×{}×{}: JIT / AOT clang++-19 speed of its kernel",
                                 pipe_domain[0], pipe_domain[1], pipe_domain[2]),
                .unit = "×",
                .value = ratio,
                .goal = Goal{"≥ 0.97", 0.97, std::nullopt},
                .limit = format("per sweep JIT {} ms ({} MLUPS) vs AOT {} ms on the same buffers, "
                                "the node's kernel (runtime::node_kernels) called directly; same "
                                "outputs: {}; same instructions as clang++-19 -S: {}; the ratio "
                                "ranged [{}–{}] over the interleaved rounds",
                                number_text(series.summary("pipe_flow_kernel_jit_ms").median),
                                number_text(series.summary("pipe_flow_kernel_jit_mlups").median),
                                number_text(series.summary("pipe_flow_kernel_aot_ms").median),
                                section["checks"]["pipe-flow"]["same_outputs_jit_vs_aot"].dump(),
                                section["checks"]["pipe-flow"]["same_instructions"].dump(),
                                number_text(ratio.min), number_text(ratio.max)),
                .command = command,
                .note = pipe_aot.command});
  }
  for (const auto& c : cases) {
    const std::string size = format("{}³", c.name == "stencil" ? n : n16);
    const Summary ratio = series.summary(c.name + "_jit_over_aot_speed");
    report.add({.section = "kernel_speed",
                .figure = c.name + " " + size + ": JIT / AOT clang++-19 speed",
                .unit = "×",
                .value = ratio,
                .goal = Goal{"≥ 0.97", 0.97, std::nullopt},
                .limit = format("per sweep JIT {} ms vs AOT {} ms on the same buffers (the JIT'd "
                                "kernel at {} of the copy bandwidth; outputs differ by at most {}; "
                                "same instructions as clang++-19 -S: {}); the ratio ranged "
                                "[{}–{}] over the interleaved rounds",
                                number_text(series.summary(c.name + "_jit_ms").median),
                                number_text(series.summary(c.name + "_aot_ms").median),
                                number_text(series.summary(c.name + "_fraction_of_copy").median),
                                section["checks"][c.name]["max_abs_difference_jit_vs_aot"].dump(),
                                section["checks"][c.name]["same_instructions"].dump(),
                                number_text(ratio.min), number_text(ratio.max)),
                .command = command,
                .note = c.aot.command});
    report.add({.section = "kernel_speed",
                .figure = c.name + " " + size + ": fraction of the copy bandwidth",
                .unit = "",
                .value = series.summary(c.name + "_fraction_of_copy"),
                .command = command,
                .note = format("{} bytes per update; {} GB/s, {} MLUPS",
                               number_text(c.w.bytes / c.w.cells),
                               number_text(series.summary(c.name + "_jit_gb_s").median),
                               number_text(series.summary(c.name + "_jit_mlups").median))});
  }
}

} // namespace uwjit::bench
