// nodes/: the built-in nodes' physics checks, checkpoints and extents. These tests really JIT.
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/fvm.hpp>
#include <uwjit/nodes/mlp.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
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

} // namespace

TEST_CASE("heat: insulating walls conserve heat and a Fourier mode decays at the analytic rate") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16}));
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  CHECK(measurement(verdict, "heat conservation").value <= 1e-12);
  CHECK(measurement(verdict, "mode amplitude (discrete)").value <= 1e-9);
  CHECK(measurement(verdict, "mode decay rate (continuum)").value <= 0.01);
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

TEST_CASE("heat: a periodic mode decays at its own rate") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const Params params = with(uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16}),
                             {{"boundary", "periodic"}});
  auto r = run(engine, "heat", params, 300);
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  CHECK(verdict.measurements.size() == 4);
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
  CHECK(compiled.simulation.kernels()[0].info.key != runtime.simulation.kernels()[0].info.key);
  CHECK(compiled.simulation.kernels()[0].info.slots.extents.empty());
  CHECK(runtime.simulation.kernels()[0].info.slots.extents ==
        std::vector<std::string>{"nx", "ny", "nz"});
  CHECK(compiled.simulation.field("heat", "u")
            .interior_equals(runtime.simulation.field("heat", "u")));
  // Integral sums may be vectorised differently: equal to round-off, not necessarily in bits.
  CHECK(compiled.simulation.integrals(std::size_t{0})[0] ==
        doctest::Approx(runtime.simulation.integrals(std::size_t{0})[0]).epsilon(1e-13));
}

TEST_CASE("pipe-flow: Poiseuille profile, drag balances the body force, mass is conserved") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto r = run(engine, "pipe-flow", uwjit::nodes::default_params("pipe-flow"));
  const Verdict verdict = r.node->check(r.simulation.gathered(), r.trace);
  require_pass(verdict);
  CHECK(measurement(verdict, "Poiseuille profile").value < 0.05);
  CHECK(measurement(verdict, "drag balances body force").value < 0.01);
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

TEST_CASE("pipe-flow: the wall masks are sharded static arrays of the documented shapes") {
  const auto node = uwjit::nodes::make("pipe-flow", "p", uwjit::nodes::default_params("pipe-flow"));
  const auto& wall = node->static_data().at("pipe_wall");
  const auto& missing = node->static_data().at("pipe_missing");
  CHECK(wall.shape() == std::vector<std::int64_t>{32, 24, 24});
  CHECK(missing.shape() == std::vector<std::int64_t>{19, 32, 24, 24});
  CHECK(wall.dtype() == uwjit::runtime::Dtype::u8);
  CHECK(missing.dtype() == uwjit::runtime::Dtype::u8);
  CHECK(wall.shard_axis() == 0);
  CHECK(missing.shard_axis() == 1); // x is the second axis of (19, nx, ny, nz)
}

TEST_CASE("fvm: the unstructured diffusion converges to the analytic steady state") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto coarse =
      run(engine, "fvm", uwjit::nodes::sized_params("fvm", std::vector<std::int64_t>{16}));
  auto fine = run(engine, "fvm", uwjit::nodes::default_params("fvm"));
  const Verdict coarse_verdict = coarse.node->check(coarse.simulation.gathered(), coarse.trace);
  const Verdict fine_verdict = fine.node->check(fine.simulation.gathered(), fine.trace);
  require_pass(coarse_verdict);
  require_pass(fine_verdict);
  const double coarse_error = measurement(coarse_verdict, "analytic steady state").value;
  const double fine_error = measurement(fine_verdict, "analytic steady state").value;
  // Halving the spacing cuts the error by well over two: the scheme converges.
  CHECK(coarse_error / fine_error > 2.0);
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
  CHECK(first.simulation.kernels()[0].info.tier == Tier::compiled);
  CHECK(second.simulation.kernels()[0].info.tier == Tier::memory);
  CHECK_FALSE(
      first.simulation.field("mlp", "u").interior_equals(second.simulation.field("mlp", "u")));
  require_pass(second.node->check(second.simulation.gathered(), second.trace));
  // Another width changes a shape: one compile.
  auto wider = run(engine, "mlp", with(params, {{"hidden", 24}}), 1);
  CHECK(wider.simulation.kernels()[0].info.tier == Tier::compiled);
  // Run-time extents: another grid size is the same kernel.
  auto larger =
      run(engine, "mlp", uwjit::nodes::sized_params("mlp", std::vector<std::int64_t>{7, 5, 3}), 1);
  CHECK(larger.simulation.kernels()[0].info.tier == Tier::memory);
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
    CHECK(resumed.kernels()[0].info.tier == Tier::memory); // rebuilt from params: same kernel
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
  CHECK(io_error(bytes.substr(0, bytes.size() - 10)).find("checksum mismatch") !=
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
    INFO(type);
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

TEST_CASE("a negative thread count is a usage error") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto node = uwjit::nodes::make("heat", "heat", uwjit::nodes::default_params("heat"));
  try {
    Simulation simulation(engine, {node}, {.threads = -1});
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    CHECK(std::string(error.what()).find("threads") != std::string::npos);
  }
}

TEST_CASE("heat and pipe-flow kernels vectorise without run-time overlap checks") {
  const uwjit_test::TempDir scratch("uwjit-nodes");
  uwjit::engine::EngineOptions options;
  options.disk_cache = uwjit::engine::DiskCache::off;
  options.dump_dir = scratch.path();
  Engine engine(options);
  for (const auto& [type, sets] :
       {std::pair{"heat", std::vector<std::pair<const char*, uwjit::runtime::Value>>{}},
        std::pair{"heat", std::vector<std::pair<const char*, uwjit::runtime::Value>>{{"extents",
                                                                                      "runtime"}}},
        std::pair{"pipe-flow", std::vector<std::pair<const char*, uwjit::runtime::Value>>{}}}) {
    Params params = uwjit::nodes::sized_params(type, std::vector<std::int64_t>{16});
    for (const auto& [key, value] : sets) {
      params.set(key, value);
    }
    auto node = uwjit::nodes::make(type, type, params);
    Simulation simulation(engine, {node});
    const std::string key = simulation.kernels()[0].info.key;
    std::ifstream in(scratch.path() / (std::string(type) + "-" + key + ".ll"));
    REQUIRE(in);
    const std::string ir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(type << " " << key);
    // Vector arithmetic on doubles, and no comparison of pointers: a run-time overlap check
    // compares the bounds of two buffers before choosing the vector loop.
    CHECK(ir.find(" x double>") != std::string::npos);
    CHECK(ir.find("icmp ult ptr") == std::string::npos);
    CHECK(ir.find("icmp ugt ptr") == std::string::npos);
    CHECK(ir.find("icmp ule ptr") == std::string::npos);
    CHECK(ir.find("icmp uge ptr") == std::string::npos);
  }
}
