// Ensembles: member-steps per second of many small members stepped as one batch against one
// Simulation per member run in sequence (same process, warm engine, same threads), and inflight
// refill against fixed batches that wait for their slowest member, in interleaved rounds.
#include "bench.hpp"

#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/ensemble.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <thread>

namespace uwjit::bench {

namespace {

runtime::MemberFactory factory(const std::string& type) {
  return [type](const runtime::Params& p) { return nodes::make(type, type, p); };
}

// The members' values: `count` values of `name` evenly from low to high.
std::vector<std::vector<double>> spread(std::int64_t count, double low, double high) {
  std::vector<std::vector<double>> rows;
  for (std::int64_t i = 0; i < count; ++i) {
    rows.push_back({low + (high - low) * static_cast<double>(i) /
                              static_cast<double>(std::max<std::int64_t>(count - 1, 1))});
  }
  return rows;
}

// Seconds for an ensemble of `rows` to run to its end.
double ensemble_seconds(engine::Engine& engine, const std::string& type,
                        const runtime::Params& base, const std::string& name,
                        std::vector<std::vector<double>> rows, runtime::EnsembleOptions options,
                        std::vector<runtime::MemberResult>* results = nullptr) {
  auto sink = std::make_shared<runtime::MemorySink>(1 << 20);
  const auto start = Clock::now();
  runtime::Ensemble ensemble(
      engine, factory(type), base,
      std::make_unique<runtime::ListSampler>(std::vector<std::string>{name}, std::move(rows)),
      {sink}, std::move(options));
  ensemble.run([&](const runtime::Ensemble&) { (void)sink->take(); });
  const double seconds = ms_since(start) / 1000;
  if (results != nullptr) {
    *results = ensemble.summaries();
  }
  return seconds;
}

// Seconds for one Simulation per member, in sequence, `steps` steps each.
double sequence_seconds(engine::Engine& engine, const std::string& type,
                        const runtime::Params& base, const std::string& name,
                        const std::vector<std::vector<double>>& rows, std::int64_t steps,
                        int threads) {
  const auto start = Clock::now();
  for (const auto& row : rows) {
    runtime::Params params = base;
    params.set(name, row[0]);
    runtime::Simulation alone(engine, {nodes::make(type, type, params)}, {.threads = threads});
    alone.step(steps);
  }
  return ms_since(start) / 1000;
}

// Member-steps per second of `uwjit ensemble ... --json` (every rank's steps over the job's time).
double cli_member_steps_per_s(const std::vector<std::string>& argv,
                              const std::vector<std::string>& env) {
  const auto result = run(argv, env, std::chrono::minutes(5));
  return result.json()["member_steps_per_second"].get<double>();
}

// A pipeline of two stages on two ranks (a spin-up, then a production stage at a smaller time
// step) against the same member-steps as one stage in one process, each rank and the one
// process on one thread: what the second rank adds, and what the exchange costs. Batches of 32
// members: stage 1 steps one batch while stage 0 steps the next (with every member in one batch
// the stages would take turns); the ideal is then 2 × 8 / 9 (the first batch has no partner).
void pipeline_rows(const Options& options, int rounds, Series& series, Report& report) {
  if (!have_program("mpiexec") || !have_program(helper(options, "uwjit"))) {
    report.not_measured("ensemble", "the pipeline row: no mpiexec, or no uwjit beside the bench");
    return;
  }
  // Stages of equal work: the pipeline's pace is its slowest stage's.
  const std::int64_t spin = options.quick ? 8 : 200;
  const std::int64_t production = spin;
  const std::string members = options.quick ? "8" : "256";
  const std::vector<std::string> common = {helper(options, "uwjit"),
                                           "ensemble",
                                           "heat",
                                           "--size",
                                           "16",
                                           "--set",
                                           "courant=0.1",
                                           "--vary",
                                           "contrast=1:4:" + members,
                                           "--threads",
                                           "1",
                                           "--batch",
                                           "32",
                                           "--json"};
  std::vector<std::string> env = k_mpi_env;
  env.push_back("UWJIT_CACHE_DIR=" + fresh_dir(options.work, "pipeline").string());
  std::vector<std::string> piped = {"mpiexec", "-n", "2"};
  piped.insert(piped.end(), common.begin(), common.end());
  piped.insert(piped.end(), {"--until", format("steps:{}", spin), "--stage",
                             format("courant=0.05 until=steps:{}", production)});
  std::vector<std::string> alone = common;
  alone.insert(alone.end(), {"--until", format("steps:{}", spin + production)});
  (void)cli_member_steps_per_s(alone, env); // the kernel in the cache before either is timed
  for (int round = 0; round < rounds; ++round) {
    const double two = cli_member_steps_per_s(piped, env);
    const double one = cli_member_steps_per_s(alone, env);
    series.add("pipeline_np2_member_steps_per_s", two);
    series.add("one_stage_member_steps_per_s", one);
    series.add("pipeline_np2_over_one_stage", two / one);
  }
  report.add({.section = "ensemble",
              .figure = format("heat 16³, {} members: pipeline of 2 stages at np 2 / the same "
                               "member-steps as one stage in one process",
                               members),
              .unit = "×",
              .value = series.summary("pipeline_np2_over_one_stage"),
              .command = options.command("--sections ensemble"),
              .note = format("`mpiexec -n 2 uwjit ensemble heat --size 16 --until steps:{} "
                             "--stage 'courant=0.05 until=steps:{}' --batch 32` against `--until "
                             "steps:{}`, one thread per rank (ideal 1.78×: 8 batches, the "
                             "first without a partner); {} against {} member-steps/s, "
                             "each job's start and compile-free kernel load included",
                             spin, production, spin + production,
                             number_text(series.summary("pipeline_np2_member_steps_per_s").median),
                             number_text(series.summary("one_stage_member_steps_per_s").median))});
}

} // namespace

void ensemble_section(const Options& options, Report& report) {
  Json& section = report.section("ensemble");
  engine::Engine engine({.disk_cache = engine::DiskCache::off});
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int rounds = options.quick ? 1 : std::min(options.rounds, 5);
  const std::int64_t members = options.quick ? 16 : 256;
  Series series;
  // Members of a few hundred steps (a short sweep): what a member costs to build, the same
  // either way, is then a small part of its run.
  struct Case {
    std::string type, label, name;
    std::vector<std::int64_t> size;
    double low, high;
    std::int64_t steps;
  };
  const std::vector<Case> cases = {
      {"heat", "heat 16³", "contrast", {16}, 1.0, 4.0, options.quick ? 5 : 200},
      {"pipe-flow", "pipe-flow 32×24×24", "tau", {32, 24, 24}, 0.6, 1.2, options.quick ? 5 : 50}};
  const std::string command = options.command("--sections ensemble");
  for (const auto& c : cases) {
    const std::int64_t steps = c.steps;
    double cells = 1;
    for (const auto n :
         nodes::make(c.type, c.type, nodes::sized_params(c.type, c.size))->domain()) {
      cells *= static_cast<double>(n);
    }
    const runtime::Params base = nodes::sized_params(c.type, c.size);
    const auto rows = spread(members, c.low, c.high);
    const runtime::EnsembleOptions batch{
        .until = runtime::StopRule::parse({format("steps:{}", steps)}), .threads = threads};
    // Warm: the kernels in the engine's memory before either is timed.
    (void)ensemble_seconds(engine, c.type, base, c.name, {rows.front()}, batch);
    (void)sequence_seconds(engine, c.type, base, c.name, {rows.front()}, 1, threads);
    for (int round = 0; round < rounds; ++round) {
      const double batched = ensemble_seconds(engine, c.type, base, c.name, rows, batch);
      const double alone = sequence_seconds(engine, c.type, base, c.name, rows, steps, threads);
      const double member_steps = static_cast<double>(members * steps);
      series.add(c.type + "_batched_member_steps_per_s", member_steps / batched);
      series.add(c.type + "_sequence_member_steps_per_s", member_steps / alone);
      series.add(c.type + "_batched_over_sequence", alone / batched);
    }
    report.add({.section = "ensemble",
                .figure = format("{}: {} members batched / one Simulation per member in sequence",
                                 c.label, members),
                .unit = "×",
                .value = series.summary(c.type + "_batched_over_sequence"),
                .goal = Goal{"≥ 3×", 3.0, std::nullopt},
                .limit = format(
                    "the members' own updates: batched {} MLUPS on {} threads, alone {} MLUPS "
                    "(a grid this small is one slab, so one thread); a Simulation's fixed cost "
                    "per step is a small part of a step here, so the batch adds the other "
                    "threads, less what stays serial between rounds (building new members, "
                    "copying finished ones to the sink)",
                    number_text(series.summary(c.type + "_batched_member_steps_per_s").median *
                                cells / 1e6),
                    threads,
                    number_text(series.summary(c.type + "_sequence_member_steps_per_s").median *
                                cells / 1e6)),
                .command = command,
                .note = format(
                    "{} steps each, {} threads, warm engine (kernels in memory); "
                    "batched {} member-steps/s, in sequence {}",
                    steps, threads,
                    number_text(series.summary(c.type + "_batched_member_steps_per_s").median),
                    number_text(series.summary(c.type + "_sequence_member_steps_per_s").median))});
  }

  // Inflight refill against fixed batches: members whose steps to converge vary tenfold (fixed
  // walls; the Courant number sets the pace), in a seeded random order.
  runtime::Params bar = nodes::sized_params("heat", std::vector<std::int64_t>{8});
  bar.set("boundary", "fixed");
  const std::int64_t bar_members = options.quick ? 16 : 64;
  const std::int64_t batch_size = options.quick ? 4 : 16;
  runtime::RandomSampler draw({runtime::ParamRange{"courant", 0.015, 0.15, 1}}, bar_members, 7);
  std::vector<std::vector<double>> bar_rows;
  while (auto row = draw.next()) {
    bar_rows.push_back(*row);
  }
  const runtime::EnsembleOptions inflight{
      .until = runtime::StopRule::parse({"change:heat<1e-6", "steps:100000"}),
      .batch = batch_size,
      .threads = threads};
  std::vector<std::int64_t> converged_at(bar_rows.size(), 0);
  for (int round = 0; round < rounds; ++round) {
    std::vector<runtime::MemberResult> results;
    const double refilled =
        ensemble_seconds(engine, "heat", bar, "courant", bar_rows, inflight, &results);
    std::int64_t stepped = 0;
    for (const auto& r : results) {
      converged_at[static_cast<std::size_t>(r.id)] = r.steps;
      stepped += r.steps;
    }
    // Fixed batches: each group of batch_size members is stepped until its slowest converges.
    double fixed = 0;
    for (std::size_t first = 0; first < bar_rows.size();
         first += static_cast<std::size_t>(batch_size)) {
      const std::size_t last =
          std::min(bar_rows.size(), first + static_cast<std::size_t>(batch_size));
      const std::int64_t slowest =
          *std::max_element(converged_at.begin() + static_cast<std::ptrdiff_t>(first),
                            converged_at.begin() + static_cast<std::ptrdiff_t>(last));
      fixed += ensemble_seconds(
          engine, "heat", bar, "courant",
          std::vector<std::vector<double>>(bar_rows.begin() + static_cast<std::ptrdiff_t>(first),
                                           bar_rows.begin() + static_cast<std::ptrdiff_t>(last)),
          {.until = runtime::StopRule::parse({format("steps:{}", slowest)}),
           .batch = static_cast<std::int64_t>(last - first),
           .threads = threads});
    }
    series.add("refill_over_fixed", fixed / refilled);
    series.add("refill_member_steps", static_cast<double>(stepped));
  }
  const auto [fastest, slowest] = std::minmax_element(converged_at.begin(), converged_at.end());
  report.add({.section = "ensemble",
              .figure = format("heat 8³, {} members converging in {} to {} steps: inflight "
                               "refill / fixed batches waiting for their slowest",
                               bar_members, *fastest, *slowest),
              .unit = "×",
              .value = series.summary("refill_over_fixed"),
              .goal = Goal{"≥ 1.5×", 1.5, std::nullopt},
              .command = command,
              .note = format("batches of {}, rule change:heat<1e-6, {} threads; the fixed "
                             "batches step every member until the slowest of its batch stops",
                             batch_size, threads)});
  pipeline_rows(options, rounds, series, report);
  section["series"] = series.to_json();
  section["not_measured"] = {{"gpu", "ensembles run on CPUs only"}};
}

} // namespace uwjit::bench
