// runtime/: checked mode (SimulationOptions::checked, UWJIT_CHECK): each mistake a node author
// can make silently is made on purpose by a small node, and checked mode names it; unchecked, the
// first step still checks the reads of kernels whose text does not show them, and the other
// mistakes pass as they always did; the built-in nodes give the same state checked or not. These
// tests really JIT.
#include "expect.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using uwjit::codegen::Dtype;
using uwjit::codegen::KernelWriter;
using uwjit::engine::Engine;
using uwjit::runtime::Node;
using uwjit::runtime::NodeLayout;
using uwjit::runtime::Params;
using uwjit::runtime::Replication;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;
using uwjit::runtime::StaticArray;
using uwjit::runtime::StaticData;

namespace {

// The mistakes of a 2-D advection node (8 x 6 cells, upwind along y, velocity as a static array,
// total mass as an integral), each made on purpose.
enum class Mistake {
  none,          // correct: halo 1, update box honoured
  state_halo,    // reads u(i, j - 1) with state halo 0
  static_halo,   // reads vel(i, j - 1) with vel declared without halo
  shard_axis,    // a shard-mode x-profile of 8 cells, whose one axis stands for y (6 cells)
  ignored_box,   // declares update_box() and updates the whole interior anyway
  unfilled_halo, // reads a halo cell of its output buffer, which nobody fills
};

class AdvectNode final : public Node {
public:
  explicit AdvectNode(Mistake mistake)
      : Node("advect", "advect", Params{{"mistake", static_cast<std::int64_t>(mistake)}}),
        m_mistake(mistake) {}

  NodeLayout layout() const override {
    const int halo = m_mistake == Mistake::state_halo ? 0 : 1;
    return {.axes = NodeLayout::grid({8, 6}, halo), .fields = {{"u"}}, .integrals = {"mass"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 8; ++i) {
      for (std::int64_t j = 0; j < 6; ++j) {
        state["u"].at<double>(i, j) = 1.0 + static_cast<double>(i) + 0.25 * static_cast<double>(j);
      }
    }
  }
  StaticData build_static_data() const override {
    StaticData data;
    data.add(StaticArray::from_vector("vel", std::vector<double>(48, 0.5), {8, 6}));
    const auto replication =
        m_mistake == Mistake::shard_axis ? Replication::shard : Replication::replicate;
    const auto shard_axis = m_mistake == Mistake::shard_axis ? std::optional<int>(0) : std::nullopt;
    data.add(StaticArray::from_vector("profile", std::vector<double>(8, 1.0), {8}, replication,
                                      shard_axis));
    return data;
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.integral("mass");
    const int vel_halo = m_mistake == Mistake::static_halo ? 0 : 1;
    w.static_array("vel", Dtype::f64, {{w.domain(0), vel_halo}, {w.domain(1), vel_halo}});
    w.static_array("profile", Dtype::f64, {{w.domain(0), 0}});
    switch (m_mistake) {
    case Mistake::state_halo:
    case Mistake::static_halo: {
      // Row 0 is a fixed inflow row; the rows after it are advected along y.
      const std::string upwind = m_mistake == Mistake::state_halo ? "u(i, j - 1)"
                                                                  : "u(i, j - 1) "
                                                                    "* vel(i, j - "
                                                                    "1) / 0.5";
      w.body("    for (uw_i64 i = 1; i < nx; ++i) {\n"
             "      for (uw_i64 j = 0; j < ny; ++j) {\n"
             "        u_out(i, j) = u(i, j) - 0.2 * vel(i, j) * (u(i, j) - " +
             upwind +
             ");\n"
             "        mass += u_out(i, j);\n"
             "      }\n"
             "    }\n");
      return;
    }
    case Mistake::ignored_box:
      w.update_box();
      w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
             "      for (uw_i64 j = 0; j < ny; ++j) {\n"
             "        u_out(i, j) = u(i, j) - 0.2 * vel(i, j) * (u(i, j) - u(i, j - 1));\n"
             "        mass += u_out(i, j) * profile(i);\n"
             "      }\n"
             "    }\n");
      return;
    case Mistake::unfilled_halo:
      // The corner of the output's halo, read through the pointer (no accessor checks that).
      w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
             "      for (uw_i64 j = 0; j < ny; ++j) {\n"
             "        u_out(i, j) = u(i, j);\n"
             "      }\n"
             "    }\n"
             "    mass += u_out_data[0];\n");
      return;
    case Mistake::none:
    case Mistake::shard_axis:
      w.update_box();
      w.body("    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
             "      for (uw_i64 j = ny_begin; j < ny_end; ++j) {\n"
             "        u_out(i, j) = u(i, j) - 0.2 * vel(i, j) * (u(i, j) - u(i, j - 1));\n"
             "        mass += u_out(i, j) * profile(i);\n"
             "      }\n"
             "    }\n");
      return;
    }
  }

private:
  Mistake m_mistake;
};

// A long 1-D node (halo 1) that honours its box and, at one cell three quarters along, reads far
// outside its layout: the runtime cuts its box into slabs over the threads, and only one slab in
// the middle goes wrong.
class LongNode final : public Node {
public:
  static constexpr std::int64_t k_cells = 200000;
  LongNode() : Node("long", "long", Params{}) {}
  NodeLayout layout() const override {
    return {.axes = NodeLayout::grid({k_cells}, 1), .fields = {{"u"}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.update_box();
    w.body("    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
           "      u_out(i) = u(i) + (i == 150000 ? u(i - nx) : 0.0);\n"
           "    }\n");
  }
};

// The edges of a 2-D layout (5 x 4 cells; halo 1 along x, 2 along y): a node that copies its
// field and then makes one access at the cell (at_i, at_j), run-time params, so that every probe
// is the same kernel: a read of its state "u", of a static array "w" declared with the same
// halos, or of the coupled input "v" (field "v" of node "source", the same layout), or a write of
// u_out. The node writes its own loops: its update box is the whole interior, [0, 5) x [0, 4).
enum class Probe { state, statics, input, output };

std::vector<uwjit::runtime::DomainAxis> edge_axes() {
  return {{.cells = 5, .halo = 1}, {.cells = 4, .halo = 2}};
}

class EdgeNode final : public Node {
public:
  EdgeNode(Probe probe, std::int64_t i, std::int64_t j)
      : Node("edge", "edge",
             Params{{"probe", static_cast<std::int64_t>(probe)}, {"at_i", i}, {"at_j", j}}),
        m_probe(probe), m_i(i), m_j(j) {}
  NodeLayout layout() const override {
    return {.axes = edge_axes(),
            .fields = {{"u"}},
            .integrals = {"probe"},
            .inputs = {{.node = "source", .field = "v"}}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 5; ++i) {
      for (std::int64_t j = 0; j < 4; ++j) {
        state["u"].at<double>(i, j) = static_cast<double>(10 * i + j);
      }
    }
  }
  StaticData build_static_data() const override {
    StaticData data;
    data.add(StaticArray::from_vector("w", std::vector<double>(20, 0.5), {5, 4}));
    return data;
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.integral("probe");
    w.static_array("w", Dtype::f64, {{w.domain(0), 1}, {w.domain(1), 2}});
    w.param("which", static_cast<double>(m_probe));
    w.param("at_i", static_cast<double>(m_i));
    w.param("at_j", static_cast<double>(m_j));
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      for (uw_i64 j = 0; j < ny; ++j) {\n"
           "        u_out(i, j) = u(i, j);\n"
           "      }\n"
           "    }\n"
           "    const uw_i64 pi = static_cast<uw_i64>(at_i);\n"
           "    const uw_i64 pj = static_cast<uw_i64>(at_j);\n"
           "    if (which == 0.0) {\n"
           "      probe += u(pi, pj);\n"
           "    } else if (which == 1.0) {\n"
           "      probe += w(pi, pj);\n"
           "    } else if (which == 2.0) {\n"
           "      probe += v(pi, pj);\n"
           "    } else {\n"
           "      u_out(pi, pj) = -1.0;\n"
           "    }\n");
  }

private:
  Probe m_probe;
  std::int64_t m_i, m_j;
};

// The owner of the coupled input "v": the same layout, a field it keeps.
class SourceNode final : public Node {
public:
  SourceNode() : Node("source", "source", Params{}) {}
  NodeLayout layout() const override { return {.axes = edge_axes(), .fields = {{"v"}}}; }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 5; ++i) {
      for (std::int64_t j = 0; j < 4; ++j) {
        state["v"].at<double>(i, j) = static_cast<double>(i * j);
      }
    }
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("v");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      for (uw_i64 j = 0; j < ny; ++j) {\n"
           "        v_out(i, j) = v(i, j);\n"
           "      }\n"
           "    }\n");
  }
};

SimulationOptions checked() {
  SimulationOptions options;
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

using uwjit_test::contains;

} // namespace

TEST_CASE("checked mode: a forgotten state halo is a kernel error naming node, field, index and "
          "step") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<AdvectNode>(Mistake::state_halo)}, checked());
  CHECK(sim.checked());
  const std::string message = kernel_error(sim, 2);
  CHECK(message == "node \"advect\", step 0: kernel read \"u\" at (1, -1), outside its "
                   "layout (halo 0 on axis 1)");
  CHECK(sim.steps_taken() == 0);
}

TEST_CASE("checked mode: a static array read beyond its declared halo is a kernel error naming "
          "its key") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<AdvectNode>(Mistake::static_halo)}, checked());
  CHECK(kernel_error(sim, 1) == "node \"advect\", step 0: kernel read static array "
                                "\"vel\" at (1, -1), outside its layout (halo 0 on axis 1)");
}

TEST_CASE("checked mode: a read just past the high halo of a state field, a static array or a "
          "coupled input is a kernel error on each axis; the last halo cell on each side is not") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // The one step's error of a probe of the edge node ("" if none).
  auto probe = [&](Probe what, std::int64_t i, std::int64_t j) {
    Simulation sim(engine, {std::make_shared<SourceNode>(), std::make_shared<EdgeNode>(what, i, j)},
                   checked());
    return kernel_error(sim, 1);
  };
  for (const auto& [what, name] : {std::pair{Probe::state, std::string("\"u\"")},
                                   std::pair{Probe::statics, std::string("static array \"w\"")},
                                   std::pair{Probe::input, std::string("\"v\"")}}) {
    CAPTURE(name);
    // Halo 1 along x: -1 .. 5 may be read; 2 along y: -2 .. 5.
    for (const auto& [i, j] : {std::pair{5, 0}, std::pair{-1, 0}, std::pair{0, 5}, std::pair{0, -2},
                               std::pair{5, 5}, std::pair{-1, -2}}) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(probe(what, i, j).empty());
    }
    const std::string read = "node \"edge\", step 0: kernel read " + name + " at ";
    CHECK(probe(what, 6, 0) == read + "(6, 0), outside its layout (halo 1 on axis 0)");
    CHECK(probe(what, 0, 6) == read + "(0, 6), outside its layout (halo 2 on axis 1)");
    CHECK(probe(what, -2, 0) == read + "(-2, 0), outside its layout (halo 1 on axis 0)");
    CHECK(probe(what, 0, -3) == read + "(0, -3), outside its layout (halo 2 on axis 1)");
  }
}

TEST_CASE("checked mode: a write at the update box's end is a kernel error on each axis; its last "
          "cell is not") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto probe = [&](std::int64_t i, std::int64_t j) {
    Simulation sim(
        engine, {std::make_shared<SourceNode>(), std::make_shared<EdgeNode>(Probe::output, i, j)},
        checked());
    return kernel_error(sim, 1);
  };
  CHECK(probe(4, 3).empty());
  CHECK(probe(0, 0).empty());
  CHECK(probe(5, 0) ==
        "node \"edge\", step 0: kernel wrote \"u\" at (5, 0), outside its update box ([0, 5) on "
        "axis 0)");
  CHECK(probe(0, 4) ==
        "node \"edge\", step 0: kernel wrote \"u\" at (0, 4), outside its update box ([0, 4) on "
        "axis 1)");
  CHECK(probe(-1, 0) ==
        "node \"edge\", step 0: kernel wrote \"u\" at (-1, 0), outside its update box ([0, 5) on "
        "axis 0)");
}

TEST_CASE("checked mode: a static array sharded along the wrong axis is a usage error, serially") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AdvectNode>(Mistake::shard_axis);
  try {
    Simulation sim(engine, {node}, checked());
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    CHECK(std::string(error.what()) ==
          "node \"advect\": static array \"profile\" (8) is sharded along its axis 0 of 8 "
          "cells, but that axis stands for domain axis 1 (ny) of 6 cells (an array's trailing "
          "axes are the domain)");
  }
}

TEST_CASE("checked mode: a kernel that declares an update box and ignores it fails the write "
          "check, serially") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<AdvectNode>(Mistake::ignored_box)}, checked());
  // The interior is split along y (6 cells, halo 1): [1, 5) first, then [0, 1) and [5, 6).
  CHECK(kernel_error(sim, 1) == "node \"advect\", step 0: kernel wrote \"u\" at (0, 0), "
                                "outside its update box ([1, 5) on axis 1)");
}

TEST_CASE("checked mode: each slab of a threaded call has its own record; the message is the same "
          "on any thread count") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  for (const int threads : {1, 3}) {
    SimulationOptions options = checked();
    options.threads = threads;
    Simulation sim(engine, {std::make_shared<LongNode>()}, options);
    CHECK(kernel_error(sim, 1) == "node \"long\", step 0: kernel read \"u\" at (-50000), outside "
                                  "its layout (halo 1 on axis 0)");
  }
}

TEST_CASE("checked mode: a halo that nobody fills reads as NaN") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AdvectNode>(Mistake::unfilled_halo);
  Simulation plain(engine, {node});
  Simulation poisoned(engine, {node}, checked());
  plain.step(1);
  poisoned.step(1);
  CHECK(plain.integrals("advect")[0] == 0.0); // zero-initialised memory hides the mistake
  CHECK(std::isnan(poisoned.integrals("advect")[0]));
}

TEST_CASE("unchecked, the first step checks the reads of kernels whose text does not show them; "
          "the mistakes only checked mode looks for pass silently, as before") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation correct(engine, {std::make_shared<AdvectNode>(Mistake::none)});
  REQUIRE(correct.kernel_reports()[0].first_step_check.has_value()); // its own loops: not judged
  CHECK(kernel_error(correct, 3).empty());
  const std::pair<Mistake, const char*> reads[] = {
      {Mistake::state_halo,
       "node \"advect\", step 0: kernel read \"u\" at (1, -1), outside its layout (halo 0 on "
       "axis 1); found by the check of the first step"},
      {Mistake::static_halo, "node \"advect\", step 0: kernel read static array \"vel\" at (1, "
                             "-1), outside its layout (halo 0 on axis 1); found by the check of "
                             "the first step"}};
  for (const auto& [mistake, message] : reads) {
    CAPTURE(static_cast<int>(mistake));
    Simulation sim(engine, {std::make_shared<AdvectNode>(mistake)});
    CHECK_FALSE(sim.checked());
    CHECK(contains(kernel_error(sim, 3), message));
    CHECK(sim.steps_taken() == 0);
  }
  for (const Mistake mistake : {Mistake::shard_axis, Mistake::ignored_box}) {
    CAPTURE(static_cast<int>(mistake));
    Simulation sim(engine, {std::make_shared<AdvectNode>(mistake)});
    CHECK_FALSE(sim.checked());
    CHECK(kernel_error(sim, 3).empty());
    CHECK(sim.steps_taken() == 3);
    // Serially, one call on the whole interior: the state and mass of the correct node.
    CHECK(sim.field("advect", "u").interior_equals(correct.field("advect", "u")));
    CHECK(sim.integrals("advect")[0] ==
          doctest::Approx(correct.integrals("advect")[0]).epsilon(1e-12));
  }
}

TEST_CASE("checked mode: a correct node runs checked with the same state bit for bit") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AdvectNode>(Mistake::none);
  Simulation plain(engine, {node});
  Simulation careful(engine, {node}, checked());
  plain.step(4);
  careful.step(4);
  CHECK(careful.field("advect", "u").interior_equals(plain.field("advect", "u")));
  CHECK(careful.integrals("advect")[0] ==
        doctest::Approx(plain.integrals("advect")[0]).epsilon(1e-12));
}

TEST_CASE("checked mode: the built-in nodes give the same state bit for bit, with other keys") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> runs = {
      {"heat", {10, 8, 6}}, {"pipe-flow", {8, 10, 10}}, {"fvm", {8}}, {"mlp", {5}}};
  for (const auto& [type, size] : runs) {
    CAPTURE(type);
    const auto node = uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size));
    Simulation plain(engine, {node});
    Simulation careful(engine, {node}, checked());
    CHECK(careful.kernel_reports()[0].info.key != plain.kernel_reports()[0].info.key);
    plain.step(5);
    careful.step(5);
    for (const auto& f : node->layout().fields) {
      CAPTURE(f.name);
      CHECK(careful.field(type, f.name).interior_equals(plain.field(type, f.name)));
    }
    const auto a = plain.integrals(type);
    const auto b = careful.integrals(type);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("UWJIT_CHECK=1 turns checked mode on for every simulation") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto node = std::make_shared<AdvectNode>(Mistake::state_halo);
  Simulation explicitly(engine, {node}, checked());
  ::setenv("UWJIT_CHECK", "1", 1);
  Simulation by_env(engine, {node});
  ::unsetenv("UWJIT_CHECK");
  CHECK(by_env.checked());
  CHECK(by_env.kernel_reports()[0].info.key == explicitly.kernel_reports()[0].info.key);
  CHECK(contains(kernel_error(by_env, 1), "kernel read \"u\" at (1, -1)"));
}
