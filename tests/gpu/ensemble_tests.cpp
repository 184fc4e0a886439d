// An ensemble on a CUDA device (EnsembleOptions::device): one launch a stage for every member
// stepping (and one per field and axis for their halos), each member's state and static arrays
// in device memory. Every member's fields are
// those of the same ensemble on the CPU bit for bit (mlp's within 1e-12: gpu_tolerance), its
// steps and status the same, its integrals within 1e-12, with slots refilled on the device (a
// batch smaller than the sweep); the default batch is sized from the device's free memory. Under
// the stand-in driver the launches are emulated (gpu_support.hpp).
#include "gpu_support.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/runtime/ensemble.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using uwjit::runtime::Ensemble;
using uwjit::runtime::EnsembleOptions;
using uwjit::runtime::MemberResult;

namespace {

struct Sweep {
  std::string type;
  std::vector<std::int64_t> size;
  uwjit::runtime::ParamRange vary;
  std::vector<std::pair<std::string, std::string>> set = {}; // params every member shares
};

// Five members of `type`, `name` from `low` to `high`.
Sweep sweep_of(std::string type, std::vector<std::int64_t> size, std::string name, double low,
               double high, std::vector<std::pair<std::string, std::string>> set = {}) {
  Sweep sweep;
  sweep.type = std::move(type);
  sweep.size = std::move(size);
  sweep.vary.name = std::move(name);
  sweep.vary.low = low;
  sweep.vary.high = high;
  sweep.vary.count = 5;
  sweep.set = std::move(set);
  return sweep;
}

// The sweep's members, by id, and the ensemble's batch size and reason.
struct Outcome {
  std::vector<MemberResult> members;
  std::int64_t batch = 0;
  std::string reason;
  std::string device;
};

Outcome run(uwjit::engine::Engine& engine, const Sweep& sweep, const std::string& device,
            std::int64_t batch) {
  const std::string type = sweep.type;
  auto make = [type](const uwjit::runtime::Params& params) {
    return uwjit::nodes::make(type, type, params);
  };
  EnsembleOptions options;
  options.until = uwjit::runtime::StopRule::parse({"steps:5"});
  options.batch = batch;
  options.threads = 1;
  options.device = device;
  auto sink = std::make_shared<uwjit::runtime::MemorySink>(1000);
  auto base = uwjit::nodes::sized_params(type, sweep.size);
  for (const auto& [name, value] : sweep.set) {
    base.set(name, uwjit::runtime::Value(value));
  }
  Ensemble ensemble(engine, make, base,
                    std::make_unique<uwjit::runtime::GridSampler>(
                        std::vector<uwjit::runtime::ParamRange>{sweep.vary}),
                    {sink}, options);
  ensemble.run();
  Outcome out{sink->take(), ensemble.batch_size(), ensemble.batch_reason(), ensemble.device()};
  std::sort(out.members.begin(), out.members.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

// Whether two doubles' arrays (as bytes) are equal, or within `tolerance` of max(|value|, 1).
bool same_values(const std::vector<std::byte>& a, const std::vector<std::byte>& b,
                 double tolerance) {
  if (a.size() != b.size()) {
    return false;
  }
  if (tolerance == 0) {
    return a == b;
  }
  for (std::size_t at = 0; at + sizeof(double) <= a.size(); at += sizeof(double)) {
    double u = 0;
    double v = 0;
    std::memcpy(&u, a.data() + at, sizeof u);
    std::memcpy(&v, b.data() + at, sizeof v);
    if (!(std::abs(u - v) <= tolerance * std::max(std::abs(v), 1.0))) {
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("an ensemble on the CUDA device: one launch a stage, every member as on the CPU, "
          "slots refilled there") {
  uwjit::engine::Engine engine(uwjit_gpu_test::engine_options());
  const std::vector<Sweep> sweeps = {
      sweep_of("heat", {11, 9, 13}, "contrast", 1, 4),
      // Each member's own wall value, in the halos the members' one launch per axis fills.
      sweep_of("heat", {11, 9, 13}, "u_low", -1, 2, {{"boundary", "fixed"}}),
      sweep_of("pipe-flow", {12, 11, 17}, "tau", 0.6, 1.2),
      sweep_of("fvm", {24}, "seed", 1, 5),
      sweep_of("mlp", {5, 7, 33}, "seed", 1, 5),
  };
  for (const auto& sweep : sweeps) {
    CAPTURE(sweep.type);
    const Outcome cpu = run(engine, sweep, "cpu", 2);
    const Outcome gpu = run(engine, sweep, "cuda", 2);
    CHECK(gpu.device.rfind("cuda:0 (", 0) == 0);
    CHECK(cpu.device == "cpu");
    REQUIRE(gpu.members.size() == 5);
    REQUIRE(cpu.members.size() == 5);
    const double tolerance =
        uwjit_gpu_test::gpu_tolerance(*uwjit_gpu_test::built_in(sweep.type, sweep.size));
    for (std::size_t k = 0; k < gpu.members.size(); ++k) {
      const MemberResult& g = gpu.members[k];
      const MemberResult& c = cpu.members[k];
      CAPTURE(g.id);
      CHECK(g.id == c.id);
      CHECK(g.values == c.values);
      CHECK(g.steps == c.steps);
      CHECK(g.status == c.status);
      REQUIRE(g.fields.size() == c.fields.size());
      for (std::size_t f = 0; f < g.fields.size(); ++f) {
        CAPTURE(g.fields[f].name);
        CHECK(same_values(g.fields[f].data, c.fields[f].data, tolerance));
      }
      REQUIRE(g.integrals.size() == c.integrals.size());
      for (std::size_t i = 0; i < g.integrals.size(); ++i) {
        CHECK(std::abs(g.integrals[i] - c.integrals[i]) <=
              1e-12 * std::max(std::abs(c.integrals[i]), 1.0));
      }
    }
  }
}

TEST_CASE("members on the CUDA device stop when their largest change is below a tolerance, at "
          "the steps and with the maxima of the CPU") {
  uwjit::engine::Engine engine(uwjit_gpu_test::engine_options());
  auto outcome = [&](const std::string& device) {
    EnsembleOptions options;
    options.until = uwjit::runtime::StopRule::parse({"below:change<1e-6", "steps:400"});
    options.batch = 2;
    options.threads = 1;
    options.device = device;
    auto sink = std::make_shared<uwjit::runtime::MemorySink>(100);
    uwjit::runtime::ParamRange rate{.name = "rate", .low = 0.1, .high = 0.4, .count = 3};
    Ensemble ensemble(
        engine,
        [](const uwjit::runtime::Params& p) {
          return std::make_shared<uwjit_gpu_test::Peaks2d>(p);
        },
        uwjit::runtime::Params{{"rate", uwjit::runtime::Value(0.25)}},
        std::make_unique<uwjit::runtime::GridSampler>(std::vector{rate}), {sink}, options);
    ensemble.run();
    auto members = sink->take();
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    return members;
  };
  const auto cpu = outcome("cpu");
  const auto gpu = outcome("cuda");
  REQUIRE(cpu.size() == 3);
  REQUIRE(gpu.size() == 3);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(cpu[i].status == uwjit::runtime::MemberStatus::converged);
    CHECK(gpu[i].status == cpu[i].status);
    CHECK(gpu[i].steps == cpu[i].steps);
    REQUIRE(gpu[i].integrals.size() == 3);
    CHECK(std::memcmp(&gpu[i].integrals[1], &cpu[i].integrals[1], sizeof(double)) == 0);
    CHECK(gpu[i].integrals[1] < 1e-6);
  }
  CHECK(cpu[0].steps > cpu[2].steps); // the slower, the later
}

TEST_CASE("an ensemble's default batch on the CUDA device comes from its free memory") {
  uwjit::engine::Engine engine(uwjit_gpu_test::engine_options());
  const Outcome gpu = run(engine, sweep_of("heat", {8, 8, 8}, "contrast", 1, 4), "cuda", 0);
  CHECK(gpu.batch == 5); // the sweep's members: far less than the device holds
  CHECK(gpu.reason.find("(cuMemGetInfo)") != std::string::npos);
  CHECK(gpu.reason.find(gpu.device) != std::string::npos);
}
