// The run of a node from the command line: arguments checked before anything runs, the
// simulation built (under MPI, sharded), its steps taken with a progress bar and a clean stop on
// SIGINT/SIGTERM, the output written and the report printed (run_report.cpp). `uwjit run` is this
// for the built-in nodes.
#include "one_command.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "run_paths.hpp"
#include "run_report.hpp"
#include "stop_on_signal.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/driver/args.hpp>
#include <uwjit/driver/run_main.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <span>

namespace uwjit::driver {

namespace {

using Clock = std::chrono::steady_clock;

// "WORD nodes" for --help's heading, "WORD" before an unknown type's list.
std::string kinds_heading(const Program& program) {
  return program.kinds_word.empty() ? "nodes" : program.kinds_word + " nodes";
}

// How the program is invoked, for --help's notes: "uwjit run NODE", "advect".
std::string invocation(const Program& program, std::span<const NodeKind> kinds) {
  std::string text = program.name;
  text += program.command.empty() ? "" : " " + program.command;
  return kinds.size() > 1 ? text + " NODE" : text;
}

// "heat and pipe-flow only, along x, alone or with y and/or z" when only some kinds shard, and
// all of those along the same axes; else a pointer at the list of kinds.
std::string shard_summary(std::span<const NodeKind> kinds) {
  std::vector<std::string> shardable;
  std::string along;
  bool same = true;
  for (const auto& kind : kinds) {
    if (kind.shard_help.empty()) {
      continue;
    }
    if (!shardable.empty() && kind.shard_help != along) {
      same = false;
    }
    along = kind.shard_help;
    shardable.push_back(kind.type);
  }
  if (shardable.empty()) {
    return "no node here can be sharded";
  }
  if (shardable.size() == kinds.size() || !same) {
    return "see below";
  }
  return format("{} only, along {}: see below", join(shardable, " and "), along);
}

ArgSpec run_spec(const Program& program, std::span<const NodeKind> kinds) {
  std::string kinds_text = kinds_heading(program) + ":\n";
  std::string names;
  for (const auto& kind : kinds) {
    std::string name = kind.type;
    name.resize(std::max<std::size_t>(name.size() + 2, 12), ' ');
    kinds_text += "  " + name + kind.summary + "\n" + std::string(14, ' ') + "--size: " +
                  (kind.sized ? kind.size_help
                              : std::string("not taken (set the node params with "
                                            "--set)")) +
                  "\n" + std::string(14, ' ') + "--shard: " +
                  (kind.shard_help.empty() ? std::string("cannot be sharded") : kind.shard_help) +
                  "\n";
    names += names.empty() ? kind.type : (&kind == &kinds.back() ? " or " : ", ") + kind.type;
  }
  const std::string how = invocation(program, kinds);
  const std::string summary =
      !program.summary.empty()
          ? program.summary
          : format("Runs a node ({}) in this process: emits its kernels, gets them from the engine "
                   "(compiled, or\nfrom the cache), takes the steps, checks the physics where the "
                   "node kind can, and writes\nthe final fields as VTK XML that ParaView opens.",
                   names);
  ArgSpec spec(program.command, summary);
  spec.program(program.name);
  spec.option("--size", "N|NXxNYxNZ", "the grid (what N means depends on the node, below)")
      .option("--steps", "N", "steps to take (default: what the node's check needs)")
      .option("--output", "DIR", "where the VTK files go", ".")
      .option("--set", "NAME=VALUE", "set a node param (repeatable; --set help lists them)")
      .option("--output-every", "N",
              "also write the fields every N steps, and a ParaView time series (NODE.pvd)")
      .flag("--plot", "draw PNG pictures of the fields and of the checked quantity")
      .option("--checkpoint", "FILE", "write a checkpoint after the last step")
      .option("--restore", "FILE", "continue from a checkpoint (the node and params come from it)")
      .option("--shard", "x[,y[,z]]",
              "split the domain along these axes over the MPI ranks (run under mpirun; " +
                  shard_summary(kinds) + ")")
      .option("--exchange", "sync|overlap", "how sharded halos are exchanged", "sync")
      .option("--threads", "N",
              "threads per process (default: the cores it may use, shared among the ranks of "
              "its node)")
      .option("--device", "cpu|cuda|cuda:N",
              "where the kernels run: this process's cores, or an NVIDIA GPU (under MPI, "
              "cuda gives each rank a GPU of its node)",
              "cpu")
      .flag("--checked",
            "checked mode for node authors: bounds-checked accessors, poisoned halos, update "
            "boxes split (as UWJIT_CHECK=1)")
      .flag("--json", "print the report as JSON on stdout")
      .flag("--print-kernel", "print the node's generated kernel source and stop");
  spec.positional("NODE", names, kinds.size() > 1);
  spec.epilog(
      kinds_text +
      "\nThe report shows where each kernel came from (compiled now, the disk cache or\n"
      "memory) and its timings, the throughput in MLUPS (million cell updates per\n"
      "second), the domain integrals of the last step and the physics check. A progress\n"
      "bar (elapsed time, MLUPS, time left) is drawn on stderr when it is a terminal.\n"
      "Each VTK file carries FieldData: step, time, dt, the kernel key and the params.\n"
      "--plot writes NODE_FIELD.png (a mid-plane slice with a colour bar) per field and,\n"
      "where the check compares with a reference, a chart of both, next to the VTK files.\n\n"
      "Paths are checked before the first step. Ctrl-C (SIGINT) or SIGTERM stops the run\n"
      "after the current step: the report, the output and the checkpoint are of that\n"
      "step, and the exit code is 130.\n\n" +
      format("Under MPI (mpirun -np N {} --shard x), the ranks request the kernel\n"
             "together (one compile for the job), each steps its slab of the domain and\n"
             "exchanges halos; rank 0 prints the report (compiles summed over the ranks, halo\n"
             "exchange time). Nothing is gathered: each rank writes its slab's piece of the\n"
             "output (DIR/NODE/) and rank 0 the index that ParaView opens (DIR/NODE.pvti),\n"
             "and every rank writes its own part of one checkpoint file.\n\n",
             how) +
      "Exit codes: 0 the check passed (or did not judge), 1 it failed (or a run-time error),\n"
      "2 bad usage, 130 interrupted." +
      (program.epilog.empty() ? std::string() : "\n" + program.epilog));
  return spec;
}

std::vector<int> parse_shard(const std::string& text, std::string_view command) {
  std::vector<int> axes;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const int axis = part == "x" ? 0 : part == "y" ? 1 : part == "z" ? 2 : -1;
    if (axis < 0 || std::find(axes.begin(), axes.end(), axis) != axes.end()) {
      throw Error(ErrorKind::usage,
                  format("{}{}--shard: expected distinct axes x, y, z separated by commas, got "
                         "\"{}\"",
                         command, command.empty() ? "" : ": ", text));
    }
    axes.push_back(axis);
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  return axes;
}

// Only rank 0 of a sharded run prints: the others' std::cout goes nowhere while this lives.
class QuietUnlessLead {
public:
  explicit QuietUnlessLead(bool lead) : m_saved(lead ? nullptr : std::cout.rdbuf(nullptr)) {}
  ~QuietUnlessLead() {
    if (m_saved != nullptr) {
      std::cout.rdbuf(m_saved);
      std::cout.clear();
    }
  }
  QuietUnlessLead(const QuietUnlessLead&) = delete;
  QuietUnlessLead& operator=(const QuietUnlessLead&) = delete;

private:
  std::streambuf* m_saved;
};

std::string params_text(const runtime::Params& params) {
  std::string out;
  for (const auto& [key, value] : params.values()) {
    out += out.empty() ? "" : " ";
    out += key + "=" + (value.is_string() ? value.as_string() : value.text());
  }
  return terminal_safe(out, true); // a restored checkpoint's params are a file's text
}

std::string series_name(const std::string& node, std::int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06lld", static_cast<long long>(step));
  return node + "_" + digits;
}

std::int64_t domain_cells(const runtime::Node& node) {
  std::int64_t cells = 1;
  for (const std::int64_t n : node.domain()) {
    cells *= n;
  }
  return cells;
}

} // namespace

int run(const Program& program, std::span<const NodeKind> kinds,
        const std::vector<std::string>& argv) {
  if (kinds.empty()) {
    throw Error(ErrorKind::usage, "run: no node kinds to run");
  }
  const ArgSpec spec = run_spec(program, kinds);
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const std::string& command = program.command;
  const std::string type = args.positional().empty() ? kinds.front().type : args.positional()[0];
  const bool json = args.has("--json");
  const bool plot = args.has("--plot");
  const auto restore = args.get("--restore");
  const auto checkpoint = args.get("--checkpoint");
  const std::filesystem::path output_dir = args.value("--output");

  // Misuse of the command line, found before anything runs: exit 2 with the usage line.
  const NodeKind* kind = nullptr;
  runtime::Params params;
  std::shared_ptr<const runtime::Node> made;
  runtime::SimulationOptions options;
  std::optional<std::int64_t> requested_steps;
  std::int64_t output_every = 0;
  const std::string exchange = args.value("--exchange");
  const auto shard = args.get("--shard");
  try {
    std::vector<std::string> types;
    for (const auto& k : kinds) {
      types.push_back(k.type);
      if (k.type == type) {
        kind = &k;
      }
    }
    if (kind == nullptr) {
      throw Error(ErrorKind::usage,
                  format("unknown node type \"{}\" ({}: {}){}", printable(type),
                         program.kinds_word.empty() ? "known" : program.kinds_word, join(types),
                         did_you_mean(type, types)));
    }
    if (restore) {
      if (args.get("--size") || !args.all("--set").empty()) {
        throw Error(ErrorKind::usage, "--restore takes the params from the checkpoint; drop "
                                      "--size and --set");
      }
    } else {
      params = args.get("--size") ? sized_params(*kind, parse_size(*args.get("--size"), command))
                                  : kind->node_params;
      const auto sets = args.all("--set");
      if (wants_params_help(sets)) {
        std::cout << params_help(*kind, params);
        return 0;
      }
      apply_sets(params, sets, command);
      made = make_node(*kind, type, params); // checks every param's range
    }
    if (exchange != "sync" && exchange != "overlap") {
      throw Error(ErrorKind::usage,
                  format("--exchange: expected sync or overlap, got \"{}\"", exchange));
    }
    options.exchange =
        exchange == "sync" ? runtime::ExchangeMode::sync : runtime::ExchangeMode::overlap;
    options.checked = args.has("--checked");
    options.device = args.value("--device");
    if (const auto threads = args.get("--threads")) {
      options.threads = runtime::parse_threads(*threads, "--threads");
    }
    if (shard) {
      if (program.job == nullptr) {
        throw Error(ErrorKind::usage,
                    format("--shard needs MPI, and {} was built without it (a program links "
                           "uwjit::mpi and gives run_main Program::job = &uwjit::mpi::job())",
                           program.name));
      }
      options.shard_axes = parse_shard(*shard, command);
      std::string problem = kind->shard_problem ? kind->shard_problem(options.shard_axes) : "";
      if (problem.empty() && kind->shard_help.empty()) {
        problem = format("{} cannot be sharded (its node kind gives no axes to split)", type);
      }
      if (!problem.empty()) {
        throw Error(ErrorKind::usage, format("--shard {}: {}", *shard, problem));
      }
    } else if (program.job != nullptr && launched_as_ranks()) {
      // Each rank would run the whole job on its own and write the same files as the others.
      throw Error(ErrorKind::usage,
                  "this process is one of several ranks of a job (mpiexec or srun), and without "
                  "--shard each rank would run the whole domain alone and write the same files: "
                  "give --shard (see --help), or start one process without mpiexec");
    }
    if (const auto text = args.get("--steps")) {
      requested_steps = parse_count("--steps", *text, 0);
    } else if (!kind->default_steps) {
      throw Error(
          ErrorKind::usage,
          format("--steps: node kind \"{}\" has no default run length; give --steps N", type));
    }
    if (const auto text = args.get("--output-every")) {
      output_every = parse_count("--output-every", *text, 1);
    }
    if (plot && !plots_available()) {
      (void)write_plots({}, {}, {}, {}); // throws, saying what is missing
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::usage) {
      throw;
    }
    std::string_view message = error.what();
    if (!command.empty() && message.starts_with(command + ": ")) {
      message.remove_prefix(command.size() + 2);
    }
    spec.fail(std::string(message));
  }

  // Every path the run will write or read, before any work: a run must not be lost at its end.
  const bool print_kernel = args.has("--print-kernel"); // writes nothing
  if (!print_kernel) {
    check_output(command, output_dir);
  }
  if (checkpoint && !print_kernel) {
    check_checkpoint(command, *checkpoint, runtime::k_checkpoint_magic, "uwjit checkpoint");
  }
  if (restore) {
    check_restore(command, *restore);
  }
  if (checkpoint && made && !print_kernel) {
    check_checkpoint_apart(command, *checkpoint, output_dir, made->name());
  }
  const StopOnSignal stop;

  std::unique_ptr<comm::Comm> comm;
  if (shard) {
    comm = program.job->start();
    options.comm = comm.get();
    check_one_command(*comm, argv);
  }
  const bool lead = options.comm == nullptr || options.comm->rank() == 0;
  const int ranks = options.comm == nullptr ? 1 : options.comm->size();
  const QuietUnlessLead quiet(lead);

  engine::Engine engine;
  std::optional<runtime::Simulation> simulation;
  if (restore) {
    simulation.emplace(runtime::Simulation::restore(engine, *restore, factory(kinds), options));
    if (simulation->nodes().size() != 1 || simulation->nodes()[0]->type() != type) {
      spec.fail(format("checkpoint {} does not hold a single {} node", *restore, type));
    }
  } else {
    simulation.emplace(engine, std::vector<std::shared_ptr<const runtime::Node>>{made}, options);
  }
  const runtime::Node& node = *simulation->nodes()[0];
  if (checkpoint && restore && !print_kernel) {
    check_checkpoint_apart(command, *checkpoint, output_dir, node.name()); // the file's name
  }
  if (!print_kernel) {
    check_vtk_outputs(command, output_dir, node.name());
  }
  if (print_kernel) {
    std::cout << simulation->kernel_reports()[0].source->body();
    return 0;
  }
  const std::int64_t steps = requested_steps ? *requested_steps : kind->default_steps(node);
  const std::int64_t updates_per_step =
      kind->updates_per_step ? kind->updates_per_step(node) : domain_cells(node);
  const double dt = node.dt();

  if (!json) {
    // "uwjit run heat: ...", "advect: ..." (a program named after its one node kind).
    const std::string who = invocation(program, {});
    std::cout << (who == type ? type : who + " " + type) << ": " << kind->summary << "\n"
              << "  params   " << params_text(node.params()) << "\n"
              << "  dt       " << general(dt) << " per step\n";
    if (restore) {
      std::cout << "  restored " << *restore << " at step " << simulation->steps_taken() << "\n";
    }
    std::cout << "kernels\n";
    for (const auto& report : simulation->kernel_reports()) {
      const auto& info = report.info;
      std::cout << "  " << report.node << "  " << engine::to_string(info.tier) << "  "
                << fixed(info.request_ms, 1) << " ms";
      if (info.tier == engine::Tier::compiled) {
        std::cout << "  (frontend " << fixed(info.compile.frontend_ms, 1) << ", optimise "
                  << fixed(info.compile.optimise_ms, 1) << ", codegen "
                  << fixed(info.compile.codegen_ms, 1) << ", load " << fixed(info.load_ms, 1)
                  << " ms)";
      }
      std::cout << "  key " << info.key;
      if (info.tier == engine::Tier::disk && engine.cache_dir() != info.served_from) {
        std::cout << "  (site cache " << info.served_from << ")";
      }
      std::cout << "\n";
      if (const auto& check = report.first_step_check) {
        // Its text does not show how far it reads: its checked copy runs the first step.
        std::cout << "    first step checked by " << engine::to_string(check->tier) << " "
                  << fixed(check->request_ms, 1) << " ms  key " << check->key << "\n";
      }
    }
    std::cout.flush();
  }

  // What the run wrote, and what it could not write: a failure to write one file loses neither
  // the others nor the report.
  std::vector<std::filesystem::path> outputs;
  std::vector<std::string> failures;
  auto attempt = [&](const auto& write) {
    try {
      write();
    } catch (const std::exception& error) {
      failures.emplace_back(error.what());
    }
  };
  // The time series: the fields every N steps (from the first step of this run), and the
  // collection that ParaView opens as one dataset over time. Sharded, each rank writes its slab's
  // piece and rank 0 the index (write_node_vtk: collective, nothing gathered).
  std::vector<runtime::VtkSeriesEntry> series;
  auto write_series = [&]() {
    attempt([&] {
      const auto name = series_name(node.name(), simulation->steps_taken());
      for (const auto& file : simulation->write_node_vtk(node.name(), output_dir, name)) {
        series.push_back({file.filename(), static_cast<double>(simulation->steps_taken()) * dt});
      }
    });
  };
  const std::int64_t first_step = simulation->steps_taken();
  if (output_every > 0) {
    write_series();
  }

  Trace trace;
  Progress progress(steps, updates_per_step, lead && ::isatty(STDERR_FILENO) == 1);
  const auto start = Clock::now();
  std::int64_t taken = 0;
  int interrupted = 0;
  for (; taken < steps; ++taken) {
    // Sharded: the ranks agree on stopping, so that they all stop after the same step.
    std::uint64_t stop_now = StopOnSignal::signal() != 0 ? 1 : 0;
    if (options.comm != nullptr) {
      options.comm->all_reduce_sum(std::span<std::uint64_t>(&stop_now, 1));
    }
    if (stop_now != 0) {
      interrupted = StopOnSignal::signal() != 0 ? StopOnSignal::signal() : SIGINT;
      break;
    }
    simulation->step(1);
    trace.record(*simulation, 0);
    progress.update(taken + 1);
    if (output_every > 0 && (simulation->steps_taken() - first_step) % output_every == 0) {
      write_series();
    }
  }
  if (interrupted == 0 && StopOnSignal::signal() != 0 && options.comm == nullptr) {
    interrupted = StopOnSignal::signal(); // arrived during the last step
  }
  progress.finish();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double mlups = seconds > 0 ? static_cast<double>(updates_per_step) *
                                         static_cast<double>(taken) / seconds / 1e6
                                   : 0.0;
  if (output_every > 0 && (simulation->steps_taken() - first_step) % output_every != 0) {
    write_series(); // the last step, where the run ended between two outputs
  }

  // Sharded: every rank checks and draws (so every rank exits alike, and the pictures' slices
  // are joined together): a kind that reads slabs gets its own rank's, added up over the ranks
  // (nothing gathered); another gets the whole state, gathered on every rank. Rank 0 writes the
  // files.
  const auto exchange_stats = simulation->exchange_stats();
  const auto exchange_seconds = exchange_stats.seconds;
  std::optional<runtime::Snapshot> view; // collective; none when nothing reads it
  if (kind->check || plot) {
    view.emplace(kind->reads_slabs ? simulation->local_snapshot() : simulation->gathered());
  }
  Verdict verdict;
  if (kind->check) {
    verdict = kind->check(node, *view, trace);
  } else {
    verdict.not_judged = format("node kind \"{}\" has no physics check", type);
  }
  std::optional<std::filesystem::path> collection;
  std::vector<std::filesystem::path> plots;
  bool checkpointed = false;
  attempt([&] { // collective, as write_series
    const auto written = simulation->write_node_vtk(node.name(), output_dir, node.name());
    outputs.insert(outputs.end(), written.begin(), written.end());
  });
  std::optional<Figures> figures;
  if (plot) {
    attempt([&] { // every rank, together
      figures = kind->figures ? kind->figures(node, *view) : default_figures(node, *view);
    });
  }
  if (lead) {
    if (!series.empty()) {
      attempt([&] {
        const auto path = output_dir / (node.name() + ".pvd");
        runtime::write_collection(path, series);
        collection = path;
      });
    }
    if (figures) {
      attempt([&] {
        plots = write_plots(
            *figures, {type, view->steps_taken(), static_cast<double>(view->steps_taken()) * dt},
            output_dir, node.name());
      });
    }
  }
  if (checkpoint) {
    // Collective: each rank writes its slab into the one file (the same error on every rank).
    attempt([&] {
      simulation->checkpoint(*checkpoint);
      checkpointed = true;
    });
  }
  // The job's compiles (every kernel it asked for: the nodes' and, on a device, the halo
  // kernels), summed over the ranks, and the mean halo time per rank.
  std::uint64_t counts[2] = {engine.stats().get(cache::Stat::compiles), 0};
  double halo_seconds = exchange_seconds;
  if (options.comm != nullptr) {
    options.comm->all_reduce_sum(std::span<std::uint64_t>(counts, 1));
    options.comm->all_reduce_sum(std::span<double>(&halo_seconds, 1));
    halo_seconds /= ranks;
  }
  const auto compiles = static_cast<int>(counts[0]);
  const RunReport report{.type = type,
                         .node = &node,
                         .updates_per_step = updates_per_step,
                         .simulation = &*simulation,
                         .compiles = compiles,
                         .ranks = ranks,
                         .shard = shard ? *shard : "",
                         .exchange = exchange,
                         .halo_seconds = halo_seconds,
                         .exchange_stats = exchange_stats,
                         .taken = taken,
                         .steps = steps,
                         .interrupted = interrupted == 0         ? ""
                                        : interrupted == SIGTERM ? "SIGTERM"
                                                                 : "SIGINT",
                         .dt = dt,
                         .seconds = seconds,
                         .mlups = mlups,
                         .verdict = verdict,
                         .outputs = outputs,
                         .collection = collection,
                         .output_dir = output_dir,
                         .series = series,
                         .plots = plots,
                         .checkpoint = checkpointed ? *checkpoint : "",
                         .errors = failures};
  if (json) {
    print_json(report, std::cout);
  } else {
    print_text(report, std::cout);
  }
  std::cout.flush();
  for (const auto& failure : failures) {
    if (lead) { // a collective failure is every rank's: said once
      std::cerr << program.name << ": error: " << terminal_safe(failure) << "\n";
    }
  }
  if (!failures.empty()) {
    return 1;
  }
  if (interrupted != 0) {
    return 130;
  }
  return verdict.passed ? 0 : 1;
}

int report_error(const Program& program, const std::exception& error) {
  const std::string& name = program.name;
  const std::string help = program.command.empty() ? name : name + " " + program.command;
  int code = 1;
  // A message may quote a file's text (a checkpoint's param): no escape reaches the terminal.
  std::string message = terminal_safe(error.what());
  const auto* usage = dynamic_cast<const UsageError*>(&error);
  const auto* uwjit_error = dynamic_cast<const Error*>(&error);
  if (usage != nullptr || (uwjit_error != nullptr && uwjit_error->kind() == ErrorKind::usage)) {
    code = 2;
  }
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    // Where uwjit allocates much (state, static data, nodes) it names what; this is the rest.
    message = "out of memory: an allocation failed (std::bad_alloc); the run is too large for "
              "this machine's memory";
  }
  // Under MPI an error may have reached this rank only, while the others wait in a collective:
  // the job ends every rank with the message.
  if (program.job != nullptr) {
    program.job->end_on_error(name, message, code);
  }
  std::cerr << name << ": error: " << message << "\n";
  if (usage != nullptr) {
    std::cerr << usage->usage() << (usage->usage().ends_with('\n') ? "" : "\n") << "(run '" << help
              << " --help' for details)\n";
  } else if (code == 2 && !message.starts_with("UWJIT_")) {
    // The arguments were at fault: where to read about them. Not for a bad environment
    // variable, which the message names.
    std::cerr << "(run '" << help << " --help' for details)\n";
  }
  return code;
}

int run_main(int argc, char** argv, std::span<const NodeKind> kinds, Program program) {
  if (program.name.empty()) {
    program.name = argc > 0 && argv[0] != nullptr
                       ? std::filesystem::path(argv[0]).filename().string()
                       : std::string("run");
  }
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + std::max(argc, 0));
  int code = 0;
  try {
    code = run(program, kinds, args);
  } catch (const std::exception& error) {
    code = report_error(program, error);
  }
  if (program.job != nullptr) {
    program.job->finish();
  }
  std::cout.flush();
  return code;
}

} // namespace uwjit::driver
