// The tutorial's node (docs/tutorials/first-node.md): 2-D diffusion of a temperature u between
// insulating walls, as a node of its own. It runs on every core, split over the MPI ranks when
// started under mpiexec, writes its state for ParaView, and checks that a run restarted from a
// checkpoint ends bit for bit where the straight run ends.
#include <uwjit/mpi.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace rt = uwjit::runtime;

// u += dt kappa laplacian(u) on an n x n grid; the total heat is a domain integral.
class Heat2D final : public rt::Node {
public:
  Heat2D(std::int64_t n, double kappa, std::string name = "plate")
      : Node("heat2d", std::move(name), rt::Params{{"n", n}, {"kappa", kappa}}) {}

  rt::NodeLayout layout() const override {
    const std::int64_t n = params().get_int("n");
    return {.axes = rt::NodeLayout::grid({n, n}, /*halo=*/1, rt::Boundary::edge),
            .fields = {{"u"}},
            .integrals = {"heat"},
            .dt = 0.2};
  }

  void initial_state(rt::State& state) const override {
    const std::int64_t n = params().get_int("n");
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const bool hot = i >= n / 4 && i < n / 2 && j >= n / 4 && j < n / 2;
        state["u"].at<double>(i, j) = hot ? 1.0 : 0.0; // a hot square
      }
    }
  }

  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("heat");
    w.param("kappa", params().get_double("kappa")); // a run-time param
    w.for_each_cell({.indices = {"i", "j"}}, R"(
      const double lap = u(i + 1, j) + u(i - 1, j) + u(i, j + 1) + u(i, j - 1) - 4 * u(i, j);
      u_out(i, j) = u(i, j) + args->dt * kappa * lap;
      heat += u_out(i, j);
)");
  }
};

// Rebuilds a node from a checkpoint: its type, name and node params.
std::shared_ptr<const rt::Node> factory(const std::string& type, const std::string& name,
                                        const rt::Params& params) {
  if (type != "heat2d") {
    return nullptr;
  }
  return std::make_shared<Heat2D>(params.get_int("n"), params.get_double("kappa"), name);
}

// The interior of a field as bytes, to compare two states bit for bit.
std::vector<std::byte> bytes_of(const rt::Field& field) {
  std::vector<std::byte> out(static_cast<std::size_t>(field.interior_count()) * sizeof(double));
  field.copy_interior_to(out);
  return out;
}

int main(int argc, char** argv) {
  uwjit::mpi::Session session(&argc, &argv);
  const auto comm = uwjit::mpi::make_comm(MPI_COMM_WORLD); // one rank: serial; several: split
  uwjit::engine::Engine engine;
  rt::SimulationOptions options;
  options.comm = comm.get();
  options.threads = 0; // every core (shared among the ranks of a machine)

  rt::Simulation sim(engine, {std::make_shared<Heat2D>(64, 0.5)}, options);
  sim.step(50);
  sim.checkpoint("plate.ckpt"); // collective: each rank writes its slab of the one file
  sim.step(50);
  const rt::Snapshot straight = sim.gathered(); // the whole domain, on every rank
  if (comm->rank() == 0) {
    rt::ImageGeometry geometry;
    geometry.cells = {64, 64, 1};
    const std::vector<rt::VtkArray> arrays = {rt::image_cells(straight.field("plate", "u"), 2)};
    const std::vector<rt::VtkFieldValue> data = {{"step", straight.steps_taken()}};
    rt::write_image_data("plate.vti", geometry, arrays, data); // for ParaView
  }

  rt::Simulation again = rt::Simulation::restore(engine, "plate.ckpt", factory, options);
  again.step(50);
  const bool same =
      bytes_of(again.gathered().field("plate", "u")) == bytes_of(straight.field("plate", "u"));
  const double heat = straight.integrals("plate")[0];
  if (comm->rank() == 0) {
    std::printf("%d ranks of %d threads, kernel %s; heat after %lld steps %.12f (start 256)\n",
                comm->size(), sim.threads(),
                uwjit::engine::to_string(sim.kernel_reports()[0].info.tier),
                static_cast<long long>(straight.steps_taken()), heat);
    std::printf("restarted at step 50: %s\n", same ? "the same state bit for bit" : "DIFFERENT");
  }
  return same && std::abs(heat - 256) < 1e-9 ? 0 : 1;
}
