#include "args.hpp"
#include "commands.hpp"
#include "node_args.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#ifdef UWJIT_HAVE_MPI
#include <uwjit/mpi.hpp>
#endif

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
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
                  "--size: " + std::string(kind.size_help) + "\n";
  }
  ArgSpec spec("run", "Runs a built-in node in this process: emits its kernel, gets it from the "
                      "engine (compiled, or from\nthe cache), takes the steps, checks the physics "
                      "and writes the final fields as VTK XML\n(.vti image data; .vtu "
                      "unstructured grid for fvm) that ParaView opens.");
  spec.option("--size", "N|NXxNYxNZ", "the grid (what N means depends on the node, below)")
      .option("--steps", "N", "steps to take (default: what the node's check needs)")
      .option("--output", "DIR", "where the VTK files go", ".")
      .option("--set", "NAME=VALUE", "set a node param (repeatable; --set help lists them)")
      .option("--checkpoint", "FILE", "write a checkpoint after the last step")
      .option("--restore", "FILE", "continue from a checkpoint (the node and params come from it)")
      .option("--shard", "x[,y[,z]]",
              "split the domain along these axes over the MPI ranks (run under mpirun)")
      .option("--exchange", "sync|overlap", "how sharded halos are exchanged", "sync")
      .flag("--json", "print the report as JSON on stdout")
      .flag("--print-kernel", "print the node's generated kernel source and stop")
      .positional("NODE", "heat, pipe-flow, fvm or mlp")
      .epilog(nodes_text +
              "\nThe report shows where each kernel came from (compiled now, the disk cache or\n"
              "memory) and its timings, the throughput in MLUPS (million cell updates per\n"
              "second), the domain integrals of the last step and the physics check. A progress\n"
              "bar is drawn on stderr when it is a terminal.\n\n"
              "Under MPI (mpirun -np N uwjit run NODE --shard x), the ranks request the kernel\n"
              "together (one compile for the job), each steps its slab of the domain and\n"
              "exchanges halos; rank 0 prints the report (compiles summed over the ranks, halo\n"
              "exchange time) and writes the output from the gathered fields.\n\n"
              "Exit codes: 0 the check passed, 1 it failed (or a run-time error), 2 bad usage.\n"
              "Examples:\n"
              "  uwjit run pipe-flow\n"
              "  uwjit run heat --size 64 --steps 200 --output out --json\n"
              "  uwjit run heat --set contrast=5 --set boundary=periodic\n"
              "  uwjit run heat --steps 200 --checkpoint heat.ckpt && uwjit run heat --restore "
              "heat.ckpt --steps 300\n"
              "  mpirun -np 4 uwjit run pipe-flow --shard x --exchange overlap");
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

std::int64_t parse_steps(const std::string& text) {
  std::int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0) {
    throw Error(ErrorKind::usage,
                format("run: --steps: expected a whole number >= 0, got \"{}\"", text));
  }
  return value;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(digits);
  out << std::fixed << value;
  return std::move(out).str();
}

std::string general(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(10);
  out << value;
  return std::move(out).str();
}

std::string params_text(const runtime::Params& params) {
  std::string out;
  for (const auto& [key, value] : params.values()) {
    out += out.empty() ? "" : " ";
    out += key + "=" + (value.is_string() ? value.as_string() : value.text());
  }
  return out;
}

nlohmann::json to_json(const runtime::Value& value) {
  const auto& v = value.variant();
  switch (v.index()) {
  case 0:
    return std::get<0>(v);
  case 1:
    return std::get<1>(v);
  case 2:
    return std::get<2>(v);
  default: {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : std::get<3>(v)) {
      items.push_back(to_json(item));
    }
    return items;
  }
  }
}

// A one-line progress bar on stderr, redrawn at most ten times a second.
class Progress {
public:
  Progress(std::int64_t total, bool enabled) : m_total(total), m_enabled(enabled && total > 0) {}
  void update(std::int64_t done) {
    if (!m_enabled) {
      return;
    }
    const auto now = Clock::now();
    if (done != m_total && now - m_drawn < std::chrono::milliseconds(100)) {
      return;
    }
    m_drawn = now;
    constexpr int k_width = 40;
    const double fraction = static_cast<double>(done) / static_cast<double>(m_total);
    const int filled = static_cast<int>(fraction * k_width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(k_width, '.');
    std::fprintf(stderr, "\r  [%s] %3d%% %lld/%lld steps", bar.c_str(),
                 static_cast<int>(fraction * 100), static_cast<long long>(done),
                 static_cast<long long>(m_total));
    if (done == m_total) {
      std::fprintf(stderr, "\n");
    }
    std::fflush(stderr);
  }

private:
  std::int64_t m_total;
  bool m_enabled;
  Clock::time_point m_drawn{};
};

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
  const auto restore = args.get("--restore");

  runtime::Params params;
  if (restore) {
    if (args.get("--size") || !args.all("--set").empty()) {
      throw Error(ErrorKind::usage, "run: --restore takes the params from the checkpoint; drop "
                                    "--size and --set");
    }
  } else {
    params = args.get("--size") ? nodes::sized_params(type, parse_size(*args.get("--size"), "run"))
                                : nodes::default_params(type);
    for (const auto& assignment : args.all("--set")) {
      if (assignment == "help") {
        std::cout << type << " params (defaults):\n";
        for (const auto& [key, value] : params.values()) {
          std::cout << "  " << key << " = " << value.text() << "\n";
        }
        return 0;
      }
      const auto eq = assignment.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(ErrorKind::usage,
                    format("run: --set: expected NAME=VALUE, got \"{}\"", assignment));
      }
      try {
        params.set_from_text(assignment.substr(0, eq), assignment.substr(eq + 1));
      } catch (const Error& error) {
        throw Error(ErrorKind::usage, format("run: --set {}: {}", assignment, error.what()));
      }
    }
  }

  runtime::SimulationOptions options;
  const auto shard = args.get("--shard");
  const std::string exchange = args.value("--exchange");
  if (exchange != "sync" && exchange != "overlap") {
    throw Error(ErrorKind::usage,
                format("run: --exchange: expected sync or overlap, got \"{}\"", exchange));
  }
  options.exchange =
      exchange == "sync" ? runtime::ExchangeMode::sync : runtime::ExchangeMode::overlap;
#ifdef UWJIT_HAVE_MPI
  std::optional<mpi::Session> session;
  std::unique_ptr<engine::Comm> comm;
  if (shard) {
    options.shard_axes = parse_shard(*shard);
    session.emplace(nullptr, nullptr);
    comm = session->world();
    options.comm = comm.get();
  }
#else
  if (shard) {
    throw Error(ErrorKind::usage, "run: --shard needs uwjit built with MPI (uwjit::mpi)");
  }
#endif
  const bool lead = options.comm == nullptr || options.comm->rank() == 0;
  const int ranks = options.comm == nullptr ? 1 : options.comm->size();
  const QuietUnlessLead quiet(lead);

  engine::Engine engine;
  std::optional<runtime::Simulation> simulation;
  if (restore) {
    simulation.emplace(runtime::Simulation::restore(engine, *restore, nodes::factory(), options));
    if (simulation->nodes().size() != 1 || simulation->nodes()[0]->type() != type) {
      throw Error(ErrorKind::usage,
                  format("run: checkpoint {} does not hold a single {} node", *restore, type));
    }
  } else {
    const auto node = nodes::make(type, type, params);
    simulation.emplace(engine, std::vector<std::shared_ptr<const runtime::Node>>{node}, options);
  }
  const auto& node = dynamic_cast<const nodes::BuiltinNode&>(*simulation->nodes()[0]);
  if (args.has("--print-kernel")) {
    std::cout << simulation->kernels()[0].source->body();
    return 0;
  }
  const std::int64_t steps =
      args.get("--steps") ? parse_steps(*args.get("--steps")) : node.default_steps();

  if (!json) {
    std::cout << "uwjit run " << type << ": " << node.summary() << "\n"
              << "  params   " << params_text(node.params()) << "\n";
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
      std::cout << "  key " << info.key << "\n";
    }
    std::cout.flush();
  }

  nodes::Trace trace;
  Progress progress(steps, lead && ::isatty(STDERR_FILENO) == 1);
  const auto start = Clock::now();
  for (std::int64_t s = 0; s < steps; ++s) {
    simulation->step(1);
    trace.record(*simulation, 0);
    progress.update(s + 1);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double mlups = seconds > 0 ? static_cast<double>(node.updates_per_step()) *
                                         static_cast<double>(steps) / seconds / 1e6
                                   : 0.0;

  // Sharded: every rank gathers the whole state and checks it (so every rank exits alike);
  // rank 0 writes the files.
  const auto exchange_stats = simulation->exchange_stats();
  const auto exchange_seconds = exchange_stats.seconds;
  const runtime::Simulation whole = simulation->gathered();
  const nodes::Verdict verdict = node.check(whole, trace);
  std::vector<std::filesystem::path> outputs;
  if (lead) {
    outputs = node.write_output(whole, args.value("--output"));
    if (const auto file = args.get("--checkpoint")) {
      whole.checkpoint(*file);
    }
  }

  const auto integral_names = node.domain_integral_fields();
  const auto integrals = simulation->integrals(std::size_t{0});
  // The job's compiles, summed over the ranks, and the mean halo time per rank.
  std::uint64_t counts[2] = {0, 0};
  for (const auto& report : simulation->kernels()) {
    counts[0] += report.info.tier == engine::Tier::compiled ? 1 : 0;
  }
  double halo_seconds = exchange_seconds;
  if (options.comm != nullptr) {
    options.comm->all_reduce_sum(std::span<std::uint64_t>(counts, 1));
    options.comm->all_reduce_sum(std::span<double>(&halo_seconds, 1));
    halo_seconds /= ranks;
  }
  const auto compiles = static_cast<int>(counts[0]);
  if (json) {
    nlohmann::json report;
    report["node"] = type;
    nlohmann::json params_json = nlohmann::json::object();
    for (const auto& [key, value] : node.params().values()) {
      params_json[key] = to_json(value);
    }
    report["params"] = params_json;
    report["compiles"] = compiles;
    report["ranks"] = ranks;
    report["shard"] = shard ? *shard : "";
    report["exchange"] = exchange;
    report["halo_seconds"] = halo_seconds;
    // The same on every rank: the ranks agree on whether and where to overlap.
    report["overlapped_steps"] = exchange_stats.overlapped;
    report["kernels"] = nlohmann::json::array();
    for (const auto& k : simulation->kernels()) {
      report["kernels"].push_back({{"node", k.node},
                                   {"key", k.info.key},
                                   {"tier", engine::to_string(k.info.tier)},
                                   {"request_ms", k.info.request_ms},
                                   {"frontend_ms", k.info.compile.frontend_ms},
                                   {"optimise_ms", k.info.compile.optimise_ms},
                                   {"codegen_ms", k.info.compile.codegen_ms},
                                   {"load_ms", k.info.load_ms}});
    }
    report["steps"] = steps;
    report["steps_total"] = simulation->steps_taken();
    report["seconds"] = seconds;
    report["updates_per_step"] = node.updates_per_step();
    report["mlups"] = mlups;
    nlohmann::json integrals_json = nlohmann::json::object();
    for (std::size_t i = 0; i < integral_names.size(); ++i) {
      integrals_json[integral_names[i]] = integrals[i];
    }
    report["integrals"] = integrals_json;
    nlohmann::json measurements = nlohmann::json::array();
    for (const auto& m : verdict.measurements) {
      measurements.push_back({{"name", m.name},
                              {"metric", m.metric},
                              {"value", m.value},
                              {"limit", m.limit},
                              {"passed", m.passed}});
    }
    report["check"] = {
        {"passed", verdict.passed}, {"measurements", measurements}, {"notes", verdict.notes}};
    report["outputs"] = nlohmann::json::array();
    for (const auto& path : outputs) {
      report["outputs"].push_back(path.string());
    }
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "steps\n  " << steps << " steps in " << fixed(seconds, 3)
              << " s: " << fixed(mlups, 2) << " MLUPS (" << node.updates_per_step()
              << " cell updates per step); " << compiles << " compile" << (compiles == 1 ? "" : "s")
              << (ranks > 1 ? " for the job" : "") << "\n";
    if (options.comm != nullptr) {
      std::cout << "  " << ranks << " ranks, sharded along " << *shard << ", halo exchange ("
                << exchange << ") " << fixed(halo_seconds, 3) << " s per rank";
      if (exchange == "overlap") {
        std::cout << ", " << exchange_stats.overlapped << " of " << exchange_stats.exchanges
                  << " steps with the interior updated during the transfers";
      }
      std::cout << "\n";
    }
    std::cout << "integrals (step " << simulation->steps_taken() << ")\n";
    for (std::size_t i = 0; i < integral_names.size(); ++i) {
      std::string name = integral_names[i];
      name.resize(std::max<std::size_t>(name.size(), 14), ' ');
      std::cout << "  " << name << general(integrals[i]) << "\n";
    }
    std::cout << "check: " << (verdict.passed ? "PASS" : "FAIL") << "\n";
    for (const auto& m : verdict.measurements) {
      std::string name = m.name;
      name.resize(std::max<std::size_t>(name.size(), 28), ' ');
      std::cout << "  " << (m.passed ? "pass  " : "FAIL  ") << name << general(m.value)
                << "  (limit " << general(m.limit) << ")  " << m.metric << "\n";
    }
    for (const auto& note : verdict.notes) {
      std::cout << "  note  " << note << "\n";
    }
    std::cout << "output\n";
    for (const auto& path : outputs) {
      std::cout << "  " << path.string() << "\n";
    }
    if (const auto file = args.get("--checkpoint")) {
      std::cout << "  " << *file << " (checkpoint)\n";
    }
  }
  return verdict.passed ? 0 : 1;
}

} // namespace uwjit::tools
