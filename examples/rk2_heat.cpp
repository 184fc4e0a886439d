// A node of two stages: the heat equation u_t = D (u_xx + u_yy) advanced by Heun's method (RK2),
// one kernel per stage. The predictor is a state field of its own, written by stage 0 and read
// by stage 1; the runtime refills its halos between the stages.
//
//   stage 0:  p = u + dt L(u)
//   stage 1:  u = (u + p + dt L(p)) / 2,  and the total heat, sum u, as a domain integral
//
// x is periodic, y has insulated walls (the halo repeats the wall cell). The run is checked
// against the same scheme computed here in plain C++, and the total heat against its start.
// Under mpiexec (any rank count) the domain is also split over the ranks along x, in sync and in
// overlap mode, and the result must equal the serial one bit for bit.
#include <uwjit/codegen/number.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace rt = uwjit::runtime;
using uwjit::codegen::literal;

class HeunHeat final : public rt::Node {
public:
  HeunHeat(std::int64_t nx, std::int64_t ny, double diffusion)
      : Node("heun-heat", "heat", rt::Params{{"nx", nx}, {"ny", ny}, {"diffusion", diffusion}}) {}

  rt::NodeLayout layout() const override {
    const auto& p = params();
    return {.axes = {{.cells = p.get_int("nx"), .halo = 1, .boundary = rt::Boundary::periodic},
                     {.cells = p.get_int("ny"), .halo = 1, .boundary = rt::Boundary::edge}},
            .fields = {{"u"}, {"p"}},
            .integrals = {"heat"},
            .dt = 0.2,
            .stages = 2,
            .slab_initial_state = true};
  }

  // The cells of this rank's slab (the whole domain serially): index i is global offset + i.
  void initial_state(rt::State& state) const override {
    const rt::Slab& slab = state.slab();
    for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
      for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
        state["u"].at<double>(i, j) = initial(slab.offset[0] + i, slab.offset[1] + j, domain());
      }
    }
  }

  static double initial(std::int64_t i, std::int64_t j, const std::vector<std::int64_t>& n) {
    return (i < n[0] / 3 && j < n[1] / 2) ? 1.0 : 0.0;
  }

  // Each stage updates the box it is given (so the runtime may cut it into slabs, or overlap it
  // with the halo exchange).
  void emit_stage(uwjit::codegen::KernelWriter& w, int stage) const override {
    const std::string in = stage == 0 ? "u" : "p";
    w.state_out(stage == 0 ? "p" : "u");
    if (stage == 1) {
      w.integral("heat");
    }
    w.update_box();
    std::string body = "    const double D = " + literal(params().get_double("diffusion")) + ";\n";
    body += "    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
            "      for (uw_i64 j = ny_begin; j < ny_end; ++j) {\n"
            "        const double lap = " +
            in + "(i + 1, j) + " + in + "(i - 1, j) + " + in + "(i, j + 1) + " + in +
            "(i, j - 1) - 4.0 * " + in + "(i, j);\n";
    if (stage == 0) {
      body += "        p_out(i, j) = u(i, j) + args->dt * (D * lap);\n";
    } else {
      body += "        const double next = 0.5 * (u(i, j) + p(i, j) + args->dt * (D * lap));\n"
              "        u_out(i, j) = next;\n"
              "        heat += next;\n";
    }
    body += "      }\n    }\n";
    w.body(body);
  }
};

// The same scheme in plain C++: periodic in x, the wall cell repeated in y.
std::vector<double> reference(std::int64_t nx, std::int64_t ny, double D, double dt, int steps) {
  std::vector<double> u(static_cast<std::size_t>(nx * ny)), p(u.size()), next(u.size());
  for (std::int64_t i = 0; i < nx; ++i) {
    for (std::int64_t j = 0; j < ny; ++j) {
      u[static_cast<std::size_t>(i * ny + j)] = HeunHeat::initial(i, j, {nx, ny});
    }
  }
  auto at = [&](const std::vector<double>& a, std::int64_t i, std::int64_t j) {
    i = (i + nx) % nx;
    j = std::clamp<std::int64_t>(j, 0, ny - 1);
    return a[static_cast<std::size_t>(i * ny + j)];
  };
  auto lap = [&](const std::vector<double>& a, std::int64_t i, std::int64_t j) {
    return at(a, i + 1, j) + at(a, i - 1, j) + at(a, i, j + 1) + at(a, i, j - 1) -
           4.0 * at(a, i, j);
  };
  for (int s = 0; s < steps; ++s) {
    for (std::int64_t i = 0; i < nx; ++i) {
      for (std::int64_t j = 0; j < ny; ++j) {
        p[static_cast<std::size_t>(i * ny + j)] = at(u, i, j) + dt * (D * lap(u, i, j));
      }
    }
    for (std::int64_t i = 0; i < nx; ++i) {
      for (std::int64_t j = 0; j < ny; ++j) {
        next[static_cast<std::size_t>(i * ny + j)] =
            0.5 * (at(u, i, j) + at(p, i, j) + dt * (D * lap(p, i, j)));
      }
    }
    u.swap(next);
  }
  return u;
}

std::vector<double> values(const rt::Snapshot& snapshot) {
  const rt::Field& u = snapshot.field("heat", "u");
  std::vector<double> out(static_cast<std::size_t>(u.interior_count()));
  u.copy_interior_to(std::as_writable_bytes(std::span(out)));
  return out;
}

int main(int argc, char** argv) {
  uwjit::mpi::Session mpi(&argc, &argv);
  const auto world = mpi.world();
  const bool root = world->rank() == 0;
  const std::int64_t nx = 48, ny = 20;
  const double D = 0.5, dt = 0.2;
  const int steps = 60;
  uwjit::engine::Engine engine; // its cache: $UWJIT_CACHE_DIR, else $XDG_CACHE_HOME/uwjit
  auto node = std::make_shared<HeunHeat>(nx, ny, D);

  // Serially, on every rank.
  rt::Simulation serial(engine, {node});
  serial.step(steps);
  const auto got = values(serial.gathered());
  const auto want = reference(nx, ny, D, dt, steps);
  double worst = 0;
  for (std::size_t c = 0; c < got.size(); ++c) {
    worst = std::max(worst, std::abs(got[c] - want[c]));
  }
  const double start = static_cast<double>((nx / 3) * (ny / 2));
  const double heat = serial.integrals("heat")[0];
  bool ok = worst <= 1e-13 && std::abs(heat / start - 1) < 1e-12 &&
            serial.kernel_reports().size() == 2 &&
            serial.kernel_reports()[0].info.key != serial.kernel_reports()[1].info.key;
  if (root) {
    std::printf("serial: kernels %s (stage 0), %s (stage 1); after %d steps the largest "
                "difference from the reference is %.3g; heat %.15f (start %.1f)\n",
                serial.kernel_reports()[0].info.key.c_str(),
                serial.kernel_reports()[1].info.key.c_str(), steps, worst, heat, start);
  }

  // Split over the ranks along x: the state equals the serial state bit for bit.
  if (world->size() > 1) {
    for (const auto mode : {rt::ExchangeMode::sync, rt::ExchangeMode::overlap}) {
      rt::Simulation sharded(engine, {node}, {.comm = world.get(), .exchange = mode, .threads = 2});
      sharded.step(steps);
      const auto split = values(sharded.gathered());
      const bool same = std::memcmp(split.data(), got.data(), got.size() * sizeof(double)) == 0;
      // Overlap mode overlaps both stages' exchanges with their kernels.
      const bool overlapped =
          mode == rt::ExchangeMode::sync || sharded.exchange_stats().overlapped == 2 * steps;
      ok = ok && same && overlapped && std::abs(sharded.integrals("heat")[0] / heat - 1) < 1e-12;
      if (root) {
        std::printf("%d ranks, %s: state %s the serial state bit for bit\n", world->size(),
                    std::string(rt::to_string(mode)).c_str(), same ? "equals" : "DIFFERS from");
      }
    }
  }
  if (root) {
    std::printf("%s\n", ok ? "ok" : "FAILED");
  }
  return ok ? 0 : 1;
}
