// uwjit-bench: shared pieces of the benchmark driver: options, samples and their summaries,
// the report (rows, sections, JSON and Markdown), child processes, and the benchmark kernels.
#pragma once

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/kernel_source.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::bench {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

[[nodiscard]] double ms_since(Clock::time_point start);
[[nodiscard]] double ms_between(Clock::time_point start, Clock::time_point end);
/// steady_clock (CLOCK_MONOTONIC, the same in every process) in nanoseconds.
[[nodiscard]] std::int64_t monotonic_ns();

/// The sections, in the order they run and are reported.
inline const std::vector<std::string> k_sections = {
    "cold",       "warm",   "kernel_speed", "threads", "static_arrays", "mpi", "scale",
    "contention", "memory", "ensemble",     "gpu"};

struct Options {
  bool quick = false;
  int rounds = 5;                   ///< interleaved rounds per comparison
  std::set<std::string> sections;   ///< which sections run (others are reported as skipped)
  std::vector<std::string> kernels; ///< the cold/warm kernels: stencil, fields16, pipe-flow
  std::filesystem::path out;        ///< where bench.json and bench.md go
  std::filesystem::path work;       ///< scratch space (cache directories, .so files)
  std::filesystem::path bin_dir;    ///< where uwjit-bench and its helpers live
  std::string self;                 ///< how the user invoked uwjit-bench (for row commands)
  double baked_limit_s = 30;        ///< time limit of one baked static-array compile
  std::vector<std::int64_t> static_sizes = {1000, 10000, 100000, 1000000};
  std::vector<int> mpi_ranks = {1, 2, 4};
  int contenders = 4; ///< processes racing on one cold key
  int grid = 128;     ///< the stencil's grid edge for kernel speed
  int fields_grid = 48;
  int speed_reps = 5;          ///< sweeps per timed sample
  std::int64_t pipe_grid = 64; ///< the pipe-flow lattice for MLUPS: N × 3N/4 × 3N/4
  std::vector<std::int64_t> thread_heat_size = {128};        ///< heat in the threads section
  std::vector<std::int64_t> thread_pipe_size = {96, 64, 64}; ///< pipe-flow there

  /// The command that reproduces one row: this program with `args` and the rounds.
  [[nodiscard]] std::string command(const std::string& args) const;
};

/// A summary of samples: median, extremes, count.
struct Summary {
  double median = 0, min = 0, max = 0;
  std::size_t n = 0;
};

[[nodiscard]] Summary summarise(std::vector<double> values);
/// The largest and the sum of a JSON list of numbers (0 for an empty list).
[[nodiscard]] double max_of(const Json& list);
[[nodiscard]] double sum_of(const Json& list);
[[nodiscard]] Json to_json(const Summary& summary);

/// Named series of samples, e.g. "jit_ms" → one value per round.
class Series {
public:
  void add(const std::string& name, double value) { m_values[name].push_back(value); }
  [[nodiscard]] const std::vector<double>& values(const std::string& name) const;
  [[nodiscard]] Summary summary(const std::string& name) const { return summarise(values(name)); }
  [[nodiscard]] bool has(const std::string& name) const { return m_values.count(name) != 0; }
  /// Every series as {name: {median, min, max, n, values}}.
  [[nodiscard]] Json to_json() const;

private:
  std::map<std::string, std::vector<double>> m_values;
};

/// A goal beside a figure: the figure meets it when `at_least` ≤ median ≤ `at_most`.
struct Goal {
  std::string text; ///< e.g. "≥ 3×"
  std::optional<double> at_least, at_most;
};

/// One line of the table.
struct Row {
  std::string section;
  std::string figure; ///< what was measured, e.g. "stencil: g++ subprocess / in-process"
  std::string unit;   ///< "ms", "×", "GB/s", ...
  Summary value;
  std::optional<Goal> goal;
  std::string limit;   ///< what limits it, when it misses its goal (measured, not guessed)
  std::string command; ///< what reproduces it
  std::string note;    ///< e.g. how the figure is computed
  [[nodiscard]] std::optional<bool> met() const;
};

/// The whole run's results.
class Report {
public:
  explicit Report(Json machine) : m_machine(std::move(machine)) {}
  Row& add(Row row);
  /// The section's raw data (series, settings, status).
  Json& section(const std::string& name);
  /// Marks a section as not measured, with the reason.
  void not_measured(const std::string& section, const std::string& reason);
  [[nodiscard]] Json to_json(const Json& run) const;
  [[nodiscard]] std::string to_markdown(const Json& run) const;

private:
  Json m_machine;
  Json m_sections = Json::object();
  std::vector<Row> m_rows;
};

/// The machine: CPU model, cores, memory, kernel, LLVM, compilers, load average.
[[nodiscard]] Json machine_info();
/// The 1, 5 and 15 minute load averages.
[[nodiscard]] std::vector<double> load_average();
/// A one-line description of the machine for each row: CPU model, its LLVM name and widest
/// vector ISA, cores, memory, kernel, LLVM.
[[nodiscard]] std::string machine_line(const Json& machine);
/// uwjit-bench --compare: prints two bench.json side by side; returns the exit code. Throws
/// Error(io/usage) for a file that cannot be read or is not a bench.json.
int compare(const std::string& path_a, const std::string& path_b);

// --- Child processes ----------------------------------------------------------------------------

struct ProcessResult {
  int exit_code = -1; ///< -1 when killed by a signal (or timed out)
  bool timed_out = false;
  std::string out, err;
  double wall_ms = 0; ///< from spawn to exit
  std::int64_t start_ns = 0, end_ns = 0;
  [[nodiscard]] bool ok() const noexcept { return exit_code == 0 && !timed_out; }
  /// Stdout's JSON: a whole pretty-printed object (from its first line "{" to its last "}"),
  /// else the last line; throws Error(internal) with stderr otherwise.
  [[nodiscard]] Json json() const;
};

/// A started child whose stdout and stderr are captured.
class Process {
public:
  /// Starts argv[0] (a path, or a name looked up in PATH) with the current environment plus
  /// `env` ("NAME=value"). Throws Error(io) if it cannot be started.
  static Process start(const std::vector<std::string>& argv,
                       const std::vector<std::string>& env = {});
  Process(Process&&) noexcept;
  Process& operator=(Process&&) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();
  /// Waits for the child (killing it, and its process group, after `timeout`).
  ProcessResult wait(std::chrono::milliseconds timeout = std::chrono::minutes(10));

private:
  Process() = default;
  int m_pid = -1, m_out = -1, m_err = -1;
  std::int64_t m_start_ns = 0;
};

/// Process::start(argv, env).wait(timeout).
ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                  std::chrono::milliseconds timeout = std::chrono::minutes(10));

/// A fresh directory under `parent` named `stem.N`.
[[nodiscard]] std::filesystem::path fresh_dir(const std::filesystem::path& parent,
                                              const std::string& stem);

// --- The benchmark kernels ----------------------------------------------------------------------

/// A kernel of the benchmark by name: "stencil" (7-point diffusion), "fields16" (16 coupled
/// fields), "copy" (STREAM copy), "pipe-flow" (the D3Q19 node's kernel, when nodes exist),
/// "static-ext-N" / "static-baked-N" (N doubles as an external buffer / baked initialiser),
/// "tiny-I" (a trivial kernel, distinct per I). Throws Error(usage) for an unknown name.
[[nodiscard]] codegen::KernelSource kernel_source(const std::string& name);

// --- Sections -----------------------------------------------------------------------------------

void cold_section(const Options& options, Report& report);
void warm_section(const Options& options, Report& report);
void speed_section(const Options& options, Report& report);
void threads_section(const Options& options, Report& report);
void static_section(const Options& options, Report& report);
void mpi_section(const Options& options, Report& report);
void scale_section(const Options& options, Report& report); // scale.cpp
void contention_section(const Options& options, Report& report);
void memory_section(const Options& options, Report& report);
void ensemble_section(const Options& options, Report& report); // ensemble.cpp
void gpu_section(const Options& options, Report& report);      // gpu.cpp: not measured without one

/// The child side of the fresh-process measurements: `uwjit-bench --child request ...`.
int child_main(const std::vector<std::string>& args);

/// The path of a helper program next to uwjit-bench.
[[nodiscard]] std::string helper(const Options& options, const std::string& name);

/// The environment of the benchmark's mpiexec jobs (Open MPI as the tests run it).
extern const std::vector<std::string> k_mpi_env;
/// Whether a program exists: a path, or a name looked up in PATH.
[[nodiscard]] bool have_program(const std::string& path_or_name);

/// Formats a number for text: 3 significant digits below 100, integers above.
[[nodiscard]] std::string number_text(double value);

} // namespace uwjit::bench

namespace uwjit::bench {

/// A shared library opened with dlopen, closed when the last copy goes.
struct NativeKernel {
  std::shared_ptr<void> library;
  uwjit_kernel_fn function = nullptr;
};

/// A kernel compiled the reference way: a compiler subprocess writes a .so, dlopen loads it.
struct SubprocessBuild {
  NativeKernel kernel;
  double total_ms = 0;    ///< writing the source, the compiler, dlopen and dlsym
  double compiler_ms = 0; ///< the compiler subprocess alone
  double dlopen_ms = 0;   ///< dlopen and dlsym
  std::string command;    ///< the compiler's command line
};

/// The flags both subprocess compilers get besides -o and the file: the reference way,
/// `-O3 -march=native -shared -fPIC`, in the JIT's language and arithmetic (C++20,
/// -fno-math-errno, -ffp-contract=off as the engine compiles by default).
[[nodiscard]] const std::vector<std::string>& subprocess_flags();

/// subprocess_flags() without -shared: the same compile stopped at an object (-c) or a listing
/// (-S), with no linker run.
[[nodiscard]] std::vector<std::string> compile_only_flags();

/// Writes `text` to DIR/NAME.cpp, runs `compiler` with subprocess_flags() on it, dlopens the
/// .so and looks `entry` up. Throws Error(compile) with the compiler's output if it fails.
[[nodiscard]] SubprocessBuild build_subprocess(const std::string& compiler, const std::string& text,
                                               const std::string& entry,
                                               const std::filesystem::path& dir,
                                               const std::string& name);

/// "a,b,c" → {"a", "b", "c"}.
[[nodiscard]] std::vector<std::string> split_list(const std::string& text);

} // namespace uwjit::bench

namespace uwjit::bench {
/// This process's proportional set size (/proc/self/smaps_rollup), in KiB; -1 if unknown.
[[nodiscard]] long self_pss_kb();
/// This process's peak resident set (VmHWM of /proc/self/status), in KiB; -1 if unknown. Unlike
/// wait4's ru_maxrss, it does not inherit the peak of the parent that spawned the process.
[[nodiscard]] long self_peak_rss_kb();
} // namespace uwjit::bench
