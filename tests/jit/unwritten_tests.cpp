// Checked mode finds the cells of a state output that a step left unwritten: a cell form whose
// text skips some cells, or a kernel of its own loops that misses a row, fails the step naming
// the field and the first such cell, in f64 and in f32. These tests really JIT.
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <string>

using uwjit::codegen::Dtype;
using uwjit::codegen::KernelWriter;
using uwjit::engine::Engine;
using uwjit::runtime::Node;
using uwjit::runtime::NodeLayout;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;

namespace {

// A 2-D relaxation of 7 x 5 cells whose update skips the cells where `skip` (a condition on i
// and j) holds; `own_loops` writes its loops with body() instead of the cell form.
class Skipping final : public Node {
public:
  Skipping(Dtype dtype, std::string skip, bool own_loops)
      : Node("skipping", "s", Params{{"skip", skip}}), m_dtype(dtype), m_skip(std::move(skip)),
        m_own_loops(own_loops) {}

  NodeLayout layout() const override {
    return {.axes = NodeLayout::grid({7, 5}, 1), .fields = {{"u", m_dtype}}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    (void)state; // zeros
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    const std::string update = "if (!(" + m_skip + ")) { u_out(i, j) = u(i, j) + 1; }\n";
    if (m_own_loops) {
      w.body("for (uw_i64 i = 0; i < nx; ++i) { for (uw_i64 j = 0; j < ny; ++j) { " + update +
             "} }\n");
    } else {
      w.for_each_cell({.indices = {"i", "j"}}, update);
    }
  }

private:
  Dtype m_dtype;
  std::string m_skip;
  bool m_own_loops;
};

std::string step_error(Engine& engine, Dtype dtype, const std::string& skip, bool own_loops,
                       int threads = 1) {
  Simulation simulation(engine, {std::make_shared<Skipping>(dtype, skip, own_loops)},
                        {.threads = threads, .checked = true});
  try {
    simulation.step(2);
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::kernel);
    CHECK(simulation.steps_taken() == 0);
    return error.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("checked mode names the first cell of a state output that a step left unwritten") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
    for (const bool own_loops : {false, true}) {
      CAPTURE(own_loops);
      const std::string message = step_error(engine, dtype, "i == 3 && j >= 2", own_loops);
      CHECK(message.find("node \"s\", step 0: kernel returned without writing \"u\" at (3, 2) "
                         "nor 2 other cells") != std::string::npos);
      // The last cell of the domain, at the upper end of both axes.
      CHECK(step_error(engine, dtype, "i == 6 && j == 4", own_loops)
                .find("\"u\" at (6, 4) nor 0 other cells") != std::string::npos);
    }
  }
  // Sliced over threads, the first cell is still the first in row-major order.
  CHECK(step_error(engine, Dtype::f64, "j == 1", false, 3).find("\"u\" at (0, 1) nor 6 other") !=
        std::string::npos);
}

TEST_CASE("a kernel that writes every cell passes checked mode, and unchecked nothing is scanned") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation all(engine, {std::make_shared<Skipping>(Dtype::f64, "false", false)},
                 {.checked = true});
  all.step(3);
  CHECK(all.field("s", "u").at<double>(6, 4) == 3.0);
  Simulation unchecked(engine, {std::make_shared<Skipping>(Dtype::f64, "i == 3", false)});
  unchecked.step(3);
  CHECK(unchecked.steps_taken() == 3);
}
