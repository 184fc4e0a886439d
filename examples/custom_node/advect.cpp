// A node of your own: 2-D advection-diffusion of a concentration c by a shear flow, with upwind
// fluxes, a masked source, and the total mass as a domain integral. The velocity profile and the
// source mask are static arrays: bound to the kernel as buffers, never compiled into its text.
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace rt = uwjit::runtime;
using uwjit::codegen::Dtype;

class Advect final : public rt::Node {
public:
  Advect(std::int64_t nx, std::int64_t ny, double diffusion, double source)
      : Node("advect", "advect",
             rt::Params{{"nx", nx}, {"ny", ny}, {"diffusion", diffusion}, {"source", source}}) {}

  // x is periodic, y has walls (the halo copies the wall cell: no flux through it).
  rt::NodeLayout layout() const override {
    const auto& p = params();
    return {.axes = {{.cells = p.get_int("nx"), .halo = 1, .boundary = rt::Boundary::periodic},
                     {.cells = p.get_int("ny"), .halo = 1, .boundary = rt::Boundary::edge}},
            .fields = {{"c"}},
            .integrals = {"mass"},
            .dt = 0.2};
  }

  void initial_state(rt::State& state) const override {
    for (std::int64_t i = 0; i < domain()[0]; ++i) {
      for (std::int64_t j = 0; j < domain()[1]; ++j) {
        state["c"].at<double>(i, j) = (i < domain()[0] / 2) ? 1.0 : 0.0;
      }
    }
  }

  // One step: c += dt (-d(u c)/dx + D laplacian(c) + S source), over the box it is given.
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("c");
    w.static_array("speed", Dtype::f64, {{w.domain(1)}});
    w.static_array("source", Dtype::u8, {{w.domain(0)}, {w.domain(1)}});
    w.integral("mass");
    // Run-time values, passed in args->params: other values are the same kernel.
    w.param("D", params().get_double("diffusion"));
    w.param("S", params().get_double("source"));
    // One cell's update; the writer loops over the cells (one GPU thread per cell on a GPU).
    w.for_each_cell({.indices = {"i", "j"}}, R"(
      const double u = speed(j);
      const double east = u > 0 ? u * c(i, j) : u * c(i + 1, j);
      const double west = u > 0 ? u * c(i - 1, j) : u * c(i, j);
      const double laplacian = c(i + 1, j) + c(i - 1, j) + c(i, j + 1) + c(i, j - 1) - 4 * c(i, j);
      const double next = c(i, j) + args->dt * (west - east + D * laplacian + S * source(i, j));
      c_out(i, j) = next;
      mass += next;
)");
  }

  // A shear flow u(y) and a square source in the middle.
  rt::StaticData build_static_data() const override {
    const std::int64_t nx = domain()[0], ny = domain()[1];
    std::vector<double> speed(ny);
    for (std::int64_t j = 0; j < ny; ++j) {
      speed[j] = std::sin(3.14159 * (j + 0.5) / ny);
    }
    std::vector<unsigned char> source(nx * ny, 0);
    for (std::int64_t i = nx / 4; i < nx / 2; ++i) {
      for (std::int64_t j = ny / 4; j < ny / 2; ++j) {
        source[i * ny + j] = 1;
      }
    }
    rt::StaticData data;
    data.add(rt::StaticArray::from_vector("speed", speed, {ny}));
    data.add(rt::StaticArray::from_vector("source", source, {nx, ny}, rt::Replication::shard, 0));
    return data;
  }
};

// The cells where the bound source mask is set.
double source_cells(const rt::Simulation& sim) {
  double cells = 0;
  for (const unsigned char m :
       sim.bound_static_data("advect").at("source").values<unsigned char>()) {
    cells += m;
  }
  return cells;
}

int main() {
  uwjit::engine::Engine engine; // its cache: $UWJIT_CACHE_DIR, else $XDG_CACHE_HOME/uwjit
  const double dt = 0.2, source = 0.01;
  rt::Simulation sim(engine, {std::make_shared<Advect>(64, 32, 0.1, source)});
  sim.step(200);
  // The fluxes cancel between neighbours: the mass changes only by what the source adds.
  double expected = 32 * 32 + 200 * dt * source * source_cells(sim);
  const double mass = sim.integrals("advect")[0];
  std::printf("kernel %s (%s); mass after 200 steps %.10f, expected %.10f\n",
              sim.kernels()[0].info.key.c_str(),
              uwjit::engine::to_string(sim.kernels()[0].info.tier), mass, expected);
  bool ok = std::abs(mass / expected - 1) < 1e-12;

  // A source everywhere, of the same shape: the same kernel reads it, nothing is compiled.
  const auto rebound = sim.rebind_static(
      "advect", rt::StaticArray::from_vector("source", std::vector<unsigned char>(64 * 32, 1),
                                             {64, 32}, rt::Replication::shard, 0));
  sim.step(1);
  expected += dt * source * source_cells(sim);
  std::printf("rebound the source: new kernel %s; mass %.10f, expected %.10f\n",
              rebound.new_kernel ? "yes" : "no", sim.integrals("advect")[0], expected);
  ok = ok && !rebound.new_kernel && std::abs(sim.integrals("advect")[0] / expected - 1) < 1e-12;

  // Another diffusion coefficient: a run-time param, so the same kernel again (from memory).
  rt::Simulation sweep(engine, {std::make_shared<Advect>(64, 32, 0.2, source)});
  std::printf("diffusion 0.2: kernel %s (%s)\n", sweep.kernels()[0].info.key.c_str(),
              uwjit::engine::to_string(sweep.kernels()[0].info.tier));
  ok = ok && sweep.kernels()[0].info.key == sim.kernels()[0].info.key;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
