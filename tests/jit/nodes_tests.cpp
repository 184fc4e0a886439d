// nodes/: the built-in nodes' physics checks, checkpoints and extents. These tests really JIT.
#include "sandbox.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/fvm.hpp>
#include <uwjit/nodes/mlp.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <sstream>
#include <tuple>
#include <unistd.h>

using uwjit::engine::Engine;
using uwjit::engine::Tier;
using uwjit::nodes::Trace;
using uwjit::nodes::Verdict;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;

namespace {

struct Run {
  Simulation simulation;
  std::shared_ptr<const uwjit::nodes::BuiltinNode> node;
  Trace trace;
};

Params with(Params params,
            std::initializer_list<std::pair<const char*, uwjit::runtime::Value>> changes) {
  for (const auto& [key, value] : changes) {
    REQUIRE(params.contains(key));
    params.set(key, value);
  }
  return params;
}

Run run(Engine& engine, const std::string& type, const Params& params, std::int64_t steps = -1) {
  auto node = uwjit::nodes::make(type, type, params);
  Run r{Simulation(engine, {node}), node, {}};
  const std::int64_t n = steps < 0 ? node->default_steps() : steps;
  for (std::int64_t s = 0; s < n; ++s) {
    r.simulation.step();
    r.trace.record(r.simulation, 0);
  }
  return r;
}

const uwjit::nodes::Measurement& measurement(const Verdict& verdict, const std::string& name) {
  for (const auto& m : verdict.measurements) {
    if (m.name == name) {
      return m;
    }
  }
  FAIL("no measurement " << name);
  throw std::logic_error("unreachable");
}

void require_pass(const Verdict& verdict) {
  for (const auto& m : verdict.measurements) {
    INFO(m.name << ": " << m.value << " (limit " << m.limit << ")");
    CHECK(m.passed);
  }
  CHECK(verdict.passed);
}

bool same_bits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// A sum of many doubles with the rounding error compensated (Neumaier), so that a test measures
// the scheme's drift, not its own.
double exact_sum(const std::vector<double>& values) {
  double sum = 0;
  double lost = 0;
  for (const double v : values) {
    const double t = sum + v;
    lost += std::abs(sum) >= std::abs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  return sum + lost;
}

// The interior of field `name` of node `node` as a flat list.
std::vector<double> interior(const Simulation& simulation, const std::string& node,
                             const std::string& name) {
  std::vector<double> values;
  const auto& field = simulation.field(node, name);
  field.for_each_interior(
      [&](std::span<const std::int64_t> index) { values.push_back(field.value(index)); });
  return values;
}

} // namespace

TEST_CASE("heat: insulating walls conserve heat and a Fourier mode decays at the analytic rate") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::int64_t n = 16;
  auto r = run(engine, "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{n}));
  require_pass(r.node->check(r.simulation.gathered(), r.trace));
  // Judged here too, from the params alone (the node's own check shares the node's mistakes):
  // u0 = 1 + A0 cos(k x), x = i + 1/2, k = pi / n, A0 = 0.5, kappa = 1, dt = courant = 0.1.
  const double k = std::numbers::pi / static_cast<double>(n);
  const double dt = 0.1;
  const auto steps = static_cast<double>(r.simulation.steps_taken());
  REQUIRE(steps == 500);
  CHECK(r.node->layout().dt == dt);
  std::vector<double> initial;
  for (std::int64_t i = 0; i < n; ++i) {
    initial.insert(initial.end(), static_cast<std::size_t>(n * n),
                   1.0 + 0.5 * std::cos(k * (static_cast<double>(i) + 0.5)));
  }
  const double h0 = exact_sum(initial);
  const auto u = interior(r.simulation, "heat", "u");
  const auto cells = static_cast<double>(u.size());
  // Heat: each step rounds each cell's update, a few ulps of u (about 1) per cell and step.
  CHECK(std::abs(exact_sum(u) - h0) <= 4 * steps * cells * 0x1.0p-52);
  // The kernel's own sum, in any order: the round-off of cells additions.
  CHECK(std::abs(r.simulation.integrals("heat")[0] - h0) <= cells * cells * 0x1.0p-52);
  // The mode's amplitude: the projection of u - mean on cos(k x).
  const double mean = exact_sum(u) / cells;
  double projection = 0;
  double norm = 0;
  for (std::size_t c = 0; c < u.size(); ++c) {
    const double phi = std::cos(k * (static_cast<double>(c / (n * n)) + 0.5));
    projection += (u[c] - mean) * phi;
    norm += phi * phi;
  }
  const double amplitude = projection / norm;
  // The scheme's exact decay, (1 - dt kappa 4 sin^2(k / 2))^t, to round-off (measured: 2e-14) ...
  const double discrete = 0.5 * std::pow(1 - dt * 4 * std::pow(std::sin(k / 2), 2), steps);
  CHECK(std::abs(amplitude / discrete - 1) <= 1e-10);
  // ... and the continuum's rate kappa k^2, which the scheme approaches to O(k^2 / 12) = 0.3 %.
  const double rate = -std::log(amplitude / 0.5) / (steps * dt);
  CHECK(std::abs(rate / (k * k) - 1) <= 0.005);
}

TEST_CASE("heat: between fixed walls u converges to the linear profile through the wall values") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params =
      with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6, 3, 3}),
           {{"boundary", "fixed"}, {"u_low", 2.0}, {"u_high", -1.0}, {"courant", 0.16}});
  // u0 = profile + A sin(k (x + 1/2)), k = pi / 6: the scheme's own mode, which decays by
  // g = 1 - dt kappa 4 sin^2(k / 2) per step; the rest is round-off, a few ulps per step.
  const double k = std::numbers::pi / 6;
  const double g = 1 - 0.16 * 4 * std::sin(k / 2) * std::sin(k / 2);
  for (const std::int64_t steps : {20, 900}) {
    auto r = run(engine, "heat", params, steps);
    const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
    require_pass(verdict);
    const auto& u = r.simulation.field("heat", "u");
    const double left = 0.5 * std::pow(g, static_cast<double>(steps)); // A0 = 0.5
    u.for_each_interior([&](std::span<const std::int64_t> i) {
      const double x = static_cast<double>(i[0]) + 0.5;
      const double profile = 2.0 - 3.0 * x / 6;
      CHECK(std::abs(u.value(i) - profile - left * std::sin(k * x)) <=
            static_cast<double>(steps) * 8 * 0x1.0p-52 * 2);
    });
    if (steps == 900) {
      CHECK(left < 1e-15); // converged: u is the linear profile to round-off
    }
  }
}

TEST_CASE("heat's integral change is the largest |u_new - u_old| of the step, the same bits at "
          "any thread count, with kappa or stored faces") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  for (const auto& size : std::vector<std::vector<std::int64_t>>{{45, 20, 19}, {90, 80, 73}}) {
    for (const std::string boundary : {"insulating", "fixed"}) {
      const Params params = with(uwjit::nodes::sized_params("heat", size),
                                 {{"boundary", boundary}, {"contrast", 4.0}});
      auto heat = uwjit::nodes::make("heat", "heat", params);
      std::vector<double> seen;
      for (const int threads : {1, 3}) {
        INFO(boundary << ", " << size[0] << " cells along x, " << threads << " threads");
        Simulation simulation(engine, {heat}, {.threads = threads});
        for (int s = 0; s < 3; ++s) {
          const std::vector<double> before = interior(simulation, "heat", "u");
          simulation.step();
          const std::vector<double> after = interior(simulation, "heat", "u");
          double largest = 0;
          for (std::size_t i = 0; i < after.size(); ++i) {
            largest = std::max(largest, std::abs(after[i] - before[i]));
          }
          const double change = simulation.integrals("heat")[1];
          CHECK(change > 0);
          CHECK(change == largest);
          if (threads == 1) {
            seen.push_back(change);
          } else {
            CHECK(std::bit_cast<std::uint64_t>(change) ==
                  std::bit_cast<std::uint64_t>(seen.at(static_cast<std::size_t>(s))));
          }
        }
      }
    }
  }
}

TEST_CASE("heat: a periodic mode decays at its own rate") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params = with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16}),
                             {{"boundary", "periodic"}});
  auto r = run(engine, "heat", params, 300);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  // conservation twice (exact sum, kernel integral), the mode's amplitude, its largest change
  // (the integral "change"), its continuum rate
  CHECK(verdict.measurements.size() == 5);
}

TEST_CASE("heat: a conductivity contrast still conserves heat; the mode check says it is skipped") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params =
      with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16}), {{"contrast", 8.0}});
  auto r = run(engine, "heat", params, 300);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  REQUIRE(verdict.notes.size() == 1);
  CHECK(verdict.notes[0].find("not uniform") != std::string::npos);
  // The inclusion matters: the field differs from the uniform run's.
  auto uniform =
      run(engine, "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16}), 300);
  CHECK_FALSE(
      r.simulation.field("heat", "u").interior_equals(uniform.simulation.field("heat", "u")));
}

TEST_CASE("heat: compiled-in and run-time extents give the same field bit for bit") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{12, 10, 14});
  auto compiled = run(engine, "heat", base, 40);
  auto runtime = run(engine, "heat", with(base, {{"extents", "runtime"}}), 40);
  CHECK(compiled.simulation.kernel_reports()[0].info.key !=
        runtime.simulation.kernel_reports()[0].info.key);
  CHECK(compiled.simulation.kernel_reports()[0].info.slots.extents.empty());
  CHECK(runtime.simulation.kernel_reports()[0].info.slots.extents ==
        std::vector<std::string>{"nx", "ny", "nz"});
  CHECK(compiled.simulation.field("heat", "u")
            .interior_equals(runtime.simulation.field("heat", "u")));
  // Integral sums may be vectorised differently: equal to round-off, not necessarily in bits.
  CHECK(compiled.simulation.integrals(std::size_t{0})[0] ==
        doctest::Approx(runtime.simulation.integrals(std::size_t{0})[0]).epsilon(1e-13));
}

TEST_CASE("pipe-flow: Poiseuille profile, drag balances the body force, mass is conserved") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params = uwjit::nodes::default_params("pipe-flow");
  auto r = run(engine, "pipe-flow", params);
  require_pass(r.node->check(r.simulation.gathered(), r.trace));
  // Judged here too, from the params alone: a pipe of radius R along x (periodic), its axis at
  // the middle of the y-z section, driven by the body force F = 4 nu u_max / R^2 that gives the
  // Poiseuille profile u_max (1 - r^2 / R^2), nu = (tau - 1/2) / 3.
  const auto nx = params.get_int("nx");
  const auto ny = params.get_int("ny");
  const auto nz = params.get_int("nz");
  const double radius = params.get_double("radius");
  const double u_max = params.get_double("u_max");
  const double nu = (params.get_double("tau") - 0.5) / 3;
  const double force = 4 * nu * u_max / (radius * radius);
  // D3Q19's x velocities of populations 0 .. 18, in the node's order (k_c,
  // nodes/src/pipe_flow.cpp): rest, +-x, +-y, +-z, then the edges +-(x+y), +-(x-y), +-(x+z),
  // +-(x-z), +-(y+z), +-(y-z).
  constexpr int c_x[19] = {0, 1, -1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, 1, -1, 0, 0, 0, 0};
  const auto& f = r.simulation.field("pipe-flow", "f");
  double fluid = 0;
  std::vector<double> mass;
  double error2 = 0;
  double norm2 = 0;
  double centre = 0; // the largest velocity
  // A wall node carries no flow: it holds the rest populations w_q of the initial state, bit for
  // bit, after every step (its density in the VTK output stays 1).
  const auto rest = [](int q) { return q == 0 ? 1.0 / 3.0 : (q <= 6 ? 1.0 / 18.0 : 1.0 / 36.0); };
  std::int64_t wall_values_changed = 0;
  for (std::int64_t x = 0; x < nx; ++x) {
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t z = 0; z < nz; ++z) {
        const double dy = static_cast<double>(y) - static_cast<double>(ny - 1) / 2;
        const double dz = static_cast<double>(z) - static_cast<double>(nz - 1) / 2;
        const double r2 = dy * dy + dz * dz;
        if (r2 >= radius * radius) {
          for (int q = 0; q < 19; ++q) {
            wall_values_changed += f.at<double>(q, x, y, z) == rest(q) ? 0 : 1;
          }
          continue; // a wall node
        }
        fluid += 1;
        double rho = 0;
        double jx = 0;
        for (int q = 0; q < 19; ++q) {
          const double value = f.at<double>(q, x, y, z);
          mass.push_back(value);
          rho += value;
          jx += c_x[q] * value;
        }
        // The stored populations are post-collision: sum c f* = rho u + F / 2 (Guo forcing).
        const double u = (jx - 0.5 * force) / rho;
        const double poiseuille = u_max * (1 - r2 / (radius * radius));
        error2 += (u - poiseuille) * (u - poiseuille);
        norm2 += poiseuille * poiseuille;
        centre = std::max(centre, u);
      }
    }
  }
  // Half-way bounce-back on a staircase circle: measured 1.7 % here (L2), 0.9 % at the centre.
  CHECK(wall_values_changed == 0);
  CHECK(std::sqrt(error2 / norm2) <= 0.025);
  CHECK(std::abs(centre / u_max - 1) <= 0.015);
  // At rest, density 1 at every fluid node: mass is conserved to round-off.
  const auto steps = static_cast<double>(r.simulation.steps_taken());
  CHECK(std::abs(exact_sum(mass) - fluid) <= fluid * 19 * 0x1.0p-52 * steps);
  // In the steady state the walls take what the body force gives: drag = F x fluid nodes
  // (measured: within 5e-5).
  CHECK(std::abs(r.simulation.integrals("pipe-flow")[0] / (force * fluid) - 1) <= 1e-3);
}

TEST_CASE("pipe-flow: the check fails a run that has not reached the steady state") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "pipe-flow", uwjit::nodes::default_params("pipe-flow"), 50);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  CHECK_FALSE(verdict.passed);
  CHECK_FALSE(measurement(verdict, "drag balances body force").passed);
  CHECK_FALSE(measurement(verdict, "Poiseuille profile").passed);
  CHECK(measurement(verdict, "mass conservation").passed);
}

TEST_CASE("pipe-flow: the wall is one sharded word per node, solid in bit 0, bounced links above") {
  const auto params = uwjit::nodes::default_params("pipe-flow"); // 32 x 24 x 24, radius 11
  const auto node = uwjit::nodes::make("pipe-flow", "p", params);
  const auto& links = node->static_data().at("pipe_links");
  CHECK(links.shape() == std::vector<std::int64_t>{32, 24, 24});
  CHECK(links.dtype() == uwjit::runtime::Dtype::i32);
  CHECK(links.shard_axis() == 0);
  CHECK(node->static_data().size() == 1);
  // Against the geometry itself: bit 0 where the site lies in the wall, bit q at a fluid site
  // whose upstream neighbour along direction q (from (y - c_y, z - c_z)) does.
  constexpr int c[19][2] = {{0, 0}, {0, 0},  {0, 0},   {1, 0},  {-1, 0}, {0, 1},  {0, -1},
                            {1, 0}, {-1, 0}, {-1, 0},  {1, 0},  {0, 1},  {0, -1}, {0, -1},
                            {0, 1}, {1, 1},  {-1, -1}, {1, -1}, {-1, 1}};
  const double radius = params.get_double("radius");
  auto solid = [&](std::int64_t y, std::int64_t z) {
    if (y < 0 || y >= 24 || z < 0 || z >= 24) {
      return true;
    }
    const double dy = static_cast<double>(y) - 11.5, dz = static_cast<double>(z) - 11.5;
    return dy * dy + dz * dz >= radius * radius;
  };
  const auto words = links.values<std::int32_t>();
  int bounced = 0;
  for (std::int64_t x = 0; x < 32; ++x) {
    for (std::int64_t y = 0; y < 24; ++y) {
      for (std::int64_t z = 0; z < 24; ++z) {
        std::int32_t expected = solid(y, z) ? 1 : 0;
        for (int q = 1; q < 19 && !solid(y, z); ++q) {
          expected |= solid(y - c[q][0], z - c[q][1]) ? 1 << q : 0;
        }
        const std::int32_t word = words[static_cast<std::size_t>((x * 24 + y) * 24 + z)];
        CHECK(word == expected);
        bounced += word > 1 ? 1 : 0;
      }
    }
  }
  CHECK(bounced > 0);
}

namespace {

// fvm's error at its steady state, judged here from the mesh's cell centres: max |T - T*| /
// max |T*|, T* = exp(pi (x - 1)) sin(pi y) the harmonic function whose values the boundary
// holds.
double fvm_error(const Run& r) {
  const auto centres = r.node->static_data().at("cell_centre").values<double>();
  const auto& t = r.simulation.field("fvm", "T");
  double worst = 0;
  double scale = 0;
  for (std::int64_t c = 0; c < t.interior_count(); ++c) {
    const double x = centres[static_cast<std::size_t>(2 * c)];
    const double y = centres[static_cast<std::size_t>(2 * c + 1)];
    const double exact = std::exp(std::numbers::pi * (x - 1)) * std::sin(std::numbers::pi * y);
    worst = std::max(worst, std::abs(t.at<double>(c) - exact));
    scale = std::max(scale, std::abs(exact));
  }
  return worst / scale;
}

} // namespace

TEST_CASE(
    "fvm: the unstructured diffusion converges to the analytic steady state, at nearly second "
    "order on the perturbed mesh and faster on the regular one") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params base = uwjit::nodes::default_params("fvm");
  auto at = [&](std::int64_t n, double perturbation) {
    return run(engine, "fvm", with(base, {{"n", n}, {"perturbation", perturbation}}));
  };
  // The default, perturbed mesh at n = 12, 16, 24 and 32 (spacing h = 1 / (n - 1)): the max
  // error, measured 2.6e-3, 1.0e-3, 6.0e-4 and 3.6e-4, falls like h^1.81 (least squares; the
  // single halvings vary from 2.8x to 4.4x with the random mesh). A first-order scheme gives an
  // order near 1 (the boundary's distance doubled, as from a mirrored ghost cell: 0.8).
  std::vector<double> log_h;
  std::vector<double> log_error;
  for (const std::int64_t n : {12, 16, 24, 32}) {
    auto r = at(n, 0.15);
    if (n == 32) {
      require_pass(r.node->check(r.simulation.gathered(), r.trace));
    }
    const double h = 1.0 / static_cast<double>(n - 1);
    const double error = fvm_error(r);
    INFO("n = " << n << ": error " << error << ", h^2 " << h * h);
    CHECK(error <= 0.5 * h * h); // measured: at most 0.35 h^2
    log_h.push_back(std::log(h));
    log_error.push_back(std::log(error));
  }
  const double mean_h = (log_h[0] + log_h[1] + log_h[2] + log_h[3]) / 4;
  const double mean_error = (log_error[0] + log_error[1] + log_error[2] + log_error[3]) / 4;
  double covariance = 0;
  double variance = 0;
  for (std::size_t i = 0; i < log_h.size(); ++i) {
    covariance += (log_h[i] - mean_h) * (log_error[i] - mean_error);
    variance += (log_h[i] - mean_h) * (log_h[i] - mean_h);
  }
  CHECK(covariance / variance >= 1.5);
  // The regular lattice (no perturbation): halving h from 1/15 to 1/31 cuts the error 19-fold
  // (measured 2.1e-6 to 1.1e-7: the uniform lattice superconverges); second order gives 4.3.
  CHECK(fvm_error(at(16, 0.0)) / fvm_error(at(32, 0.0)) >= 3.5);
}

TEST_CASE("fvm: the mesh is a replicate face graph with indirect addressing") {
  const auto node = uwjit::nodes::make(
      "fvm", "m", uwjit::nodes::sized_params("fvm", std::vector<std::int64_t>{8}));
  const auto& data = node->static_data();
  const auto cells = data.scalar("n_cells")->as_int();
  const auto faces = data.scalar("n_faces")->as_int();
  CHECK(node->domain() == std::vector<std::int64_t>{cells});
  for (const char* key : {"face_owner", "face_neighbour", "face_area", "cell_volume", "cell_centre",
                          "boundary_owner", "boundary_area", "boundary_point", "boundary_value"}) {
    CAPTURE(key);
    REQUIRE(data.array(key) != nullptr);
    CHECK(data.array(key)->replication() == uwjit::runtime::Replication::replicate);
  }
  const auto owner = data.at("face_owner").values<std::int32_t>();
  const auto neighbour = data.at("face_neighbour").values<std::int32_t>();
  REQUIRE(static_cast<std::int64_t>(owner.size()) == faces);
  double volume = 0;
  for (const double v : data.at("cell_volume").values<double>()) {
    CHECK(v > 0);
    volume += v;
  }
  for (std::size_t f = 0; f < owner.size(); ++f) {
    CHECK(owner[f] < neighbour[f]);
    CHECK(neighbour[f] < cells);
  }
  CHECK(volume > 0.5);
  CHECK(volume < 1.0);
  CHECK_THROWS_WITH_AS(
      uwjit::nodes::make("fvm", "m",
                         with(uwjit::nodes::default_params("fvm"), {{"perturbation", 0.3}})),
      doctest::Contains("perturbation"), uwjit::Error);
}

TEST_CASE("mlp: the kernel equals the plain C++ reference") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "mlp", uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{8}), 40);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  // Kernels round as written (no fp contraction): the same operations in the same order give the
  // same bits.
  CHECK(measurement(verdict, "matches the C++ reference").value == 0.0);
}

TEST_CASE("mlp: new weights of the same shapes need no compile and change the results") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params = uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{6});
  auto first = run(engine, "mlp", params, 10);
  auto second = run(engine, "mlp", with(params, {{"seed", 99}}), 10);
  CHECK(first.simulation.kernel_reports()[0].info.tier == Tier::compiled);
  CHECK(second.simulation.kernel_reports()[0].info.tier == Tier::memory);
  CHECK_FALSE(
      first.simulation.field("mlp", "u").interior_equals(second.simulation.field("mlp", "u")));
  require_pass(second.node->check(second.simulation.gathered(), second.trace));
  // Another width changes a shape: one compile.
  auto wider = run(engine, "mlp", with(params, {{"hidden", 24}}), 1);
  CHECK(wider.simulation.kernel_reports()[0].info.tier == Tier::compiled);
  // Run-time extents: another grid size is the same kernel.
  auto larger =
      run(engine, "mlp", uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{7, 5, 3}), 1);
  CHECK(larger.simulation.kernel_reports()[0].info.tier == Tier::memory);
}

TEST_CASE("mlp: rebinding other weights follows the new contents without a compile") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "mlp", uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{5}), 0);
  const auto& w = r.simulation.bound_static_data("mlp").at("w2");
  std::vector<double> doubled(w.values<double>().begin(), w.values<double>().end());
  for (auto& v : doubled) {
    v *= 2;
  }
  const auto rebound = r.simulation.rebind_static(
      "mlp", uwjit::runtime::StaticArray::from_vector("w2", doubled, w.shape()));
  CHECK_FALSE(rebound.new_kernel);
  r.simulation.step(5);
  // The check's reference uses the bound weights: it agrees only if the kernel read the new ones.
  require_pass(r.node->check(r.simulation.gathered(), r.trace));
  const auto& mlp = dynamic_cast<const uwjit::nodes::MlpNode&>(*r.node);
  const auto original = mlp.reference(mlp.static_data(), 5);
  const auto& u = r.simulation.field("mlp", "u");
  CHECK(std::abs(u.at<double>(0, 0, 0, 0) - original[0]) > 1e-6);
}

TEST_CASE("a checkpointed and restored run matches the uninterrupted one bit for bit") {
  const uwjit_test::TempDir scratch("uwjit-nodes");
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::vector<std::pair<std::string, Params>> cases = {
      {"heat", with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{10, 8, 6}),
                    {{"extents", "runtime"}})},
      {"pipe-flow", uwjit::nodes::sized_params("pipe-flow", std::vector<std::int64_t>{8, 10, 10})},
      {"fvm", uwjit::nodes::sized_params("fvm", std::vector<std::int64_t>{8})},
      {"mlp", uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{4})},
  };
  for (const auto& [type, params] : cases) {
    CAPTURE(type);
    auto whole = run(engine, type, params, 30);
    auto first = run(engine, type, params, 18);
    const auto file = scratch.path() / (type + ".ckpt");
    first.simulation.checkpoint(file);
    Simulation resumed = Simulation::restore(engine, file, uwjit::nodes::factory());
    CHECK(resumed.steps_taken() == 18);
    CHECK(resumed.kernel_reports()[0].info.tier ==
          Tier::memory); // rebuilt from params: same kernel
    CHECK(same_bits(resumed.integrals(std::size_t{0}), first.simulation.integrals(std::size_t{0})));
    resumed.step(12);
    CHECK(resumed.steps_taken() == 30);
    for (const auto& field : resumed.nodes()[0]->layout().fields) {
      CHECK(resumed.field(type, field.name)
                .interior_equals(whole.simulation.field(type, field.name)));
    }
    CHECK(same_bits(resumed.integrals(std::size_t{0}), whole.simulation.integrals(std::size_t{0})));
    CHECK(resumed.nodes()[0]->params() == params);
  }
}

TEST_CASE("a truncated, corrupt or foreign checkpoint is an io error naming the file") {
  const uwjit_test::TempDir scratch("uwjit-nodes");
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{4}), 2);
  const auto file = scratch.path() / "heat.ckpt";
  r.simulation.checkpoint(file);
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto io_error = [&](const std::string& content) {
    const auto path = scratch.path() / "bad.ckpt";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    try {
      (void)Simulation::restore(engine, path, uwjit::nodes::factory());
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::io);
      CHECK(std::string(error.what()).find("bad.ckpt") != std::string::npos);
      return std::string(error.what());
    }
    return std::string("(restored)");
  };
  CHECK(io_error(bytes.substr(0, bytes.size() - 10)).find("truncated or corrupt") !=
        std::string::npos);
  std::string flipped = bytes;
  flipped[40] = static_cast<char>(flipped[40] ^ 1);
  CHECK(io_error(flipped).find("checksum mismatch") != std::string::npos);
  CHECK(io_error("#!/bin/sh\necho hello\n").find("not a uwjit checkpoint") != std::string::npos);
  CHECK(io_error("").find("not a uwjit checkpoint") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      (void)Simulation::restore(engine, scratch.path() / "none.ckpt", uwjit::nodes::factory()),
      doctest::Contains("none.ckpt: cannot open"), uwjit::Error);
  // The original still restores.
  CHECK(Simulation::restore(engine, file, uwjit::nodes::factory()).steps_taken() == 2);
}

TEST_CASE("the registry knows the four nodes, their sizes and their params") {
  CHECK(uwjit::nodes::kinds().size() == 4);
  CHECK_THROWS_WITH_AS(
      (void)uwjit::nodes::default_params("lbm"),
      doctest::Contains("unknown node type \"lbm\" (built-in: heat, pipe-flow, fvm, mlp)"),
      uwjit::Error);
  const Params pipe = uwjit::nodes::sized_params("pipe-flow", std::vector<std::int64_t>{40});
  CHECK(pipe.get_int("ny") == 30);
  CHECK(pipe.get_double("radius") == 14.0);
  CHECK_THROWS_WITH_AS((void)uwjit::nodes::sized_params("fvm", std::vector<std::int64_t>{8, 8, 8}),
                       doctest::Contains("fvm: the size is one number"), uwjit::Error);
  CHECK_THROWS_WITH_AS((void)uwjit::nodes::make(
                           "heat", "h", with(uwjit::nodes::default_params("heat"), {{"nx", 2}})),
                       doctest::Contains("heat: param \"nx\" = 2 is out of range"), uwjit::Error);
  CHECK_THROWS_WITH_AS(
      (void)uwjit::nodes::make("pipe-flow", "p",
                               with(uwjit::nodes::default_params("pipe-flow"), {{"radius", 12.0}})),
      doctest::Contains("param \"radius\""), uwjit::Error);
}

TEST_CASE("subnormal params are outside every node's accepted range, each named with its range") {
  const double subnormal = 1e-320;
  for (const auto& [type, key, range] :
       {std::tuple{"heat", "kappa", "[1e-100, 1e+12]"},
        std::tuple{"heat", "contrast", "[1e-12, 1e+12]"},
        std::tuple{"heat", "courant", "[1e-12, 0.166667]"},
        std::tuple{"fvm", "kappa", "[1e-100, 1e+12]"}, std::tuple{"fvm", "safety", "[1e-06, 1]"},
        std::tuple{"pipe-flow", "u_max", "[1e-12, 0.2]"},
        std::tuple{"mlp", "dt", "[1e-100, 1e+06]"}}) {
    INFO(std::string(type) << " " << key);
    const std::string expected =
        std::string(type) + ": param \"" + key + "\" = 1e-320 is out of range " + range;
    CHECK_THROWS_WITH_AS(
        (void)uwjit::nodes::make(type, type,
                                 with(uwjit::nodes::default_params(type), {{key, subnormal}})),
        doctest::Contains(expected.c_str()), uwjit::Error);
  }
}

TEST_CASE("a run's length derived from the params that exceeds what a run can take is refused, "
          "naming the params") {
  // tau just above 1/2: a viscosity of 4e-17, a flow that develops in some 5e18 steps.
  CHECK_THROWS_WITH_AS(
      (void)uwjit::nodes::make(
          "pipe-flow", "p",
          with(uwjit::nodes::default_params("pipe-flow"), {{"tau", 0.5000000000000001}})),
      doctest::Contains("pipe-flow: the steps to a developed flow, log(1e4) R^2 / (nu 2.405^2) = "),
      uwjit::Error);
  CHECK_THROWS_WITH_AS(
      (void)uwjit::nodes::make(
          "pipe-flow", "p",
          with(uwjit::nodes::default_params("pipe-flow"), {{"tau", 0.5000000000000001}})),
      doctest::Contains("from tau = 0.5000000000000001, radius = 11.0: more than a run can take"),
      uwjit::Error);
}

TEST_CASE("heat on a grid too coarse for its mode does not judge the continuum rate, and says so") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  for (const char* boundary : {"insulating", "periodic", "fixed"}) {
    INFO(boundary);
    const Params params = with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{3}),
                               {{"boundary", boundary}});
    auto r = run(engine, "heat", params, 10);
    const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
    require_pass(verdict);
    bool said = false;
    for (const auto& note : verdict.notes) {
      said =
          said || note.rfind("mode decay rate (continuum): not judged, mode 1 on 3 cells", 0) == 0;
    }
    CHECK(said);
    for (const auto& m : verdict.measurements) {
      CHECK(m.name != "mode decay rate (continuum)");
    }
  }
  // From the nx the note names on, the continuum rate is judged, and passes.
  auto r =
      run(engine, "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6}), 10);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  CHECK(measurement(verdict, "mode decay rate (continuum)").value <= 0.01);
}

TEST_CASE("heat, pipe-flow, fvm and mlp give the same state bytes and integral bits at 1, 2, 3 "
          "and 7 threads, on grids of many uneven slabs") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // The CPU executor cuts a kernel's box along its first axis wider than one cell into slabs of
  // about 16384 cells, at most 64 (runtime/src/cpu_executor.cpp), and adds the slabs' integrals
  // in slab order. Two slabs would hide an order that followed the threads (0 + a + b equals
  // 0 + b + a), so each grid gives many slabs of uneven widths: heat 22 slabs of 2 or 3 planes,
  // pipe-flow 9 of 4 or 5, mlp 8 of 1 or 2. fvm's CPU kernel writes its own loops: one call,
  // whatever the thread count.
  struct Case {
    const char* type;
    std::vector<std::int64_t> size;
    int steps;
    std::int64_t slabs; // as the executor cuts the interior
  };
  for (const auto& [type, size, steps, slabs] :
       {Case{"heat", {45, 90, 90}, 8, 22}, Case{"pipe-flow", {37, 64, 64}, 5, 9},
        Case{"fvm", {12}, 5, 1}, Case{"mlp", {11, 110, 110}, 3, 8}}) {
    INFO(std::string(type));
    if (slabs > 1) {
      const std::int64_t cells = size[0] * size[1] * size[2];
      REQUIRE(std::min<std::int64_t>(cells / 16384, 64) == slabs);
      REQUIRE(size[0] % slabs != 0); // uneven widths
    }
    auto node = uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size));
    // Every step's integrals, so that one reordered sum in any step shows.
    auto integrals_per_step = [&](Simulation& simulation) {
      std::vector<double> all;
      for (int s = 0; s < steps; ++s) {
        simulation.step();
        const auto now = simulation.integrals(std::size_t{0});
        all.insert(all.end(), now.begin(), now.end());
      }
      return all;
    };
    Simulation one(engine, {node}, {.threads = 1});
    CHECK(one.threads() == 1);
    const auto one_integrals = integrals_per_step(one);
    for (const int threads : {2, 3, 7}) {
      INFO(threads << " threads");
      Simulation many(engine, {node}, {.threads = threads});
      CHECK(many.threads() == threads);
      CHECK(same_bits(integrals_per_step(many), one_integrals));
      for (const auto& f : node->layout().fields) {
        CHECK(many.field(type, f.name).interior_equals(one.field(type, f.name)));
      }
    }
  }
}

namespace {

// heat as its kernel was written before its face conductances became static arrays: it reads
// kappa and computes the harmonic mean of each face for each of the face's two cells (six
// divisions per cell). Layout, initial state and kappa are the heat node's own.
class HeatFromKappa final : public uwjit::runtime::Node {
public:
  explicit HeatFromKappa(std::shared_ptr<const uwjit::nodes::BuiltinNode> heat)
      : Node("heat-from-kappa", heat->name(), heat->params()), m_heat(std::move(heat)) {}

  [[nodiscard]] uwjit::runtime::NodeLayout layout() const override { return m_heat->layout(); }
  void initial_state(uwjit::runtime::State& state) const override { m_heat->initial_state(state); }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("kappa", uwjit::runtime::Dtype::f64,
                   {{w.domain(0), 1}, {w.domain(1), 1}, {w.domain(2), 1}});
    w.integral("heat");
    w.integral("change", uwjit::codegen::Reduction::max);
    w.helpers("inline double face(double a, double b) { return 2.0 * a * b / (a + b); }\n");
    w.for_each_cell({.indices = {"i", "j", "k"}}, R"(          const double uc = u(i, j, k);
          const double kc = kappa(i, j, k);
          double flux = face(kc, kappa(i - 1, j, k)) * (u(i - 1, j, k) - uc);
          flux += face(kc, kappa(i + 1, j, k)) * (u(i + 1, j, k) - uc);
          flux += face(kc, kappa(i, j - 1, k)) * (u(i, j - 1, k) - uc);
          flux += face(kc, kappa(i, j + 1, k)) * (u(i, j + 1, k) - uc);
          flux += face(kc, kappa(i, j, k - 1)) * (u(i, j, k - 1) - uc);
          flux += face(kc, kappa(i, j, k + 1)) * (u(i, j, k + 1) - uc);
          const double next = uc + args->dt * flux;
          u_out(i, j, k) = next;
          heat += next;
          change.max(uwm::fabs(next - uc));
)");
  }

protected:
  // heat's conductivity: a sphere of contrast × kappa, a quarter of the smallest extent in
  // radius, in the middle.
  [[nodiscard]] uwjit::runtime::StaticData build_static_data() const override {
    const auto n = m_heat->domain();
    const double kappa = params().get_double("kappa");
    const double contrast = params().get_double("contrast");
    const double radius = static_cast<double>(std::min({n[0], n[1], n[2]})) / 4;
    std::vector<double> values;
    for (std::int64_t i = 0; i < n[0]; ++i) {
      for (std::int64_t j = 0; j < n[1]; ++j) {
        for (std::int64_t k = 0; k < n[2]; ++k) {
          const double x = static_cast<double>(i) + 0.5 - static_cast<double>(n[0]) / 2;
          const double y = static_cast<double>(j) + 0.5 - static_cast<double>(n[1]) / 2;
          const double z = static_cast<double>(k) + 0.5 - static_cast<double>(n[2]) / 2;
          values.push_back(x * x + y * y + z * z < radius * radius ? kappa * contrast : kappa);
        }
      }
    }
    uwjit::runtime::StaticData data;
    data.add(uwjit::runtime::StaticArray::from_vector("kappa", std::move(values), n));
    return data;
  }

private:
  std::shared_ptr<const uwjit::nodes::BuiltinNode> m_heat;
};

} // namespace

TEST_CASE("heat's face conductances, computed once (as static arrays, or in the CPU kernel's "
          "loops), give the bits of the kernel that computed each face for both its cells, at "
          "every wall kind and thread count") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // Small grids put the sphere of another conductivity against the walls (nx = 4: the cell
  // next to a fixed wall is inside it, the cell on the wall not); 45 × 20 × 19 runs in 3 slabs;
  // above 2^19 cells, the CPU kernel computes each face once from kappa in loops of its own, in
  // tiles of 32 rows of at most 128 cells, through the planes of each slab: 90 × 80 × 73 runs in
  // 32 slabs of 2 or 3 planes, two whole tiles of rows and a part, one part tile along z;
  // 20 × 100 × 300 in 20 slabs of one plane, three whole tiles of rows and a part, two whole
  // tiles along z and a part.
  const std::vector<std::vector<std::int64_t>> sizes = {
      {4, 4, 4}, {5, 3, 6}, {45, 20, 19}, {90, 80, 73}, {20, 100, 300}};
  for (const std::string boundary : {"insulating", "periodic", "fixed"}) {
    for (const double contrast : {1.0, 8.0, 0.125}) {
      for (const auto& size : sizes) {
        for (const std::string extents : {"compiled", "runtime"}) {
          const Params params =
              with(uwjit::nodes::sized_params("heat", size), {{"boundary", boundary},
                                                              {"contrast", contrast},
                                                              {"mode", std::int64_t{1}},
                                                              {"extents", extents}});
          auto heat = uwjit::nodes::make("heat", "heat", params);
          auto before = std::make_shared<HeatFromKappa>(heat);
          for (const int threads : {1, 3}) {
            INFO(boundary << ", contrast " << contrast << ", " << size[0] << "×" << size[1] << "×"
                          << size[2] << ", " << extents << ", " << threads << " threads");
            Simulation now(engine, {heat}, {.threads = threads});
            Simulation then(engine, {before}, {.threads = threads});
            for (int s = 0; s < 6; ++s) {
              now.step();
              then.step();
              const auto got = now.integrals(std::size_t{0});
              const auto expected = then.integrals(std::size_t{0});
              if (size[0] * size[1] * size[2] <= (std::int64_t{1} << 19)) {
                CHECK(same_bits(got, expected));
              } else {
                // The maximum `change` is the same bits; the sum `heat` is added in the tiles'
                // order, so equal to round-off.
                CHECK(std::bit_cast<std::uint64_t>(got[1]) ==
                      std::bit_cast<std::uint64_t>(expected[1]));
                CHECK(got[0] == doctest::Approx(expected[0]).epsilon(1e-13));
              }
            }
            CHECK(now.field("heat", "u").interior_equals(then.field("heat", "u")));
          }
        }
      }
    }
  }
}

TEST_CASE("heat's kernel divides nothing up to 2^19 cells, where it reads its face conductances; "
          "above, it reads kappa and divides once per face, not once per face and cell") {
  const uwjit_test::TempDir scratch("uwjit-nodes");
  uwjit::engine::EngineOptions options;
  options.disk_cache = uwjit::engine::DiskCache::off;
  options.dump_dir = scratch.path();
  Engine engine(options);
  struct Case {
    std::string boundary;
    std::vector<std::int64_t> size;
    std::vector<std::string> statics;
  };
  for (const auto& [boundary, size, statics] :
       {Case{"insulating", {16}, {"face_x", "face_y", "face_z"}},
        Case{"fixed", {16}, {"face_x", "face_y", "face_z", "face_x_low"}},
        Case{"insulating", {128, 64, 64}, {"face_x", "face_y", "face_z"}},
        Case{"insulating", {128, 64, 65}, {"kappa"}}, Case{"fixed", {128, 64, 65}, {"kappa"}}}) {
    const Params params =
        with(uwjit::nodes::sized_params("heat", size), {{"boundary", boundary}, {"contrast", 4.0}});
    auto node = uwjit::nodes::make("heat", "heat", params);
    Simulation simulation(engine, {node});
    const auto& report = simulation.kernel_reports()[0];
    INFO(boundary << ", " << node->domain()[2] << " cells along z, " << report.info.key);
    CHECK(report.source->slots().statics == statics);
    std::ifstream in(scratch.path() / ("heat-" + report.info.key + ".ll"));
    REQUIRE(in);
    const std::string ir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(ir.find(" x double>") != std::string::npos);
    CHECK((ir.find("fdiv") == std::string::npos) == (statics.front() != "kappa"));
    // The cell form computed each face for each of its two cells: six divisions in its loop's
    // body, one per face of the cell. Each face once leaves at most four in any block (the
    // update's loop divides twice per cell, for the faces above it along x and y, its vector
    // iterations interleaved in pairs; the row's faces along z once per cell in a loop before).
    std::size_t most = 0;
    std::size_t in_block = 0;
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      // A block starts at its label ("35:", "vector.body:", each maybe followed by a comment).
      const std::size_t colon = line.find(':');
      const bool label =
          colon != std::string::npos && colon > 0 && line.front() != ' ' && colon < line.find(' ');
      in_block = label || line.starts_with("define ") ? 0 : in_block;
      in_block += line.find("= fdiv ") != std::string::npos ? 1 : 0;
      most = std::max(most, in_block);
    }
    CHECK(most < 6);
  }
}

TEST_CASE("a thread count below 0 or above 4096 is a usage error naming the rule") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto node = uwjit::nodes::make("heat", "heat", uwjit::nodes::default_params("heat"));
  for (const int threads : {-1, 4097, 100000}) {
    try {
      Simulation simulation(engine, {node}, {.threads = threads});
      FAIL("no error");
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::usage);
      CHECK(std::string(error.what()) ==
            "simulation: threads (0: the default): expected a whole number from 1 to 4096, got \"" +
                std::to_string(threads) + "\"");
    }
  }
}

TEST_CASE("heat and pipe-flow kernels vectorise without run-time overlap checks, heat's loops of "
          "its own above 2^19 cells too") {
  const uwjit_test::TempDir scratch("uwjit-nodes");
  uwjit::engine::EngineOptions options;
  options.disk_cache = uwjit::engine::DiskCache::off;
  options.dump_dir = scratch.path();
  Engine engine(options);
  // heat of 16 cells a side is the cell form reading its stored faces; 90 × 80 × 80, above 2^19
  // cells, its loops of its own reading kappa.
  struct Case {
    const char* type;
    std::vector<std::int64_t> size;
    const char* extents;
  };
  for (const auto& [type, size, extents] :
       {Case{"heat", {16}, "compiled"}, Case{"heat", {16}, "runtime"},
        Case{"heat", {90, 80, 80}, "compiled"}, Case{"heat", {90, 80, 80}, "runtime"},
        Case{"pipe-flow", {16}, "compiled"}}) {
    const Params params = with(uwjit::nodes::sized_params(type, size), {{"extents", extents}});
    auto node = uwjit::nodes::make(type, type, params);
    Simulation simulation(engine, {node});
    const std::string key = simulation.kernel_reports()[0].info.key;
    std::ifstream in(scratch.path() / (std::string(type) + "-" + key + ".ll"));
    REQUIRE(in);
    const std::string ir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(std::string(type) << " " << key);
    // Vector arithmetic on doubles, and no comparison of pointers: a run-time overlap check
    // compares the bounds of two buffers before choosing the vector loop.
    CHECK(ir.find(" x double>") != std::string::npos);
    CHECK(ir.find("icmp ult ptr") == std::string::npos);
    CHECK(ir.find("icmp ugt ptr") == std::string::npos);
    CHECK(ir.find("icmp ule ptr") == std::string::npos);
    CHECK(ir.find("icmp uge ptr") == std::string::npos);
  }
}
