// The CUDA C++ form the benchmark gives NVIDIA's compiler (tools/bench/nvrtc.*): every built-in
// node's GPU kernel and the runtime's halo kernels compile with NVRTC to PTX for sm_90 with their
// entry, the warp shuffle and the double atomic, and without contraction, as uwjit's own PTX.
// Needs NVRTC (a CUDA installation, no GPU): without it the program says why and exits 77, which
// ctest reports as skipped.
#include "nvrtc.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

using uwjit::Error;
using uwjit::ErrorKind;
using uwjit::bench::cuda_cxx;
using uwjit::bench::Nvrtc;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

} // namespace

TEST_CASE("every built-in node's GPU kernel compiles with NVRTC as uwjit's does") {
  for (const std::string type : {"heat", "pipe-flow", "fvm", "mlp"}) {
    CAPTURE(type);
    const auto node = uwjit::nodes::make(
        type, type, uwjit::nodes::sized_params(type, std::vector<std::int64_t>{12}));
    for (const auto& kernel : uwjit::runtime::node_kernels(*node, true)) {
      const std::string ptx = Nvrtc::get().ptx(cuda_cxx(kernel.source, "uwjit_nvrtc"), "sm_90");
      CHECK(count(ptx, ".target sm_90") == 1);
      CHECK(count(ptx, ".entry uwjit_nvrtc(") == 1);
      CHECK(count(ptx, "shfl.sync.down.b32") > 0);  // the warp's reduction
      CHECK(count(ptx, "atom.global.add.f64") > 0); // one atomic per warp
      CHECK(count(ptx, "%laneid") > 0);
      if (type != "mlp") {                // mlp's tanh is CUDA's own, written with fma
        CHECK(count(ptx, "fma.rn") == 0); // no contraction (--fmad=false)
      }
    }
  }
}

TEST_CASE("the runtime's halo kernels compile with NVRTC") {
  for (const auto dtype : {uwjit::codegen::Dtype::f64, uwjit::codegen::Dtype::f32}) {
    for (const auto& source :
         {uwjit::runtime::halo_fill_kernel(dtype), uwjit::runtime::halo_layers_kernel(dtype)}) {
      CHECK(count(Nvrtc::get().ptx(cuda_cxx(source, "uwjit_nvrtc"), "sm_90"),
                  ".entry uwjit_nvrtc(") == 1);
    }
  }
}

TEST_CASE("a kernel of the CPU form has no CUDA C++ form") {
  const auto node = uwjit::nodes::make(
      "heat", "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{12}));
  const auto cpu = uwjit::runtime::node_kernels(*node, false).at(0);
  try {
    (void)cuda_cxx(cpu.source, "uwjit_nvrtc");
    FAIL("the CPU form was taken");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("not a kernel of the GPU form (it has 0 entries") !=
          std::string::npos);
  }
}

TEST_CASE("what NVRTC cannot compile is an error with its log") {
  try {
    (void)Nvrtc::get().ptx("extern \"C\" __global__ void f() { undeclared_thing(); }", "sm_90");
    FAIL("it compiled");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::jit);
    const std::string what = e.what();
    CHECK(what.find("NVRTC: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION") !=
          std::string::npos);
    CHECK(what.find("undeclared_thing") != std::string::npos);
  }
}

int main(int argc, char** argv) {
  try {
    std::printf("%s\n", Nvrtc::get().describe().c_str());
  } catch (const Error& e) {
    std::printf("skipped: %s\n", e.what());
    return 77; // ctest: SKIP_RETURN_CODE
  }
  doctest::Context context(argc, argv);
  return context.run();
}
