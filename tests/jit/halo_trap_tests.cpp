// runtime/ and codegen/: a node whose kernel reads beyond its declared halo never runs silently
// wrong by default. The Allen-Cahn mistake (a 2-D grid from NodeLayout::grid({nx, ny}), halo 0,
// whose cell reads u(i - 1, j), u(i + 1, j), u(i, j - 1), u(i, j + 1)) is refused when the layout
// is read (periodic boundaries), when the kernel is written (the default boundary), or by the
// first step (a reach the text hides); the same node with its halo runs. These tests really JIT.
#include "expect.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using uwjit::codegen::Dtype;
using uwjit::codegen::KernelWriter;
using uwjit::engine::Engine;
using uwjit::runtime::Boundary;
using uwjit::runtime::Node;
using uwjit::runtime::NodeLayout;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;
using uwjit::runtime::StaticArray;
using uwjit::runtime::StaticData;
using uwjit_test::contains;
using uwjit_test::usage_error;

namespace {

constexpr std::int64_t k_n = 16;

// Allen-Cahn, u_t = eps^2 lap(u) + u - u^3, explicit Euler; the sum of u as an integral.
constexpr const char* k_stencil =
    "      const double c = u(i, j);\n"
    "      const double lap = u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * c;\n"
    "      const double next = c + args->dt * (eps2 * lap + c - c * c * c);\n"
    "      u_out(i, j) = next;\n"
    "      total += next;\n";

// The same stencil, its offsets in variables: the text does not show how far it reads.
constexpr const char* k_hidden =
    "      const uw_i64 left = i - shift, right = i + shift, down = j - shift, up = j + shift;\n"
    "      const double c = u(i, j);\n"
    "      const double lap = u(left, j) + u(right, j) + u(i, down) + u(i, up) - 4.0 * c;\n"
    "      const double next = c + args->dt * (eps2 * lap + c - c * c * c);\n"
    "      u_out(i, j) = next;\n"
    "      total += next;\n";

class AllenCahn final : public Node {
public:
  // halo < 0: the mistake, NodeLayout::grid({nx, ny}) with its default halo.
  AllenCahn(int halo, Boundary boundary, std::string cell)
      : Node("allen-cahn", "ac", Params{{"halo", std::int64_t{halo}}}), m_halo(halo),
        m_boundary(boundary), m_cell(std::move(cell)) {}

  NodeLayout layout() const override {
    auto axes = m_halo < 0 ? NodeLayout::grid({k_n, k_n}) : NodeLayout::grid({k_n, k_n}, m_halo);
    for (auto& axis : axes) {
      axis.boundary = m_boundary;
    }
    return {.axes = std::move(axes), .fields = {{"u"}}, .integrals = {"total"}, .dt = 0.1};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < k_n; ++i) {
      for (std::int64_t j = 0; j < k_n; ++j) {
        state["u"].at<double>(i, j) =
            0.9 * std::sin(0.4 * static_cast<double>(i)) * std::cos(0.3 * static_cast<double>(j));
      }
    }
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.integral("total");
    w.param("eps2", 0.5);
    w.helpers("constexpr long long shift = 1;\n");
    w.for_each_cell({.indices = {"i", "j"}}, m_cell);
  }

private:
  int m_halo;
  Boundary m_boundary;
  std::string m_cell;
};

// A 1-D node that reads its neighbour through a table of indices (a static array "from"), as an
// unstructured or remapped scheme does: how far it reads depends on the data, not the text.
class Gather final : public Node {
public:
  Gather() : Node("gather", "gather", Params{}) {}
  NodeLayout layout() const override {
    return {.axes = NodeLayout::grid({8}, 1), .fields = {{"u"}}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 8; ++i) {
      state["u"].at<double>(i) = static_cast<double>(i);
    }
  }
  StaticData build_static_data() const override {
    StaticData data;
    data.add(
        StaticArray::from_vector("from", std::vector<std::int64_t>{-1, 0, 1, 2, 3, 4, 5, 6}, {8}));
    return data;
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("from", Dtype::i64, {{w.domain(0)}});
    w.for_each_cell({.indices = {"i"}}, "      u_out(i) = u(from(i));\n");
  }
};

uwjit::runtime::SimulationOptions checked() {
  uwjit::runtime::SimulationOptions options;
  options.checked = true;
  return options;
}

// The Error(kernel) that stepping `sim` raises (its message), or "" if none.
std::string kernel_error(Simulation& sim, std::int64_t steps) {
  try {
    sim.step(steps);
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::kernel);
    return error.what();
  }
  return "";
}

} // namespace

TEST_CASE("the Allen-Cahn mistake, halo 0 with periodic boundaries, is refused when the layout is "
          "read, naming node, axis and halo") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AllenCahn>(-1, Boundary::periodic, k_stencil);
  const std::string message = usage_error([&] { Simulation sim(engine, {node}); });
  CHECK(contains(message, "node \"ac\": axis 0 (nx): a periodic boundary with halo 0 fills "
                          "nothing, and a kernel that reads across the face"));
  CHECK(contains(message, "DomainAxis::halo, NodeLayout::grid(cells, 1, boundary)"));
  // uwjit warm writes the same kernels: it refuses the same layout.
  CHECK(usage_error([&] { (void)uwjit::runtime::node_kernels(*node, false); }) == message);
  // A dirichlet or neumann face fills halo cells too.
  for (const Boundary boundary : {Boundary::both(uwjit::runtime::BoundaryFace::dirichlet(1)),
                                  Boundary{.low = uwjit::runtime::BoundaryFace::edge(),
                                           .high = uwjit::runtime::BoundaryFace::neumann(0)}}) {
    const auto walled = std::make_shared<AllenCahn>(-1, boundary, k_stencil);
    CHECK(contains(usage_error([&] { Simulation sim(engine, {walled}); }),
                   "axis 0 (nx): a " + to_string(boundary) + " boundary with halo 0"));
  }
}

TEST_CASE("the Allen-Cahn mistake with the default boundary is refused when the kernel is "
          "written, naming node, field, axis and halo") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AllenCahn>(-1, Boundary::edge, k_stencil);
  const std::string expected =
      "kernel of \"ac\": for_each_cell(): u(i - 1, j) at line 2, column 26 of the cell's text "
      "reads \"u\" 1 cell beyond the interior along domain axis 0 (nx), whose halo is 0: every "
      "cell runs the text, so the cells next to the low face would read outside its layout. "
      "Declare a halo of at least 1 on that axis (DomainAxis::halo, NodeLayout::grid(cells, 1); "
      "in Python uwjit.grid(cells, halo=1))";
  CHECK(usage_error([&] { Simulation sim(engine, {node}); }) == expected);
  CHECK(usage_error([&] { Simulation sim(engine, {node}, checked()); }) == expected);
  CHECK(usage_error([&] { (void)uwjit::runtime::node_kernels(*node, true); }) == expected);
  CHECK(engine.stats().get(uwjit::cache::Stat::compiles) == 0); // refused before any compile
}

TEST_CASE("a reach the text does not show fails the first step by default, naming node, field, "
          "axis and halo; the node keeps its state") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<AllenCahn>(-1, Boundary::edge, k_hidden)});
  CHECK_FALSE(sim.checked());
  REQUIRE(sim.kernel_reports()[0].first_step_check.has_value());
  const double before = sim.field("ac", "u").at<double>(3, 4);
  const std::string message = kernel_error(sim, 2);
  CHECK(contains(message, "node \"ac\", step 0: kernel read \"u\" at ("));
  CHECK((contains(message, "at (-1, 0), outside its layout (halo 0 on axis 0)") ||
         contains(message, "at (0, -1), outside its layout (halo 0 on axis 1)")));
  CHECK(contains(message, "; found by the check of the first step, which a kernel gets when its "
                          "text does not show its reads within their halos: declare the halos "
                          "the kernel reads (checked mode checks every step)"));
  CHECK(sim.steps_taken() == 0);
  CHECK(sim.field("ac", "u").at<double>(3, 4) == before);
  // Until its halos are declared, every first step fails alike.
  CHECK(contains(kernel_error(sim, 1), "node \"ac\", step 0: kernel read \"u\""));
}

TEST_CASE("with the halo it reads, the node runs; a kernel the text cannot judge runs its first "
          "step checked and then its own kernel, the state bit for bit as checked mode's") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation shown(engine, {std::make_shared<AllenCahn>(1, Boundary::periodic, k_stencil)});
  CHECK_FALSE(shown.kernel_reports()[0].first_step_check.has_value());
  CHECK(engine.stats().get(uwjit::cache::Stat::compiles) == 1);
  Simulation hidden(engine, {std::make_shared<AllenCahn>(1, Boundary::periodic, k_hidden)});
  REQUIRE(hidden.kernel_reports()[0].first_step_check.has_value());
  const auto& probe = *hidden.kernel_reports()[0].first_step_check;
  CHECK(probe.key != hidden.kernel_reports()[0].info.key);
  CHECK(engine.stats().get(uwjit::cache::Stat::compiles) == 3); // the kernel and its check
  Simulation careful(engine, {std::make_shared<AllenCahn>(1, Boundary::periodic, k_hidden)},
                     checked());
  CHECK_FALSE(careful.kernel_reports()[0].first_step_check.has_value());
  CHECK(careful.kernel_reports()[0].info.key == probe.key); // the same checked kernel
  shown.step(6);
  hidden.step(6);
  careful.step(6);
  CHECK(hidden.field("ac", "u").interior_equals(shown.field("ac", "u")));
  CHECK(hidden.field("ac", "u").interior_equals(careful.field("ac", "u")));
  CHECK(std::isfinite(hidden.integrals("ac")[0]));
  CHECK(hidden.integrals("ac")[0] == doctest::Approx(shown.integrals("ac")[0]).epsilon(1e-12));
}

TEST_CASE("reads through a table are checked again on the first step after the table is rebound") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<Gather>()});
  REQUIRE(sim.kernel_reports()[0].first_step_check.has_value());
  CHECK(kernel_error(sim, 3).empty()); // -1 is the halo cell
  CHECK(sim.field("gather", "u").at<double>(2) == 0.0);
  // The same shape: the same kernel, no compile; its next step is checked again.
  const auto rebound = sim.rebind_static(
      "gather",
      StaticArray::from_vector("from", std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 9}, {8}));
  CHECK_FALSE(rebound.new_kernel);
  CHECK(kernel_error(sim, 1) ==
        "node \"gather\", step 3: kernel read \"u\" at (9), outside its layout (halo 1 on axis "
        "0); found by the check of the first step, which a kernel gets when its text does not "
        "show its reads within their halos: declare the halos the kernel reads (checked mode "
        "checks every step)");
  CHECK(sim.steps_taken() == 3);
}

TEST_CASE("the built-in nodes' cell texts show their reads within their halos; fvm's own loops "
          "get a first-step check") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> runs = {
      {"heat", {10, 8, 6}}, {"pipe-flow", {8, 10, 10}}, {"mlp", {5}}, {"fvm", {8}}};
  for (const auto& [type, size] : runs) {
    CAPTURE(type);
    const auto node = uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size));
    for (const auto& kernel : uwjit::runtime::node_kernels(*node, false)) {
      CHECK(kernel.writer.halo_reads() == (type == "fvm" ? uwjit::codegen::HaloReads::unknown
                                                         : uwjit::codegen::HaloReads::within));
    }
    Simulation sim(engine, {node});
    CHECK(sim.kernel_reports()[0].first_step_check.has_value() == (type == "fvm"));
    CHECK(kernel_error(sim, 2).empty());
  }
}
