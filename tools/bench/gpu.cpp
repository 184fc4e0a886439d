// The GPU section: the built-in nodes' GPU kernels (KernelWriter's cell form, compiled in process
// to PTX) launched on device 0 through the CUDA driver, against a device-to-device copy measured
// in the same run; the cold PTX compile and the driver's first load of it; the same cells compiled
// by NVIDIA's compiler (NVRTC), where it is installed. Not measured where there is no CUDA device
// (the reason is the driver's).
#include "bench.hpp"
#include "node_workload.hpp"
#include "nvrtc.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/cuda/device.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/cuda/probe.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/ensemble.hpp>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <memory>

namespace uwjit::bench {

namespace {

using cuda::DeviceMemory;
using cuda::DevicePtr;

const cuda::Driver& driver() {
  return cuda::Driver::get();
}

void check(cuda::Result result, const char* call) {
  driver().check(result, call, ErrorKind::jit);
}

// A node's GPU kernel, loaded, with its buffers on the device (copies of a NodeWorkload's).
struct DeviceKernel {
  std::string name;
  double cells = 0;
  double bytes_per_cell = 0;
  double compile_ms = 0; ///< the cold in-process PTX compile (engine request, no cache)
  double load_ms = 0;    ///< cuModuleLoadDataEx: the driver's JIT of the PTX to machine code
  cuda::Module module = nullptr;
  cuda::Function function = nullptr;
  std::string entry; ///< its symbol, and that of NVRTC's form of it
  std::vector<std::unique_ptr<DeviceMemory>> memory;
  std::vector<std::pair<DevicePtr, std::size_t>> outputs; ///< the state it writes, and its bytes
  uwjit_kernel_args args{};
  codegen::CellLaunch launch; ///< the runtime's launch of it (codegen::cell_launch)
  std::shared_ptr<const codegen::KernelSource> source; ///< its GPU form
  cuda::Module nvrtc_module = nullptr;     ///< the same cells compiled by NVRTC, when it could
  cuda::Function nvrtc_function = nullptr; ///< be
  std::string nvrtc_bits;                  ///< whether NVRTC's kernel wrote the same bits
};

constexpr unsigned k_block = 128;

DeviceKernel load(engine::Engine& engine, const engine::Target& target, const std::string& type,
                  const std::vector<std::int64_t>& size) {
  DeviceKernel k;
  const auto node = nodes::make(type, type, nodes::sized_params(type, size));
  std::vector<std::string> extents;
  for (const auto n : node->domain()) {
    extents.push_back(std::to_string(n));
  }
  k.name = type + " " + join(extents, "×");
  const auto host_kernel = runtime::node_kernels(*node, false).at(0);
  const auto gpu_kernel = runtime::node_kernels(*node, true).at(0);
  const NodeWorkload host(*node, host_kernel, node->dt()); // the GPU form declares the same
  k.cells = host.cells;
  k.bytes_per_cell = host.bytes_per_cell();
  k.source = std::make_shared<const codegen::KernelSource>(gpu_kernel.source);
  const auto ptx = engine.ptx(gpu_kernel.source, target);
  k.compile_ms = ptx.info->request_ms;
  const auto start = Clock::now();
  check(driver().api().cuModuleLoadDataEx(&k.module, ptx.ptx->c_str(), 0, nullptr, nullptr),
        "cuModuleLoadDataEx");
  k.load_ms = ms_since(start);
  k.entry = ptx.info->entry;
  check(driver().api().cuModuleGetFunction(&k.function, k.module, k.entry.c_str()),
        "cuModuleGetFunction");
  auto upload = [&](const void* data, std::size_t bytes) {
    k.memory.push_back(std::make_unique<DeviceMemory>(data, bytes));
    return k.memory.back()->pointer();
  };
  auto bytes_of = [](const runtime::Field& f) {
    return static_cast<std::size_t>(f.padded_count()) * codegen::size_of(f.dtype());
  };
  std::vector<DevicePtr> in, out, statics;
  for (const auto& f : host.in) {
    in.push_back(upload(f.data(), bytes_of(f)));
  }
  for (const auto& f : host.out) {
    out.push_back(upload(f.data(), bytes_of(f)));
    k.outputs.emplace_back(out.back(), bytes_of(f));
  }
  for (std::size_t s = 0; s < host.static_ptrs.size(); ++s) {
    statics.push_back(upload(host.static_ptrs[s], host.static_bytes[s]));
  }
  k.args = host.args;
  k.args.state_in =
      reinterpret_cast<const void* const*>(upload(in.data(), in.size() * sizeof(DevicePtr)));
  k.args.state_out =
      reinterpret_cast<void* const*>(upload(out.data(), out.size() * sizeof(DevicePtr)));
  k.args.statics = reinterpret_cast<const void* const*>(
      upload(statics.data(), statics.size() * sizeof(DevicePtr)));
  k.args.extents = reinterpret_cast<const uw_i64*>(
      upload(host.extents.data(), host.extents.size() * sizeof(uw_i64)));
  k.args.params = reinterpret_cast<const double*>(
      upload(host.params.data(), host.params.size() * sizeof(double)));
  k.args.integrals = reinterpret_cast<double*>(
      upload(host.integrals.data(), host.integrals.size() * sizeof(double)));
  k.launch = codegen::cell_launch(k.args, node->domain().size(), k_block);
  return k;
}

// Milliseconds per launch of `function` (k's, or NVRTC's form of it) on k's buffers, over
// `launches` launches back to back.
double time_launches(DeviceKernel& k, cuda::Function function, int launches) {
  void* arguments[] = {&k.args};
  check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
  const auto start = Clock::now();
  for (int l = 0; l < launches; ++l) {
    check(driver().api().cuLaunchKernel(function, k.launch.grid[0], k.launch.grid[1],
                                        k.launch.grid[2], k.launch.block, 1, 1, 0, nullptr,
                                        arguments, nullptr),
          "cuLaunchKernel");
  }
  check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
  return ms_since(start) / launches;
}

// The state `function` writes in one launch on k's buffers, copied to the host.
std::vector<std::byte> written_by(DeviceKernel& k, cuda::Function function) {
  (void)time_launches(k, function, 1);
  std::vector<std::byte> state;
  for (const auto& [pointer, bytes] : k.outputs) {
    const std::size_t at = state.size();
    state.resize(at + bytes);
    check(driver().api().cuMemcpyDtoH_v2(state.data() + at, pointer, bytes), "cuMemcpyDtoH_v2");
  }
  return state;
}

// k's cells compiled by NVRTC from the CUDA C++ form of its source and loaded; whether that
// kernel writes the bits k's does (both without contraction: the same IEEE operations).
void load_nvrtc(const Nvrtc& nvrtc, DeviceKernel& k, const std::string& arch) {
  const std::string ptx = nvrtc.ptx(cuda_cxx(*k.source, k.entry), arch);
  check(driver().api().cuModuleLoadDataEx(&k.nvrtc_module, ptx.c_str(), 0, nullptr, nullptr),
        "cuModuleLoadDataEx");
  check(driver().api().cuModuleGetFunction(&k.nvrtc_function, k.nvrtc_module, k.entry.c_str()),
        "cuModuleGetFunction");
  const auto clang_state = written_by(k, k.function);
  const auto nvrtc_state = written_by(k, k.nvrtc_function);
  std::size_t differ = 0;
  for (std::size_t b = 0; b < clang_state.size(); b += sizeof(double)) {
    differ += std::memcmp(clang_state.data() + b, nvrtc_state.data() + b,
                          std::min(sizeof(double), clang_state.size() - b)) != 0
                  ? 1
                  : 0;
  }
  k.nvrtc_bits = differ == 0 ? "both write the same bits"
                             : format("the states differ in {} of {} 8-byte words", differ,
                                      (clang_state.size() + 7) / 8);
}

// What a second process pays to load `type`'s kernel: a fresh engine on a cache where a first
// one compiled it and had the driver link and publish its cubin; the cubin is read from disk
// (Engine::cuda_image) and loaded with cuModuleLoadDataEx. Returns the milliseconds of the load
// and where the image came from ("disk" when the cubin was there).
std::pair<double, std::string> warm_cubin_load(const engine::Target& target,
                                               const std::string& arch, const std::string& type,
                                               const std::vector<std::int64_t>& size) {
  const auto node = nodes::make(type, type, nodes::sized_params(type, size));
  const auto source = runtime::node_kernels(*node, true).at(0).source;
  const auto dir =
      std::filesystem::temp_directory_path() / ("uwjit-bench-cubin-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  engine::EngineOptions options;
  options.cache_dir = dir;
  {
    engine::Engine first(options);
    (void)first.cuda_image(first.ptx(source, target), arch);
  }
  engine::Engine second(options);
  const auto ptx = second.ptx(source, target);
  const auto image = second.cuda_image(ptx, arch);
  cuda::Module module = nullptr;
  const auto start = Clock::now();
  check(driver().api().cuModuleLoadDataEx(&module, image.bytes->data(), 0, nullptr, nullptr),
        "cuModuleLoadDataEx");
  const double ms = ms_since(start);
  (void)driver().api().cuModuleUnload(module);
  std::filesystem::remove_all(dir);
  return {ms, image.from};
}

// Milliseconds per step of a Simulation of `type` on device 0: halos filled by the halo kernel,
// the kernel, its integrals read back (which waits for the step); the fastest of `reps` runs of
// `steps` steps, after one step that loads everything.
double time_simulation(engine::Engine& engine, const std::string& type,
                       const std::vector<std::int64_t>& size, int reps, int steps) {
  runtime::SimulationOptions options;
  options.device = "cuda:0";
  runtime::Simulation simulation(engine, {nodes::make(type, type, nodes::sized_params(type, size))},
                                 options);
  simulation.step(1);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    simulation.step(steps);
    const double one = ms_since(start) / steps;
    best = r == 0 ? one : std::min(best, one);
  }
  return best;
}

// Member-steps per second of `members` heat members of n^3 (contrast 1 to 4) stepped `steps`
// steps as one batch on device 0 (EnsembleOptions::device): Ensemble::run() timed, the members
// built before it.
double time_ensemble(engine::Engine& engine, std::int64_t n, std::int64_t members,
                     std::int64_t steps) {
  runtime::EnsembleOptions options;
  options.until = runtime::StopRule::parse({format("steps:{}", steps)});
  options.device = "cuda:0";
  auto sink = std::make_shared<runtime::MemorySink>(static_cast<std::size_t>(members));
  runtime::Ensemble ensemble(
      engine, [](const runtime::Params& p) { return nodes::make("heat", "heat", p); },
      nodes::sized_params("heat", std::vector<std::int64_t>{n}),
      std::make_unique<runtime::GridSampler>(
          std::vector<runtime::ParamRange>{{"contrast", 1.0, 4.0, members}}),
      {sink}, options);
  const auto start = Clock::now();
  ensemble.run();
  return static_cast<double>(ensemble.member_steps()) / (ms_since(start) / 1e3);
}

} // namespace

void gpu_section(const Options& options, Report& report) {
  const auto probe = cuda::probe();
  if (!probe.usable || probe.devices.empty()) {
    report.not_measured(
        "gpu", "no CUDA device to run on: " +
                   (probe.usable ? std::string("the driver lists no device") : probe.problem));
    return;
  }
  Json& section = report.section("gpu");
  const auto& device = probe.devices[0];
  section["device"] = {{"name", device.name},
                       {"arch", device.arch()},
                       {"driver", cuda::version_text(probe.version.value_or(0))}};
  section["method"] =
      "device 0; each node's GPU kernel (runtime::node_kernels, gpu) compiled in process to PTX "
      "with the disk cache off, loaded with cuModuleLoadDataEx, launched back to back on the "
      "node's initial state over the whole interior as the runtime launches it (blocks of at "
      "most 128 threads fitted to the rows: codegen::cell_launch); then the same "
      "nodes stepped by a Simulation on the device (SimulationOptions::device); per round the "
      "fastest of the repetitions; a cuMemcpyDtoD of 1 GiB counts 2 GiB moved; a kernel's "
      "bytes per cell are its buffers' sizes over its cells (each read or written once); where "
      "NVRTC is installed, the same kernel's CUDA C++ form (bench/nvrtc.hpp) compiled by it for "
      "compute_XX with --fmad=false, loaded as PTX, its launches interleaved with Clang's; an "
      "ensemble of small heat grids stepped as one batch on the device (Ensemble::run timed), "
      "its bytes per cell those of the plain kernel of one member";
  engine::Target target;
  try {
    target = engine::Target::parse("cuda:" + device.arch());
  } catch (const Error&) {
    target = engine::Target::parse("cuda:sm_90"); // newer GPUs load sm_90 PTX
  }
  section["target"] = target.text();
  cuda::make_current(0);
  engine::Engine engine({.disk_cache = engine::DiskCache::off});
  const std::int64_t heat_n = options.quick ? 64 : 256;
  const std::int64_t pipe_n = options.quick ? 48 : 192;
  std::vector<DeviceKernel> kernels;
  kernels.push_back(load(engine, target, "heat", {heat_n}));
  kernels.push_back(load(engine, target, "pipe-flow", {pipe_n, pipe_n, pipe_n}));
  // The ensemble's members: their plain kernel gives the bytes a member's cell moves.
  const std::int64_t member_n = options.quick ? 8 : 16;
  const std::int64_t members = options.quick ? 16 : 256;
  const std::int64_t member_steps = options.quick ? 5 : 50;
  DeviceKernel member = load(engine, target, "heat", {member_n});
  std::string nvrtc_problem;
  try {
    const Nvrtc& nvrtc = Nvrtc::get();
    section["nvrtc"] = nvrtc.describe();
    for (auto& k : kernels) {
      load_nvrtc(nvrtc, k, target.sm());
    }
  } catch (const Error& e) {
    nvrtc_problem = e.what();
  }
  const std::vector<std::vector<std::int64_t>> sizes = {{heat_n}, {pipe_n, pipe_n, pipe_n}};
  const std::vector<std::string> types = {"heat", "pipe-flow"};

  constexpr std::size_t k_copy_bytes = std::size_t{1} << 30;
  const DeviceMemory from(k_copy_bytes);
  const DeviceMemory to(k_copy_bytes);
  check(driver().api().cuMemsetD8_v2(from.pointer(), 1, k_copy_bytes), "cuMemsetD8_v2");
  const int reps = options.quick ? 2 : 5;
  const int launches = options.quick ? 3 : 20;
  Series series;
  std::string cubin_from; // where the warm load's image came from: "disk" for a cubin
  for (int round = 0; round < options.rounds; ++round) {
    double copy_ms = 0;
    for (int r = 0; r < reps; ++r) {
      check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
      const auto start = Clock::now();
      check(driver().api().cuMemcpyDtoD_v2(to.pointer(), from.pointer(), k_copy_bytes),
            "cuMemcpyDtoD_v2");
      check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
      copy_ms = r == 0 ? ms_since(start) : std::min(copy_ms, ms_since(start));
    }
    const double copy_gbs = 2.0 * static_cast<double>(k_copy_bytes) / copy_ms / 1e6;
    series.add("copy_gb_s", copy_gbs);
    for (auto& k : kernels) {
      double ms = 0;
      double nvrtc_ms = 0; // NVRTC's kernel, interleaved with Clang's
      for (int r = 0; r < reps; ++r) {
        const double one = time_launches(k, k.function, launches);
        ms = r == 0 ? one : std::min(ms, one);
        if (k.nvrtc_function != nullptr) {
          const double other = time_launches(k, k.nvrtc_function, launches);
          nvrtc_ms = r == 0 ? other : std::min(nvrtc_ms, other);
        }
      }
      const double mlups = k.cells / ms / 1e3;
      series.add(k.name + "_mlups", mlups);
      series.add(k.name + "_fraction_of_copy", mlups * 1e6 * k.bytes_per_cell / 1e9 / copy_gbs);
      if (k.nvrtc_function != nullptr) {
        series.add(k.name + "_speed_vs_nvrtc", nvrtc_ms / ms);
      }
    }
    const double per_s = time_ensemble(engine, member_n, members, member_steps);
    series.add("ensemble_member_steps_per_s", per_s);
    series.add("ensemble_fraction_of_copy",
               per_s * member.cells * member.bytes_per_cell / 1e9 / copy_gbs);
    for (std::size_t n = 0; n < kernels.size(); ++n) {
      const double ms = time_simulation(engine, types[n], sizes[n], reps, launches);
      series.add(kernels[n].name + "_simulation_mlups", kernels[n].cells / ms / 1e3);
      const auto [load_ms, from] = warm_cubin_load(target, device.arch(), types[n], sizes[n]);
      series.add(kernels[n].name + "_warm_cubin_load_ms", load_ms);
      cubin_from = from;
    }
  }
  section["series"] = series.to_json();
  const std::string command = options.command("--sections gpu");
  report.add({.section = "gpu",
              .figure = format("{}: device-to-device copy (1 GiB)", device.name),
              .unit = "GB/s",
              .value = series.summary("copy_gb_s"),
              .command = command,
              .note = "cuMemcpyDtoD_v2; the bandwidth the kernels are measured against"});
  for (const auto& k : kernels) {
    const bool pipe = k.name.rfind("pipe-flow", 0) == 0;
    report.add({.section = "gpu",
                .figure = k.name + ": MLUPS on the GPU",
                .unit = "MLUPS",
                .value = series.summary(k.name + "_mlups"),
                .command = command,
                .note = format("{} bytes per cell", number_text(k.bytes_per_cell))});
    report.add({.section = "gpu",
                .figure = k.name + ": MLUPS of Simulation::step on the GPU",
                .unit = "MLUPS",
                .value = series.summary(k.name + "_simulation_mlups"),
                .command = command,
                .note = "the runtime's step: halo kernel, the kernel, integrals read back"});
    report.add({.section = "gpu",
                .figure = k.name + ": fraction of the copy bandwidth",
                .unit = "",
                .value = series.summary(k.name + "_fraction_of_copy"),
                .goal = pipe ? std::optional<Goal>(Goal{"≥ 0.8", 0.8, std::nullopt}) : std::nullopt,
                .command = command});
    if (k.nvrtc_function != nullptr) {
      report.add({.section = "gpu",
                  .figure = k.name + ": Clang's kernel speed relative to NVIDIA's compiler's",
                  .unit = "×",
                  .value = series.summary(k.name + "_speed_vs_nvrtc"),
                  .goal = Goal{"≥ 0.97", 0.97, std::nullopt},
                  .command = command,
                  .note = "NVRTC's time over Clang's, per round; the same cells as CUDA C++ "
                          "(--fmad=false, as uwjit compiles): " +
                          k.nvrtc_bits});
    }
    report.add({.section = "gpu",
                .figure = k.name + ": cold PTX compile, in process",
                .unit = "ms",
                .value = summarise({k.compile_ms}),
                .command = command});
    report.add({.section = "gpu",
                .figure = k.name + ": first load of its PTX (the driver's JIT)",
                .unit = "ms",
                .value = summarise({k.load_ms}),
                .command = command});
    report.add({.section = "gpu",
                .figure = k.name + ": warm load of its cubin in a second process",
                .unit = "ms",
                .value = series.summary(k.name + "_warm_cubin_load_ms"),
                .goal = Goal{"≤ 1 ms", std::nullopt, 1.0},
                .command = command,
                .note = cubin_from == "disk"
                            ? "the cubin the first process's driver linked, read from the disk "
                              "cache and loaded"
                            : "no cubin on disk (" + cubin_from + "): the PTX was loaded"});
  }
  const std::string batch = format("heat {}^3, {} members as one batch", member_n, members);
  report.add({.section = "gpu",
              .figure = batch + ": member-steps per second on the GPU",
              .unit = "member-steps/s",
              .value = series.summary("ensemble_member_steps_per_s"),
              .command = command,
              .note = format("uwjit ensemble heat --size {} --vary contrast=1:4:{} --until "
                             "steps:{} --device cuda, in process",
                             member_n, members, member_steps)});
  report.add({.section = "gpu",
              .figure = batch + ": fraction of the copy bandwidth",
              .unit = "",
              .value = series.summary("ensemble_fraction_of_copy"),
              .command = command,
              .note = format("{} bytes per cell (the member's plain kernel); the members' halo "
                             "launches, argument tables and integrals' copies included",
                             number_text(member.bytes_per_cell))});
  (void)driver().api().cuModuleUnload(member.module);
  if (!nvrtc_problem.empty()) {
    section["not_measured"] = {{"clang_vs_nvrtc", nvrtc_problem}};
  }
  for (auto& k : kernels) {
    (void)driver().api().cuModuleUnload(k.module);
    if (k.nvrtc_module != nullptr) {
      (void)driver().api().cuModuleUnload(k.nvrtc_module);
    }
  }
}

} // namespace uwjit::bench
