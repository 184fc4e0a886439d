// uwjit run: arguments checked before anything runs, the simulation built (under MPI, sharded),
// its steps taken with a progress bar and a clean stop on SIGINT/SIGTERM, the output written and
// the report printed (run_report.cpp).
#include "args.hpp"
#include "commands.hpp"
#include "mpi_job.hpp"
#include "node_args.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "run_paths.hpp"
#include "run_report.hpp"
#include "text.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>

namespace uwjit::tools {

namespace {

using Clock = std::chrono::steady_clock;

ArgSpec run_spec() {
  std::string nodes_text = "built-in nodes:\n";
  for (const auto& kind : nodes::kinds()) {
    std::string name(kind.type);
    name.resize(12, ' ');
    nodes_text += "  " + name + std::string(kind.summary) + "\n" + std::string(14, ' ') +
                  "--size: " + std::string(kind.size_help) + "\n" + std::string(14, ' ') +
                  "--shard: " +
                  (kind.shard_help.empty() ? std::string("cannot be sharded")
                                           : std::string(kind.shard_help)) +
                  "\n";
  }
  ArgSpec spec("run", "Runs a built-in node in this process: emits its kernel, gets it from the "
                      "engine (compiled, or from\nthe cache), takes the steps, checks the physics "
                      "and writes the final fields as VTK XML\n(.vti image data; .vtu "
                      "unstructured grid for fvm) that ParaView opens.");
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
              "split the domain along these axes over the MPI ranks (run under mpirun; heat and "
              "pipe-flow only, along x, alone or with y and/or z: see below)")
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
      .flag("--print-kernel", "print the node's generated kernel source and stop")
      .positional("NODE", "heat, pipe-flow, fvm or mlp")
      .epilog(nodes_text +
              "\nThe report shows where each kernel came from (compiled now, the disk cache or\n"
              "memory) and its timings, the throughput in MLUPS (million cell updates per\n"
              "second), the domain integrals of the last step and the physics check. A progress\n"
              "bar (elapsed time, MLUPS, time left) is drawn on stderr when it is a terminal.\n"
              "Each VTK file carries FieldData: step, time, dt, the kernel key and the params.\n"
              "--plot writes NODE_FIELD.png (a mid-plane slice with a colour bar) per field and,\n"
              "where the check compares with a reference, a chart of both (e.g. pipe-flow's\n"
              "axial profile against Poiseuille), next to the VTK files.\n\n"
              "Paths are checked before the first step. Ctrl-C (SIGINT) or SIGTERM stops the run\n"
              "after the current step: the report, the output and the checkpoint are of that\n"
              "step, and the exit code is 130.\n\n"
              "Under MPI (mpirun -np N uwjit run NODE --shard x), the ranks request the kernel\n"
              "together (one compile for the job), each steps its slab of the domain and\n"
              "exchanges halos; rank 0 prints the report (compiles summed over the ranks, halo\n"
              "exchange time) and writes the output from the gathered fields.\n\n"
              "Exit codes: 0 the check passed, 1 it failed (or a run-time error), 2 bad usage,\n"
              "130 interrupted.\n"
              "Examples:\n"
              "  uwjit run pipe-flow\n"
              "  uwjit run heat --size 64 --steps 200 --output out --json\n"
              "  uwjit run heat --set contrast=5 --set boundary=periodic\n"
              "  uwjit run heat --steps 200 --checkpoint heat.ckpt && uwjit run heat --restore "
              "heat.ckpt --steps 300\n"
              "  uwjit run pipe-flow --plot --output out\n"
              "  uwjit run heat --steps 500 --output-every 50 --output series\n"
              "  mpirun -np 2 uwjit run pipe-flow --shard x --exchange overlap\n"
              "  uwjit run pipe-flow --device cuda");
  return spec;
}

std::vector<int> parse_shard(const std::string& text) {
  std::vector<int> axes;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const int axis = part == "x" ? 0 : part == "y" ? 1 : part == "z" ? 2 : -1;
    if (axis < 0 || std::find(axes.begin(), axes.end(), axis) != axes.end()) {
      throw Error(ErrorKind::usage,
                  format("run: --shard: expected distinct axes x, y, z separated by commas, got "
                         "\"{}\"",
                         text));
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

std::int64_t parse_count(std::string_view option, const std::string& text, std::int64_t min) {
  std::int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min) {
    throw Error(ErrorKind::usage,
                format("run: {}: expected a whole number >= {}, got \"{}\"", option, min, text));
  }
  return value;
}

std::string params_text(const runtime::Params& params) {
  std::string out;
  for (const auto& [key, value] : params.values()) {
    out += out.empty() ? "" : " ";
    out += key + "=" + (value.is_string() ? value.as_string() : value.text());
  }
  return out;
}

// --- Stopping cleanly on SIGINT and SIGTERM -------------------------------------------------

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal) {
  g_signal = signal;
}

// While it lives, SIGINT and SIGTERM only ask the run to stop after the current step; a second
// one acts as it normally would (SA_RESETHAND), so a run stuck in its output can still be ended.
class StopOnSignal {
public:
  StopOnSignal() {
    struct sigaction action{};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &m_saved[0]);
    ::sigaction(SIGTERM, &action, &m_saved[1]);
  }
  ~StopOnSignal() {
    ::sigaction(SIGINT, &m_saved[0], nullptr);
    ::sigaction(SIGTERM, &m_saved[1], nullptr);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  [[nodiscard]] static int signal() noexcept { return g_signal; }

private:
  struct sigaction m_saved[2]{};
};

// --- --set help --------------------------------------------------------------------------------

std::string params_help(const std::string& type, const runtime::Params& params) {
  std::string out =
      format("{} params (--set NAME=VALUE; the defaults are for this --size):\n", type);
  const auto& values = params.values();
  for (const auto& doc : nodes::param_docs(type)) {
    const auto it = values.find(std::string(doc.name));
    out += format("  {} = {}", doc.name, it == values.end() ? "" : it->second.text());
    out += doc.unit.empty() ? format("  (accepted: {})\n", doc.range)
                            : format("  ({}; accepted: {})\n", doc.unit, doc.range);
    out += format("      {}\n", doc.meaning);
  }
  return out;
}

std::string series_name(const std::string& node, std::int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06lld", static_cast<long long>(step));
  return node + "_" + digits;
}

} // namespace

int run_command(const std::vector<std::string>& argv) {
  const ArgSpec spec = run_spec();
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const std::string type = args.positional().at(0);
  const bool json = args.has("--json");
  const bool plot = args.has("--plot");
  const auto restore = args.get("--restore");
  const auto checkpoint = args.get("--checkpoint");
  const std::filesystem::path output_dir = args.value("--output");

  // Misuse of the command line, found before anything runs: exit 2 with the usage line.
  runtime::Params params;
  std::shared_ptr<const nodes::BuiltinNode> made;
  runtime::SimulationOptions options;
  std::optional<std::int64_t> requested_steps;
  std::int64_t output_every = 0;
  const std::string exchange = args.value("--exchange");
  const auto shard = args.get("--shard");
  try {
    std::vector<std::string> types;
    for (const auto& kind : nodes::kinds()) {
      types.emplace_back(kind.type);
    }
    if (std::find(types.begin(), types.end(), type) == types.end()) {
      throw Error(ErrorKind::usage,
                  format("unknown node type \"{}\" (built-in: heat, pipe-flow, fvm, mlp){}", type,
                         did_you_mean(type, types)));
    }
    if (restore) {
      if (args.get("--size") || !args.all("--set").empty()) {
        throw Error(ErrorKind::usage, "--restore takes the params from the checkpoint; drop "
                                      "--size and --set");
      }
    } else {
      params = args.get("--size")
                   ? nodes::sized_params(type, parse_size(*args.get("--size"), "run"))
                   : nodes::default_params(type);
      const auto sets = args.all("--set");
      if (std::find(sets.begin(), sets.end(), "help") != sets.end()) {
        std::cout << params_help(type, params);
        return 0;
      }
      apply_sets(params, sets, "run");
      made = nodes::make(type, type, params); // checks every param's range
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
#ifdef UWJIT_HAVE_MPI
      options.shard_axes = parse_shard(*shard);
      if (const auto problem = nodes::shard_problem(type, options.shard_axes); !problem.empty()) {
        throw Error(ErrorKind::usage, format("--shard {}: {}", *shard, problem));
      }
#else
      throw Error(ErrorKind::usage, "--shard needs uwjit built with MPI (uwjit::mpi)");
#endif
    }
    if (const auto text = args.get("--steps")) {
      requested_steps = parse_count("--steps", *text, 0);
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
    if (message.rfind("run: ", 0) == 0) {
      message.remove_prefix(5);
    }
    spec.fail(std::string(message));
  }

  // Every path the run will write or read, before any work: a run must not be lost at its end.
  const bool print_kernel = args.has("--print-kernel"); // writes nothing
  if (!print_kernel) {
    check_output(output_dir);
  }
  if (checkpoint && !print_kernel) {
    check_checkpoint(*checkpoint);
  }
  if (restore) {
    check_restore(*restore);
  }
  if (checkpoint && made && !print_kernel) {
    check_checkpoint_apart(*checkpoint, output_dir, made->name());
  }
  const StopOnSignal stop;

  std::unique_ptr<comm::Comm> comm;
  if (shard) {
    comm = start_mpi_job();
    options.comm = comm.get();
  }
  const bool lead = options.comm == nullptr || options.comm->rank() == 0;
  const int ranks = options.comm == nullptr ? 1 : options.comm->size();
  const QuietUnlessLead quiet(lead);

  engine::Engine engine;
  std::optional<runtime::Simulation> simulation;
  if (restore) {
    simulation.emplace(runtime::Simulation::restore(engine, *restore, nodes::factory(), options));
    if (simulation->nodes().size() != 1 || simulation->nodes()[0]->type() != type) {
      spec.fail(format("checkpoint {} does not hold a single {} node", *restore, type));
    }
  } else {
    simulation.emplace(engine, std::vector<std::shared_ptr<const runtime::Node>>{made}, options);
  }
  const auto& node = dynamic_cast<const nodes::BuiltinNode&>(*simulation->nodes()[0]);
  if (checkpoint && restore && !print_kernel) {
    check_checkpoint_apart(*checkpoint, output_dir, node.name()); // the name is the file's
  }
  if (print_kernel) {
    std::cout << simulation->kernels()[0].source->body();
    return 0;
  }
  const std::int64_t steps = requested_steps ? *requested_steps : node.default_steps();
  const double dt = node.dt();

  if (!json) {
    std::cout << "uwjit run " << type << ": " << node.summary() << "\n"
              << "  params   " << params_text(node.params()) << "\n"
              << "  dt       " << general(dt) << " per step\n";
    if (restore) {
      std::cout << "  restored " << *restore << " at step " << simulation->steps_taken() << "\n";
    }
    std::cout << "kernels\n";
    for (const auto& report : simulation->kernels()) {
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
  // collection that ParaView opens as one dataset over time.
  std::vector<runtime::VtkSeriesEntry> series;
  auto write_series = [&]() {
    const runtime::Snapshot whole = simulation->gathered(); // collective
    if (!lead) {
      return;
    }
    attempt([&] {
      const auto name = series_name(node.name(), simulation->steps_taken());
      for (const auto& file : node.write_output(whole, output_dir, name)) {
        series.push_back({file.filename(), static_cast<double>(whole.steps_taken()) * dt});
      }
    });
  };
  const std::int64_t first_step = simulation->steps_taken();
  if (output_every > 0) {
    write_series();
  }

  nodes::Trace trace;
  Progress progress(steps, node.updates_per_step(), lead && ::isatty(STDERR_FILENO) == 1);
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
  const double mlups = seconds > 0 ? static_cast<double>(node.updates_per_step()) *
                                         static_cast<double>(taken) / seconds / 1e6
                                   : 0.0;
  if (output_every > 0 && (simulation->steps_taken() - first_step) % output_every != 0) {
    write_series(); // the last step, where the run ended between two outputs
  }

  // Sharded: every rank gathers the whole state and checks it (so every rank exits alike);
  // rank 0 writes the files.
  const auto exchange_stats = simulation->exchange_stats();
  const auto exchange_seconds = exchange_stats.seconds;
  const runtime::Snapshot whole = simulation->gathered();
  const nodes::Verdict verdict = node.judge(whole, trace);
  std::optional<std::filesystem::path> collection;
  std::vector<std::filesystem::path> plots;
  bool checkpointed = false;
  if (lead) {
    attempt([&] {
      const auto written = node.write_output(whole, output_dir, node.name());
      outputs.insert(outputs.end(), written.begin(), written.end());
    });
    if (!series.empty()) {
      attempt([&] {
        const auto path = output_dir / (node.name() + ".pvd");
        runtime::write_collection(path, series);
        collection = path;
      });
    }
    if (plot) {
      attempt([&] {
        plots =
            write_plots(node.figures(whole),
                        {type, whole.steps_taken(), static_cast<double>(whole.steps_taken()) * dt},
                        output_dir, node.name());
      });
    }
    if (checkpoint) {
      attempt([&] {
        whole.checkpoint(*checkpoint);
        checkpointed = true;
      });
    }
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
    std::cerr << "uwjit: error: " << failure << "\n";
  }
  if (!failures.empty()) {
    return 1;
  }
  if (interrupted != 0) {
    return 130;
  }
  return verdict.passed ? 0 : 1;
}

} // namespace uwjit::tools
