// A node of your own: 2-D diffusion of u on a periodic grid, with a run-time diffusivity. uwjit
// writes the loops, compiles the kernel once (later runs load it from the disk cache) and steps
// it on every core; the total of u is a domain integral, conserved to round-off.
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cmath>
#include <cstdio>

namespace rt = uwjit::runtime;

class Diffusion final : public rt::Node {
public:
  Diffusion(std::int64_t n, double kappa)
      : Node("diffusion", "d", rt::Params{{"n", n}, {"kappa", kappa}}) {}

  rt::NodeLayout layout() const override {
    const std::int64_t n = params().get_int("n");
    return {.axes = rt::NodeLayout::grid({n, n}, /*halo=*/1, rt::Boundary::periodic),
            .fields = {{"u"}},
            .integrals = {"total"},
            .dt = 0.2};
  }

  void initial_state(rt::State& state) const override {
    for (std::int64_t i = 0; i < domain()[0]; ++i) {
      for (std::int64_t j = 0; j < domain()[1]; ++j) {
        state["u"].at<double>(i, j) = (i == 8 && j == 8) ? 1.0 : 0.0;
      }
    }
  }

  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("total");
    w.param("kappa", params().get_double("kappa")); // run-time: not in the kernel's text
    w.for_each_cell({.indices = {"i", "j"}}, R"(
      u_out(i, j) = u(i, j) + args->dt * kappa *
                    (u(i + 1, j) + u(i - 1, j) + u(i, j + 1) + u(i, j - 1) - 4 * u(i, j));
      total += u_out(i, j);
)");
  }
};

int main() {
  uwjit::engine::Engine engine; // its cache: $UWJIT_CACHE_DIR, else ~/.cache/uwjit
  rt::Simulation sim(engine, {std::make_shared<Diffusion>(64, 0.5)}, {.threads = 0}); // all cores
  sim.step(100);
  const double total = sim.integrals("d")[0];
  std::printf("kernel %s (%s), %d threads: total after 100 steps %.15f\n",
              sim.kernel_reports()[0].info.key.c_str(),
              uwjit::engine::to_string(sim.kernel_reports()[0].info.tier), sim.threads(), total);
  return std::abs(total - 1.0) < 1e-12 ? 0 : 1;
}
