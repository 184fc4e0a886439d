// A Simulation on a CUDA device (SimulationOptions::device): state and static arrays in device
// memory, halos filled by the halo kernel, kernels launched there. Each node's state after some
// steps is the CPU run's bit for bit (mlp's within 1e-12: gpu_tolerance), its integrals within
// 1e-12; static arrays rebound with the same shape are uploaded with no compile; a checkpoint
// written on the device restores there and goes on as an uninterrupted CPU run. Under the
// stand-in driver the launches are emulated (gpu_support.hpp).
#include "gpu_support.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using uwjit::engine::Engine;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;
using Nodes = std::vector<std::shared_ptr<const uwjit::runtime::Node>>;

namespace {

SimulationOptions on(const std::string& device) {
  SimulationOptions options;
  options.device = device;
  options.threads = 1;
  return options;
}

std::shared_ptr<const uwjit::runtime::Node> heat(const std::string& boundary) {
  auto params = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{11, 9, 13});
  params.set("boundary", uwjit::runtime::Value(boundary));
  return uwjit::nodes::make("heat", "heat", params);
}

// Whether every state field of `got` holds the bytes of `expected`'s (for a node with a
// gpu_tolerance, values within it), and its integrals agree within 1e-12 (relative; absolute for
// those near 0).
bool same_state(const Simulation& got, const Simulation& expected) {
  bool same = true;
  for (const auto& node : expected.nodes()) {
    const double tolerance = uwjit_gpu_test::gpu_tolerance(*node);
    for (const auto& f : node->layout().fields) {
      const auto& a = got.field(node->name(), f.name);
      const auto& b = expected.field(node->name(), f.name);
      std::vector<std::byte> x(static_cast<std::size_t>(a.interior_count()) *
                               uwjit::codegen::size_of(a.dtype()));
      std::vector<std::byte> y(x.size());
      a.copy_interior_to(x);
      b.copy_interior_to(y);
      bool equal = x == y;
      if (!equal && tolerance > 0 && a.dtype() == uwjit::codegen::Dtype::f64) {
        equal = true;
        for (std::size_t at = 0; at < x.size(); at += sizeof(double)) {
          double u = 0;
          double v = 0;
          std::memcpy(&u, x.data() + at, sizeof u);
          std::memcpy(&v, y.data() + at, sizeof v);
          equal = equal && std::abs(u - v) <= tolerance * std::max(std::abs(v), 1.0);
        }
      }
      if (!equal) {
        MESSAGE("node " << node->name() << ": field " << f.name << " differs");
        same = false;
      }
    }
    const auto gi = got.integrals(node->name());
    const auto ei = expected.integrals(node->name());
    for (std::size_t i = 0; i < ei.size(); ++i) {
      if (std::abs(gi[i] - ei[i]) > 1e-12 * std::max(std::abs(ei[i]), 1.0)) {
        MESSAGE("node " << node->name() << ": integral " << i << " is " << gi[i] << ", not "
                        << ei[i]);
        same = false;
      }
    }
  }
  return same;
}

} // namespace

TEST_CASE("a simulation on the CUDA device steps as on the CPU: the same state bit for bit (mlp: "
          "within 1e-12), integrals within 1e-12") {
  Engine engine(uwjit_gpu_test::engine_options());
  const std::vector<Nodes> runs = {
      {heat("insulating")},
      {heat("fixed")},
      {heat("periodic")},
      {uwjit_gpu_test::built_in("pipe-flow", {12, 11, 17})},
      {uwjit_gpu_test::built_in("fvm", {24})},
      {uwjit_gpu_test::built_in("mlp", {5, 7, 33})},
      {std::make_shared<uwjit_gpu_test::Shear2d>()},
      // Two nodes in one simulation, each with its kernels and halo kernel.
      {heat("fixed"), std::make_shared<uwjit_gpu_test::Shear2d>()},
      // A node reading another's field (its halos filled on the device), before and after it.
      {std::make_shared<uwjit_gpu_test::Shear2d>(), std::make_shared<uwjit_gpu_test::Carried2d>()},
      {std::make_shared<uwjit_gpu_test::Carried2d>(), std::make_shared<uwjit_gpu_test::Shear2d>()},
  };
  for (const auto& nodes : runs) {
    CAPTURE(nodes[0]->name());
    CAPTURE(nodes.size());
    Simulation cpu(engine, nodes, on("cpu"));
    Simulation gpu(engine, nodes, on("cuda"));
    CHECK(gpu.device().rfind("cuda:0 (", 0) == 0);
    CHECK(cpu.device() == "cpu");
    CHECK(same_state(gpu, cpu)); // the initial state, uploaded and read back
    cpu.step(4);
    gpu.step(2);
    gpu.step(2);
    CHECK(gpu.steps_taken() == 4);
    CHECK(same_state(gpu, cpu));
    // The snapshot reads the device's state too.
    const std::string field = nodes[0]->layout().fields[0].name;
    const auto snapshot = gpu.gathered();
    const auto& from_gpu = snapshot.field(nodes[0]->name(), field);
    const auto& from_field = gpu.field(nodes[0]->name(), field);
    const std::size_t bytes = static_cast<std::size_t>(from_field.interior_count()) *
                              uwjit::codegen::size_of(from_field.dtype());
    std::vector<std::byte> x(bytes);
    std::vector<std::byte> y(bytes);
    from_gpu.copy_interior_to(x);
    from_field.copy_interior_to(y);
    CHECK(x == y);
  }
}

TEST_CASE("a maximum integral on the CUDA device is the CPU's bit for bit, its warps and blocks "
          "combined by one atomic maximum each") {
  Engine engine(uwjit_gpu_test::engine_options());
  const Nodes nodes = {std::make_shared<uwjit_gpu_test::Peaks2d>()};
  Simulation cpu(engine, nodes, on("cpu"));
  Simulation gpu(engine, nodes, on("cuda"));
  for (int step = 0; step < 3; ++step) {
    cpu.step(1);
    gpu.step(1);
    CHECK(same_state(gpu, cpu));
    const auto expected = cpu.integrals("peaks");
    const auto got = gpu.integrals("peaks");
    REQUIRE(got.size() == 3);
    CHECK(got[1] > 0.0);
    CHECK(std::memcmp(&got[1], &expected[1], sizeof(double)) == 0);
    CHECK(std::memcmp(&got[2], &expected[2], sizeof(double)) == 0);
  }
}

TEST_CASE("static arrays rebound on the CUDA device are uploaded, with no compile") {
  Engine engine(uwjit_gpu_test::engine_options());
  const Nodes nodes = {std::make_shared<uwjit_gpu_test::Shear2d>()};
  Simulation cpu(engine, nodes, on("cpu"));
  Simulation gpu(engine, nodes, on("cuda"));
  cpu.step(1);
  gpu.step(1);
  std::vector<double> w(9 * 37);
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = 0.25 + 0.01 * static_cast<double>(i % 17);
  }
  const auto array = uwjit::runtime::StaticArray::from_vector("w", w, {9, 37});
  CHECK_FALSE(cpu.rebind_static("shear", array).new_kernel);
  const auto rebound = gpu.rebind_static("shear", array);
  CHECK_FALSE(rebound.new_kernel);
  CHECK(rebound.report.info.key == gpu.kernel_reports()[0].info.key);
  cpu.step(3);
  gpu.step(3);
  CHECK(same_state(gpu, cpu));
}

TEST_CASE("a checkpoint written on the CUDA device restores there and goes on as on the CPU") {
  Engine engine(uwjit_gpu_test::engine_options());
  const Nodes nodes = {uwjit_gpu_test::built_in("pipe-flow", {12, 11, 17})};
  const auto path = std::filesystem::temp_directory_path() /
                    ("uwjit-gpu-checkpoint-" + std::to_string(getpid()) + ".ckpt");
  Simulation cpu(engine, nodes, on("cpu"));
  cpu.step(5);
  {
    Simulation gpu(engine, nodes, on("cuda"));
    gpu.step(3);
    gpu.checkpoint(path);
  }
  Simulation restored = Simulation::restore(engine, path, uwjit::nodes::factory(), on("cuda"));
  std::filesystem::remove(path);
  CHECK(restored.device().rfind("cuda:0", 0) == 0);
  restored.step(2);
  CHECK(same_state(restored, cpu));
}

// A 2-D cell-form node of `rows` x 2 cells that copies its field.
class Rows final : public uwjit::runtime::Node {
public:
  explicit Rows(std::int64_t rows) : Node("rows", "rows", uwjit::runtime::Params{}), m_rows(rows) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes =
                uwjit::runtime::NodeLayout::grid({m_rows, 2}, 1, uwjit::runtime::Boundary::edge),
            .fields = {{"u", uwjit::codegen::Dtype::f64}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.for_each_cell({.indices = {"x", "y"}}, "      u_out(x, y) = u(x, y);\n");
  }

private:
  std::int64_t m_rows;
};

TEST_CASE("what cannot run on a CUDA device is refused, naming what to do") {
  Engine engine(uwjit_gpu_test::engine_options());
  Nodes nodes = {heat("insulating")};
  auto refusal = [&](const SimulationOptions& options) -> std::string {
    try {
      const Simulation simulation(engine, nodes, options);
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::usage);
      return error.what();
    }
    return "no error";
  };
  CHECK(refusal(on("gpu")) ==
        "simulation: device \"gpu\": expected \"cpu\", \"cuda\" (device 0, or under MPI the "
        "rank's place on its node) or \"cuda:N\" (device N)");
  CHECK(refusal(on("cuda:-1")).find("expected \"cpu\"") != std::string::npos);
  CHECK(refusal(on("cuda:4096"))
            .find("device cuda:4096 was asked for, but the NVIDIA driver "
                  "lists ") != std::string::npos);
  SimulationOptions checked = on("cuda");
  checked.checked = true;
  CHECK(refusal(checked).find("checked mode runs on CPUs only") != std::string::npos);
  // More rows than a launch's grid has along y; as many run.
  nodes = {std::make_shared<Rows>(65536)};
  CHECK(refusal(on("cuda")) ==
        "simulation: node \"rows\" has 65536 cells along axis 0 (nx); on a GPU every axis but "
        "the last may have at most 65535: shard the domain along it "
        "(SimulationOptions::shard_axes, --shard) or run on \"cpu\"");
  CHECK(refusal(on("cpu")) == "no error");
  nodes = {std::make_shared<Rows>(65535)};
  CHECK(refusal(on("cuda")) == "no error");
}

TEST_CASE("a simulation built on one thread steps on another") {
  Engine engine(uwjit_gpu_test::engine_options());
  const Nodes nodes = {heat("periodic")};
  Simulation cpu(engine, nodes, on("cpu"));
  Simulation gpu(engine, nodes, on("cuda"));
  cpu.step(3);
  std::exception_ptr failed;
  std::thread([&] { // the device's context is not current there until the simulation binds it
    try {
      gpu.step(3);
    } catch (...) {
      failed = std::current_exception();
    }
  })
      .join();
  REQUIRE_FALSE(failed);
  CHECK(same_state(gpu, cpu));
}
