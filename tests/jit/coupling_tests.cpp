// runtime/: nodes of several stages, and nodes that read other nodes' state fields (coupling),
// with nodes written here against the public API. These tests really JIT.
#include "expect.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

using uwjit::codegen::Dtype;
using uwjit::codegen::KernelWriter;
using uwjit::engine::Engine;
using uwjit::runtime::Node;
using uwjit::runtime::NodeInput;
using uwjit::runtime::NodeLayout;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;

namespace {

// A 1-D node of n periodic cells whose field `field` becomes, each step, a * in(i - shift) + b,
// where `in` is field `input.field` of node `input.node`; without an input, field + b.
class Linear final : public Node {
public:
  Linear(std::string name, std::string field, std::optional<NodeInput> input, double a, double b,
         std::int64_t n = 6, int shift = 0)
      : Node("linear", std::move(name), Params{{"n", n}}), m_field(std::move(field)),
        m_input(std::move(input)), m_a(a), m_b(b), m_n(n), m_shift(shift) {}
  NodeLayout layout() const override {
    NodeLayout layout{.axes = {{.cells = m_n,
                                .halo = 1,
                                .boundary = uwjit::runtime::Boundary::periodic,
                                .name = "n"}},
                      .fields = {{m_field, Dtype::f64}}};
    if (m_input) {
      layout.inputs.push_back(*m_input);
    }
    return layout;
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < m_n; ++i) {
      state[m_field].at<double>(i) = static_cast<double>(i);
    }
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out(m_field);
    const std::string in = m_input ? (m_input->as.empty() ? m_input->field : m_input->as) : "";
    const std::string value =
        m_input ? std::to_string(m_a) + " * " + in + "(i - " + std::to_string(m_shift) + ")"
                : m_field + "(i)";
    w.body("    for (uw_i64 i = 0; i < n; ++i) {\n      " + m_field + "_out(i) = " + value + " + " +
           std::to_string(m_b) + ";\n    }\n");
  }

private:
  std::string m_field;
  std::optional<NodeInput> m_input;
  double m_a, m_b;
  std::int64_t m_n;
  int m_shift;
};

// Two stages on one cell: stage 0 sets p = u + 1, stage 1 sets u = scale p (a static array,
// 2) and sums it. `fault`: "both" sums in both stages, "no stage" does not override emit_stage,
// "status" fails stage 1, "beyond" reads beyond p's layout in stage 1.
class TwoStage final : public Node {
public:
  explicit TwoStage(std::string fault = "")
      : Node("two-stage", "rk", Params{}), m_fault(std::move(fault)) {}
  NodeLayout layout() const override {
    return {.axes = {{.cells = 1, .name = "n"}},
            .fields = {{"u", Dtype::f64}, {"p", Dtype::f64}},
            .integrals = {"sum"},
            .stages = 2};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    state["u"].at<double>(0) = 1.0;
  }
  void emit_stage(KernelWriter& w, int stage) const override {
    if (m_fault == "no stage") {
      Node::emit_stage(w, stage);
      return;
    }
    if (stage == 0) {
      w.state_out("p");
      if (m_fault == "both") {
        w.integral("sum");
      }
      w.body("    p_out(0) = u(0) + 1.0;\n");
      return;
    }
    w.state_out("u");
    w.integral("sum");
    w.static_array("scale");
    if (m_fault == "beyond") {
      w.body("    u_out(0) = p(1);\n");
      return;
    }
    w.body(m_fault == "status" ? "    return 5;\n"
                               : "    u_out(0) = scale(0) * p(0);\n    sum += u_out(0);\n");
  }
  // The single-kernel form: what the default emit_stage calls for stage 0.
  void emit_update(KernelWriter& w) const override {
    w.state_out("p");
    w.body("    p_out(0) = 0.0;\n");
  }

protected:
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(scale(2.0));
    return data;
  }

public:
  static uwjit::runtime::StaticArray scale(double value) {
    return uwjit::runtime::StaticArray::from_vector("scale", std::vector<double>{value}, {1});
  }

private:
  std::string m_fault;
};

using uwjit_test::contains;
using uwjit_test::usage_error;

double at(const Simulation& sim, const std::string& node, const std::string& field,
          std::int64_t i = 0) {
  return sim.field(node, field).at<double>(i);
}

} // namespace

TEST_CASE("each stage is a kernel of its own and reads what the stage before it wrote") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<TwoStage>()});
  REQUIRE(sim.kernel_reports().size() == 2);
  CHECK(sim.kernel_reports()[0].stage == 0);
  CHECK(sim.kernel_reports()[1].stage == 1);
  CHECK(sim.kernel_reports()[0].info.key != sim.kernel_reports()[1].info.key);
  sim.step();
  CHECK(at(sim, "rk", "p") == 2.0);
  CHECK(at(sim, "rk", "u") == 4.0);
  CHECK(sim.integrals("rk")[0] == 4.0);
  sim.step();
  CHECK(at(sim, "rk", "p") == 5.0);
  CHECK(at(sim, "rk", "u") == 10.0);
  CHECK(sim.integrals("rk")[0] == 10.0);
}

TEST_CASE("rebinding a static array of a node of stages compiles nothing and every stage follows") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<TwoStage>()});
  sim.step();
  const auto rebound = sim.rebind_static("rk", TwoStage::scale(3.0));
  CHECK_FALSE(rebound.new_kernel);
  REQUIRE(sim.kernel_reports().size() == 2);
  CHECK(sim.kernel_reports()[1].stage == 1);
  sim.step();
  CHECK(at(sim, "rk", "p") == 5.0);
  CHECK(at(sim, "rk", "u") == 15.0);
}

TEST_CASE("an integral is computed by exactly one stage, and several stages need emit_stage") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  CHECK(contains(usage_error([&] { Simulation sim(engine, {std::make_shared<TwoStage>("both")}); }),
                 "node \"rk\": domain integral \"sum\" is computed by 2 stages"));
  CHECK(contains(
      usage_error([&] { Simulation sim(engine, {std::make_shared<TwoStage>("no stage")}); }),
      "node \"rk\": declares several stages but does not override emit_stage"));
}

TEST_CASE("a failing stage stops the step with an error naming the node and the stage") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<TwoStage>("status")});
  try {
    sim.step();
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::kernel);
    CHECK(contains(error.what(), "node \"rk\": kernel of stage 1 returned status 5 at step 0"));
  }
  CHECK(sim.steps_taken() == 0);
}

TEST_CASE("checked mode names the stage whose kernel reads beyond its layout") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<TwoStage>("beyond")}, {.checked = true});
  try {
    sim.step();
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::kernel);
    CHECK(contains(error.what(), "node \"rk\", step 0, stage 1: kernel read \"p\" at (1), "
                                 "outside its layout (halo 0 on axis 0)"));
  }
}

TEST_CASE("a node reads an earlier node's field after its step and a later node's before it") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // A cycle: x <- y + 1 and y <- 2 x, both fields starting at i in cell i.
  auto a = [] { return std::make_shared<Linear>("a", "x", NodeInput{"b", "y"}, 1.0, 1.0); };
  auto b = [] { return std::make_shared<Linear>("b", "y", NodeInput{"a", "x"}, 2.0, 0.0); };
  Simulation ab(engine, {a(), b()});
  ab.step();
  CHECK(at(ab, "a", "x", 3) == 3.0 + 1.0); // the y before this step
  CHECK(at(ab, "b", "y", 3) == 2.0 * 4.0); // the x after it
  ab.step();
  CHECK(at(ab, "a", "x", 3) == 8.0 + 1.0);
  CHECK(at(ab, "b", "y", 3) == 2.0 * 9.0);

  Simulation ba(engine, {b(), a()});
  ba.step();
  CHECK(at(ba, "b", "y", 3) == 2.0 * 3.0);
  CHECK(at(ba, "a", "x", 3) == 6.0 + 1.0);
}

TEST_CASE("an input's halos are filled as its owner's boundaries say") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // The owner keeps x(i) = i; the reader copies it shifted by one cell through the periodic halo.
  Simulation sim(
      engine, {std::make_shared<Linear>("a", "x", std::nullopt, 1.0, 0.0),
               std::make_shared<Linear>("b", "y", NodeInput{"a", "x", "owner"}, 1.0, 0.0, 6, 1)});
  sim.step();
  CHECK(at(sim, "b", "y", 0) == 5.0);
  CHECK(at(sim, "b", "y", 1) == 0.0);
  CHECK(at(sim, "b", "y", 5) == 4.0);
}

TEST_CASE("a coupled input that cannot be bound is an error naming both nodes") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto owner = [] { return std::make_shared<Linear>("a", "x", std::nullopt, 1.0, 0.0); };
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine,
                                  {owner(), std::make_shared<Linear>("b", "y", NodeInput{"a", "x"},
                                                                     1.0, 0.0, 8)});
                 }),
                 "node \"b\" reads field \"x\" of node \"a\": the domains differ ((8) cells and "
                 "(6)"));
  CHECK(contains(
      usage_error([&] {
        Simulation sim(
            engine, {owner(), std::make_shared<Linear>("b", "y", NodeInput{"c", "x"}, 1.0, 0.0)});
      }),
      "node \"b\" reads field \"x\" of node \"c\", but the simulation has no such node"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, {owner(), std::make_shared<Linear>(
                                                        "b", "y", NodeInput{"a", "z"}, 1.0, 0.0)});
                 }),
                 "node \"b\" reads field \"z\" of node \"a\", but \"a\" has no such state field"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, {owner(), std::make_shared<Linear>(
                                                        "b", "x", NodeInput{"a", "x"}, 1.0, 0.0)});
                 }),
                 "node \"b\": input \"x\" (field \"x\" of node \"a\") has the name of one of its "
                 "own state fields"));
}
