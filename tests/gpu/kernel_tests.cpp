// The GPU form on a GPU: each built-in node's GPU kernel and a 2-D node's, compiled to PTX in
// process, loaded through the CUDA driver and launched as kernel_writer.hpp says, writes the CPU
// form's state bit for bit over the whole interior and over a box off the origin; its integrals,
// summed by warp shuffles and one atomic addition per warp, agree within 1e-12. Where the driver or
// a device is missing the program says why and exits 77, which ctest reports as skipped.
// Under the tests' stand-in driver the launches are emulated (gpu_support.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include "cell_kernels.hpp"
#include "gpu_support.hpp"

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
#include <string>
#include <vector>

using uwjit::cuda::DevicePtr;
using uwjit::engine::Engine;
using uwjit::engine::Target;
using uwjit::runtime::NodeKernel;
using uwjit_gpu_test::check;
using uwjit_gpu_test::driver;

namespace {

constexpr unsigned k_block = 128; // threads on x, a multiple of 32

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

  const auto launch = uwjit::codegen::cell_launch(args, rank, k_block);
  void* arguments[] = {&args};
  check(driver().api().cuLaunchKernel(function, launch.grid[0], launch.grid[1], launch.grid[2],
                                      launch.block, 1, 1, 0, nullptr, arguments, nullptr),
        "cuLaunchKernel");
  check(driver().api().cuCtxSynchronize(), "cuCtxSynchronize");
  for (std::size_t o = 0; o < out.size(); ++o) {
    out[o]->download(call.out[o].data.get());
  }
  integrals.download(call.integrals.data());
}

} // namespace

TEST_CASE("each node's GPU kernel on the GPU writes the CPU form's state bit for bit "
          "(mlp's tanh: within 1e-12)") {
  uwjit::cuda::make_current(0);
  const Target target = uwjit_gpu_test::device_target();
  Engine engine(uwjit_gpu_test::engine_options());
  const std::vector<std::shared_ptr<const uwjit::runtime::Node>> nodes = {
      uwjit_gpu_test::built_in("heat", {45, 38, 301}),
      uwjit_gpu_test::built_in("pipe-flow", {21, 17, 133}), uwjit_gpu_test::built_in("fvm", {40}),
      uwjit_gpu_test::built_in("mlp", {5, 7, 150}), std::make_shared<uwjit_gpu_test::Shear2d>()};
  for (const auto& node : nodes) {
    CAPTURE(node->name());
    const auto cpu = uwjit::runtime::node_kernels(*node, false).at(0);
    const auto gpu = uwjit::runtime::node_kernels(*node, true).at(0);
    const auto cpu_kernel = engine.kernel(cpu.source);
    const auto ptx = engine.ptx(gpu.source, target);
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
      CHECK(uwjit_test::same_results(got, expected, uwjit_gpu_test::gpu_tolerance(*node)));
    }
    check(driver().api().cuModuleUnload(module), "cuModuleUnload");
  }
}

int main(int argc, char** argv) {
  if (!uwjit_gpu_test::device_present()) {
    return uwjit_gpu_test::k_skipped;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
