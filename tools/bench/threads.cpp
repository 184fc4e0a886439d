// Threads: built-in nodes stepped through the runtime on 1 and 2 threads, and sharded over 2 MPI
// ranks of 1 thread each, every figure against a STREAM copy run with as many threads in the same
// round (and that copy with streaming stores beside it); and the per-step cost of the status
// verdict that ends every sharded step.
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <thread>

namespace uwjit::bench {

namespace {

// A STREAM copy on a persistent team of threads (made once, like the runtime's): each sweep, every
// thread copies its own contiguous chunk with the JIT'd copy kernel; the caller is thread 0.
class CopyTeam {
public:
  CopyTeam(uwjit_kernel_fn kernel, std::size_t count, int threads)
      : m_kernel(kernel), m_in(count, 1.0), m_out(count, 0.0),
        m_threads(static_cast<std::size_t>(threads)), m_start(threads), m_done(threads) {
    for (std::size_t t = 1; t < m_threads; ++t) {
      m_workers.emplace_back([this, t] {
        while (true) {
          m_start.arrive_and_wait();
          if (m_stop.load()) {
            return;
          }
          m_status[t] = copy_chunk(t);
          m_done.arrive_and_wait();
        }
      });
    }
  }
  CopyTeam(const CopyTeam&) = delete;
  CopyTeam& operator=(const CopyTeam&) = delete;
  ~CopyTeam() {
    m_stop.store(true);
    m_start.arrive_and_wait();
    for (auto& worker : m_workers) {
      worker.join();
    }
  }

  /// Bytes one sweep moves, as STREAM counts a copy: 8 read and 8 written per element.
  [[nodiscard]] double bytes() const { return 16.0 * static_cast<double>(m_in.size()); }

  /// Whether the last sweep copied every element (the output starts as zeros, the input ones).
  [[nodiscard]] bool copied() const { return m_out == m_in; }

  /// Milliseconds of the fastest of `reps` sweeps.
  double sweep_ms(int reps) {
    double best = 0;
    for (int r = 0; r < reps; ++r) {
      const auto start = Clock::now();
      m_start.arrive_and_wait();
      m_status[0] = copy_chunk(0);
      m_done.arrive_and_wait();
      const double ms = ms_since(start);
      if (std::any_of(m_status.begin(), m_status.begin() + static_cast<long>(m_threads),
                      [](int s) { return s != UWJIT_KERNEL_OK; })) {
        throw Error(ErrorKind::internal, "the threaded copy kernel failed");
      }
      best = r == 0 ? ms : std::min(best, ms);
    }
    return best;
  }

private:
  // Thread t's chunk, its bounds rounded to 64-byte lines so that no line is written by two.
  int copy_chunk(std::size_t t) {
    const std::size_t lines = (m_in.size() + 7) / 8;
    const std::size_t begin = std::min(m_in.size(), lines * t / m_threads * 8);
    const std::size_t end = std::min(m_in.size(), lines * (t + 1) / m_threads * 8);
    const void* in[] = {m_in.data() + begin};
    void* out[] = {m_out.data() + begin};
    const uw_i64 extents[] = {static_cast<uw_i64>(end - begin)};
    uwjit_kernel_args args{};
    args.abi_version = UWJIT_KERNEL_ABI_VERSION;
    args.n_state_in = 1;
    args.n_state_out = 1;
    args.n_extents = 1;
    args.state_in = in;
    args.state_out = out;
    args.extents = extents;
    return m_kernel(&args);
  }

  uwjit_kernel_fn m_kernel;
  std::vector<double> m_in, m_out;
  std::size_t m_threads;
  std::barrier<> m_start, m_done;
  std::atomic<bool> m_stop{false};
  std::array<int, 64> m_status{};
  std::vector<std::thread> m_workers;
};

// One built-in node stepped through the runtime on a given number of threads.
struct Stepper {
  std::string label; ///< e.g. "heat 128³"
  std::shared_ptr<const nodes::BuiltinNode> node;
  std::unique_ptr<runtime::Simulation> simulation;
  int threads = 1; ///< as asked (SimulationOptions::threads)
  double updates = 0;
  double bytes = 0;        ///< per step: each input read once, each output written once
  double kernel_bytes = 0; ///< per step: each buffer its kernel reads once, each output once
  double written = 0;      ///< per step: the bytes of its outputs

  // Milliseconds of the fastest of `reps` steps.
  double step_ms(int reps) {
    double best = 0;
    for (int r = 0; r < reps; ++r) {
      const auto start = Clock::now();
      simulation->step(1);
      best = r == 0 ? ms_since(start) : std::min(best, ms_since(start));
    }
    return best;
  }
};

// The least traffic of one lattice update of pipe-flow: 19 populations read and 19 written
// (8 bytes each) and the node's wall word (4 bytes: solid and the 18 bounced links). Runs of the
// benchmark before the node kept one word per node counted 19 one-byte flags, 324 bytes.
constexpr double k_pipe_bytes_per_update = 19 * 8 * 2 + 4;

// The floating-point work per cell update of a kernel, from its optimised IR: each vector
// instruction (one lane per cell) counts once, a fused multiply-add twice. Only the vectorised
// loop works on vectors, so these are the loop body's counts per cell.
struct Work {
  double flops = 0;
  double divisions = 0;
};

Work vector_work_per_update(const std::string& ir) {
  Work work;
  std::size_t begin = 0;
  while (begin < ir.size()) {
    const std::size_t end = std::min(ir.find('\n', begin), ir.size());
    const std::string_view line(ir.data() + begin, end - begin);
    begin = end + 1;
    if (line.find(" x double>") == std::string_view::npos) {
      continue;
    }
    if (line.find("@llvm.fmuladd.v") != std::string_view::npos ||
        line.find("@llvm.fma.v") != std::string_view::npos) {
      work.flops += 2;
      continue;
    }
    for (const char* op : {"= fadd ", "= fsub ", "= fmul ", "= fdiv ", "= fneg "}) {
      if (line.find(op) != std::string_view::npos) {
        work.flops += 1;
        work.divisions += std::string_view(op) == "= fdiv " ? 1 : 0;
        break;
      }
    }
  }
  return work;
}

// The work per update of the kernel a simulation runs.
Work kernel_work(const engine::Engine& engine, const runtime::Simulation& simulation) {
  const auto& source = *simulation.kernel_reports().front().source;
  return vector_work_per_update(
      engine.compiler()
          .compile(source.instantiate("bench_work", "bench_work"), engine::Listing::ir)
          .optimised_ir);
}

Stepper make_stepper(engine::Engine& engine, const std::string& type,
                     const std::vector<std::int64_t>& sizes, int threads, bool checked = false) {
  Stepper s;
  s.node = nodes::make(type, type, nodes::sized_params(type, sizes));
  runtime::SimulationOptions options;
  options.threads = threads;
  options.checked = checked;
  s.threads = threads;
  s.simulation = std::make_unique<runtime::Simulation>(
      engine, std::vector<std::shared_ptr<const runtime::Node>>{s.node}, options);
  s.simulation->step(1); // first touches
  const auto d = s.node->domain();
  s.label = d[0] == d[1] && d[1] == d[2] ? format("{} {}³", type, d[0])
                                         : format("{} {}×{}×{}", type, d[0], d[1], d[2]);
  s.updates = static_cast<double>(s.node->updates_per_step());
  if (type == "heat") {
    // u and kappa read with their halo of 1, u_out written over the interior: the least a step
    // moves. A grid of at most 2^19 cells reads the conductance of each face instead of kappa
    // (face_x, face_y, face_z, each with a halo of 1 along its own axis): more bytes, no division.
    const double padded = static_cast<double>((d[0] + 2) * (d[1] + 2) * (d[2] + 2));
    s.bytes = 8 * (2 * padded + s.updates);
    s.written = 8 * s.updates;
    const auto& statics = s.simulation->kernel_reports().front().source->slots().statics;
    const bool faces = std::find(statics.begin(), statics.end(), "face_x") != statics.end();
    s.kernel_bytes =
        faces ? 8 * (padded + s.updates +
                     static_cast<double>((d[0] + 2) * d[1] * d[2] + d[0] * (d[1] + 2) * d[2] +
                                         d[0] * d[1] * (d[2] + 2)))
              : s.bytes;
  } else {
    s.bytes = k_pipe_bytes_per_update * s.updates;
    s.kernel_bytes = s.bytes;
    s.written = 19 * 8 * s.updates;
  }
  return s;
}

} // namespace

void threads_section(const Options& options, Report& report) {
  Json& section = report.section("threads");
  const int reps = options.speed_reps;
  const int rounds = 3 * options.rounds;
  const bool mpi = have_program("mpiexec") && have_program(helper(options, "uwjit-bench-mpi"));
  const int mpi_rounds = options.quick ? 1 : options.rounds;
  section["method"] = format(
      "per round, the thread counts in alternating order: a STREAM copy on a persistent team of "
      "T threads (each copying a contiguous chunk with the JIT'd copy kernel) over each node's "
      "footprint, then each node stepped through the runtime (uwjit::nodes, "
      "SimulationOptions::threads = T); each figure of a round is its fastest of {} sweeps or "
      "steps, and a fraction is the node's bandwidth over the copy's of the same round and "
      "thread count. Bandwidth counts each input read once and each output written once: heat "
      "reads u and kappa with their halos and writes u; pipe-flow moves {} bytes per lattice "
      "update (19 populations read and written, a 4-byte wall word). {} rounds; then {} rounds of "
      "`mpiexec -n 2 uwjit-bench-mpi --speed ...` (the same nodes sharded along x, 1 thread per "
      "rank; the fastest of {} steps, each after a barrier and timed by its slowest rank), each "
      "against the 2-thread copy "
      "measured just before it",
      reps, k_pipe_bytes_per_update, rounds, mpi_rounds, reps);
  engine::Engine engine({.disk_cache = engine::DiskCache::off});
  const auto copy_kernel = engine.kernel(kernel_source("copy"));
  const std::vector<int> thread_counts = {1, 2};

  std::vector<std::vector<Stepper>> steppers; // [node][thread count]
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> cases = {
      {"heat", options.thread_heat_size}, {"pipe-flow", options.thread_pipe_size}};
  for (const auto& [type, size] : cases) {
    steppers.emplace_back();
    for (const int t : thread_counts) {
      steppers.back().push_back(make_stepper(engine, type, size, t));
    }
  }
  // Heat in checked mode (bounds-checked accessors), on 1 thread beside the unchecked one.
  Stepper checked_heat = make_stepper(engine, "heat", options.thread_heat_size, 1, true);
  // What each node computes per update, from the IR of the kernel it runs: a cell-form kernel,
  // whose one vectorised loop is the cell's update. Above 2^19 cells heat's CPU kernel reads
  // kappa in loops of its own (several loops, some run once per row or slab), so its IR does
  // not give a count per update: it computes each face's conductance once, three divisions per
  // cell and one more per cell of a slab's first plane (nodes/src/heat.cpp).
  const auto& heat_statics =
      steppers[0][0].simulation->kernel_reports().front().source->slots().statics;
  const bool heat_own_loops =
      std::find(heat_statics.begin(), heat_statics.end(), "kappa") != heat_statics.end();
  const Work heat_work = heat_own_loops ? Work{} : kernel_work(engine, *steppers[0][0].simulation);
  const Work pipe_work = kernel_work(engine, *steppers[1][0].simulation);
  const double pipe_flops = pipe_work.flops;
  section["work_per_update"] = {
      {"heat", heat_own_loops
                   ? Json(nullptr)
                   : Json{{"flops", heat_work.flops}, {"divisions", heat_work.divisions}}},
      {"pipe-flow", {{"flops", pipe_work.flops}, {"divisions", pipe_work.divisions}}}};
  // A copy per node and thread count, over as many bytes as the node's step moves at least.
  std::vector<std::vector<std::unique_ptr<CopyTeam>>> copies;
  Json settings = Json::array();
  for (auto& per_node : steppers) {
    copies.emplace_back();
    const auto elements = static_cast<std::size_t>(per_node.front().bytes / 16);
    for (std::size_t i = 0; i < thread_counts.size(); ++i) {
      copies.back().push_back(
          std::make_unique<CopyTeam>(copy_kernel.function(), elements, thread_counts[i]));
      (void)copies.back().back()->sweep_ms(1);
      settings.push_back({{"node", per_node[i].label},
                          {"threads", per_node[i].simulation->threads()},
                          {"bytes_per_step", per_node[i].bytes},
                          {"copy_elements", elements}});
    }
  }
  section["settings"] = std::move(settings);
  // The copy with streaming stores (the output's lines written past the caches, never read
  // first), over pipe-flow's bytes on as many threads, in the same rounds as its plain copy: what
  // a state output stored that way could gain on this CPU. No kernel of uwjit's stores so: a
  // state's interior rows do not start on a vector boundary (docs/explanation/performance.md).
  const auto streaming_kernel = engine.kernel(kernel_source("copy-streaming"));
  std::vector<std::unique_ptr<CopyTeam>> streaming_copies;
  for (std::size_t i = 0; i < thread_counts.size(); ++i) {
    streaming_copies.push_back(std::make_unique<CopyTeam>(
        streaming_kernel.function(), static_cast<std::size_t>(copies.back()[i]->bytes() / 16),
        thread_counts[i]));
    (void)streaming_copies.back()->sweep_ms(1);
    if (!streaming_copies.back()->copied()) {
      throw Error(ErrorKind::internal, "the copy with streaming stores did not copy its input");
    }
  }

  Series series;
  auto key = [](const Stepper& s, const std::string& what) {
    return format("{}_t{}_{}", s.node->type(), s.threads, what);
  };
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t n = 0; n < steppers.size(); ++n) {
      for (std::size_t k = 0; k < thread_counts.size(); ++k) {
        const std::size_t i = round % 2 == 0 ? k : thread_counts.size() - 1 - k;
        Stepper& s = steppers[n][i];
        const double copy_gbs = copies[n][i]->bytes() / copies[n][i]->sweep_ms(reps) / 1e6;
        const double step_ms = s.step_ms(reps);
        const double gbs = s.bytes / step_ms / 1e6;
        series.add(key(s, "copy_gb_s"), copy_gbs);
        series.add(key(s, "step_ms"), step_ms);
        series.add(key(s, "mlups"), s.updates / step_ms / 1e3);
        series.add(key(s, "gb_s"), gbs);
        series.add(key(s, "fraction_of_copy"), gbs / copy_gbs);
        if (s.node->type() == "pipe-flow") {
          // The memory bound: the copy's bandwidth spent on the least bytes of an update.
          const double bound = copy_gbs * 1e3 / k_pipe_bytes_per_update;
          series.add(key(s, "memory_bound_mlups"), bound);
          const double streaming_gbs =
              streaming_copies[i]->bytes() / streaming_copies[i]->sweep_ms(reps) / 1e6;
          series.add(format("copy_streaming_t{}_gb_s", s.threads), streaming_gbs);
          series.add(format("copy_streaming_t{}_over_copy", s.threads), streaming_gbs / copy_gbs);
        }
      }
      // The speed-up of 2 threads over 1, node and copy, from the same round.
      const auto& one = steppers[n][0];
      const auto& two = steppers[n][1];
      series.add(format("{}_speedup", one.node->type()),
                 series.values(key(one, "step_ms")).back() /
                     series.values(key(two, "step_ms")).back());
      series.add(format("{}_copy_speedup", one.node->type()),
                 series.values(key(two, "copy_gb_s")).back() /
                     series.values(key(one, "copy_gb_s")).back());
      if (n == 0) {
        const double checked_ms = checked_heat.step_ms(reps);
        series.add("heat_checked_mlups", checked_heat.updates / checked_ms / 1e3);
        series.add("heat_checked_slowdown", checked_ms / series.values(key(one, "step_ms")).back());
      }
    }
  }

  // np 2 × 1 thread through the MPI job driver, against the 2-thread copy just before.
  Json jobs = Json::array();
  if (mpi) {
    const auto cache = fresh_dir(options.work, "threads-mpi");
    std::string specs;
    for (const auto& [type, size] : cases) {
      specs += (specs.empty() ? "" : ",") + type + ":";
      for (std::size_t d = 0; d < size.size(); ++d) {
        specs += (d == 0 ? "" : "x") + std::to_string(size[d]);
      }
    }
    for (int round = 0; round < mpi_rounds; ++round) {
      std::vector<double> copy_gbs;
      for (auto& per_node : copies) {
        // The cores sat idle (or ran the MPI job's compile) just before: a copy timed at once
        // ran at half speed on some machines, and the fractions divided by it doubled. Sweeps
        // for 100 ms first bring the cores and the memory back to speed.
        const auto warm_until = Clock::now() + std::chrono::milliseconds(100);
        while (Clock::now() < warm_until) {
          (void)per_node[1]->sweep_ms(1);
        }
        copy_gbs.push_back(per_node[1]->bytes() / per_node[1]->sweep_ms(reps) / 1e6);
      }
      const auto result =
          run({"mpiexec", "-n", "2", helper(options, "uwjit-bench-mpi"), "--cache", cache.string(),
               "--speed", specs, "--threads", "1", "--reps", std::to_string(reps)},
              k_mpi_env, std::chrono::minutes(5));
      const Json job = result.json();
      for (std::size_t n = 0; n < steppers.size(); ++n) {
        const Json& node = job["nodes"][n];
        const std::string type = node["node"];
        const double step_ms = node["step_ms"];
        const double gbs = steppers[n][0].bytes / step_ms / 1e6;
        series.add(type + "_np2_step_ms", step_ms);
        series.add(type + "_np2_exchange_ms", node["exchange_ms"]);
        series.add(type + "_np2_mlups", node["updates"].get<double>() / step_ms / 1e3);
        series.add(type + "_np2_fraction_of_copy", gbs / copy_gbs[n]);
        // The same node on 2 threads of one process, right after the job: threads against
        // ranks in MLUPS, from the same round.
        const double threads_ms = steppers[n][1].step_ms(reps);
        series.add(type + "_threads_over_np2", (steppers[n][1].updates / threads_ms) /
                                                   (node["updates"].get<double>() / step_ms));
      }
      series.add("np2_all_reduce_1_us", job["all_reduce_us"]["1"]);
      series.add("np2_all_reduce_4_us", job["all_reduce_us"]["4"]);
      jobs.push_back(job);
    }
  } else {
    section["not_measured"] = {{"np2", "no mpiexec, or uwjit was built without MPI"}};
  }
  section["mpi_jobs"] = std::move(jobs);
  section["series"] = series.to_json();

  const std::string command = options.command("--sections threads");
  auto median = [&](const std::string& name) { return series.summary(name).median; };
  for (std::size_t n = 0; n < steppers.size(); ++n) {
    for (std::size_t i = 0; i < thread_counts.size(); ++i) {
      const Stepper& s = steppers[n][i];
      const int t = s.threads;
      const bool heat_goal = s.node->type() == "heat" && t == 2;
      report.add({.section = "threads",
                  .figure = format("{}: MLUPS through the runtime, {} thread{}", s.label, t,
                                   t == 1 ? "" : "s"),
                  .unit = "MLUPS",
                  .value = series.summary(key(s, "mlups")),
                  .command = command,
                  .note = format("{} ms per step, {} GB/s", number_text(median(key(s, "step_ms"))),
                                 number_text(median(key(s, "gb_s"))))});
      Row fraction{
          .section = "threads",
          .figure = format("{}, {} thread{}: fraction of a {}-thread copy", s.label, t,
                           t == 1 ? "" : "s", t),
          .unit = "",
          .value = series.summary(key(s, "fraction_of_copy")),
          .command = command,
          .note = format("{} bytes per update counted, {} with the write-allocate read of each "
                         "written byte (counted, not measured: no hardware counter is "
                         "read; the copy's moved bytes are 3/2 of its counted ones the "
                         "same way); copy {} GB/s on {} thread{} over {} MB per array",
                         number_text(s.bytes / s.updates),
                         number_text((s.bytes + s.written) / s.updates),
                         number_text(median(key(s, "copy_gb_s"))), t, t == 1 ? "" : "s",
                         number_text(copies[n][i]->bytes() / 2 / 1e6))};
      if (heat_goal) {
        fraction.goal = Goal{"≥ 0.8", 0.8, std::nullopt};
        const std::string bytes_text =
            format("{} bytes{}", number_text(s.kernel_bytes / s.updates),
                   s.kernel_bytes == s.bytes ? std::string()
                                             : format(" (the least a step moves: {} bytes)",
                                                      number_text(s.bytes / s.updates)));
        const std::string work_text =
            heat_own_loops
                ? format("its kernel computes each face's conductance (a harmonic mean, one "
                         "division) once for both its cells, as a grid of more than 2^19 cells "
                         "does: three divisions per cell and one more per cell of each slab's "
                         "first plane, for {}",
                         bytes_text)
                : format("at {} GFLOP/s: its kernel does {} flops per cell and no division (it "
                         "reads each face's conductance, stored once, as a grid of at most 2^19 "
                         "cells does), for {}",
                         number_text(median(key(steppers[n][0], "mlups")) * heat_work.flops / 1e3),
                         number_text(heat_work.flops), bytes_text);
        fraction.limit = format(
            "the speed-up of 2 threads over 1 is {}× for heat and {}× for the copy; at 1 thread "
            "heat reaches {} of the 1-thread copy; {}",
            number_text(median("heat_speedup")), number_text(median("heat_copy_speedup")),
            number_text(median(key(steppers[n][0], "fraction_of_copy"))), work_text);
      }
      if (s.node->type() == "pipe-flow") {
        // What bounds it: the copy's bandwidth spent on its least bytes per update, against
        // how it scales with threads beside the copy.
        const double fraction_median = median(key(s, "fraction_of_copy"));
        const double speedup = median("pipe-flow_speedup");
        const double copy_speedup = median("pipe-flow_copy_speedup");
        std::string bound;
        if (speedup < 1.2 && copy_speedup < 1.2) {
          bound = "2 threads ran no faster than 1 here, the copy included (are the cores "
                  "shared?), so the scaling cannot tell what bounds it";
        } else if (fraction_median >= 0.7) {
          bound = "near the memory bound";
        } else if (speedup > 1.2 * copy_speedup) {
          bound = "bound by the core's arithmetic, not by memory";
        } else {
          bound = "neither near the memory bound nor scaling past the copy";
        }
        fraction.note += format(
            "; {} B and {} flops per update ({} flop/B, counted in the kernel's IR): the memory "
            "bound at this copy bandwidth is {} MLUPS, and 2 threads give {}× (the copy {}×): {}",
            k_pipe_bytes_per_update, number_text(pipe_flops),
            number_text(pipe_flops / k_pipe_bytes_per_update),
            number_text(median(key(s, "memory_bound_mlups"))), number_text(speedup),
            number_text(copy_speedup), bound);
      }
      report.add(fraction);
    }
    const Stepper& one = steppers[n][0];
    report.add({.section = "threads",
                .figure = format("{}: speed-up of 2 threads over 1", one.label),
                .unit = "×",
                .value = series.summary(one.node->type() + "_speedup"),
                .command = command,
                .note = format("the copy's speed-up in the same rounds: {}×",
                               number_text(median(one.node->type() + "_copy_speedup")))});
  }
  for (std::size_t i = 0; i < thread_counts.size(); ++i) {
    const int t = thread_counts[i];
    const std::string what = format("copy_streaming_t{}", t);
    report.add({.section = "threads",
                .figure = format("STREAM copy with streaming stores / with plain stores, {} "
                                 "thread{}",
                                 t, t == 1 ? "" : "s"),
                .unit = "×",
                .value = series.summary(what + "_over_copy"),
                .command = command,
                .note = format("{} GB/s against {} GB/s for the plain copy of the same rounds, "
                               "over {} MB per array (pipe-flow's bytes per step); a plain store "
                               "reads each line it writes first, a streaming one does not, so "
                               "this is what a state output stored past the caches could gain "
                               "here (uwjit's kernels store plainly: a state's interior rows do "
                               "not start on a vector boundary)",
                               number_text(median(what + "_gb_s")),
                               number_text(median(key(steppers.back()[i], "copy_gb_s"))),
                               number_text(copies.back().front()->bytes() / 2 / 1e6))});
  }
  report.add({.section = "threads",
              .figure = format("{}: checked mode (SimulationOptions::checked), 1 thread",
                               checked_heat.label),
              .unit = "MLUPS",
              .value = series.summary("heat_checked_mlups"),
              .command = command,
              .note = "bounds-checked accessors, poisoned halos, the update box split in three"});
  report.add({.section = "threads",
              .figure = format("{}: checked mode's slowdown, 1 thread", checked_heat.label),
              .unit = "×",
              .value = series.summary("heat_checked_slowdown"),
              .command = command,
              .note = "step time checked over unchecked, from the same round: the checks keep "
                      "the loops from vectorising"});
  if (!mpi) {
    return;
  }
  for (std::size_t n = 0; n < steppers.size(); ++n) {
    const std::string type = steppers[n][0].node->type();
    report.add({.section = "threads",
                .figure = format("{}: np 2 × 1 thread (sharded along x), fraction of a 2-thread "
                                 "copy",
                                 steppers[n][0].label),
                .unit = "",
                .value = series.summary(type + "_np2_fraction_of_copy"),
                .command = command,
                .note = format("{} bytes per update; {} MLUPS, {} ms per step of which {} ms "
                               "halo exchange (rank 0)",
                               number_text(steppers[n][0].bytes / steppers[n][0].updates),
                               number_text(median(type + "_np2_mlups")),
                               number_text(median(type + "_np2_step_ms")),
                               number_text(median(type + "_np2_exchange_ms")))});
    report.add({.section = "threads",
                .figure = format("{}: 2 threads / np 2 × 1 thread (MLUPS, same round)",
                                 steppers[n][0].label),
                .unit = "×",
                .value = series.summary(type + "_threads_over_np2"),
                .goal = Goal{"≥ 1", 1.0, std::nullopt},
                .command = command,
                .note = "one process of 2 threads against 2 processes of 1 (sharded along x), "
                        "stepped one after the other in each MPI round"});
  }
  const double heat_step_us = median("heat_np2_step_ms") * 1e3;
  report.add(
      {.section = "threads",
       .figure = "np 2: status verdict per sharded step (all-reduce of 1 double, timed "
                 "alone)",
       .unit = "µs",
       .value = series.summary("np2_all_reduce_1_us"),
       .command = command,
       .note = format("what a node without integrals pays per step for the verdict: {} % "
                      "of a {} step at np 2, whose halo exchange takes {} µs; with "
                      "integrals the count rides in the all-reduce that sums them (4 "
                      "doubles, pipe-flow's: {} µs)",
                      number_text(100 * median("np2_all_reduce_1_us") / heat_step_us),
                      steppers[0][0].label, number_text(median("heat_np2_exchange_ms") * 1e3),
                      number_text(median("np2_all_reduce_4_us")))});
}

} // namespace uwjit::bench
