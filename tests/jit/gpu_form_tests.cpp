// The GPU form of cell-form kernels, without a GPU: the built-in nodes' GPU kernels compile to
// PTX with their entry and nothing left to link, a node that writes its own loops is refused, and
// the GPU form's text runs on the CPU under an emulation of the GPU's thread registers, giving
// the CPU form's state bit for bit (fvm's too, whose CPU form scatters each face's flux and whose
// GPU form gathers each cell's). The emulation runs the GPU form one thread at a time: each
// thread adds its own integral share, so the warp shuffles are not exercised here (they need a
// GPU: the gpu tests).
#include "cell_kernels.hpp"
#include "sandbox.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using uwjit::Error;
using uwjit::codegen::KernelSource;
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

// The thread registers of a GPU, emulated: the GPU form's text, compiled for this CPU, is called
// once per thread of the launch kernel_writer.hpp describes (blocks of k_threads on x over the last
// axis of the box, the axis before on y, the first of three on z). A lane sees no other lane's
// value and is lane 0, so each thread adds its own share of an integral.
constexpr int k_threads = 8;

std::string emulated(const NodeKernel& gpu, int rank) {
  std::string body = R"(namespace {
unsigned emu_block[3];
unsigned emu_thread;
} // namespace
inline unsigned __nvvm_read_ptx_sreg_ctaid_x() { return emu_block[0]; }
inline unsigned __nvvm_read_ptx_sreg_ctaid_y() { return emu_block[1]; }
inline unsigned __nvvm_read_ptx_sreg_ctaid_z() { return emu_block[2]; }
inline unsigned __nvvm_read_ptx_sreg_tid_x() { return emu_thread; }
inline unsigned __nvvm_read_ptx_sreg_ntid_x() { return THREADS; }
inline unsigned __nvvm_read_ptx_sreg_laneid() { return 0; }
inline int __nvvm_shfl_sync_down_i32(unsigned, int, int, int) { return 0; }
inline double __nvvm_atom_add_gen_d(double* total, double value) {
  const double old = *total;
  *total += value;
  return old;
}
)";
  std::string text = gpu.source.body();
  const std::string placeholder(uwjit::codegen::k_entry_placeholder);
  text.replace(text.find(placeholder), placeholder.size(), "gpu_form");
  body += text;
  body += "extern \"C\" int launch(const uwjit_kernel_args* args) {\n"
          "  const uw_i64 last = args->update_end[RANK - 1] - args->update_begin[RANK - 1];\n"
          "  const uw_i64 y = RANK > 1 ? args->update_end[RANK - 2] - args->update_begin[RANK - 2] "
          ": 1;\n"
          "  const uw_i64 z = RANK > 2 ? args->update_end[0] - args->update_begin[0] : 1;\n"
          "  for (uw_i64 bz = 0; bz < z; ++bz)\n"
          "    for (uw_i64 by = 0; by < y; ++by)\n"
          "      for (uw_i64 bx = 0; bx * THREADS < last; ++bx)\n"
          "        for (unsigned t = 0; t < THREADS; ++t) {\n"
          "          emu_block[0] = unsigned(bx);\n"
          "          emu_block[1] = unsigned(by);\n"
          "          emu_block[2] = unsigned(bz);\n"
          "          emu_thread = t;\n"
          "          gpu_form(*args);\n"
          "        }\n"
          "  return 0;\n"
          "}\n";
  for (std::size_t at; (at = body.find("RANK")) != std::string::npos;) {
    body.replace(at, 4, std::to_string(rank));
  }
  for (std::size_t at; (at = body.find("THREADS")) != std::string::npos;) {
    body.replace(at, 7, std::to_string(k_threads) + "u");
  }
  return body;
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
    REQUIRE(kernels.size() == simulation.kernels().size());
    CHECK(engine.key_of(kernels[0].source).hex() == simulation.kernels()[0].info.key);
  }
}

namespace {

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

} // namespace

TEST_CASE("the GPU form, run thread by thread on the CPU, gives the CPU form's state bit for bit") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const std::vector<std::shared_ptr<const uwjit::runtime::Node>> nodes = {
      small("heat"), small("pipe-flow"), small("fvm"), small("mlp"), std::make_shared<Shear2d>()};
  for (const auto& built : nodes) {
    CAPTURE(built->name());
    const auto cpu = uwjit::runtime::node_kernels(*built, false).at(0);
    const auto gpu = uwjit::runtime::node_kernels(*built, true).at(0);
    const auto extent = uwjit_test::domain_of(cpu);
    const int rank = static_cast<int>(extent.size());
    const auto cpu_kernel = engine.kernel(cpu.source);
    const auto launch =
        engine.kernel(KernelSource::from_text(emulated(gpu, rank), "launch", gpu.source.slots()));
    auto boxes = uwjit_test::test_boxes(extent);
    if (!cpu.writer.updates_box()) {
      boxes.resize(1); // fvm's CPU form scatters over every face: the whole interior only
    }
    for (const auto& [begin, end] : boxes) {
      CAPTURE(begin);
      uwjit_test::KernelCall expected(cpu, 42, begin, end, built->static_data());
      uwjit_test::KernelCall got(gpu, 42, begin, end, built->static_data());
      REQUIRE(cpu_kernel(expected.args) == 0);
      REQUIRE(launch(got.args) == 0);
      CHECK(got.same_outputs(expected));
      REQUIRE(expected.integrals.size() == got.integrals.size());
      for (std::size_t i = 0; i < got.integrals.size(); ++i) {
        CHECK(std::abs(got.integrals[i] - expected.integrals[i]) <=
              1e-12 * std::abs(expected.integrals[i]));
        CHECK(expected.integrals[i] != 0.0);
      }
    }
  }
}
