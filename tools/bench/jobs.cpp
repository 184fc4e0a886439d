// Multi-process sections: MPI jobs (one compile per job), K processes racing on one cold key,
// and memory (peak RSS of a compiling process, PSS per rank).
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cstdlib>

namespace uwjit::bench {

// Open MPI as the tests run it: as root, oversubscribed on 2 cores, shared-memory transport.
const std::vector<std::string> k_mpi_env = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                            "OMPI_MCA_rmaps_base_oversubscribe=1",
                                            "OMPI_MCA_pml=ob1",
                                            "OMPI_MCA_btl=self,vader",
                                            "UWJIT_LOG_LEVEL=error"};

bool have_program(const std::string& path_or_name) {
  if (path_or_name.find('/') != std::string::npos) {
    return std::filesystem::exists(path_or_name);
  }
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const auto dir = rest.substr(0, colon);
    if (std::filesystem::exists(std::filesystem::path(dir) / path_or_name)) {
      return true;
    }
    if (colon == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(colon + 1);
  }
  return false;
}

namespace {

// What an MPI job asks for (--quick: the stencil alone).
std::string mpi_kernels(const Options& options) {
  return options.quick ? "stencil" : "stencil,fields16";
}

Json mpi_job(const Options& options, int np, const std::filesystem::path& cache, double& wall_ms) {
  const auto result = run({"mpiexec", "-n", std::to_string(np), helper(options, "uwjit-bench-mpi"),
                           "--cache", cache.string(), "--kernels", mpi_kernels(options)},
                          k_mpi_env, std::chrono::minutes(5));
  wall_ms = result.wall_ms;
  return result.json();
}

Json request_child_args(const Options& options, const std::filesystem::path& cache,
                        const std::string& kernel) {
  return Json::array({helper(options, "uwjit-bench"), "--child", "request", "--cache",
                      cache.string(), "--kernels", kernel});
}

std::vector<std::string> argv_of(const Json& args) {
  return args.get<std::vector<std::string>>();
}

} // namespace

void mpi_section(const Options& options, Report& report) {
  if (!have_program("mpiexec") || !have_program(helper(options, "uwjit-bench-mpi")) ||
      !have_program(helper(options, "uwjit"))) {
    report.not_measured("mpi", "no mpiexec, or uwjit was built without MPI (uwjit-bench-mpi)");
    return;
  }
  Json& section = report.section("mpi");
  const std::string steps = options.quick ? "5" : "20";
  section["method"] =
      "per round and np: a cold job (fresh cache directory) then a warm job (the same "
      "directory), each `mpiexec -n NP uwjit run heat --shard x --steps " +
      steps +
      " --json` (the sharded runtime: the ranks request the kernel collectively, rank 0 compiles "
      "or reads the disk and broadcasts the object); the time per kernel request is rank 0's "
      "(the request is collective, so every rank leaves it together). Then, once per np, a warm "
      "`uwjit-bench-mpi` job (collective requests of " +
      mpi_kernels(options) + ") reports each rank's PSS";
  Series series;
  const auto dir = fresh_dir(options.work, "mpi");
  // An MPI job costs a few hundred milliseconds of mpiexec alone: --quick runs one round.
  const int rounds = options.quick ? 1 : options.rounds;
  for (int round = 0; round < rounds; ++round) {
    for (const int np : options.mpi_ranks) {
      const auto cache = fresh_dir(dir, "np" + std::to_string(np));
      const std::string p = "np" + std::to_string(np) + "_";
      for (const char* phase : {"cold", "warm"}) {
        std::vector<std::string> env = k_mpi_env;
        env.push_back("UWJIT_CACHE_DIR=" + cache.string());
        const auto result =
            run({"mpiexec", "-n", std::to_string(np), helper(options, "uwjit"), "run", "heat",
                 "--shard", "x", "--steps", steps, "--json", "--output", (cache / "vtk").string()},
                env, std::chrono::minutes(5));
        const Json job = result.json();
        const std::string k = p + phase + "_";
        series.add(k + "compiles", job["compiles"]);
        series.add(k + "job_wall_ms", result.wall_ms);
        series.add(k + "request_ms", job["kernels"][0]["request_ms"]);
        series.add(k + "mlups", job["mlups"]);
        series.add(k + "check_passed", job["check"]["passed"].get<bool>() ? 1.0 : 0.0);
      }
    }
  }
  for (const int np : options.mpi_ranks) {
    const auto cache = fresh_dir(dir, "pss" + std::to_string(np));
    double wall = 0;
    (void)mpi_job(options, np, cache, wall);
    const Json job = mpi_job(options, np, cache, wall);
    series.add("np" + std::to_string(np) + "_warm_pss_mb_per_rank", max_of(job["pss_kb"]) / 1024.0);
  }
  section["series"] = series.to_json();
  for (const int np : options.mpi_ranks) {
    const std::string p = "np" + std::to_string(np) + "_";
    const std::string command = options.command("--sections mpi --mpi-ranks " + std::to_string(np));
    report.add({.section = "mpi",
                .figure = format("np {}: compiles per cold job (`uwjit run heat --shard x`)", np),
                .unit = "",
                .value = series.summary(p + "cold_compiles"),
                .goal = Goal{"1", 1.0, 1.0},
                .limit = "the kernel was compiled by more than one rank (see the JSON's series)",
                .command = command});
    report.add({.section = "mpi",
                .figure = format("np {}: cold job wall time (mpiexec to exit)", np),
                .unit = "ms",
                .value = series.summary(p + "cold_job_wall_ms"),
                .command = command,
                .note = format("warm job: {} ms",
                               number_text(series.summary(p + "warm_job_wall_ms").median))});
    report.add({.section = "mpi",
                .figure = format("np {}: time per kernel request, cold job", np),
                .unit = "ms",
                .value = series.summary(p + "cold_request_ms"),
                .command = command});
    report.add({.section = "mpi",
                .figure = format("np {}: time per kernel request, warm job", np),
                .unit = "ms",
                .value = series.summary(p + "warm_request_ms"),
                .command = command});
    report.add({.section = "mpi",
                .figure = format("np {}: PSS of the largest rank after a warm request", np),
                .unit = "MB",
                .value = series.summary(p + "warm_pss_mb_per_rank"),
                .command = command,
                .note = "uwjit-bench-mpi: the kernels' requests alone, no state"});
  }
}

void contention_section(const Options& options, Report& report) {
  Json& section = report.section("contention");
  const std::string kernel = options.quick ? "stencil" : "fields16";
  const int k = options.contenders;
  section["method"] = format(
      "per round, in alternating order: one process alone requests the {} kernel on a fresh "
      "cache directory; {} processes started together request it on another fresh directory. "
      "Time to all-ready: from the first start to the last process holding a callable kernel",
      kernel, k);
  section["contenders"] = k;
  section["kernel"] = kernel;
  Series series;
  const auto dir = fresh_dir(options.work, "contention");
  for (int round = 0; round < options.rounds; ++round) {
    for (int step = 0; step < 2; ++step) {
      const bool alone = (step == 0) == (round % 2 == 0);
      const int count = alone ? 1 : k;
      const auto cache = fresh_dir(dir, alone ? "alone" : "race");
      const auto args = argv_of(request_child_args(options, cache, kernel));
      std::vector<Process> processes;
      for (int i = 0; i < count; ++i) {
        processes.push_back(Process::start(args, {"UWJIT_LOG_LEVEL=error"}));
      }
      std::int64_t first_start = 0, last_ready = 0;
      double compiles = 0, disk_hits = 0, lock_waits = 0;
      for (auto& process : processes) {
        const auto result = process.wait();
        const Json out = result.json();
        first_start = first_start == 0 ? result.start_ns : std::min(first_start, result.start_ns);
        last_ready = std::max(last_ready, out["requests"][0]["ready_ns"].get<std::int64_t>());
        compiles += out["compiles"].get<double>();
        disk_hits += out["disk_hits"].get<double>();
        lock_waits += out["lock_waits"].get<double>();
      }
      const double ready_ms = static_cast<double>(last_ready - first_start) / 1e6;
      series.add(alone ? "alone_ready_ms" : "race_ready_ms", ready_ms);
      if (!alone) {
        series.add("race_compiles", compiles);
        series.add("race_disk_hits", disk_hits);
        series.add("race_lock_waits", lock_waits);
      }
    }
    series.add("race_over_alone",
               series.values("race_ready_ms").back() / series.values("alone_ready_ms").back());
  }
  section["series"] = series.to_json();
  const std::string command = options.command("--sections contention");
  report.add({.section = "contention",
              .figure = format("{} processes on one cold key: compiles in total", k),
              .unit = "",
              .value = series.summary("race_compiles"),
              .goal = Goal{"1", 1.0, 1.0},
              .limit = "more than one process compiled the key (see lock_waits in the JSON)",
              .command = command,
              .note = format("the others: {} disk hits after {} lock waits",
                             number_text(series.summary("race_disk_hits").median),
                             number_text(series.summary("race_lock_waits").median))});
  report.add({.section = "contention",
              .figure = format("{} processes: time to all-ready / one process alone", k),
              .unit = "×",
              .value = series.summary("race_over_alone"),
              .command = command,
              .note = format("all ready after {} ms; one alone {} ms",
                             number_text(series.summary("race_ready_ms").median),
                             number_text(series.summary("alone_ready_ms").median))});
}

void memory_section(const Options& options, Report& report) {
  Json& section = report.section("memory");
  section["method"] =
      "peak RSS (VmHWM, reported by each process itself) of fresh processes: one compiling a "
      "kernel cold "
      "(memory-only), one loading it from disk, and a trivial program linked with libuwjit; PSS "
      "from /proc/self/smaps_rollup after the request";
  Series series;
  const auto dir = fresh_dir(options.work, "memory");
  const std::vector<std::string> kernels = {"fields16", "pipe-flow"};
  const int rounds = std::max(1, options.rounds / 2);
  for (int round = 0; round < rounds; ++round) {
    for (const auto& kernel : kernels) {
      const auto cache = fresh_dir(dir, kernel);
      const auto cold =
          run(argv_of(request_child_args(options, cache, kernel)), {"UWJIT_LOG_LEVEL=error"});
      const auto warm =
          run(argv_of(request_child_args(options, cache, kernel)), {"UWJIT_LOG_LEVEL=error"});
      series.add(kernel + "_compiling_max_rss_mb", cold.json()["peak_rss_kb"].get<double>() / 1024);
      series.add(kernel + "_loading_max_rss_mb", warm.json()["peak_rss_kb"].get<double>() / 1024);
      series.add(kernel + "_loading_pss_mb", warm.json()["pss_kb"].get<double>() / 1024.0);
    }
    const auto linked = run({helper(options, "uwjit-bench-start-linked"), "--rss"});
    series.add("linked_trivial_max_rss_mb", linked.json()["peak_rss_kb"].get<double>() / 1024);
  }
  // One copy per node of a computed replicate array: the job's PSS with and without sharing.
  const int np = *std::max_element(options.mpi_ranks.begin(), options.mpi_ranks.end());
  const double table_mb = options.quick ? 16 : 200;
  const bool replicate =
      np > 1 && have_program("mpiexec") && have_program(helper(options, "uwjit-bench-mpi"));
  if (replicate) {
    section["replicate_method"] = format(
        "per round, alternating: `mpiexec -n {} uwjit-bench-mpi --replicate-mb {} --share 1|0`: a "
        "sharded simulation whose node reads a computed replicate array of {} MB, every rank "
        "reading all of it; the job's PSS is the sum of the ranks' smaps_rollup Pss",
        np, table_mb, table_mb);
    const auto cache = fresh_dir(dir, "replicate");
    for (int round = 0; round < rounds; ++round) {
      for (const char* share : {"1", "0"}) {
        const auto job =
            run({"mpiexec", "-n", std::to_string(np), helper(options, "uwjit-bench-mpi"), "--cache",
                 cache.string(), "--replicate-mb", number_text(table_mb), "--share", share},
                k_mpi_env, std::chrono::minutes(5))
                .json();
        double total = 0;
        for (const auto& kb : job["pss_kb"]) {
          total += kb.get<double>() / 1024.0;
        }
        series.add(std::string(share[0] == '1' ? "shared" : "private") + "_replicate_job_pss_mb",
                   total);
      }
    }
  } else {
    section["not_measured"] = {
        {"replicate_job_pss",
         "needs mpiexec, uwjit-bench-mpi and more than one rank (--mpi-ranks)"}};
  }
  section["series"] = series.to_json();
  const std::string command = options.command("--sections memory");
  if (replicate) {
    report.add(
        {.section = "memory",
         .figure = format("np {}: job PSS with a {} MB computed replicate array, one copy per node",
                          np, number_text(table_mb)),
         .unit = "MB",
         .value = series.summary("shared_replicate_job_pss_mb"),
         .command = command});
    report.add(
        {.section = "memory",
         .figure = format("np {}: the same with a private copy per rank (share_on_node off)", np),
         .unit = "MB",
         .value = series.summary("private_replicate_job_pss_mb"),
         .command = command});
  }
  for (const auto& kernel : kernels) {
    report.add({.section = "memory",
                .figure = kernel + ": peak RSS of a process compiling it",
                .unit = "MB",
                .value = series.summary(kernel + "_compiling_max_rss_mb"),
                .command = command,
                .note = format("loading it from disk instead: {} MB peak RSS, {} MB PSS",
                               number_text(series.summary(kernel + "_loading_max_rss_mb").median),
                               number_text(series.summary(kernel + "_loading_pss_mb").median))});
  }
  report.add({.section = "memory",
              .figure = "peak RSS of a trivial program linked with libuwjit",
              .unit = "MB",
              .value = series.summary("linked_trivial_max_rss_mb"),
              .command = command});
}

} // namespace uwjit::bench
