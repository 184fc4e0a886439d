// `uwjit ensemble`: the command line of runtime::Ensemble over node kinds: the varied params and
// the stop rule read and checked before any member runs, the progress bar, the report of every
// member (a table, or JSON) and the HDF5 file.
#include <uwjit/driver/ensemble_main.hpp>

#include "one_command.hpp"
#include "progress.hpp"
#include "run_paths.hpp"
#include "stop_on_signal.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/driver/args.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/ensemble.hpp>
#include <uwjit/runtime/pipeline.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <span>
#include <sstream>
#include <unistd.h>

namespace uwjit::driver {

namespace {

ArgSpec ensemble_spec(const Program& program, std::span<const NodeKind> kinds) {
  std::vector<std::string> types;
  for (const auto& k : kinds) {
    types.push_back(k.type);
  }
  ArgSpec spec(program.command,
               program.summary.empty()
                   ? "Runs many members of one node, differing in the params --vary gives, "
                     "stepped together as one\nbatch (one kernel call per step for every member; "
                     "one compile for the whole sweep),\neach until its stop rule says so; a "
                     "member that stops leaves and the next takes its slot.\nEach member's "
                     "results are bit for bit those of the same node run alone."
                   : program.summary);
  if (!program.name.empty()) {
    spec.program(program.name);
  }
  spec.option("--size", "N|NXxNYxNZ", "the members' grid, as for run")
      .option("--set", "NAME=VALUE",
              "a param every member shares (repeatable; --set help lists them)")
      .option("--vary", "NAME=LO:HI:N",
              "a param the members vary: N values from LO to HI (repeatable; every combination, "
              "the last varying fastest)")
      .option("--random", "N",
              "instead of every combination, N members drawn uniformly in the --vary ranges "
              "(NAME=LO:HI)")
      .option("--seed", "S", "the seed of --random", "1")
      .option("--until", "RULE",
              "when a member stops (repeatable, or comma-separated): steps:N, "
              "change:INTEGRAL<TOL, below:INTEGRAL<TOL, every:K (below)")
      .option("--batch", "B",
              "members stepped together (default: two groups a thread of the members that fit "
              "its cache (its level-2 cache, else its share of the last-level cache), or one "
              "member a thread where a member is larger than that; at most what fits in a "
              "quarter of the memory and the members)")
      .option("--threads", "N", "threads (default: the cores this process may use)")
      .option("--device", "cpu|cuda|cuda:N",
              "where the batch runs: this process's cores, or an NVIDIA GPU, one launch a step "
              "for every member, the default batch then what fits in a quarter of its free "
              "memory (under MPI, cuda gives each rank a GPU of its node)",
              "cpu")
      .option("--checkpoint", "FILE",
              "write the running ensemble to FILE every --checkpoint-every rounds and when "
              "interrupted")
      .option("--checkpoint-every", "N", "rounds (of up to 16 steps) between checkpoints", "64")
      .option("--resume", "FILE",
              "go on from a checkpoint (the same arguments otherwise; --output then appends)")
      .option("--vtk", "DIR",
              "also write each member that leaves as VTK for ParaView: DIR/NODE_ID.vti "
              "(DIR must exist)")
      .option("--stage", "'NAME=VALUE ... until=RULE'",
              "a pipeline stage after the first (repeatable): its params over the others' and "
              "its stop rule; one stage per MPI rank")
      .option("--mode", "sync|async_recv|fully_async", "how pipeline stages exchange members",
              "async_recv")
      .option("--buffer", "N",
              "the most members a pipeline stage sends on per round (default: the batch)")
      .option("--output", "FILE.h5",
              "write every member's fields and results to this new HDF5 file")
      .flag("--json", "print the report as JSON on stdout");
  spec.positional("NODE", join(types, ", "), kinds.size() > 1);
  spec.epilog(
      "Stop rules (checked after every step, or every K with every:K):\n"
      "  steps:N                 the step cap: a member that has not converged by then leaves\n"
      "                          with status step_cap (required; the default is the node's\n"
      "                          default run length), e.g. --until steps:40\n"
      "  change:INTEGRAL<TOL     converged when the integral's relative change over one step,\n"
      "                          |I(s) - I(s-1)| / |I(s)|, is below TOL, e.g.\n"
      "                          --until 'change:heat<1e-9' --until steps:100000\n"
      "  below:INTEGRAL<TOL      converged when the integral's magnitude |I(s)| is below TOL:\n"
      "                          a residual the node's kernel computes, such as the sum of\n"
      "                          (u_new - u_old)^2 over its cells or their maximum\n"
      "                          |u_new - u_old| (an integral declared \"max\")\n"
      "  every:K                 check every K steps instead of every step\n"
      "A member whose kernel fails or whose integral is not finite leaves as failed.\n\n"
      "The report lists every member (id, varied params, steps, status, integrals) and the\n"
      "kernels; --json prints it as an object with a \"members\" list. --output writes one\n"
      "HDF5 file (h5py: f['fields/u'][m], f['params/kappa'], f['integrals/heat'], f['steps'],\n"
      "f['status'], f['id']), flushed as each member leaves; it must not exist yet.\n\n"
      "Examples:\n"
      "  uwjit ensemble heat --size 16 --vary contrast=1:4:4 --until steps:40\n"
      "  uwjit ensemble heat --size 16 --set boundary=fixed --vary courant=0.02:0.16:8 \\\n"
      "      --until 'change:heat<1e-9' --until steps:20000 --output sweep.h5\n"
      "  uwjit ensemble pipe-flow --size 16 --vary tau=0.6:1.2:4 --vary u_max=0.01:0.05:3 "
      "--json\n\n"
      "Under mpiexec (or srun) with several ranks the members are spread over them: each rank\n"
      "steps a batch of its own, refilled from the same sampler wherever members finish; rank 0\n"
      "reports and writes the file. Each member's results stay those of its node run alone.\n\n"
      "Pipelines: each --stage adds a stage after the first (the first is --set and --until),\n"
      "one per MPI rank (mpiexec -n STAGES). A member that stops in a stage goes on in the next\n"
      "from its state there, with that stage's params (the varied values stay its own) and\n"
      "rule (its steps counted in the stage); the last rank reports and writes. E.g. a spin-up\n"
      "at a large time step feeding a production run:\n"
      "  mpiexec -n 2 uwjit ensemble heat --size 16 --set boundary=fixed --set courant=0.16 \\\n"
      "      --vary contrast=1:4:8 --until steps:50 \\\n"
      "      --stage 'courant=0.05 until=change:heat<1e-9 until=steps:20000'\n"
      "Each round every stage sends the next its members (none, too: no stage waits forever),\n"
      "at most --buffer and no more than the next has room for; the rest wait in the batch.\n\n"
      "Ctrl-C (SIGINT) or SIGTERM stops after the current round of up to 16 steps: the members\n"
      "that left are reported (and written), those still in the batch are not; exit 130. With\n"
      "--checkpoint FILE the running ensemble is written there then (and every N rounds), and\n"
      "the same command with --resume FILE goes on from it bit for bit, appending to --output\n"
      "the members it does not hold yet. Under mpiexec each rank also writes its batch beside\n"
      "FILE (FILE.gG.rR); resume on as many ranks (a pipeline: its stages).\n\n"
      "Exit codes: 0 every member converged or reached its cap, 1 a member failed, 2 bad usage,\n"
      "130 interrupted." +
      (program.epilog.empty() ? std::string() : "\n" + program.epilog));
  return spec;
}

std::string member_rate(std::int64_t steps, double elapsed) {
  return format("{} member-steps/s", general(std::round(static_cast<double>(steps) / elapsed)));
}

} // namespace

int ensemble(const Program& program, std::span<const NodeKind> kinds,
             const std::vector<std::string>& argv) {
  if (kinds.empty()) {
    throw Error(ErrorKind::usage, "ensemble: no node kinds");
  }
  const ArgSpec spec = ensemble_spec(program, kinds);
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const std::string& command = program.command;
  const std::string type = args.positional().empty() ? kinds.front().type : args.positional()[0];
  const bool json = args.has("--json");

  // Everything the command line says is checked before any member runs.
  const NodeKind& kind = find_kind(kinds, type);
  runtime::Params params = args.get("--size")
                               ? sized_params(kind, parse_size(*args.get("--size"), command))
                               : kind.node_params;
  if (wants_params_help(args.all("--set"))) {
    std::cout << params_help(kind, params);
    return 0;
  }
  apply_sets(params, args.all("--set"), command);
  std::vector<runtime::ParamRange> ranges;
  for (const auto& text : args.all("--vary")) {
    ranges.push_back(runtime::ParamRange::parse(text));
  }
  if (ranges.empty()) {
    spec.fail("no --vary: give the params the members vary, e.g. --vary kappa=0.5:2:4");
  }
  std::unique_ptr<runtime::MemberSampler> sampler;
  if (const auto random = args.get("--random")) {
    const std::int64_t count = parse_count("--random", *random, 1);
    const auto seed = static_cast<std::uint64_t>(parse_count("--seed", args.value("--seed"), 0));
    sampler = std::make_unique<runtime::RandomSampler>(std::move(ranges), count, seed);
  } else {
    sampler = std::make_unique<runtime::GridSampler>(std::move(ranges));
  }
  runtime::EnsembleOptions options;
  std::vector<std::string> rules = args.all("--until");
  if (rules.empty()) {
    if (!kind.default_steps) {
      spec.fail(
          format("{} has no default run length: give a step cap, e.g. --until steps:100", type));
    }
    rules.push_back(format("steps:{}", kind.default_steps(*make_node(kind, type, params))));
  }
  options.until = runtime::StopRule::parse(rules);
  // A pipeline: the first stage is --set and --until; each --stage sets params over them.
  std::vector<runtime::PipelineStage> stages;
  for (const auto& text : args.all("--stage")) {
    runtime::PipelineStage stage;
    std::vector<std::string> stage_rules;
    std::istringstream words(text);
    for (std::string item; words >> item;) {
      if (item.starts_with("until=")) {
        stage_rules.push_back(item.substr(6));
        continue;
      }
      runtime::Params probe = params;
      apply_sets(probe, {item}, command);
      const std::string name = item.substr(0, item.find('='));
      stage.params.set(name, probe.at(name));
    }
    if (stage_rules.empty()) {
      spec.fail(format("--stage '{}': no until=RULE (e.g. until=steps:100)", text));
    }
    stage.until = runtime::StopRule::parse(stage_rules);
    stages.push_back(std::move(stage));
  }
  if (!stages.empty()) {
    stages.insert(stages.begin(), runtime::PipelineStage{{}, options.until});
  }
  const runtime::PipelineMode mode = runtime::parse_pipeline_mode(args.value("--mode"));
  std::int64_t buffer = 0;
  if (const auto given = args.get("--buffer")) {
    buffer = parse_count("--buffer", *given, 1);
  }
  if (stages.empty() && (args.get("--buffer") || args.get("--mode"))) {
    spec.fail("--mode and --buffer are a pipeline's: give its stages with --stage");
  }
  if (const auto batch = args.get("--batch")) {
    options.batch = parse_count("--batch", *batch, 1);
  }
  const auto checkpoint = args.get("--checkpoint");
  const std::int64_t checkpoint_every =
      parse_count("--checkpoint-every", args.value("--checkpoint-every"), 1);
  if (const auto resume = args.get("--resume")) {
    options.resume = *resume;
  }
  if (const auto vtk = args.get("--vtk")) {
    options.vtk = *vtk; // checked by the ensemble, before any member runs
  }
  if (const auto threads = args.get("--threads")) {
    options.threads = static_cast<int>(parse_count("--threads", *threads, 1));
  }
  options.device = args.value("--device"); // checked by the ensemble, before any member runs
  // Under mpiexec or srun with several ranks, the members are spread over them; rank 0 holds
  // the sinks, prints and writes.
  std::unique_ptr<comm::Comm> comm;
  if (launched_as_ranks() && program.job != nullptr) {
    comm = program.job->start();
    options.comm = comm.get();
    check_one_command(*comm, argv);
  }
  if (checkpoint) {
    // Before any member runs: rank 0 writes the file (a pipeline's first stage, or the ensemble's
    // lead), and a path it refuses is an error on every rank.
    const auto check = [&] {
      if (comm == nullptr || comm->rank() == 0) {
        check_checkpoint(command, *checkpoint,
                         stages.empty() ? runtime::k_ensemble_checkpoint_magic
                                        : runtime::k_pipeline_checkpoint_magic,
                         stages.empty() ? "uwjit ensemble checkpoint"
                                        : "uwjit pipeline checkpoint");
      }
    };
    comm ? comm::together(*comm, check) : check();
  }
  if (!stages.empty() && !comm) {
    throw Error(ErrorKind::usage,
                format("--stage: a pipeline of {} stages runs one stage per MPI rank: mpiexec -n "
                       "{} {} ensemble ...",
                       stages.size(), stages.size(),
                       program.name.empty() ? "uwjit" : program.name));
  }
  // The rank that holds the sinks, prints and writes: rank 0, or a pipeline's last stage.
  const bool lead = comm == nullptr || comm->rank() == (stages.empty() ? 0 : comm->size() - 1);
  std::vector<std::shared_ptr<runtime::MemberSink>> sinks;
  std::shared_ptr<runtime::MemorySink> dropped;
  auto make_sinks = [&] {
    if (!lead) {
      return;
    }
    if (const auto output = args.get("--output")) {
      sinks.push_back(std::make_shared<runtime::FileSink>(*output, -1,
                                                          options.resume.empty()
                                                              ? runtime::FileSink::Open::create
                                                              : runtime::FileSink::Open::append));
    } else {
      // Nothing asks for the members' fields: the report keeps their summaries, and the fields
      // are dropped as the members leave.
      dropped = std::make_shared<runtime::MemorySink>(1 << 20);
      sinks.push_back(dropped);
    }
  };
  if (comm) {
    comm::together(*comm, make_sinks); // a path rank 0 refuses is an error on every rank
  } else {
    make_sinks();
  }

  engine::Engine engine;
  auto make = [&kind, &type](const runtime::Params& member) {
    return make_node(kind, type, member);
  };
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<runtime::Ensemble> alone;
  std::unique_ptr<runtime::Pipeline> pipeline;
  if (stages.empty()) {
    alone = std::make_unique<runtime::Ensemble>(engine, make, params, std::move(sampler), sinks,
                                                options);
  } else {
    pipeline = std::make_unique<runtime::Pipeline>(
        engine, make, params, std::move(sampler), sinks,
        runtime::PipelineOptions{.stages = stages,
                                 .mode = mode,
                                 .buffer = buffer,
                                 .batch = options.batch,
                                 .memory_fraction = options.memory_fraction,
                                 .threads = options.threads,
                                 .device = options.device,
                                 .comm = comm.get(),
                                 .vtk = options.vtk,
                                 .resume = options.resume});
  }
  // This rank's ensemble (a pipeline's: its stage), and the job's figures.
  const runtime::Ensemble& ensemble = pipeline ? pipeline->ensemble() : *alone;
  auto finished = [&] { return pipeline ? pipeline->finished() : ensemble.finished(); };
  auto member_steps = [&] { return pipeline ? pipeline->member_steps() : ensemble.member_steps(); };
  const std::int64_t total = ensemble.total().value_or(0);
  Progress progress(
      total, "members",
      [&member_steps](std::int64_t, double elapsed) {
        return member_rate(member_steps(), elapsed);
      },
      lead && ::isatty(STDERR_FILENO) == 1 && !json);
  // Rounds until every member has left, or a signal asks to stop (over ranks, all ranks stop
  // after the same round): the members that left are reported and written; those still in the
  // batch are not.
  const StopOnSignal stop;
  int interrupted = 0;
  std::int64_t rounds = 0;
  for (bool remain = true; remain;) {
    std::uint64_t stop_now = StopOnSignal::signal() != 0 ? 1 : 0;
    if (comm) {
      comm->all_reduce_sum(std::span<std::uint64_t>(&stop_now, 1));
    }
    if (stop_now != 0) {
      interrupted = StopOnSignal::signal() != 0 ? StopOnSignal::signal() : SIGINT;
      break;
    }
    remain = pipeline ? pipeline->advance(runtime::Ensemble::round_steps)
                      : alone->advance(runtime::Ensemble::round_steps);
    ++rounds;
    if (checkpoint && remain && rounds % checkpoint_every == 0) {
      pipeline ? pipeline->checkpoint(*checkpoint) : alone->checkpoint(*checkpoint);
    }
    progress.update(finished());
    if (dropped) {
      (void)dropped->take();
    }
  }
  progress.finish();
  if (checkpoint && interrupted != 0) {
    // Where it stopped: --resume goes on from here.
    pipeline ? pipeline->checkpoint(*checkpoint) : alone->checkpoint(*checkpoint);
  }
  const int exit_interrupted = 128 + interrupted;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  int compiles = 0;
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& report : ensemble.kernel_reports()) {
    compiles += report.info.tier == engine::Tier::compiled ? 1 : 0;
    kernels.push_back({{"key", report.info.key},
                       {"tier", engine::to_string(report.info.tier)},
                       {"request_ms", report.info.request_ms},
                       {"stage", report.stage}});
  }
  if (pipeline) {
    // Each stage requested its own kernels: the job's compiles are every rank's.
    std::uint64_t all = static_cast<std::uint64_t>(compiles);
    comm->all_reduce_sum(std::span<std::uint64_t>(&all, 1));
    compiles = static_cast<int>(all);
  }
  bool failed = false;
  for (const auto& m : ensemble.summaries()) {
    failed = failed || m.status == runtime::MemberStatus::failed;
  }
  const double rate = seconds > 0 ? static_cast<double>(member_steps()) / seconds : 0;
  if (!lead) {
    return interrupted != 0 ? exit_interrupted : 0; // rank 0 reports
  }
  if (json) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : ensemble.summaries()) {
      nlohmann::json varied = nlohmann::json::object();
      for (std::size_t i = 0; i < ensemble.varied().size(); ++i) {
        varied[ensemble.varied()[i]] = m.values[i];
      }
      nlohmann::json integrals = nlohmann::json::object();
      for (std::size_t i = 0; i < ensemble.integrals().size(); ++i) {
        integrals[ensemble.integrals()[i]] = std::isfinite(m.integrals[i])
                                                 ? nlohmann::json(m.integrals[i])
                                                 : nlohmann::json(nullptr);
      }
      members.push_back({{"id", m.id},
                         {"params", std::move(varied)},
                         {"integrals", std::move(integrals)},
                         {"steps", m.steps},
                         {"status", runtime::to_string(m.status)},
                         {"reason", m.reason}});
    }
    nlohmann::json stage_list = nlohmann::json::array();
    for (const auto& stage : stages) {
      nlohmann::json set = nlohmann::json::object();
      for (const auto& [name, value] : stage.params.values()) {
        set[name] = value.text();
      }
      stage_list.push_back({{"params", std::move(set)}, {"until", stage.until.text()}});
    }
    nlohmann::json report = {
        {"ok", !failed},
        {"node", type},
        {"until", options.until.text()},
        {"batch", ensemble.batch_size()},
        {"batch_reason", ensemble.batch_reason()},
        {"member_bytes", ensemble.member_bytes()},
        {"threads", ensemble.threads()},
        {"device", ensemble.device()},
        {"ranks", comm ? comm->size() : 1},
        {"compiles", compiles},
        {"kernels", std::move(kernels)},
        {"member_steps", member_steps()},
        {"seconds", seconds},
        {"member_steps_per_second", rate},
        {"output",
         args.get("--output") ? nlohmann::json(*args.get("--output")) : nlohmann::json(nullptr)},
        {"interrupted", interrupted != 0},
        {"unfinished", ensemble.active()},
        {"members", std::move(members)},
    };
    if (pipeline) {
      report["stages"] = std::move(stage_list);
      report["mode"] = std::string(runtime::to_string(pipeline->mode()));
      report["buffer"] = pipeline->buffer();
    }
    std::cout << report.dump(2) << "\n";
    return interrupted != 0 ? exit_interrupted : failed ? 1 : 0;
  }
  std::cout << format("uwjit ensemble {}: {} members, rule {}\n", type, finished(),
                      options.until.text());
  for (std::size_t k = 1; k < stages.size(); ++k) {
    std::vector<std::string> set;
    for (const auto& [name, value] : stages[k].params.values()) {
      set.push_back(format("{}={}", name, value.text()));
    }
    std::cout << format("  then stage {}: {}rule {}\n", k,
                        set.empty() ? std::string() : join(set, " ") + ", ",
                        stages[k].until.text());
  }
  if (pipeline) {
    std::cout << format(
        "  pipeline of {} stages on as many ranks, mode {}, up to {} member(s) sent "
        "a round; batch and kernels of the last stage:\n",
        stages.size(), runtime::to_string(mode), pipeline->buffer());
  }
  std::cout << format("  batch {}\n", ensemble.batch_reason());
  for (const auto& report : ensemble.kernel_reports()) {
    std::cout << format("  kernel {}: {} in {} ms\n", report.info.key,
                        engine::to_string(report.info.tier), fixed(report.info.request_ms, 1));
  }
  std::cout << format(
      "  {} member-steps in {} s on {}{}: {} member-steps/s\n", member_steps(), fixed(seconds, 2),
      ensemble.device() == "cpu" ? format("{} thread(s)", ensemble.threads()) : ensemble.device(),
      comm ? format(" on each of {} ranks", comm->size()) : "", general(std::round(rate)));
  if (const auto output = args.get("--output")) {
    std::cout << format("  members written to {}\n", *output);
  }
  if (interrupted != 0) {
    std::cout << format("  interrupted by signal {}: {} member(s) left and are reported{}; {} "
                        "still in this process's batch did not finish\n",
                        interrupted, finished(), args.get("--output") ? " and written" : "",
                        ensemble.active());
  }
  std::vector<std::string> head = {"id"};
  head.insert(head.end(), ensemble.varied().begin(), ensemble.varied().end());
  head.insert(head.end(), {"steps", "status"});
  head.insert(head.end(), ensemble.integrals().begin(), ensemble.integrals().end());
  head.push_back("why");
  std::vector<std::vector<std::string>> rows = {head};
  for (const auto& m : ensemble.summaries()) {
    std::vector<std::string> row = {std::to_string(m.id)};
    for (const double v : m.values) {
      row.push_back(general(v));
    }
    row.push_back(std::to_string(m.steps));
    row.push_back(std::string(runtime::to_string(m.status)));
    for (const double v : m.integrals) {
      row.push_back(general(v));
    }
    row.push_back(terminal_safe(m.reason, true)); // a resumed member's reason is a file's text
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(head.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string cell = row[c];
      if (c + 1 < row.size()) {
        cell.resize(widths[c], ' ');
      }
      line += " " + cell;
    }
    std::cout << line << "\n";
  }
  return interrupted != 0 ? exit_interrupted : failed ? 1 : 0;
}

} // namespace uwjit::driver
