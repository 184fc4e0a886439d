// The GPU form of cell-form kernels, without a GPU: the built-in nodes' GPU kernels compile to
// PTX with their entry and nothing left to link, a node that writes its own loops is refused, and
// a node's kernels outside a simulation are the ones it requests. That the GPU form computes the
// CPU form's state is tests/gpu/kernel_tests.cpp's (on a GPU, or emulated under the stand-in
// driver in every run). The emulation runs the GPU form one thread at a time: each
// thread adds its own integral share, so the warp shuffles are not exercised here (they need a
// GPU: the gpu tests).
#include "sandbox.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using uwjit::Error;
using uwjit::engine::DiskCache;
using uwjit::engine::Engine;
using uwjit::engine::EngineOptions;
using uwjit::engine::Target;
using uwjit::runtime::NodeKernel;
using uwjit_test::ScopedEnv;

namespace {

// Odd extents, so that thread blocks overhang the box.
std::shared_ptr<const uwjit::nodes::BuiltinNode> small(const std::string& type) {
  const std::vector<std::int64_t> size = type == "pipe-flow" ? std::vector<std::int64_t>{5, 9, 11}
                                         : type == "heat"    ? std::vector<std::int64_t>{5, 6, 13}
                                         : type == "fvm"     ? std::vector<std::int64_t>{7}
                                                             : std::vector<std::int64_t>{3, 4, 11};
  auto params = uwjit::nodes::sized_params(type, size);
  if (type == "heat") {
    params.set("contrast", 3.0);
  }
  return uwjit::nodes::make(type, type, params);
}

} // namespace

TEST_CASE("the built-in nodes' GPU kernels are PTX with their entry and nothing to link") {
  ScopedEnv cuda("UWJIT_CUDA_PATH", UWJIT_TEST_FAKE_CUDA); // mlp's tanh needs libdevice
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const Target sm90 = Target::parse("cuda:sm_90");
  for (const std::string type : {"heat", "pipe-flow", "fvm", "mlp"}) {
    CAPTURE(type);
    const auto kernels = uwjit::runtime::node_kernels(*small(type), true);
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].writer.is_gpu());
    const auto ptx = engine.ptx(kernels[0].source, sm90);
    const std::string& text = *ptx.ptx;
    CHECK(text.find(".target sm_90\n") != std::string::npos);
    CHECK(text.find(".visible .entry " + ptx.info->entry + "(") != std::string::npos);
    CHECK(text.find(".extern") == std::string::npos); // no call to an undefined function
    CHECK(text.find("fma.rn") == std::string::npos);  // contraction off, as on CPUs
    // The integrals: a warp's sum by shuffles, one atomic addition per warp.
    CHECK(text.find("shfl.sync.down.b32") != std::string::npos);
    CHECK(text.find("atom.global.add.f64") != std::string::npos);
  }
}

namespace {

// A node whose kernel walks its cells itself (body()): CPUs only.
class OwnLoops final : public uwjit::runtime::Node {
public:
  OwnLoops() : Node("own-loops", "own", uwjit::runtime::Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 8, .name = "n"}}, .fields = {{"u", uwjit::codegen::Dtype::f64}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.body("    for (uw_i64 i = 0; i < n; ++i) {\n      u_out(i) = 2.0 * u(i);\n    }\n");
  }
};

} // namespace

TEST_CASE("a node whose kernel writes its own loops is refused for a GPU, naming the way out") {
  const OwnLoops node;
  CHECK(uwjit::runtime::node_kernels(node, false).size() == 1); // fine on a CPU
  try {
    (void)uwjit::runtime::node_kernels(node, true);
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    CHECK(std::string(error.what()) ==
          "kernel of \"own\": it writes its own loops (body()), which run on CPUs only; a kernel "
          "that runs on a GPU gives the update of one cell with for_each_cell()");
  }
}

TEST_CASE("a node's kernels for the host are the ones its simulation requests") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  for (const std::string type : {"heat", "pipe-flow", "mlp", "fvm"}) {
    CAPTURE(type);
    const auto built = small(type);
    const uwjit::runtime::Simulation simulation(
        engine, std::vector<std::shared_ptr<const uwjit::runtime::Node>>{built}, {});
    const auto kernels = uwjit::runtime::node_kernels(*built, false);
    REQUIRE(kernels.size() == simulation.kernel_reports().size());
    CHECK(engine.key_of(kernels[0].source).hex() == simulation.kernel_reports()[0].info.key);
  }
}
