// uwjit-bench: the benchmark driver. Runs the sections, interleaving what it compares, and
// writes bench.json and bench.md (a Markdown table) with, for every row, the command that
// reproduces it and the machine it ran on. See `uwjit-bench --help`.
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <charconv>
#include <ctime>
#include <fstream>
#include <iostream>

#include <stdlib.h>
#include <unistd.h>

namespace uwjit::bench {

namespace {

constexpr const char* k_help =
    R"(usage: uwjit-bench [--out DIR] [--quick] [--rounds N] [--sections A,B]
                   [--kernels A,B] [--mpi-ranks 1,2,4] [--contenders K] [--baked-limit S]
                   [--grid N] [--keep-work]
       uwjit-bench --check FILE.json [--complete]
       uwjit-bench --compare A.json B.json

Measures uwjit on this machine and writes DIR/bench.json and DIR/bench.md. Every comparison is
interleaved (the ways compared alternate within each round) and reported as the median over
rounds, with ratios taken per round; a row names the command that reproduces it.

sections (all by default): cold, warm, kernel_speed, threads, static_arrays, mpi, scale
(peak RSS per rank and checkpoint bandwidth of a sharded pipe-flow job at each --mpi-ranks),
contention, memory, ensemble (members batched against one simulation each, inflight refill
against fixed batches), gpu (device 0 through the CUDA driver; not measured without one)

options:
  --out DIR           where bench.json and bench.md go (default: bench-results)
  --quick             a short run (a few rounds, small sizes): for the test suite, not for claims
  --rounds N          interleaved rounds per comparison (default 9; --quick: 2); kernel speed,
                      whose rounds take milliseconds, runs 3 N
  --sections A,B      run only these sections (the others are reported as skipped)
  --kernels A,B       the cold/warm kernels: stencil, fields16, pipe-flow (default: all built)
  --mpi-ranks LIST    the MPI job sizes (default 1,2,4; --quick: 1,2)
  --contenders K      processes racing on one cold key (default 4; --quick: 2)
  --baked-limit S     time limit of one baked static-array compile, seconds (default 30)
  --grid N            the stencil's grid edge for kernel speed (default 128; --quick: 32)
  --keep-work         keep DIR/work (cache directories, .so files) afterwards
  --check FILE        validate a bench.json: it parses and has every section and row field;
                      with --complete, no section may be skipped
  --compare A B       print two runs' bench.json side by side (a Markdown table on stdout):
                      each row's median in A and in B and their ratio, each run's machine (CPU,
                      its LLVM name and vector ISA) on top
  --help              show this help

Example (what the README's table comes from):
  cmake --preset release && cmake --build --preset release
  build/release/bin/uwjit-bench --out bench-results
)";

std::int64_t parse_int(const std::string& option, const std::string& text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 1) {
    throw Error(ErrorKind::usage,
                format("{}: expected a positive integer, got \"{}\"", option, text));
  }
  return value;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::filesystem::path self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

// Validates a bench.json; prints what is wrong; returns the exit code.
int check(const std::string& path, bool complete) {
  std::ifstream in(path);
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const std::exception& error) {
    std::cerr << "uwjit-bench: " << path << ": not JSON: " << error.what() << "\n";
    return 1;
  }
  std::vector<std::string> problems;
  for (const char* field : {"format", "run", "machine", "sections", "rows"}) {
    if (!doc.contains(field)) {
      problems.push_back(format("no field \"{}\"", field));
    }
  }
  for (const char* field :
       {"cpu_model", "llvm_cpu", "vector_isa", "cores", "memory_bytes", "kernel", "llvm_version"}) {
    if (!doc["machine"].contains(field)) {
      problems.push_back(format("machine: no field \"{}\"", field));
    }
  }
  for (const auto& name : k_sections) {
    const Json& s = doc["sections"][name];
    const std::string status = s.is_object() ? s.value("status", "") : "";
    if (status != "measured" && status != "not_measured" && status != "skipped") {
      problems.push_back(format("section {}: missing or without a status", name));
    } else if (status != "measured" && s.value("reason", "").empty()) {
      problems.push_back(format("section {}: {} without a reason", name, status));
    } else if (complete && status == "skipped") {
      problems.push_back(format("section {}: skipped", name));
    }
  }
  std::set<std::string> with_rows;
  for (const auto& row : doc["rows"]) {
    for (const char* field :
         {"section", "figure", "unit", "value", "goal", "met", "command", "machine"}) {
      if (!row.contains(field)) {
        problems.push_back(format("a row lacks \"{}\": {}", field, row.dump()));
      }
    }
    with_rows.insert(row.value("section", ""));
  }
  for (const auto& name : k_sections) {
    if (doc["sections"][name].value("status", "") == "measured" && with_rows.count(name) == 0) {
      problems.push_back(format("section {}: measured but no rows", name));
    }
  }
  for (const auto& problem : problems) {
    std::cerr << "uwjit-bench: " << path << ": " << problem << "\n";
  }
  std::cout << "bench json: " << (problems.empty() ? 1 : 0) << " passed, "
            << (problems.empty() ? 0 : 1) << " failed\n";
  return problems.empty() ? 0 : 1;
}

int bench_main(const std::vector<std::string>& args, const std::string& invoked_as) {
  Options options;
  options.self = invoked_as;
  options.bin_dir = self_dir();
  options.out = "bench-results";
  std::optional<std::int64_t> rounds, grid, contenders;
  std::optional<std::string> sections, kernels, ranks;
  std::optional<double> baked_limit;
  bool keep_work = false;
  std::optional<std::string> check_path;
  bool complete = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        throw Error(ErrorKind::usage, format("{} needs a value", arg));
      }
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << k_help;
      return 0;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--keep-work") {
      keep_work = true;
    } else if (arg == "--complete") {
      complete = true;
    } else if (arg == "--out") {
      options.out = value();
    } else if (arg == "--check") {
      check_path = value();
    } else if (arg == "--compare") {
      const std::string first = value();
      return compare(first, value());
    } else if (arg == "--rounds") {
      rounds = parse_int(arg, value());
    } else if (arg == "--grid") {
      grid = parse_int(arg, value());
    } else if (arg == "--contenders") {
      contenders = parse_int(arg, value());
    } else if (arg == "--sections") {
      sections = value();
    } else if (arg == "--kernels") {
      kernels = value();
    } else if (arg == "--mpi-ranks") {
      ranks = value();
    } else if (arg == "--baked-limit") {
      baked_limit = static_cast<double>(parse_int(arg, value()));
    } else {
      throw Error(ErrorKind::usage, format("unknown argument \"{}\" (see --help)", arg));
    }
  }
  if (check_path) {
    return check(*check_path, complete);
  }
  if (options.quick) {
    options.rounds = 2;
    options.kernels = {"stencil"};
    options.static_sizes = {1000, 10000};
    options.mpi_ranks = {1, 2};
    options.contenders = 2;
    options.grid = 32;
    options.fields_grid = 16;
    options.speed_reps = 2;
    options.pipe_grid = 24;
    options.thread_heat_size = {32};
    options.thread_pipe_size = {24, 16, 16};
    options.baked_limit_s = 10;
  } else {
    options.rounds = 9;
    options.kernels = {"stencil", "fields16", "pipe-flow"};
  }
  options.rounds = static_cast<int>(rounds.value_or(options.rounds));
  options.grid = static_cast<int>(grid.value_or(options.grid));
  options.contenders = static_cast<int>(contenders.value_or(options.contenders));
  options.baked_limit_s = baked_limit.value_or(options.baked_limit_s);
  if (kernels) {
    options.kernels = split_list(*kernels);
    for (const auto& name : options.kernels) {
      if (name != "stencil" && name != "fields16" && name != "pipe-flow") {
        throw Error(ErrorKind::usage,
                    format("--kernels: \"{}\" is not one of stencil, fields16, pipe-flow", name));
      }
    }
  }
  if (ranks) {
    options.mpi_ranks.clear();
    for (const auto& r : split_list(*ranks)) {
      options.mpi_ranks.push_back(static_cast<int>(parse_int("--mpi-ranks", r)));
    }
  }
  const auto selected = sections ? split_list(*sections) : k_sections;
  for (const auto& name : selected) {
    if (std::find(k_sections.begin(), k_sections.end(), name) == k_sections.end()) {
      throw Error(ErrorKind::usage, format("--sections: unknown section \"{}\"", name));
    }
    options.sections.insert(name);
  }

  std::filesystem::create_directories(options.out);
  options.work = fresh_dir(options.out, "work");
  // The pipe-flow kernel's source, emitted once here for every child (kernels.cpp).
  ::setenv("UWJIT_BENCH_SOURCES", (options.work / "sources").c_str(), 1);
  (void)kernel_source("pipe-flow");
  Json run;
  std::string command_line = invoked_as;
  for (const auto& arg : args) {
    command_line += " " + arg;
  }
  run["command"] = command_line;
  run["quick"] = options.quick;
  run["rounds"] = options.rounds;
  run["started_utc"] = utc_now();
  run["load_average_start"] = load_average();
  const auto start = Clock::now();
  Report report(machine_info());

  const std::vector<std::pair<std::string, void (*)(const Options&, Report&)>> runners = {
      {"cold", cold_section},
      {"warm", warm_section},
      {"kernel_speed", speed_section},
      {"threads", threads_section},
      {"static_arrays", static_section},
      {"mpi", mpi_section},
      {"scale", scale_section},
      {"contention", contention_section},
      {"memory", memory_section},
      {"ensemble", ensemble_section},
      {"gpu", gpu_section}};
  int failures = 0;
  for (const auto& [name, runner] : runners) {
    if (options.sections.count(name) == 0) {
      continue;
    }
    std::cerr << "uwjit-bench: " << name << " ..." << std::flush;
    const auto section_start = Clock::now();
    try {
      runner(options, report);
      report.section(name)["seconds"] = ms_since(section_start) / 1000;
      std::cerr << " " << number_text(ms_since(section_start) / 1000) << " s\n";
    } catch (const std::exception& error) {
      ++failures;
      Json& s = report.section(name);
      s["status"] = "failed";
      s["reason"] = error.what();
      std::cerr << " failed: " << error.what() << "\n";
    }
  }
  run["duration_s"] = ms_since(start) / 1000;
  run["load_average_end"] = load_average();
  const Json doc = report.to_json(run);
  {
    std::ofstream json(options.out / "bench.json");
    json << doc.dump(2) << "\n";
    std::ofstream md(options.out / "bench.md");
    md << report.to_markdown(run);
  }
  if (!keep_work) {
    std::error_code ec;
    std::filesystem::remove_all(options.work, ec);
  }
  std::cout << report.to_markdown(run);
  std::cerr << "uwjit-bench: wrote " << (options.out / "bench.json").string() << " and "
            << (options.out / "bench.md").string() << "\n";
  return failures == 0 ? 0 : 1;
}

} // namespace

} // namespace uwjit::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && args.front() == "--child") {
      return uwjit::bench::child_main({args.begin() + 1, args.end()});
    }
    return uwjit::bench::bench_main(args, argv[0]);
  } catch (const uwjit::Error& error) {
    std::cerr << "uwjit-bench: error: " << error.what() << "\n";
    return error.kind() == uwjit::ErrorKind::usage ? 2 : 1;
  } catch (const std::exception& error) {
    std::cerr << "uwjit-bench: error: " << error.what() << "\n";
    return 1;
  }
}
