// runtime/: Simulation with nodes written here against the public API. These tests really JIT.
#include "expect.hpp"
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <numeric>
#include <optional>
#include <unistd.h>

using uwjit::codegen::Dtype;
using uwjit::codegen::ExtentMode;
using uwjit::codegen::KernelWriter;
using uwjit::engine::Engine;
using uwjit::engine::Tier;
using uwjit::runtime::Node;
using uwjit::runtime::Params;
using uwjit::runtime::Replication;
using uwjit::runtime::Simulation;
using uwjit::runtime::StaticArray;
using uwjit::runtime::StaticData;

// Counts every allocation of the process, so a test can say that stepping makes none. The
// replacements pair malloc with free, which GCC cannot see through.
namespace {
std::atomic<long> g_allocations{0};
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace {

// u(i) += 1 over the update box it is given, counting the cells it updated: a kernel that honours
// the box, so that the runtime may cut it into slabs.
class BoxNode final : public Node {
public:
  BoxNode(std::string name, std::int64_t n)
      : Node("box", std::move(name), Params{{"n", n}}), m_n(n) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_n, .name = "n"}},
            .fields = {{"u", Dtype::f64}},
            .integrals = {"cells"}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.integral("cells");
    w.update_box();
    w.body("    for (uw_i64 i = n_begin; i < n_end; ++i) {\n"
           "      u_out(i) = u(i) + 1.0;\n"
           "      cells += 1.0;\n"
           "    }\n");
  }

private:
  std::int64_t m_n;
};

// u(i) += lut(i mod L) on a 1-D domain: the lookup table is a static array of the node's, of
// any length L (compiled into the kernel from the bound array's shape).
class LookupNode final : public Node {
public:
  LookupNode(std::string name, std::vector<double> lut, std::int64_t n = 8,
             ExtentMode mode = ExtentMode::compiled)
      : Node("lookup", std::move(name), Params{{"n", n}}), m_lut(std::move(lut)), m_n(n),
        m_mode(mode) {}

  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_n, .extent = m_mode, .name = "n"}},
            .fields = {{"u", Dtype::f64}},
            .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < m_n; ++i) {
      state["u"].at<double>(i) = static_cast<double>(i);
    }
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("lut");
    w.integral("total");
    w.body("    for (uw_i64 i = 0; i < n; ++i) {\n"
           "      u_out(i) = u(i) + lut(i % lut_n0);\n"
           "      total += u_out(i);\n"
           "    }\n");
  }
  int builds() const { return m_builds; }

protected:
  StaticData build_static_data() const override {
    ++m_builds;
    StaticData data;
    data.add(StaticArray::from_vector("lut", m_lut, {static_cast<std::int64_t>(m_lut.size())}));
    return data;
  }

private:
  std::vector<double> m_lut;
  std::int64_t m_n;
  ExtentMode m_mode;
  mutable int m_builds = 0;
};

// A node whose kernel does something wrong, chosen by `fault`.
class FaultyNode final : public Node {
public:
  FaultyNode(std::string name, std::string fault)
      : Node("faulty", std::move(name), Params{}), m_fault(std::move(fault)) {}
  uwjit::runtime::NodeLayout layout() const override {
    auto axes = uwjit::runtime::NodeLayout::grid({4, 4}, 1);
    if (m_fault == "negative halo") {
      axes[1].halo = -1;
    }
    std::optional<double> dt;
    if (m_fault == "nan dt") {
      dt = std::numeric_limits<double>::quiet_NaN();
    } else if (m_fault == "zero dt") {
      dt = 0.0;
    }
    std::vector<std::uint32_t> halo_axes;
    if (m_fault == "halo masks per component") {
      halo_axes = {0b11, 0b11}; // a scalar field has one component
    } else if (m_fault == "halo mask beyond the domain") {
      halo_axes = {0b101};
    }
    return {.axes = std::move(axes),
            .fields = {{"u", Dtype::f64, {}, std::move(halo_axes)}},
            .integrals = {"total"},
            .dt = dt};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    if (m_fault == "undeclared output") {
      w.state_out("velocity", Dtype::f64, {{w.domain(0), 1}, {w.domain(1), 1}});
    }
    if (m_fault == "undeclared integral") {
      w.integral("drag");
    }
    if (m_fault != "missing integral") {
      w.integral("total");
    }
    if (m_fault == "missing static") {
      w.static_array("mask", Dtype::u8, {{w.domain(0)}, {w.domain(1)}});
    }
    w.body(m_fault == "status" ? "    return 3;\n"
                               : "    for (uw_i64 i = 0; i < nx; ++i)\n"
                                 "      for (uw_i64 j = 0; j < ny; ++j)\n"
                                 "        u_out(i, j) = u(i - 1, j) + u(i, j + 1);\n");
  }

private:
  std::string m_fault;
};

std::vector<std::shared_ptr<const Node>> one(std::shared_ptr<const Node> node) {
  return {std::move(node)};
}

std::vector<double> values(const Simulation& sim, const char* node) {
  const auto& u = sim.field(node, "u");
  std::vector<double> out;
  for (std::int64_t i = 0; i < u.shape()[0]; ++i) {
    out.push_back(u.at<double>(i));
  }
  return out;
}

StaticArray lut(std::vector<double> v, Replication r = Replication::replicate) {
  const auto n = static_cast<std::int64_t>(v.size());
  return StaticArray::from_vector("lut", std::move(v), {n}, r,
                                  r == Replication::shard ? std::optional<int>(0) : std::nullopt);
}

using uwjit_test::contains;
using uwjit_test::usage_error;

} // namespace

TEST_CASE("a simulation compiles its node's kernel, steps it and keeps the integrals") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  REQUIRE(sim.kernel_reports().size() == 1);
  CHECK(sim.kernel_reports()[0].info.tier == Tier::compiled);
  CHECK(sim.kernel_reports()[0].node == "a");
  CHECK(sim.kernel_reports()[0].source->body().find("// static_data_hash ") != std::string::npos);
  CHECK(sim.integrals("a")[0] == 0.0);
  sim.step(2);
  CHECK(sim.steps_taken() == 2);
  CHECK(values(sim, "a") == std::vector<double>{2, 5, 8, 5, 8, 11, 8, 11});
  CHECK(sim.integrals("a")[0] == 58.0);
}

TEST_CASE("a simulation whose state cannot fit in memory is refused before it is allocated, "
          "with the figures") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  // 2^42 doubles, two buffers: 70 TB.
  const auto message = uwjit_test::usage_error([&] {
    Simulation simulation(engine, {std::make_shared<BoxNode>("huge", std::int64_t{1} << 42)});
  });
  CHECK(uwjit_test::contains(message, "run needs about 70.4 TB of memory (state 70.4 TB: two "
                                      "buffers per state field, halos included; static data 0 B) "
                                      "and this machine has "));
  CHECK(uwjit_test::contains(message, "; use a smaller grid, or shard the run over more machines"));
  CHECK(engine.stats().get(uwjit::cache::Stat::compiles) == 0); // refused before any compile
}

TEST_CASE("static data is built once and returned by reference") {
  const auto node = std::make_shared<LookupNode>("a", std::vector<double>{1});
  const StaticData& first = node->static_data();
  const StaticData& second = node->static_data();
  CHECK(&first == &second);
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(node));
  sim.step(3);
  CHECK(node->builds() == 1);
  CHECK(node->static_data_hash() == uwjit::runtime::static_data_hash(first));
}

TEST_CASE("rebinding a different array of the same shape compiles nothing and results follow it") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  const std::string key = sim.kernel_reports()[0].info.key;
  const auto rebound = sim.rebind_static("a", lut({100, 200, 300}));
  CHECK_FALSE(rebound.new_kernel); // the engine was not even asked
  CHECK(rebound.report.info.key == key);
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>{100, 201, 302, 103, 204, 305, 106, 207});

  // A new node with other contents of the same shape: the same kernel, from memory.
  Simulation other(engine, one(std::make_shared<LookupNode>("b", std::vector<double>{-1, 0, 1})));
  CHECK(other.kernel_reports()[0].info.tier == Tier::memory);
  CHECK(other.kernel_reports()[0].info.key == key);
  other.step();
  CHECK(values(other, "b") == std::vector<double>{-1, 1, 3, 2, 4, 6, 5, 7});
}

TEST_CASE("a static array of a new shape gives exactly one compile, and the old shape none") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  const std::string key = sim.kernel_reports()[0].info.key;
  const auto longer = sim.rebind_static("a", lut({1, 2, 3, 4}));
  CHECK(longer.new_kernel);
  CHECK(longer.report.info.tier == Tier::compiled);
  CHECK(longer.report.info.key != key);
  CHECK(sim.kernel_reports()[0].info.key == longer.report.info.key);
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>{1, 3, 5, 7, 5, 7, 9, 11});
  const auto back = sim.rebind_static("a", lut({0, 0, 0}));
  CHECK(back.new_kernel);
  CHECK(back.report.info.tier == Tier::memory);
  CHECK(back.report.info.key == key);
}

TEST_CASE("switching a static array between replicate and shard changes the kernel") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  const std::string key = sim.kernel_reports()[0].info.key;
  const auto shard = sim.rebind_static("a", lut({1, 2, 3}, Replication::shard));
  CHECK(shard.new_kernel);
  CHECK(shard.report.info.tier == Tier::compiled);
  CHECK(shard.report.info.key != key);
  const auto replicate = sim.rebind_static("a", lut({1, 2, 3}));
  CHECK(replicate.report.info.key == key);
}

TEST_CASE("a failed rebind leaves the simulation as it was") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  // A 2-D table: the kernel text indexes it with one index, so it does not compile.
  CHECK_THROWS_AS((void)sim.rebind_static(
                      "a", StaticArray::from_vector("lut", std::vector<double>{1, 2, 3}, {3, 1})),
                  uwjit::Error);
  CHECK(contains(usage_error([&] {
                   (void)sim.rebind_static(
                       "a", StaticArray::from_vector("other", std::vector<double>{1}, {1}));
                 }),
                 "no array \"other\" to replace"));
  CHECK(contains(usage_error([&] { (void)sim.rebind_static("zz", lut({1})); }), "no node \"zz\""));
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>{1, 3, 5, 4, 6, 8, 7, 9});
}

TEST_CASE("a static array of another dtype is another kernel that reads it as that dtype") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})));
  const auto narrow = sim.rebind_static(
      "a", StaticArray::from_vector("lut", std::vector<float>{0.5f, 1.5f, 2.5f}, {3}));
  CHECK(narrow.new_kernel);
  CHECK(narrow.report.info.tier == Tier::compiled);
  CHECK(narrow.report.source->body().find("-> uw_f32") != std::string::npos);
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>{0.5, 2.5, 4.5, 3.5, 5.5, 7.5, 6.5, 8.5});
}

TEST_CASE("with run-time extents, another domain size is the same kernel") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  auto node = [](std::int64_t n, ExtentMode mode) {
    return one(std::make_shared<LookupNode>("a", std::vector<double>{1, 2}, n, mode));
  };
  Simulation small(engine, node(6, ExtentMode::runtime));
  Simulation large(engine, node(10, ExtentMode::runtime));
  CHECK(small.kernel_reports()[0].info.tier == Tier::compiled);
  CHECK(large.kernel_reports()[0].info.tier == Tier::memory);
  CHECK(large.kernel_reports()[0].info.slots.extents == std::vector<std::string>{"n"});
  large.step();
  CHECK(values(large, "a") == std::vector<double>{1, 3, 3, 5, 5, 7, 7, 9, 9, 11});
  // Compiled in, each size is its own kernel.
  Simulation fixed(engine, node(6, ExtentMode::compiled));
  Simulation fixed_large(engine, node(10, ExtentMode::compiled));
  CHECK(fixed.kernel_reports()[0].info.tier == Tier::compiled);
  CHECK(fixed_large.kernel_reports()[0].info.tier == Tier::compiled);
  CHECK(fixed.kernel_reports()[0].info.slots.extents.empty());
  fixed_large.step();
  CHECK(values(fixed_large, "a") == values(large, "a"));
}

TEST_CASE("distinct kernels are compiled once each and repeats come from memory") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine,
                 {std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3}),
                  std::make_shared<LookupNode>("b", std::vector<double>{4, 5, 6}),
                  std::make_shared<LookupNode>("c", std::vector<double>{1, 2}),
                  std::make_shared<LookupNode>("d", std::vector<double>{1}, 5)},
                 {.compile_threads = 2});
  int compiled = 0;
  for (const auto& report : sim.kernel_reports()) {
    compiled += report.info.tier == Tier::compiled ? 1 : 0;
  }
  CHECK(compiled == 3);
  CHECK(sim.kernel_reports()[1].info.tier == Tier::memory); // b is a's kernel with other data
  CHECK(sim.kernel_reports()[1].info.key == sim.kernel_reports()[0].info.key);
  sim.step();
  CHECK(values(sim, "b")[0] == 4);
  CHECK(values(sim, "d") == std::vector<double>{1, 2, 3, 4, 5});
}

TEST_CASE("stepping allocates nothing") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const long at_start = g_allocations.load();
  Simulation sim(engine, {std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3}),
                          std::make_shared<FaultyNode>("halo", "none")});
  REQUIRE(g_allocations.load() > at_start); // the counter sees the library's allocations
  sim.step();                               // the first step may warm up whatever it likes
  const long before = g_allocations.load();
  sim.step(50);
  CHECK(g_allocations.load() == before);
}

TEST_CASE("stepping on several threads allocates nothing after the first step") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<BoxNode>("box", 200000)}, {.threads = 3});
  REQUIRE(sim.threads() == 3);
  sim.step();
  const long before = g_allocations.load();
  sim.step(20);
  CHECK(g_allocations.load() == before);
}

TEST_CASE("a kernel that does not honour its update box runs whole, once per step, on any "
          "thread count") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const std::vector<double> lut{1, 2, 3};
  Simulation one(engine, {std::make_shared<LookupNode>("a", lut, 200000)}, {.threads = 1});
  Simulation four(engine, {std::make_shared<LookupNode>("a", lut, 200000)}, {.threads = 4});
  one.step(3);
  four.step(3);
  CHECK(four.field("a", "u").interior_equals(one.field("a", "u")));
  // Once per step: after 3 steps u(i) = i + 3 lut(i % 3), whose sum (an integer below 2^53, so
  // exact) the last step's total must be. A kernel called once per slab of its 200000 cells would
  // have added it up once per slab.
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < 200000; ++i) {
    total += i + 3 * (i % 3 + 1);
  }
  CHECK(one.integrals("a")[0] == static_cast<double>(total));
  CHECK(four.integrals("a")[0] == static_cast<double>(total));
}

TEST_CASE("a kernel that honours its update box is cut into slabs whose integrals add up to the "
          "whole") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  constexpr std::int64_t n = 200000;
  for (const int threads : {1, 2, 5}) {
    Simulation sim(engine, {std::make_shared<BoxNode>("box", n)}, {.threads = threads});
    sim.step(2);
    // Every cell was updated exactly once per step (u = 2 everywhere) and the count is exact.
    CHECK(sim.integrals("box")[0] == static_cast<double>(n));
    const auto& u = sim.field("box", "u");
    bool all_two = true;
    for (std::int64_t i = 0; i < n; ++i) {
      all_two = all_two && u.at<double>(i) == 2.0;
    }
    CHECK(all_two);
  }
}

TEST_CASE("an output that is not a declared state field or integral is an error naming it") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto output = usage_error(
      [&] { Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "undeclared output"))); });
  CHECK(contains(output, "kernel of \"f\": output \"velocity\" is neither a declared state "
                         "field (u) nor a domain integral (total)"));
  const auto integral = usage_error([&] {
    Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "undeclared integral")));
  });
  CHECK(contains(integral, "output \"drag\" is neither a declared state field"));
}

TEST_CASE("declarations the kernel does not keep are errors naming the node") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine,
                                  one(std::make_shared<FaultyNode>("f", "missing integral")));
                 }),
                 "node \"f\": declares domain integral \"total\" but its kernel does not compute"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "missing static")));
                 }),
                 "node \"f\": its kernel reads static array \"mask\", which its static data does "
                 "not hold"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "negative halo")));
                 }),
                 "node \"f\": halo width -1 on axis 1 is negative"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(
                       engine, one(std::make_shared<FaultyNode>("f", "halo masks per component")));
                 }),
                 "node \"f\": state field \"u\": halo_axes has 2 masks, but the field has 1 "
                 "component (one mask each, or none for every halo)"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, one(std::make_shared<FaultyNode>(
                                              "f", "halo mask beyond the domain")));
                 }),
                 "node \"f\": state field \"u\": halo_axes[0] is 5, which names an axis beyond "
                 "the domain's 2 (bit d is domain axis d)"));
  CHECK(contains(usage_error([&] {
                   Simulation sim(engine, {std::make_shared<FaultyNode>("f", "none"),
                                           std::make_shared<FaultyNode>("f", "none")});
                 }),
                 "two nodes are named \"f\""));
}

TEST_CASE("a time step that is not a finite number above zero is an error naming the node") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  CHECK(usage_error([&] {
          Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "nan dt")));
        }) == "node \"f\": dt: expected a finite number > 0, got nan");
  CHECK(usage_error([&] {
          Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "zero dt")));
        }) == "node \"f\": dt: expected a finite number > 0, got 0");
}

namespace {

// A 1-D node whose kernel reads a computed static array whose fill throws.
class FailingFillNode final : public Node {
public:
  FailingFillNode() : Node("failing-fill", "fill", Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 4, .name = "n"}}, .fields = {{"u", Dtype::f64}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("table");
    w.body("    for (uw_i64 i = 0; i < n; ++i) {\n      u_out(i) = table(i);\n    }\n");
  }

protected:
  StaticData build_static_data() const override {
    StaticData data;
    data.add(StaticArray::computed<double>(
        "table", {4}, [](std::span<double>) { throw std::runtime_error("no table today"); }));
    return data;
  }
};

} // namespace

TEST_CASE("a computed static array whose fill throws is a usage error naming the node and the "
          "array") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  CHECK(usage_error([&] { Simulation sim(engine, {std::make_shared<FailingFillNode>()}); }) ==
        "node \"fill\": computing static array \"table\": no table today");
}

TEST_CASE("a kernel that returns an error status stops the step with an error naming the node") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<FaultyNode>("f", "status")));
  try {
    sim.step();
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::kernel);
    CHECK(contains(error.what(), "node \"f\": kernel returned status 3 at step 0"));
  }
  CHECK(sim.steps_taken() == 0);
}

TEST_CASE("a kernel sees where its shard lies: the whole domain when serial") {
  class Coordinates final : public Node {
  public:
    Coordinates() : Node("coordinates", "c", Params{}) {}
    uwjit::runtime::NodeLayout layout() const override {
      return {.axes = {{.cells = 3, .extent = ExtentMode::runtime}, {.cells = 2}},
              .fields = {{"g", Dtype::i64}}};
    }
    void initial_state(uwjit::runtime::State&) const override {}
    void emit_update(KernelWriter& w) const override {
      w.state_out("g");
      w.body("    for (uw_i64 i = 0; i < nx; ++i)\n"
             "      for (uw_i64 j = 0; j < ny; ++j)\n"
             "        g_out(i, j) = 1000 * nx_global + 100 * ny_global + 10 * (i + nx_offset) +\n"
             "                      (j + ny_offset);\n");
    }
  };
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<Coordinates>()));
  sim.step();
  const auto& g = sim.field("c", "g");
  CHECK(g.at<std::int64_t>(0, 0) == 3200);
  CHECK(g.at<std::int64_t>(2, 1) == 3221);
}

TEST_CASE("halos are filled before each step from the node's boundaries") {
  // FaultyNode "none": u_out(i, j) = u(i - 1, j) + u(i, j + 1), edge halos on both axes.
  class Ones final : public Node {
  public:
    Ones() : Node("ones", "o", Params{}) {}
    uwjit::runtime::NodeLayout layout() const override {
      return {.axes = {{.cells = 3, .halo = 2, .boundary = uwjit::runtime::Boundary::periodic}},
              .fields = {{"u", Dtype::i64}}};
    }
    void initial_state(uwjit::runtime::State& s) const override {
      s["u"].at<std::int64_t>(0) = 1;
      s["u"].at<std::int64_t>(1) = 10;
      s["u"].at<std::int64_t>(2) = 100;
    }
    void emit_update(KernelWriter& w) const override {
      w.state_out("u");
      w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
             "      u_out(i) = u(i - 2) + u(i + 1);\n"
             "    }\n");
    }
  };
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<Ones>()));
  sim.step();
  const auto& u = sim.field("o", "u");
  // Periodic: u(-2) = u(1), u(-1) = u(2), u(3) = u(0).
  CHECK(u.at<std::int64_t>(0) == 10 + 10);
  CHECK(u.at<std::int64_t>(1) == 100 + 100);
  CHECK(u.at<std::int64_t>(2) == 1 + 1);
}

TEST_CASE("a node's kernel options reach its kernel and its key") {
  // u_out(i) = u(i) * SCALE, SCALE defined only by the node's kernel options.
  class Scaled final : public Node {
  public:
    explicit Scaled(std::string scale) : Node("scaled", "s", Params{}), m_scale(std::move(scale)) {}
    uwjit::runtime::NodeLayout layout() const override {
      return {.axes = {{.cells = 2}}, .fields = {{"u", Dtype::f64}}};
    }
    void initial_state(uwjit::runtime::State& s) const override {
      s["u"].at<double>(0) = 1.0;
      s["u"].at<double>(1) = 2.0;
    }
    void emit_update(KernelWriter& w) const override {
      w.state_out("u");
      w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
             "      u_out(i) = u(i) * SCALE;\n"
             "    }\n");
    }
    uwjit::codegen::KernelOptions kernel_options() const override {
      return {.fp_contract = uwjit::codegen::FpContract::off, .defines = {"SCALE=" + m_scale}};
    }

  private:
    std::string m_scale;
  };
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation three(engine, one(std::make_shared<Scaled>("3")));
  Simulation five(engine, one(std::make_shared<Scaled>("5")));
  three.step();
  five.step();
  CHECK(three.field("s", "u").at<double>(1) == 6.0);
  CHECK(five.field("s", "u").at<double>(1) == 10.0);
  const auto& source = *three.kernel_reports()[0].source;
  CHECK(source.options().defines == std::vector<std::string>{"SCALE=3"});
  CHECK(three.kernel_reports()[0].info.key != five.kernel_reports()[0].info.key);
  CHECK(engine.salt_of(source).get("flags")->find("-ffp-contract=off -DSCALE=3") !=
        std::string::npos);
}

TEST_CASE("a snapshot is a copy of one step: it does not follow the simulation, and it "
          "checkpoints the same file") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3})});
  sim.step(2);
  const uwjit::runtime::Snapshot snapshot = sim.gathered();
  CHECK(snapshot.steps_taken() == 2);
  CHECK(snapshot.field("a", "u").interior_equals(sim.field("a", "u")));
  CHECK(snapshot.integrals("a")[0] == sim.integrals("a")[0]);
  CHECK(snapshot.kernel_reports()[0].info.key == sim.kernel_reports()[0].info.key);
  const uwjit_test::TempDir dir("uwjit-snapshot");
  sim.checkpoint(dir.path() / "live.ckpt");
  snapshot.checkpoint(dir.path() / "snapshot.ckpt");
  CHECK(uwjit_test::read_text(dir.path() / "live.ckpt") ==
        uwjit_test::read_text(dir.path() / "snapshot.ckpt"));
  sim.step();
  CHECK(snapshot.steps_taken() == 2);
  CHECK_FALSE(snapshot.field("a", "u").interior_equals(sim.field("a", "u")));
  CHECK_THROWS_AS((void)snapshot.field("b", "u"), uwjit::Error);
}

TEST_CASE("write_vtk writes any node's state fields as ImageData, with its step, dt, kernel and "
          "params as FieldData") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<LookupNode>("a", std::vector<double>{1, 2, 3}),
                          std::make_shared<LookupNode>("b", std::vector<double>{4})});
  sim.step(3);
  const uwjit_test::TempDir dir("uwjit-vtk");
  const auto paths = sim.write_vtk(dir.path() / "made" / "here");
  REQUIRE(paths.size() == 2);
  CHECK(paths[0] == dir.path() / "made" / "here" / "a.vti");
  CHECK(paths[1] == dir.path() / "made" / "here" / "b.vti");
  const std::string text = uwjit_test::read_text(paths[0]);
  CHECK(contains(text, "<VTKFile type=\"ImageData\""));
  CHECK(contains(text, "WholeExtent=\"0 8 0 1 0 1\""));
  CHECK(contains(text, "Name=\"u\""));
  CHECK(contains(text, "Name=\"step\" NumberOfTuples=\"1\" format=\"ascii\">\n        3\n"));
  CHECK(contains(text, "Name=\"kernel_key\""));
  CHECK(contains(text, "Name=\"param_n\""));
  // With a stem: STEM_NODE, as a series names its files.
  CHECK(sim.write_vtk(dir.path(), "run")[1] == dir.path() / "run_b.vti");
  // A directory that cannot be made is an io error naming it.
  uwjit_test::write_text(dir.path() / "plain", "a file");
  try {
    (void)sim.write_vtk(dir.path() / "plain" / "below");
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::io);
    CHECK(contains(error.what(), "plain/below"));
  }
}

namespace {

// A node whose state and integral are integers and exact sums, so that its checkpoint is the same
// bytes on every machine: the checkpoint format's golden file. Its static array "increment" is
// what the golden run rebinds.
class CounterNode final : public Node {
public:
  CounterNode()
      : Node("counter", "c",
             Params{{"start", std::int64_t{7}}, {"label", "golden"}, {"scale", 0.5}}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = uwjit::runtime::NodeLayout::grid({2, 3}),
            .fields = {{"n", Dtype::i64}, {"x", Dtype::f64, {2}}},
            .integrals = {"count"}};
  }
  void initial_state(uwjit::runtime::State& s) const override {
    for (std::int64_t i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 3; ++j) {
        s["n"].at<std::int64_t>(i, j) = 7 + 3 * i + j;
        s["x"].at<double>(0, i, j) = 0.25 * static_cast<double>(i);
        s["x"].at<double>(1, i, j) = -0.5 * static_cast<double>(j);
      }
    }
  }
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(
        uwjit::runtime::StaticArray::from_vector("increment", std::vector<std::int64_t>{1}, {1}));
    return data;
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("n");
    w.state_out("x");
    w.static_array("increment");
    w.integral("count");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      for (uw_i64 j = 0; j < ny; ++j) {\n"
           "        n_out(i, j) = n(i, j) + increment(0);\n"
           "        x_out(0, i, j) = x(0, i, j) * 2.0;\n"
           "        x_out(1, i, j) = x(1, i, j) + 1.0;\n"
           "        count += 1.0;\n"
           "      }\n"
           "    }\n");
  }
};

} // namespace

TEST_CASE("the checkpoint format is pinned by a golden file, and the golden file restores") {
  const std::filesystem::path golden = UWJIT_TEST_GOLDEN_DIR "/checkpoint_v3.ckpt";
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, {std::make_shared<CounterNode>()});
  sim.step(2);
  // The same contents: the state stays exact, and the file records the key as rebound.
  (void)sim.rebind_static("c", uwjit::runtime::StaticArray::from_vector(
                                   "increment", std::vector<std::int64_t>{1}, {1}));
  CHECK(sim.rebound_statics("c") == std::vector<std::string>{"increment"});
  const uwjit_test::TempDir dir("uwjit-golden");
  sim.checkpoint(dir.path() / "now.ckpt");
  // A format change must be deliberate: bump k_checkpoint_version and replace the golden file.
  CHECK(uwjit_test::read_text(dir.path() / "now.ckpt") == uwjit_test::read_text(golden));
  const auto factory = [](const std::string&, const std::string&, const Params&) {
    return std::make_shared<CounterNode>();
  };
  // The warning is what a user running the restored job sees: read it at the default level.
  uwjit::log::set_level(uwjit::log::Level::warn);
  const uwjit_test::CapturedStderr stderr_text;
  const auto restored = Simulation::restore(engine, golden, factory);
  uwjit::log::set_level(uwjit::log::Level::off);
  CHECK(restored.steps_taken() == 2);
  CHECK(restored.field("c", "n").at<std::int64_t>(1, 2) == 7 + 3 + 2 + 2);
  CHECK(restored.field("c", "x").at<double>(1, 0, 2) == -1.0 + 2.0);
  CHECK(restored.integrals("c")[0] == 6.0);
  // The rebound array is not in the file: the restore says so, and which to rebind.
  CHECK(restored.rebound_statics("c") == std::vector<std::string>{"increment"});
  CHECK(stderr_text.text().find("node \"c\" ran with static arrays rebound (increment)") !=
        std::string::npos);

  // Version 2 files (one stream, without offsets) and version 1 files (without the rebound
  // list) still restore.
  const auto two =
      Simulation::restore(engine, UWJIT_TEST_GOLDEN_DIR "/checkpoint_v2.ckpt", factory);
  CHECK(two.steps_taken() == 2);
  CHECK(two.field("c", "n").at<std::int64_t>(1, 2) == 7 + 3 + 2 + 2);
  CHECK(two.field("c", "x").at<double>(1, 0, 2) == -1.0 + 2.0);
  CHECK(two.rebound_statics("c") == std::vector<std::string>{"increment"});
  const auto old =
      Simulation::restore(engine, UWJIT_TEST_GOLDEN_DIR "/checkpoint_v1.ckpt", factory);
  CHECK(old.steps_taken() == 2);
  CHECK(old.field("c", "n").at<std::int64_t>(1, 2) == 7 + 3 + 2 + 2);
  CHECK(old.rebound_statics("c").empty());
}

namespace {

// u(i) = u(i) * gain() + rate * k(i): a run-time param `rate`, a scalar static array `gain` and
// a static array `k` declared over the domain axis (which follows its extent when that is
// run-time). `body` replaces the body, for the compile-error tests.
class AuthorNode final : public Node {
public:
  AuthorNode(std::string name, double rate, std::int64_t n = 8,
             ExtentMode mode = ExtentMode::compiled, std::string body = {})
      : Node("author", std::move(name), Params{{"rate", rate}, {"n", n}}), m_rate(rate), m_n(n),
        m_mode(mode), m_body(std::move(body)) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_n, .extent = m_mode, .name = "n"}},
            .fields = {{"u", Dtype::f64}},
            .integrals = {}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < m_n; ++i) {
      state["u"].at<double>(i) = 1.0;
    }
  }
  void emit_update(KernelWriter& w) const override {
    w.state_out("u");
    w.param("rate", m_rate);
    w.static_array("gain");
    w.static_array("k", Dtype::f64, {{w.domain(0)}});
    w.helpers("inline double twice(double a) {\n  return 2.0 * a;\n}\n");
    w.body(m_body.empty() ? "    for (uw_i64 i = 0; i < n; ++i) {\n"
                            "      u_out(i) = u(i) * gain() + rate * k(i);\n"
                            "    }\n"
                          : m_body);
  }

protected:
  StaticData build_static_data() const override {
    StaticData data;
    data.add(StaticArray::scalar("gain", 2.0));
    std::vector<double> k(static_cast<std::size_t>(m_n));
    std::iota(k.begin(), k.end(), 0.0);
    data.add(StaticArray::from_vector("k", std::move(k), {m_n}));
    return data;
  }

private:
  double m_rate;
  std::int64_t m_n;
  ExtentMode m_mode;
  std::string m_body;
};

int compiles(const Simulation& sim) {
  int n = 0;
  for (const auto& report : sim.kernel_reports()) {
    n += report.info.tier == Tier::compiled ? 1 : 0;
  }
  return n;
}

// The Error(compile) a node's kernel raises when a Simulation is made.
uwjit::Error compile_error(Engine& engine, std::shared_ptr<const Node> node) {
  try {
    Simulation sim(engine, one(std::move(node)));
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::compile);
    return error;
  }
  FAIL("the kernel compiled");
  return uwjit::Error(uwjit::ErrorKind::internal, "unreachable");
}

} // namespace

TEST_CASE("a sweep over a run-time param compiles once and each run sees its own value") {
  const uwjit_test::TempDir cache("uwjit-params");
  int compiled = 0;
  std::string key;
  for (const double rate : {0.5, 1.0, 1.5, 2.0, -3.25}) {
    Engine engine({.disk_cache = uwjit::engine::DiskCache::environment, .cache_dir = cache.path()});
    Simulation sim(engine, one(std::make_shared<AuthorNode>("a", rate)));
    compiled += compiles(sim);
    key = key.empty() ? sim.kernel_reports()[0].info.key : key;
    CHECK(sim.kernel_reports()[0].info.key == key);
    CHECK(sim.kernel_reports()[0].info.slots.params == std::vector<std::string>{"rate"});
    CHECK(sim.kernel_reports()[0].source->body().find(std::to_string(rate)) == std::string::npos);
    sim.step();
    const auto u = values(sim, "a");
    for (std::size_t i = 0; i < u.size(); ++i) {
      CHECK(u[i] == 2.0 + rate * static_cast<double>(i));
    }
  }
  CHECK(compiled == 1); // the others are disk hits: the manifest's params table matched
  // In one engine, a new node with another value is a memory hit.
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation first(engine, one(std::make_shared<AuthorNode>("a", 1.0)));
  Simulation second(engine, one(std::make_shared<AuthorNode>("b", 4.0)));
  CHECK(compiles(first) == 1);
  CHECK(second.kernel_reports()[0].info.tier == Tier::memory);
}

TEST_CASE("a scalar static array is read by the kernel, and rebinding it compiles nothing") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation sim(engine, one(std::make_shared<AuthorNode>("a", 0.0)));
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>(8, 2.0));
  const auto rebound = sim.rebind_static("a", StaticArray::scalar("gain", 3.0));
  CHECK_FALSE(rebound.new_kernel);
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>(8, 6.0));
  // Another dtype is another kernel, as for any array.
  const auto narrow = sim.rebind_static("a", StaticArray::scalar("gain", 0.5f));
  CHECK(narrow.new_kernel);
  sim.step();
  CHECK(values(sim, "a") == std::vector<double>(8, 3.0));
}

TEST_CASE("with run-time extents, static arrays that follow the domain keep one kernel for all "
          "sizes") {
  const uwjit_test::TempDir cache("uwjit-follow");
  int compiled = 0;
  for (const std::int64_t n : {6, 8, 11, 16}) {
    Engine engine({.disk_cache = uwjit::engine::DiskCache::environment, .cache_dir = cache.path()});
    Simulation sim(engine, one(std::make_shared<AuthorNode>("a", 1.0, n, ExtentMode::runtime)));
    compiled += compiles(sim);
    const auto& body = sim.kernel_reports()[0].source->body();
    CHECK(body.find("(" + std::to_string(n) + ")") == std::string::npos);
    sim.step();
    const auto u = values(sim, "a");
    REQUIRE(u.size() == static_cast<std::size_t>(n));
    CHECK(u.back() == 2.0 + static_cast<double>(n - 1));
  }
  CHECK(compiled == 1);
  // Compiled in, each size is its own kernel.
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  Simulation six(engine, one(std::make_shared<AuthorNode>("a", 1.0, 6)));
  Simulation eight(engine, one(std::make_shared<AuthorNode>("a", 1.0, 8)));
  CHECK(compiles(six) + compiles(eight) == 2);
  // The rules stay: an array that does not match the domain is refused.
  Simulation sim(engine, one(std::make_shared<AuthorNode>("a", 1.0, 8, ExtentMode::runtime)));
  CHECK(contains(usage_error([&] {
                   (void)sim.rebind_static(
                       "a", StaticArray::from_vector("k", std::vector<double>(9), {9}));
                 }),
                 "\"k\""));
}

TEST_CASE("a compile error names the node and counts lines in the text the node wrote") {
  const uwjit_test::TempDir dumps("uwjit-dumps");
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off, .dump_dir = dumps.path()});
  const std::string body = "    for (uw_i64 i = 0; i < n; ++i) {\n"
                           "      u_out(i) = u(i);\n"
                           "    }\n"
                           "    u_out(0) = q;\n";
  const uwjit::Error error = compile_error(
      engine, std::make_shared<AuthorNode>("advect", 1.0, 8, ExtentMode::compiled, body));
  const std::string message = error.what();
  CAPTURE(message);
  CHECK(contains(message,
                 "node \"advect\": kernel line 4, column 16: error: use of undeclared identifier "
                 "'q'\n        u_out(0) = q;\n"));
  REQUIRE(error.diagnostics().size() == 1);
  const auto& d = error.diagnostics()[0];
  CHECK(d.section == "kernel");
  CHECK(d.line == 4);
  CHECK(d.column == 16);
  CHECK(d.message == "use of undeclared identifier 'q'");
  // The failing source is in the dump directory, and the message says where.
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dumps.path())) {
    files.push_back(entry.path());
  }
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("advect-", 0) == 0);
  CHECK(contains(message, "the failing source is " + files[0].string()));
  CHECK(contains(uwjit_test::read_text(files[0]), "    u_out(0) = q;\n"));

  // A mistake in helpers() counts lines in the helpers.
  struct Typo final : public Node {
    Typo() : Node("typo", "t", Params{}) {}
    uwjit::runtime::NodeLayout layout() const override {
      return {.axes = {{.cells = 4, .name = "n"}}, .fields = {{"u", Dtype::f64}}};
    }
    void initial_state(uwjit::runtime::State&) const override {}
    void emit_update(KernelWriter& w) const override {
      w.state_out("u");
      w.helpers("// scale\ninline double f(double a) { return a * scale; }\n");
      w.body("    for (uw_i64 i = 0; i < n; ++i) {\n      u_out(i) = f(u(i));\n    }\n");
    }
  };
  const uwjit::Error in_helpers = compile_error(engine, std::make_shared<Typo>());
  CAPTURE(in_helpers.what());
  CHECK(contains(in_helpers.what(), "node \"t\": kernel helpers line 2, column 40: error: use of "
                                    "undeclared identifier 'scale'"));
}
