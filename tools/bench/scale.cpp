// The scale section: what a sharded job holds per rank, what its checkpoints cost, and how its
// speed per rank holds with the same cells per rank (weak scaling), at each rank count. Per round
// and np: one uwjit-bench-mpi job (pipe-flow sharded along x, 1 thread per rank) that steps,
// checkpoints (every rank writes its slab into the one file) and restores, then, from this process,
// a plain write and read of the same number of bytes beside it (the dd-style baseline of the same
// file system, in the same round).
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>

#include <algorithm>
#include <map>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace uwjit::bench {

namespace {

// Writes `bytes` bytes to `path` in 8 MiB blocks and fsyncs, then reads them back; the time of
// each, in milliseconds.
std::pair<double, double> plain_write_read(const std::filesystem::path& path, std::uint64_t bytes) {
  std::vector<char> block(std::size_t{8} << 20, 'u');
  const auto start = Clock::now();
  {
    const posix::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) {
      posix::throw_io(format("cannot create {}", path.string()), errno);
    }
    for (std::uint64_t at = 0; at < bytes; at += block.size()) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - at));
      posix::write_at(fd.get(), at, {block.data(), n}, format("cannot write {}", path.string()));
    }
    if (::fsync(fd.get()) != 0) {
      posix::throw_io(format("cannot sync {}", path.string()), errno);
    }
  }
  const double write_ms = ms_since(start);
  const auto read_start = Clock::now();
  {
    const posix::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    for (std::uint64_t at = 0; at < bytes; at += block.size()) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - at));
      posix::read_at(fd.get(), at, {block.data(), n}, path.string());
    }
  }
  const double read_ms = ms_since(read_start);
  std::filesystem::remove(path);
  return {write_ms, read_ms};
}

} // namespace

void scale_section(const Options& options, Report& report) {
  if (!have_program("mpiexec") || !have_program(helper(options, "uwjit-bench-mpi"))) {
    report.not_measured("scale", "no mpiexec, or uwjit was built without MPI (uwjit-bench-mpi)");
    return;
  }
  Json& section = report.section("scale");
  const std::string domain = options.quick ? "32x24x24" : "128x96x96";
  // The weak-scaling domain of np ranks: a fixed slab per rank along x.
  const std::int64_t per_rank = options.quick ? 8 : 32;
  const std::string weak_cross = options.quick ? "16x16" : "48x48";
  const auto weak_domain = [&](int np) { return format("{}x{}", per_rank * np, weak_cross); };
  const std::string shown = options.quick ? "32×24×24" : "128×96×96";
  section["method"] =
      "per round and np: `mpiexec -n NP uwjit-bench-mpi --scale pipe-flow:" + domain +
      "` (sharded along x, 1 thread per rank: build, 2 steps, checkpoint, restore; each rank's "
      "peak RSS), then a plain write (8 MiB blocks, fsync) and read of as many bytes as the "
      "checkpoint, from one process, in the same directory (reads come from the page cache "
      "for both); then `uwjit-bench-mpi --speed` of pipe-flow with the same cells per rank at "
      "every np (weak scaling), the fastest step.";
  Series series;
  const auto dir = fresh_dir(options.work, "scale");
  const int rounds = options.quick ? 1 : std::min(options.rounds, 5);
  for (int round = 0; round < rounds; ++round) {
    std::map<int, double> rss_per_rank, rss_job, weak_mlups;
    for (const int np : options.mpi_ranks) {
      const auto work = fresh_dir(dir, format("r{}np{}", round, np));
      const auto result =
          run({"mpiexec", "-n", std::to_string(np), helper(options, "uwjit-bench-mpi"), "--cache",
               (dir / "cache").string(), "--scale", "pipe-flow:" + domain, "--dir", work.string()},
              k_mpi_env, std::chrono::minutes(10));
      const Json job = result.json();
      const std::string p = format("np{}_", np);
      const auto bytes = job["checkpoint_bytes"].get<double>();
      rss_per_rank[np] = max_of(job["peak_rss_kb"]) / 1024;
      rss_job[np] = sum_of(job["peak_rss_kb"]) / 1024;
      series.add(p + "peak_rss_mb_per_rank", rss_per_rank[np]);
      series.add(p + "peak_rss_mb_job", rss_job[np]);
      series.add(p + "checkpoint_write_gb_s", bytes / job["write_ms"].get<double>() / 1e6);
      series.add(p + "restore_ms", job["restore_ms"].get<double>());
      const auto [write_ms, read_ms] =
          plain_write_read(work / "plain.bin", static_cast<std::uint64_t>(bytes));
      series.add(p + "plain_write_gb_s", bytes / write_ms / 1e6);
      series.add(p + "plain_read_gb_s", bytes / read_ms / 1e6);
      series.add(p + "checkpoint_mb", bytes / 1e6);
      std::filesystem::remove_all(work);
      // Weak scaling: the same cells per rank at every np, the fastest of the steps.
      const auto weak =
          run({"mpiexec", "-n", std::to_string(np), helper(options, "uwjit-bench-mpi"), "--cache",
               (dir / "cache").string(), "--speed", format("pipe-flow:{}", weak_domain(np)),
               "--threads", "1", "--reps", options.quick ? "2" : "5"},
              k_mpi_env, std::chrono::minutes(10));
      const Json weak_job = weak.json();
      const Json& node = weak_job["nodes"][0];
      weak_mlups[np] = node["updates"].get<double>() / node["step_ms"].get<double>() / 1e3 / np;
      series.add(p + "weak_mlups_per_rank", weak_mlups[np]);
      series.add(p + "weak_exchange_ms", node["exchange_ms"]);
    }
    const int first = options.mpi_ranks.front();
    const int last = options.mpi_ranks.back();
    if (last != first) {
      series.add("rss_per_rank_last_over_first", rss_per_rank[last] / rss_per_rank[first]);
      series.add("rss_job_last_over_first", rss_job[last] / rss_job[first]);
      series.add("weak_last_over_first", weak_mlups[last] / weak_mlups[first]);
    }
  }
  section["series"] = series.to_json();
  const auto median = [&](const std::string& name) { return series.summary(name).median; };
  for (const int np : options.mpi_ranks) {
    const std::string p = format("np{}_", np);
    const std::string command =
        options.command("--sections scale --mpi-ranks " + std::to_string(np));
    const std::string oversubscribed =
        np > static_cast<int>(std::thread::hardware_concurrency())
            ? format(" (oversubscribed: {} cores)", std::thread::hardware_concurrency())
            : "";
    report.add({.section = "scale",
                .figure = format("pipe-flow {}, np {}: peak RSS per rank", shown, np),
                .unit = "MB",
                .value = series.summary(p + "peak_rss_mb_per_rank"),
                .command = command,
                .note = format("the job's total {} MB{}; build, 2 steps, checkpoint, restore",
                               number_text(median(p + "peak_rss_mb_job")), oversubscribed)});
    report.add({.section = "scale",
                .figure = format("pipe-flow {}, np {}: checkpoint write", shown, np),
                .unit = "GB/s",
                .value = series.summary(p + "checkpoint_write_gb_s"),
                .command = command,
                .note = format("{} MB, every rank its slab, synced; a plain write of as many bytes "
                               "from one process: {} GB/s",
                               number_text(median(p + "checkpoint_mb")),
                               number_text(median(p + "plain_write_gb_s")))});
    report.add({.section = "scale",
                .figure = format("pipe-flow {}, np {}: restore from the checkpoint", shown, np),
                .unit = "ms",
                .value = series.summary(p + "restore_ms"),
                .command = command,
                .note = format("the whole restore: rebuild, kernels from memory, every rank's read "
                               "of its slabs and their checksums; a plain read of the {} MB from "
                               "one process: {} GB/s",
                               number_text(median(p + "checkpoint_mb")),
                               number_text(median(p + "plain_read_gb_s")))});
  }
  for (const int np : options.mpi_ranks) {
    const std::string p = format("np{}_", np);
    const std::string oversubscribed =
        np > static_cast<int>(std::thread::hardware_concurrency())
            ? format("; oversubscribed: {} cores", std::thread::hardware_concurrency())
            : "";
    report.add({.section = "scale",
                .figure = format("pipe-flow weak scaling, {}×{} per rank, np {}: MLUPS per rank",
                                 per_rank, options.quick ? "16×16" : "48×48", np),
                .unit = "MLUPS",
                .value = series.summary(p + "weak_mlups_per_rank"),
                .command = options.command("--sections scale --mpi-ranks " + std::to_string(np)),
                .note = format("1 thread per rank, the domain {} sharded along x; halo exchange "
                               "{} ms per step{}",
                               weak_domain(np), number_text(median(p + "weak_exchange_ms")),
                               oversubscribed)});
  }
  if (options.mpi_ranks.size() > 1) {
    const int first = options.mpi_ranks.front();
    const int last = options.mpi_ranks.back();
    const std::string command = options.command("--sections scale");
    const bool goals = first == 1 && last == 4;
    Row per_rank{.section = "scale",
                 .figure =
                     format("pipe-flow {}: peak RSS per rank, np {} / np {}", shown, last, first),
                 .unit = "×",
                 .value = series.summary("rss_per_rank_last_over_first"),
                 .command = command,
                 .note = "a rank's fixed memory (the process, LLVM, MPI) does not divide"};
    Row job{.section = "scale",
            .figure =
                format("pipe-flow {}: the job's total peak RSS, np {} / np {}", shown, last, first),
            .unit = "×",
            .value = series.summary("rss_job_last_over_first"),
            .command = command,
            .note = "each rank adds its fixed memory"};
    if (goals) {
      per_rank.goal = Goal{"≤ 0.35", std::nullopt, 0.35};
      per_rank.limit = format("np 1 holds {} MB, of which the state's two buffers are about {} MB; "
                              "each rank keeps a fixed part (process, LLVM, MPI) that does not "
                              "divide",
                              number_text(median(format("np{}_peak_rss_mb_per_rank", first))),
                              number_text(median(format("np{}_checkpoint_mb", first)) * 2));
      job.goal = Goal{"≤ 1.3", std::nullopt, 1.3};
      job.limit = "each rank adds its fixed part: the job's total grows by it per rank";
    }
    report.add(per_rank);
    report.add(job);
    report.add(
        {.section = "scale",
         .figure = format("pipe-flow weak scaling: MLUPS per rank, np {} / np {}", last, first),
         .unit = "×",
         .value = series.summary("weak_last_over_first"),
         .command = command,
         .note = format("1.0 is perfect; this machine has {} cores, so ranks beyond them "
                        "share a core",
                        std::thread::hardware_concurrency())});
  }
}

} // namespace uwjit::bench
