// A host with a node of its own and a static array, through the installed public headers:
// rebinding same-shape data gives new results with no compile; a new shape gives one compile.
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cstdio>
#include <vector>

namespace {

// y(i) = weights(i) * x(i) over n points: the weights are a static array (never in the source).
class Weighted final : public uwjit::runtime::Node {
public:
  explicit Weighted(std::vector<double> weights)
      : Node("weighted", "w", uwjit::runtime::Params{}), m_weights(std::move(weights)) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = static_cast<std::int64_t>(m_weights.size())}},
            .fields = {{"x"}},
            .integrals = {"sum"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < domain()[0]; ++i) {
      state["x"].at<double>(i) = 1.0;
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("x");
    w.static_array("weights", uwjit::codegen::Dtype::f64, {{w.domain(0)}});
    w.integral("sum");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      x_out(i) = weights(i) * x(i);\n"
           "      sum += x_out(i);\n"
           "    }\n");
  }

protected:
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(uwjit::runtime::StaticArray::from_vector("weights", m_weights, domain()));
    return data;
  }

private:
  std::vector<double> m_weights;
};

int compiles(const uwjit::runtime::Simulation& sim) {
  int n = 0;
  for (const auto& report : sim.kernel_reports()) {
    n += report.info.tier == uwjit::engine::Tier::compiled ? 1 : 0;
  }
  return n;
}

} // namespace

int main() {
  uwjit::engine::Engine engine;
  uwjit::runtime::Simulation first(engine, {std::make_shared<Weighted>(std::vector{1.0, 2.0})});
  first.step();
  // Same shape, new contents: rebound in place, and in a new simulation from memory.
  const auto rebound = first.rebind_static(
      "w", uwjit::runtime::StaticArray::from_vector("weights", std::vector{3.0, 4.0}, {2}));
  first.step();
  uwjit::runtime::Simulation second(engine, {std::make_shared<Weighted>(std::vector{5.0, 6.0})});
  second.step();
  // A new shape: one compile.
  uwjit::runtime::Simulation third(engine,
                                   {std::make_shared<Weighted>(std::vector{1.0, 1.0, 1.0})});
  third.step();
  const bool ok = compiles(first) == 1 && !rebound.new_kernel && compiles(second) == 0 &&
                  compiles(third) == 1 && first.integrals("w")[0] == 3.0 + 8.0 &&
                  second.integrals("w")[0] == 11.0 && third.integrals("w")[0] == 3.0;
  std::printf("node_host: sums %g %g %g; compiles %d %d %d; rebind needed a new kernel: %s\n",
              first.integrals("w")[0], second.integrals("w")[0], third.integrals("w")[0],
              compiles(first), compiles(second), compiles(third),
              rebound.new_kernel ? "yes" : "no");
  return ok ? 0 : 1;
}
