// The GPU form on a GPU: each built-in node's GPU kernel and a 2-D node's, compiled to PTX in
// process, loaded through the CUDA driver and launched as kernel_writer.hpp says, writes the CPU
// form's state bit for bit over the whole interior and over a box off the origin; its integrals,
// summed by warp shuffles and one atomic addition per warp, agree within 1e-12. Where the driver or
// a device is missing the program says why and exits 77, which ctest reports as skipped.
//
// Under the tests' stand-in driver (tests/jit/fake_libcuda.c, device "uwjit fake GPU"), which
// runs no kernel, each kernel's GPU text is compiled for this CPU with its thread registers read
// from this program and registered with the stand-in, which calls it for each launch: everything
// but the GPU itself (device memory, pointer tables, the argument struct, the launch's grid) runs,
// each thread emulated alone (so the warp shuffles are not).
#define DOCTEST_CONFIG_IMPLEMENT
#include "cell_kernels.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/cuda/device.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/cuda/probe.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <dlfcn.h>
#include <string>
#include <vector>

using uwjit::ErrorKind;
using uwjit::cuda::DevicePtr;
using uwjit::cuda::Driver;
using uwjit::engine::Engine;
using uwjit::engine::Target;
using uwjit::runtime::NodeKernel;

namespace {

constexpr unsigned k_block = 128; // threads on x, a multiple of 32

const Driver& driver() {
  return Driver::get();
}

void check(uwjit::cuda::Result result, const char* call) {
  driver().check(result, call, ErrorKind::jit);
}

// The target of device 0, or sm_90 (whose PTX newer GPUs load) when LLVM 19 does not know it.
Target device_target() {
  const auto probe = uwjit::cuda::probe();
  try {
    return Target::parse("cuda:" + probe.devices.at(0).arch());
  } catch (const uwjit::Error&) {
    return Target::parse("cuda:sm_90");
  }
}

// Launches `function` on the call's box with every buffer and table copied to the device, then
// copies the outputs and integrals back into `call`.
void launch(uwjit::cuda::Function function, uwjit_test::KernelCall& call, const NodeKernel& kernel,
            std::size_t rank) {
  using uwjit::cuda::DeviceMemory;
  std::vector<std::unique_ptr<DeviceMemory>> in, out, statics;
  std::vector<DevicePtr> in_table, out_table, static_table;
  for (const auto& b : call.in) {
    in.push_back(std::make_unique<DeviceMemory>(b.data.get(), b.bytes));
    in_table.push_back(in.back()->pointer());
  }
  for (const auto& b : call.out) {
    out.push_back(std::make_unique<DeviceMemory>(b.data.get(), b.bytes));
    out_table.push_back(out.back()->pointer());
  }
  for (const auto& b : call.statics) {
    statics.push_back(std::make_unique<DeviceMemory>(b.data.get(), b.bytes));
    static_table.push_back(statics.back()->pointer());
  }
  const DeviceMemory in_ptrs(in_table.data(), in_table.size() * sizeof(DevicePtr));
  const DeviceMemory out_ptrs(out_table.data(), out_table.size() * sizeof(DevicePtr));
  const DeviceMemory static_ptrs(static_table.data(), static_table.size() * sizeof(DevicePtr));
  const DeviceMemory extents(call.extents.data(), call.extents.size() * sizeof(uw_i64));
  const DeviceMemory params(call.params.data(), call.params.size() * sizeof(double));
  const std::vector<double> zeros(call.integrals.size(), 0.0);
  const DeviceMemory integrals(zeros.data(), zeros.size() * sizeof(double));

  uwjit_kernel_args args = call.args;
  uwjit::codegen::set_table_lengths(args, kernel.source.slots());
  args.state_in = in_ptrs.as<const void* const>();
  args.state_out = out_ptrs.as<void* const>();
  args.statics = static_ptrs.as<const void* const>();
  args.extents = extents.as<const uw_i64>();
  args.params = params.as<const double>();
  args.integrals = integrals.as<double>();
  args.check = nullptr;

  const auto grid = uwjit::codegen::cell_grid(args, rank, k_block);
  void* arguments[] = {&args};
  check(driver().api().cuLaunchKernel(function, grid[0], grid[1], grid[2], k_block, 1, 1, 0,
                                      nullptr, arguments, nullptr),
        "cuLaunchKernel");
  check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
  for (std::size_t o = 0; o < out.size(); ++o) {
    out[o]->download(call.out[o].data.get());
  }
  integrals.download(call.integrals.data());
}

// The stand-in's emulation: the registers of the thread being emulated, read by the kernel's
// text through emulated_register's address.
unsigned g_block[3];
unsigned g_thread;
unsigned g_threads;

extern "C" unsigned emulated_register(int which) {
  switch (which) {
  case 0:
  case 1:
  case 2:
    return g_block[which];
  case 3:
    return g_thread;
  case 4:
    return g_threads;
  default:
    return 0; // the lane: every thread is lane 0, and adds its own integral shares
  }
}

using EmulatedEntry = void (*)(uwjit_kernel_args);

// What the stand-in calls for a launch: every thread of the grid, one at a time.
void emulated_launch(void* entry, const void* args, unsigned gx, unsigned gy, unsigned gz,
                     unsigned bx) {
  const auto a = *static_cast<const uwjit_kernel_args*>(args);
  g_threads = bx;
  for (unsigned z = 0; z < gz; ++z) {
    for (unsigned y = 0; y < gy; ++y) {
      for (unsigned x = 0; x < gx; ++x) {
        for (unsigned t = 0; t < bx; ++t) {
          g_block[0] = x;
          g_block[1] = y;
          g_block[2] = z;
          g_thread = t;
          reinterpret_cast<EmulatedEntry>(entry)(a);
        }
      }
    }
  }
}

// The GPU text of `gpu`, for this CPU: its entry named `name`, the registers read from this
// program, shuffles giving nothing and atomics plain additions.
std::string emulation_text(const NodeKernel& gpu, const std::string& name) {
  const std::string reader = "reinterpret_cast<unsigned (*)(int)>(" +
                             std::to_string(reinterpret_cast<std::uintptr_t>(&emulated_register)) +
                             "ULL)";
  std::string text;
  const char* registers[] = {"ctaid_x", "ctaid_y", "ctaid_z", "tid_x", "ntid_x", "laneid"};
  for (int r = 0; r < 6; ++r) {
    text += "inline unsigned __nvvm_read_ptx_sreg_" + std::string(registers[r]) + "() { return " +
            reader + "(" + std::to_string(r) + "); }\n";
  }
  text += "inline int __nvvm_shfl_sync_down_i32(unsigned, int, int, int) { return 0; }\n"
          "inline double __nvvm_atom_add_gen_d(double* total, double value) {\n"
          "  const double old = *total;\n  *total += value;\n  return old;\n}\n";
  std::string body = gpu.source.body();
  const std::string placeholder(uwjit::codegen::k_entry_placeholder);
  body.replace(body.find(placeholder), placeholder.size(), name);
  return text + body;
}

// Under the stand-in driver: registers the emulation of `gpu` under the PTX entry `entry`.
void register_emulation(Engine& engine, const NodeKernel& gpu, const std::string& entry) {
  using Register = int (*)(
      const char*, void (*)(void*, const void*, unsigned, unsigned, unsigned, unsigned), void*);
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  const auto add = reinterpret_cast<Register>(dlsym(library, "uwjit_fake_cuda_register"));
  REQUIRE(reinterpret_cast<void*>(add) != nullptr);
  static std::vector<uwjit::engine::Kernel> kept; // the emulations' code stays loaded
  kept.push_back(engine.kernel(uwjit::codegen::KernelSource::from_text(
      emulation_text(gpu, "emulated_entry"), "emulated_entry", gpu.source.slots())));
  REQUIRE(add(entry.c_str(), &emulated_launch, reinterpret_cast<void*>(kept.back().function())) ==
          0);
}

bool stand_in_driver() {
  return uwjit::cuda::probe().devices.at(0).name == "uwjit fake GPU";
}

// A 2-D cell-form node (the built-in nodes are 3-D and 1-D): run-time extents, a static array
// with halos, a run-time param, two integrals.
class Shear2d final : public uwjit::runtime::Node {
public:
  Shear2d() : Node("shear-2d", "shear", uwjit::runtime::Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    auto axes = uwjit::runtime::NodeLayout::grid({9, 37}, 1, uwjit::runtime::Boundary::periodic,
                                                 uwjit::codegen::ExtentMode::runtime);
    return {.axes = axes, .fields = {{"u", uwjit::codegen::Dtype::f64}}, .integrals = {"a", "b"}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(
        uwjit::runtime::StaticArray::from_vector("w", std::vector<double>(9 * 37, 0.5), {9, 37}));
    return data;
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("w", uwjit::codegen::Dtype::f64, {{w.domain(0), 1}, {w.domain(1), 1}});
    w.integral("a");
    w.integral("b");
    w.param("gain", 0.75);
    w.for_each_cell({.indices = {"x", "y"}}, R"(      const double next =
          u(x, y) + gain * (w(x - 1, y) * u(x - 1, y) - w(x, y + 1) * u(x, y + 1)) * args->dt;
      u_out(x, y) = next;
      a += next;
      b -= next * static_cast<double>(x + 2 * y);
)");
  }
};

std::shared_ptr<const uwjit::runtime::Node> built_in(const std::string& type,
                                                     std::vector<std::int64_t> size) {
  return uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size));
}

} // namespace

TEST_CASE("each node's GPU kernel on the GPU writes the CPU form's state bit for bit") {
  uwjit::cuda::make_current(0);
  const Target target = device_target();
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::vector<std::shared_ptr<const uwjit::runtime::Node>> nodes = {
      built_in("heat", {45, 38, 301}), built_in("pipe-flow", {21, 17, 133}), built_in("fvm", {40}),
      built_in("mlp", {5, 7, 150}), std::make_shared<Shear2d>()};
  for (const auto& node : nodes) {
    CAPTURE(node->name());
    const auto cpu = uwjit::runtime::node_kernels(*node, false).at(0);
    const auto gpu = uwjit::runtime::node_kernels(*node, true).at(0);
    const auto cpu_kernel = engine.kernel(cpu.source);
    const auto ptx = engine.ptx(gpu.source, target);
    if (stand_in_driver()) {
      register_emulation(engine, gpu, ptx.info->entry);
    }
    uwjit::cuda::Module module = nullptr;
    const auto start = std::chrono::steady_clock::now();
    check(driver().api().cuModuleLoadDataEx(&module, ptx.ptx->c_str(), 0, nullptr, nullptr),
          "cuModuleLoadDataEx");
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: PTX for %s loaded (driver JIT) in %.1f ms\n", node->name().c_str(),
                target.text().c_str(), load_ms);
    uwjit::cuda::Function function = nullptr;
    check(driver().api().cuModuleGetFunction(&function, module, ptx.info->entry.c_str()),
          "cuModuleGetFunction");
    for (const auto& [begin, end] : uwjit_test::test_boxes(cpu)) {
      CAPTURE(begin);
      uwjit_test::KernelCall expected(cpu, 7, begin, end, node->static_data());
      uwjit_test::KernelCall got(gpu, 7, begin, end, node->static_data());
      REQUIRE(cpu_kernel(expected.args) == UWJIT_KERNEL_OK);
      launch(function, got, gpu, uwjit_test::domain_of(cpu).size());
      CHECK(uwjit_test::same_results(got, expected));
    }
    check(driver().api().cuModuleUnload(module), "cuModuleUnload");
  }
}

int main(int argc, char** argv) {
  const auto probe = uwjit::cuda::probe();
  if (!probe.usable || probe.devices.empty()) {
    std::printf("skipped: no CUDA device to run on: %s\n",
                probe.usable ? "the driver lists no device" : probe.problem.c_str());
    return 77; // ctest: SKIP_RETURN_CODE
  }
  std::printf("running on device 0: %s (%s), driver %s\n", probe.devices[0].name.c_str(),
              probe.devices[0].arch().c_str(),
              uwjit::cuda::version_text(probe.version.value_or(0)).c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
