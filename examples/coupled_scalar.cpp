// Two coupled nodes: a passive scalar carried by the flow of the built-in pipe-flow node. The
// tracer's kernel reads the pipe flow's D3Q19 populations "f" as an input (NodeLayout::inputs)
// and computes the velocity from them, cell by cell: u = sum_q c_q f_q / sum_q f_q.
//
// The scalar moves by upwind fluxes through the cell faces (the face velocity is the mean of its
// two cells'; no flux through a face next to the wall). Each face's flux is computed alike from
// either side, so the scalar's total is conserved to rounding; the check also asks that the
// scalar stays non-negative and that more of it has gone downstream than upstream.
//
// The pipe flow is stepped first, so the tracer reads the flow after this step's update. A
// second run checkpoints half-way and restores (the factory rebuilds both nodes, and the tracer
// declares its input again): it must end bit for bit where the first run ends. Under mpiexec the
// domain is also split over the ranks along x (sync, and overlap with a checkpoint and restore),
// and the state must equal the serial one bit for bit.
#include <uwjit/codegen/number.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/nodes/pipe_flow.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace rt = uwjit::runtime;
using uwjit::codegen::Dtype;
using uwjit::codegen::literal;

class Tracer final : public rt::Node {
public:
  // params: nx, ny, nz and radius (the pipe's), flow (the pipe-flow node's name).
  Tracer(std::string name, rt::Params params)
      : Node("tracer", std::move(name), std::move(params)) {}

  // The pipe's domain: periodic along it, walls across it.
  rt::NodeLayout layout() const override {
    const auto& p = params();
    auto axes = rt::NodeLayout::grid({p.get_int("nx"), p.get_int("ny"), p.get_int("nz")}, 1);
    axes[0].boundary = rt::Boundary::periodic;
    return {.axes = std::move(axes),
            .fields = {{"c"}},
            .integrals = {"total"},
            .dt = 1.0,
            .inputs = {{.node = p.get_string("flow"), .field = "f"}},
            .slab_initial_state = true};
  }

  // The scalar fills the first quarter of the pipe.
  // Only the cells of this rank's slab (the whole domain serially): index i is offset + i.
  void initial_state(rt::State& state) const override {
    const auto n = domain();
    const rt::Slab& slab = state.slab();
    for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
      for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
        for (std::int64_t k = 0; k < slab.extent[2]; ++k) {
          const std::int64_t x = slab.offset[0] + i, y = slab.offset[1] + j, z = slab.offset[2] + k;
          state["c"].at<double>(i, j, k) = x < n[0] / 4 && !solid(y, z) ? 1.0 : 0.0;
        }
      }
    }
  }

  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("c");
    w.static_array("wall", Dtype::u8, {{w.domain(1), 1}, {w.domain(2), 1}});
    w.integral("total");
    w.update_box();
    w.body(R"(
    // D3Q19 in the pipe-flow node's order.
    static const int C[19][3] = {{0, 0, 0},  {1, 0, 0},  {-1, 0, 0}, {0, 1, 0},   {0, -1, 0},
                                 {0, 0, 1},  {0, 0, -1}, {1, 1, 0},  {-1, -1, 0}, {1, -1, 0},
                                 {-1, 1, 0}, {1, 0, 1},  {-1, 0, -1}, {1, 0, -1}, {-1, 0, 1},
                                 {0, 1, 1},  {0, -1, -1}, {0, 1, -1}, {0, -1, 1}};
    auto velocity = [&](uw_i64 i, uw_i64 j, uw_i64 k, int d) {
      double rho = 0.0, momentum = 0.0;
      for (int q = 0; q < 19; ++q) {
        rho += f(q, i, j, k);
        momentum += C[q][d] * f(q, i, j, k);
      }
      return momentum / rho;
    };
    // Through the face between cell (i, j, k) and the next one along d.
    auto flux = [&](uw_i64 i, uw_i64 j, uw_i64 k, int d) {
      const uw_i64 i2 = i + (d == 0), j2 = j + (d == 1), k2 = k + (d == 2);
      if (wall(j, k) != 0 || wall(j2, k2) != 0) {
        return 0.0;
      }
      const double u = 0.5 * (velocity(i, j, k, d) + velocity(i2, j2, k2, d));
      return u > 0.0 ? u * c(i, j, k) : u * c(i2, j2, k2);
    };
    for (uw_i64 i = nx_begin; i < nx_end; ++i) {
      for (uw_i64 j = ny_begin; j < ny_end; ++j) {
        for (uw_i64 k = nz_begin; k < nz_end; ++k) {
          double next = c(i, j, k);
          if (wall(j, k) == 0) {
            const double out = (flux(i, j, k, 0) - flux(i - 1, j, k, 0)) +
                               (flux(i, j, k, 1) - flux(i, j - 1, k, 1)) +
                               (flux(i, j, k, 2) - flux(i, j, k - 1, 2));
            next = c(i, j, k) - args->dt * out;
          }
          c_out(i, j, k) = next;
          total += next;
        }
      }
    }
)");
  }

  // The pipe's cross-section, as the pipe-flow node draws it.
  bool solid(std::int64_t j, std::int64_t k) const {
    const auto n = domain();
    const double radius = params().get_double("radius");
    const double dy = static_cast<double>(j) - static_cast<double>(n[1] - 1) / 2;
    const double dz = static_cast<double>(k) - static_cast<double>(n[2] - 1) / 2;
    return dy * dy + dz * dz >= radius * radius;
  }

protected:
  rt::StaticData build_static_data() const override {
    const auto n = domain();
    std::vector<unsigned char> wall;
    for (std::int64_t j = 0; j < n[1]; ++j) {
      for (std::int64_t k = 0; k < n[2]; ++k) {
        wall.push_back(solid(j, k) ? 1 : 0);
      }
    }
    rt::StaticData data;
    data.add(rt::StaticArray::from_vector("wall", wall, {n[1], n[2]}));
    return data;
  }
};

std::shared_ptr<const rt::Node> make(const std::string& type, const std::string& name,
                                     const rt::Params& params) {
  if (type == "tracer") {
    return std::make_shared<Tracer>(name, params);
  }
  return std::make_shared<uwjit::nodes::PipeFlowNode>(name, params);
}

std::vector<std::shared_ptr<const rt::Node>> nodes() {
  auto pipe = uwjit::nodes::PipeFlowNode::defaults();
  pipe.set("nx", std::int64_t{24}).set("ny", std::int64_t{12}).set("nz", std::int64_t{12});
  uwjit::nodes::PipeFlowNode::derive_from_size(pipe);
  const rt::Params tracer{{"nx", std::int64_t{24}},
                          {"ny", std::int64_t{12}},
                          {"nz", std::int64_t{12}},
                          {"radius", pipe.get_double("radius")},
                          {"flow", "pipe"}};
  return {make("pipe-flow", "pipe", pipe), make("tracer", "tracer", tracer)};
}

bool same_state(const rt::Snapshot& a, const rt::Snapshot& b) {
  return a.field("pipe", "f").interior_equals(b.field("pipe", "f")) &&
         a.field("tracer", "c").interior_equals(b.field("tracer", "c"));
}

// Runs `steps` steps; with a checkpoint file, `half` of them, then a restore and the rest.
rt::Snapshot run(uwjit::engine::Engine& engine, const rt::SimulationOptions& options, int steps,
                 const std::filesystem::path& checkpoint = {}) {
  rt::Simulation sim(engine, nodes(), options);
  if (checkpoint.empty()) {
    sim.step(steps);
    return sim.gathered();
  }
  sim.step(steps / 2);
  sim.checkpoint(checkpoint);
  rt::Simulation restored = rt::Simulation::restore(engine, checkpoint, make, options);
  restored.step(steps - steps / 2);
  return restored.gathered();
}

int main(int argc, char** argv) {
  uwjit::mpi::Session mpi(&argc, &argv);
  const auto world = mpi.world();
  const bool root = world->rank() == 0;
  const int steps = 150;
  const auto checkpoint = std::filesystem::temp_directory_path() /
                          ("uwjit_coupled_scalar_np" + std::to_string(world->size()) + ".ckpt");
  uwjit::engine::Engine engine; // its cache: $UWJIT_CACHE_DIR, else $XDG_CACHE_HOME/uwjit

  // Serially, on every rank.
  const rt::Snapshot serial = run(engine, {}, steps);
  const rt::Field& c = serial.field("tracer", "c");
  const auto nx = c.shape()[0];
  double start = 0, total = 0, lowest = 0, upstream = 0, downstream = 0;
  c.for_each_interior([&](std::span<const std::int64_t> at) {
    const double value = c.value(at);
    const auto* tracer = static_cast<const Tracer*>(&serial.node("tracer"));
    start += (at[0] < nx / 4 && !tracer->solid(at[1], at[2])) ? 1.0 : 0.0;
    total += value;
    lowest = std::min(lowest, value);
    if (at[0] >= nx / 4 && at[0] < nx / 2) {
      downstream += value; // the quarter after the start
    } else if (at[0] >= 3 * nx / 4) {
      upstream += value; // the quarter before it (x is periodic)
    }
  });
  const double integral = serial.integrals("tracer")[0];
  bool ok = std::abs(total / start - 1) < 1e-12 && std::abs(integral / start - 1) < 1e-12 &&
            lowest >= 0 && downstream > upstream;
  if (root) {
    std::printf("serial: after %d steps the scalar's total is %.15f (start %.1f, integral "
                "%.15f), its least value %.3g; %.4f went downstream, %.4f upstream\n",
                steps, total, start, integral, lowest, downstream, upstream);
  }
  const bool resumed = same_state(run(engine, {}, steps, checkpoint), serial);
  ok = ok && resumed;
  if (root) {
    std::printf("serial, checkpointed at step %d and restored: %s\n", steps / 2,
                resumed ? "the same state bit for bit" : "a DIFFERENT state");
  }

  // Split over the ranks along x.
  if (world->size() > 1) {
    const bool sync = same_state(run(engine, {.comm = world.get()}, steps), serial);
    const bool overlap = same_state(
        run(engine, {.comm = world.get(), .exchange = rt::ExchangeMode::overlap, .threads = 2},
            steps, checkpoint),
        serial);
    ok = ok && sync && overlap;
    if (root) {
      std::printf("%d ranks: sync %s the serial state bit for bit; overlap, checkpointed and "
                  "restored, %s\n",
                  world->size(), sync ? "equals" : "DIFFERS from",
                  overlap ? "equals it" : "DIFFERS");
    }
  }
  if (root) {
    std::filesystem::remove(checkpoint);
    std::printf("%s\n", ok ? "ok" : "FAILED");
  }
  return ok ? 0 : 1;
}
