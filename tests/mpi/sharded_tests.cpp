// The sharded runtime under mpiexec: sharded states equal the serial run's bit for bit (uneven
// splits, one to three sharded axes) and every rank holds the same integrals bit for bit, halo
// semantics, overlap equals sync (and really overlaps), construction checks raise the same error
// on every rank, and a cold job compiles once.
#include "harness.hpp"
#include "job.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdlib.h>

using uwjit::engine::Engine;
using uwjit::runtime::Boundary;
using uwjit::runtime::BoundaryFace;
using uwjit::runtime::ExchangeMode;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;

namespace {

using uwjit_test::comm;

std::filesystem::path job_sandbox() {
  return uwjit_test::job_sandbox("uwjit-shard");
}

std::unique_ptr<Engine> make_engine(const std::filesystem::path& cache) {
  uwjit::engine::EngineOptions options;
  options.cache_dir = cache;
  return std::make_unique<Engine>(options);
}

using NodeList = std::vector<std::shared_ptr<const uwjit::runtime::Node>>;

NodeList builtin(const std::string& type, std::vector<std::int64_t> size,
                 std::vector<std::pair<std::string, std::string>> sets = {}) {
  Params params = uwjit::nodes::sized_params(type, size);
  for (const auto& [key, value] : sets) {
    params.set_from_text(key, value);
  }
  return {uwjit::nodes::make(type, type, params)};
}

SimulationOptions sharded(std::vector<int> axes, ExchangeMode mode = ExchangeMode::sync) {
  SimulationOptions options;
  options.comm = comm().get();
  options.shard_axes = std::move(axes);
  options.exchange = mode;
  return options;
}

// Runs `nodes` sharded and, on rank 0, serially; the gathered fields must equal the serial ones
// bit for bit, the integrals to round-off (the ranks' partial sums are added in another order),
// and every rank must hold the same integrals bit for bit.
void equals_serial(const NodeList& nodes, std::vector<int> axes, std::int64_t steps,
                   ExchangeMode mode = ExchangeMode::sync) {
  const auto cache = job_sandbox();
  auto engine = make_engine(cache / "sharded");
  Simulation simulation(*engine, nodes, sharded(std::move(axes), mode));
  simulation.step(steps);
  uwjit_test::check_integrals_alike_on_every_rank(simulation);
  const uwjit::runtime::Snapshot whole = simulation.gathered();
  if (comm()->rank() != 0) {
    return;
  }
  auto serial_engine = make_engine(cache / "serial");
  Simulation serial(*serial_engine, nodes);
  serial.step(steps);
  uwjit_test::check_same_state(whole, simulation, serial);
}

// Whether overlap mode should update interiors while transfers are in flight.
enum class Overlapped { when_sharded, never };

// Runs `nodes` in sync and in overlap mode over the same ranks: the states must be equal bit for
// bit, the integrals to round-off (overlap adds three calls' partial sums) and alike on every rank
// bit for bit, and overlap must have overlapped every node step whenever there is a neighbour to
// wait for (and sync never).
void overlap_equals_sync(const NodeList& nodes, std::vector<int> axes, std::int64_t steps,
                         Overlapped expect) {
  auto engine = make_engine(job_sandbox());
  Simulation sync(*engine, nodes, sharded(axes, ExchangeMode::sync));
  Simulation overlap(*engine, nodes, sharded(axes, ExchangeMode::overlap));
  sync.step(steps);
  overlap.step(steps);
  uwjit_test::check_same_state(overlap, overlap, sync);
  uwjit_test::check_integrals_alike_on_every_rank(sync);
  uwjit_test::check_integrals_alike_on_every_rank(overlap);
  const std::int64_t node_steps = steps * static_cast<std::int64_t>(nodes.size());
  MPI_CHECK(sync.exchange_stats().exchanges == node_steps);
  MPI_CHECK(sync.exchange_stats().overlapped == 0);
  MPI_CHECK(overlap.exchange_stats().exchanges == node_steps);
  const bool neighbours = comm()->size() > 1 && expect == Overlapped::when_sharded;
  MPI_CHECK(overlap.exchange_stats().overlapped == (neighbours ? node_steps : 0));
}

// The error every rank raised, checked to be the same text everywhere.
std::string same_error_everywhere(const std::function<void()>& body) {
  std::string message = "(no error)";
  bool usage = false;
  try {
    body();
  } catch (const uwjit::Error& error) {
    message = error.what();
    usage = error.kind() == uwjit::ErrorKind::usage;
  }
  MPI_CHECK(usage);
  for (const auto& other : comm()->all_gather(message)) {
    MPI_CHECK(other == message);
  }
  return message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A 1-D probe: copies the cells two to the left and right of each cell and its global index
// into fields of their own, so that a test can see what the halos held.
class ProbeNode final : public uwjit::runtime::Node {
public:
  ProbeNode(std::int64_t nx, int halo, Boundary boundary)
      : Node("probe", "probe", Params{}), m_nx(nx), m_halo(halo), m_boundary(boundary) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_nx, .halo = m_halo, .boundary = m_boundary}},
            .fields = {{"u"}, {"left"}, {"right"}, {"index"}},
            .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < m_nx; ++i) {
      state["u"].at<double>(i) = static_cast<double>(i + 1);
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    for (const char* f : {"u", "left", "right", "index"}) {
      w.state_out(f);
    }
    w.integral("total");
    const std::string reach = std::to_string(std::min(m_halo, 2));
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      u_out(i) = u(i);\n"
           "      left_out(i) = u(i - " +
           reach +
           ");\n"
           "      right_out(i) = u(i + " +
           reach +
           ");\n"
           "      index_out(i) = static_cast<double>(nx_offset + i);\n"
           "      total += u(i);\n"
           "    }\n");
  }

private:
  std::int64_t m_nx;
  int m_halo;
  Boundary m_boundary;
};

// A 1-D node whose kernel copies the neighbours of each cell in a static array (i + 1 at cell i,
// sharded along the axis, read with a halo of 1) into its fields.
class StaticProbe final : public uwjit::runtime::Node {
public:
  StaticProbe(std::int64_t nx, Boundary boundary)
      : Node("static-probe", "static-probe", Params{}), m_nx(nx), m_boundary(boundary) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_nx, .halo = 1, .boundary = m_boundary}},
            .fields = {{"left"}, {"right"}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  uwjit::runtime::StaticData build_static_data() const override {
    std::vector<double> w(static_cast<std::size_t>(m_nx));
    for (std::int64_t i = 0; i < m_nx; ++i) {
      w[static_cast<std::size_t>(i)] = static_cast<double>(i + 1);
    }
    uwjit::runtime::StaticData data;
    data.add(uwjit::runtime::StaticArray::from_vector("w", std::move(w), {m_nx},
                                                      uwjit::runtime::Replication::shard, 0));
    return data;
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("left");
    w.state_out("right");
    w.static_array("w", uwjit::codegen::Dtype::f64, {{w.domain(0), 1}});
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      left_out(i) = w(i - 1);\n"
           "      right_out(i) = w(i + 1);\n"
           "    }\n");
  }

private:
  std::int64_t m_nx;
  Boundary m_boundary;
};

// What the probe's u (i + 1 at cell i) holds at cell i + step, halos as BoundaryFace says.
double expected_neighbour(std::int64_t i, std::int64_t step, std::int64_t nx, Boundary boundary) {
  const std::int64_t j = i + step;
  if (j >= 0 && j < nx) {
    return static_cast<double>(j + 1);
  }
  const BoundaryFace face = j < 0 ? boundary.low : boundary.high;
  const std::int64_t distance = j < 0 ? -j : j - nx + 1;
  const double mirror = static_cast<double>(j < 0 ? distance - 1 : nx - distance) + 1;
  switch (face.kind) {
  case BoundaryFace::Kind::periodic:
    return static_cast<double>((j % nx + nx) % nx + 1);
  case BoundaryFace::Kind::edge:
    return static_cast<double>(std::clamp<std::int64_t>(j, 0, nx - 1) + 1);
  case BoundaryFace::Kind::dirichlet:
    return 2 * face.value - mirror;
  case BoundaryFace::Kind::neumann:
    return mirror + face.value * static_cast<double>(2 * distance - 1);
  }
  return 0;
}

// A 2-D smoothing over the (2 halo + 1)^2 cells around each cell, diagonals included, weighted
// unevenly, so that every halo cell a kernel can read, corners too, shows in the state.
class BlurNode final : public uwjit::runtime::Node {
public:
  BlurNode(int halo, Boundary x, Boundary y)
      : Node("blur", "blur", Params{}), m_halo(halo), m_x(x), m_y(y) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 13, .halo = m_halo, .boundary = m_x},
                     {.cells = 11, .halo = m_halo, .boundary = m_y}},
            .fields = {{"u"}},
            .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 13; ++i) {
      for (std::int64_t j = 0; j < 11; ++j) {
        state["u"].at<double>(i, j) = std::sin(0.7 * static_cast<double>(i)) +
                                      std::cos(1.3 * static_cast<double>(j)) +
                                      0.01 * static_cast<double>(i * j);
      }
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("total");
    w.update_box();
    const std::string h = std::to_string(m_halo);
    w.body("    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
           "      for (uw_i64 j = ny_begin; j < ny_end; ++j) {\n"
           "        double s = 0;\n"
           "        for (int a = -" +
           h + "; a <= " + h +
           "; ++a) {\n"
           "          for (int b = -" +
           h + "; b <= " + h +
           "; ++b) {\n"
           "            s += u(i + a, j + b) * (1.0 + 0.01 * (3 * a + b));\n"
           "          }\n"
           "        }\n"
           "        u_out(i, j) = s / ((2 * " +
           h + " + 1) * (2 * " + h +
           " + 1));\n"
           "        total += u_out(i, j);\n"
           "      }\n"
           "    }\n");
  }

private:
  int m_halo;
  Boundary m_x, m_y;
};

} // namespace

MPI_TEST_CASE("sharded heat gives the serial state bit for bit, nx=13 split unevenly along x") {
  equals_serial(builtin("heat", {13, 8, 8}), {0}, 12);
}

MPI_TEST_CASE("sharded periodic heat gives the serial state bit for bit") {
  // The conductivity is uniform at both x ends, so the edge-padded static slab reads as the
  // periodic one does.
  equals_serial(builtin("heat", {13, 8, 8}, {{"boundary", "periodic"}}), {0}, 12);
}

MPI_TEST_CASE("sharded heat over x and y gives the serial state bit for bit") {
  equals_serial(builtin("heat", {9, 13, 6}), {0, 1}, 8);
}

MPI_TEST_CASE("sharded pipe-flow gives the serial state bit for bit, along x") {
  equals_serial(builtin("pipe-flow", {13, 10, 10}), {0}, 15);
}

MPI_TEST_CASE("sharded pipe-flow over x and y (D3Q19 edges and corners) gives the serial state") {
  equals_serial(builtin("pipe-flow", {13, 10, 10}), {0, 1}, 15);
}

MPI_TEST_CASE("overlap gives sync's state bit for bit: heat, nx=13 split unevenly along x") {
  overlap_equals_sync(builtin("heat", {13, 8, 8}), {0}, 12, Overlapped::when_sharded);
}

MPI_TEST_CASE("overlap gives sync's state bit for bit: periodic heat over x and z") {
  // Over 4 ranks the last sharded axis, z (the innermost loop), is the one overlapped.
  overlap_equals_sync(builtin("heat", {9, 6, 13}, {{"boundary", "periodic"}}), {0, 2}, 8,
                      Overlapped::when_sharded);
}

MPI_TEST_CASE("overlap gives sync's state bit for bit: heat over x and y") {
  overlap_equals_sync(builtin("heat", {9, 13, 6}), {0, 1}, 8, Overlapped::when_sharded);
}

MPI_TEST_CASE("overlap gives sync's state bit for bit: pipe-flow along x") {
  overlap_equals_sync(builtin("pipe-flow", {13, 10, 10}), {0}, 10, Overlapped::when_sharded);
}

MPI_TEST_CASE(
    "overlap gives sync's state bit for bit: pipe-flow over x and y (edges and corners)") {
  overlap_equals_sync(builtin("pipe-flow", {13, 10, 10}), {0, 1}, 10, Overlapped::when_sharded);
}

MPI_TEST_CASE("overlap falls back to one kernel call when shards are too thin for an interior") {
  // Shards of at most 2 cells with a halo of 1: every cell reads a halo.
  const std::int64_t nx = std::max(3, 2 * comm()->size());
  overlap_equals_sync(builtin("heat", {nx, 6, 6}), {0}, 6, Overlapped::never);
}

MPI_TEST_CASE("overlap gives the serial state bit for bit") {
  equals_serial(builtin("pipe-flow", {13, 10, 10}), {0, 1}, 8, ExchangeMode::overlap);
}

MPI_TEST_CASE("halo width 2: edge repeats the boundary cell, periodic wraps, dirichlet reflects, "
              "neumann adds the gradient, at the global faces at any rank count") {
  const auto cache = job_sandbox();
  auto engine = make_engine(cache);
  for (const Boundary boundary :
       {Boundary::edge, Boundary::periodic,
        Boundary{.low = BoundaryFace::dirichlet(0.5), .high = BoundaryFace::neumann(-2)},
        Boundary{.low = BoundaryFace::neumann(0.25), .high = BoundaryFace::dirichlet(20)}}) {
    for (const ExchangeMode mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
      constexpr std::int64_t nx = 13;
      Simulation simulation(*engine, {std::make_shared<ProbeNode>(nx, 2, boundary)},
                            sharded({0}, mode));
      simulation.step(1);
      const auto& shard = simulation.shard("probe");
      MPI_CHECK(shard.grid[0] == comm()->size());
      MPI_CHECK(shard.extent[0] == nx / comm()->size() + (shard.coords[0] < nx % comm()->size()));
      const uwjit::runtime::Snapshot whole = simulation.gathered();
      for (std::int64_t i = 0; i < nx; ++i) {
        MPI_CHECK(whole.field("probe", "left").at<double>(i) ==
                  expected_neighbour(i, -2, nx, boundary));
        MPI_CHECK(whole.field("probe", "right").at<double>(i) ==
                  expected_neighbour(i, +2, nx, boundary));
        MPI_CHECK(whole.field("probe", "index").at<double>(i) == static_cast<double>(i));
      }
      MPI_CHECK(simulation.integrals("probe")[0] == nx * (nx + 1) / 2.0);
      // The probe's kernel loops over the whole interior itself: never called on a box.
      MPI_CHECK(simulation.exchange_stats().overlapped == 0);
    }
  }
}

MPI_TEST_CASE("a static array's halos are padded as serially: periodic wraps, the other faces "
              "repeat the boundary cell, at any rank count") {
  auto engine = make_engine(job_sandbox());
  constexpr std::int64_t nx = 11;
  for (const Boundary boundary :
       {Boundary::edge, Boundary::periodic,
        Boundary{.low = BoundaryFace::dirichlet(0.5), .high = BoundaryFace::neumann(-2)}}) {
    const NodeList nodes = {std::make_shared<StaticProbe>(nx, boundary)};
    Simulation simulation(*engine, nodes, sharded({0}));
    simulation.step(1);
    const uwjit::runtime::Snapshot whole = simulation.gathered();
    const bool periodic = boundary == Boundary::periodic;
    for (std::int64_t i = 0; i < nx; ++i) {
      const std::int64_t left = i == 0 ? (periodic ? nx - 1 : 0) : i - 1;
      const std::int64_t right = i == nx - 1 ? (periodic ? 0 : nx - 1) : i + 1;
      MPI_CHECK(whole.field("static-probe", "left").at<double>(i) == static_cast<double>(left + 1));
      MPI_CHECK(whole.field("static-probe", "right").at<double>(i) ==
                static_cast<double>(right + 1));
    }
    equals_serial(nodes, {0}, 1);
  }
}

MPI_TEST_CASE("heat between fixed walls, sharded, gives the serial state bit for bit, sync and "
              "overlap") {
  const auto walls =
      builtin("heat", {13, 8, 8}, {{"boundary", "fixed"}, {"u_low", "2"}, {"u_high", "-0.5"}});
  equals_serial(walls, {0}, 12);
  equals_serial(walls, {0}, 12, ExchangeMode::overlap);
  equals_serial(builtin("heat", {9, 13, 6}, {{"boundary", "fixed"}}), {0, 1}, 8,
                ExchangeMode::overlap);
}

MPI_TEST_CASE("dirichlet and neumann faces on two axes, corners read, the sharded state equals "
              "the serial one bit for bit in sync and overlap") {
  const Boundary x{.low = BoundaryFace::dirichlet(1), .high = BoundaryFace::neumann(0.5)};
  const Boundary y{.low = BoundaryFace::neumann(-0.25), .high = BoundaryFace::dirichlet(-2)};
  for (const int halo : {1, 2}) {
    const NodeList blur = {std::make_shared<BlurNode>(halo, x, y)};
    for (const ExchangeMode mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
      equals_serial(blur, {0}, 6, mode);
      equals_serial(blur, {1}, 6, mode);
      equals_serial(blur, {0, 1}, 6, mode);
    }
  }
  // x periodic under y's computed faces.
  equals_serial({std::make_shared<BlurNode>(1, Boundary::periodic, y)}, {0, 1}, 6,
                ExchangeMode::overlap);
}

MPI_TEST_CASE("periodic on one face only is the same error on every rank, naming node and axis") {
  auto engine = make_engine(job_sandbox());
  const auto message = same_error_everywhere([&] {
    Simulation s(
        *engine,
        {std::make_shared<ProbeNode>(
            13, 1, Boundary{.low = BoundaryFace::periodic(), .high = BoundaryFace::edge()})},
        sharded({0}));
  });
  MPI_CHECK(contains(message, "node \"probe\": axis 0 (nx): periodic on the low face only"));
}

namespace {

// A 2-D node whose initial state is a function of the global cell, filled by slab or whole as its
// layout says; it keeps the slabs it was handed, and counts the cells its computed array filled.
class SlabNode final : public uwjit::runtime::Node {
public:
  explicit SlabNode(bool by_slab)
      : Node("slab", "slab", Params{{"by_slab", std::int64_t{by_slab}}}), m_by_slab(by_slab) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = uwjit::runtime::NodeLayout::grid({13, 6}, 1),
            .fields = {{"u"}},
            .integrals = {"total"},
            .slab_initial_state = m_by_slab};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    slabs.push_back(state.slab());
    const auto& slab = state.slab();
    for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
      for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
        state["u"].at<double>(i, j) =
            static_cast<double>(100 * (slab.offset[0] + i) + slab.offset[1] + j);
      }
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("w", uwjit::runtime::Dtype::f64, {{w.domain(0), 1}, {w.domain(1), 1}});
    w.integral("total");
    w.for_each_cell({.indices = {"i", "j"}},
                    "u_out(i, j) = 0.5 * (u(i - 1, j) + u(i + 1, j)) * w(i, j);\n"
                    "total += u_out(i, j);\n");
  }
  mutable std::vector<uwjit::runtime::Slab> slabs;
  mutable std::int64_t filled = 0;

protected:
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(uwjit::runtime::StaticArray::computed_by_box<double>(
        "w", {13, 6}, [this](const uwjit::runtime::ArrayBox& box, std::span<double> out) {
          filled += box.extent[0] * box.extent[1];
          std::size_t at = 0;
          for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
            for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j) {
              out[at++] = 1.0 + 0.01 * static_cast<double>(i * j);
            }
          }
        }));
    return data;
  }

private:
  bool m_by_slab;
};

} // namespace

MPI_TEST_CASE("a node that fills by slab is handed its rank's slab only, static arrays too, and "
              "gives the serial state bit for bit") {
  const auto cache = job_sandbox();
  auto engine = make_engine(cache / "sharded");
  for (const bool by_slab : {true, false}) {
    auto node = std::make_shared<SlabNode>(by_slab);
    Simulation simulation(*engine, {node}, sharded({0}));
    const auto& shard = simulation.shard("slab");
    MPI_CHECK(node->slabs.size() == 1);
    if (by_slab) {
      const uwjit::runtime::Slab mine{shard.offset, shard.extent, shard.global};
      MPI_CHECK(node->slabs[0] == mine);
    } else {
      MPI_CHECK(node->slabs[0] == uwjit::runtime::Slab::whole({13, 6}));
    }
    // The computed array filled this rank's slab only, whatever the initial state did.
    MPI_CHECK(node->filled == shard.extent[0] * shard.extent[1]);
    simulation.step(3);
    const uwjit::runtime::Snapshot whole = simulation.gathered();
    if (comm()->rank() == 0) {
      auto serial_engine = make_engine(cache / "serial");
      Simulation serial(*serial_engine, {std::make_shared<SlabNode>(by_slab)});
      serial.step(3);
      uwjit_test::check_same_state(whole, simulation, serial);
    }
  }
}

MPI_TEST_CASE("write_vtk where rank 0 cannot write is the same io error on every rank") {
  const auto dir = job_sandbox();
  auto engine = make_engine(dir / "cache");
  Simulation simulation(*engine, {std::make_shared<ProbeNode>(13, 1, Boundary::edge)},
                        sharded({0}));
  if (comm()->rank() == 0) {
    std::ofstream(dir / "plain") << "a file";
  }
  comm()->barrier();
  std::string message = "(no error)";
  bool io = false;
  try {
    (void)simulation.write_vtk(dir / "plain" / "below");
  } catch (const uwjit::Error& error) {
    message = error.what();
    io = error.kind() == uwjit::ErrorKind::io;
  }
  MPI_CHECK(io);
  MPI_CHECK(contains(message, "plain/below"));
  for (const auto& other : comm()->all_gather(message)) {
    MPI_CHECK(other == message);
  }
}

MPI_TEST_CASE("a cold sharded job compiles each kernel once in total") {
  const auto cache = job_sandbox();
  auto engine = make_engine(cache);
  Simulation simulation(*engine, builtin("heat", {13, 8, 8}), sharded({0}));
  std::uint64_t compiles[2] = {engine->stats().get(uwjit::cache::Stat::compiles), 0};
  compiles[1] = simulation.kernel_reports()[0].info.tier == uwjit::engine::Tier::compiled ? 1 : 0;
  comm()->all_reduce_sum(compiles);
  MPI_CHECK(compiles[0] == 1);
  MPI_CHECK(compiles[1] == 1);
}

MPI_TEST_CASE("a sharded axis without a halo is the same error on every rank") {
  auto engine = make_engine(job_sandbox());
  const auto message = same_error_everywhere([&] {
    Simulation s(*engine, {std::make_shared<ProbeNode>(13, 0, Boundary::edge)}, sharded({0}));
  });
  MPI_CHECK(contains(message, "node \"probe\": sharded axis 0 (nx) has halo width 0"));
}

MPI_TEST_CASE("a shard-mode static array along an axis that is not sharded is an error") {
  auto engine = make_engine(job_sandbox());
  const auto message = same_error_everywhere(
      [&] { Simulation s(*engine, builtin("heat", {8, 8, 8}), sharded({1})); });
  MPI_CHECK(contains(message, "node \"heat\": static array \"face_x\" is sharded along its axis "
                              "0, which is not a sharded domain axis"));
}

MPI_TEST_CASE("a grid that does not match the rank count is an error") {
  auto engine = make_engine(job_sandbox());
  auto options = sharded({0});
  options.grid = {comm()->size() + 1};
  const auto message =
      same_error_everywhere([&] { Simulation s(*engine, builtin("heat", {8, 8, 8}), options); });
  MPI_CHECK(contains(message, "has " + std::to_string(comm()->size() + 1) +
                                  " ranks but the communicator has " +
                                  std::to_string(comm()->size())));
}

MPI_TEST_CASE("more ranks than cells, or shards narrower than the halo, are errors") {
  auto engine = make_engine(job_sandbox());
  const int ranks = comm()->size();
  if (ranks == 1) {
    return; // one rank always fits
  }
  auto message = same_error_everywhere([&] {
    Simulation s(*engine, {std::make_shared<ProbeNode>(ranks - 1, 1, Boundary::edge)},
                 sharded({0}));
  });
  MPI_CHECK(contains(message, "has " + std::to_string(ranks - 1) + " cells for " +
                                  std::to_string(ranks) + " ranks along it"));
  message = same_error_everywhere([&] {
    Simulation s(*engine, {std::make_shared<ProbeNode>(ranks + 1, 2, Boundary::edge)},
                 sharded({0}));
  });
  MPI_CHECK(contains(message, "fewer than the halo width 2"));
}

namespace {

// "rank 0" or "ranks 0,1,2": every rank but the last, as the agreement's messages list them.
std::string all_but_last() {
  std::string ranks = comm()->size() == 2 ? "rank " : "ranks ";
  for (int r = 0; r + 1 < comm()->size(); ++r) {
    ranks += (r == 0 ? "" : ",") + std::to_string(r);
  }
  return ranks;
}

std::string last_rank() {
  return "rank " + std::to_string(comm()->size() - 1);
}

bool is_last_rank() {
  return comm()->rank() == comm()->size() - 1;
}

} // namespace

MPI_TEST_CASE("ranks that build a node of another size are the same error on every rank, naming "
              "the node, the param and each rank's value") {
  if (comm()->size() == 1) {
    return; // one rank always agrees with itself
  }
  auto engine = make_engine(job_sandbox());
  const auto message = same_error_everywhere([&] {
    Simulation s(*engine, builtin("heat", {is_last_rank() ? 12 : 8, 8, 8}), sharded({0}));
  });
  MPI_CHECK(contains(message, "simulation: the ranks disagree on node 1 of 1 (\"heat\"): param "
                              "\"nx\" is 8 on " +
                                  all_but_last() + " and 12 on " + last_rank()));
}

MPI_TEST_CASE("ranks that build a node with another physical param are the same error on every "
              "rank, though the kernels agree") {
  if (comm()->size() == 1) {
    return;
  }
  auto engine = make_engine(job_sandbox());
  const auto message = same_error_everywhere([&] {
    Simulation s(*engine, builtin("heat", {8, 8, 8}, {{"kappa", is_last_rank() ? "2.5" : "1"}}),
                 sharded({0}));
  });
  MPI_CHECK(contains(message,
                     "param \"kappa\" is 1.0 on " + all_but_last() + " and 2.5 on " + last_rank()));
}

MPI_TEST_CASE("ranks whose nodes declare other layouts, or other node lists, or other options are "
              "the same error on every rank") {
  if (comm()->size() == 1) {
    return;
  }
  auto engine = make_engine(job_sandbox());
  auto message = same_error_everywhere([&] {
    Simulation s(*engine,
                 {std::make_shared<ProbeNode>(is_last_rank() ? 14 : 13, 1, Boundary::edge)},
                 sharded({0}));
  });
  MPI_CHECK(contains(message, "node 1 of 1 (\"probe\"): the domain is (13) on " + all_but_last() +
                                  " and (14) on " + last_rank()));
  message = same_error_everywhere([&] {
    NodeList nodes = builtin("heat", {8, 8, 8});
    if (is_last_rank()) {
      nodes.push_back(uwjit::nodes::make("heat", "second", uwjit::nodes::default_params("heat")));
    }
    Simulation s(*engine, nodes, sharded({0}));
  });
  MPI_CHECK(contains(message, "the ranks build different nodes: 1 node (\"heat\") on " +
                                  all_but_last() + " and 2 nodes (\"heat\", \"second\") on " +
                                  last_rank()));
  message = same_error_everywhere([&] {
    Simulation s(*engine, builtin("heat", {8, 8, 8}),
                 sharded({0}, is_last_rank() ? ExchangeMode::overlap : ExchangeMode::sync));
  });
  MPI_CHECK(contains(message, "the exchange mode is sync on " + all_but_last() +
                                  " and overlap on " + last_rank()));
}

MPI_TEST_CASE("a sharded checkpoint resumes bit for bit, sharded on the same ranks or serially") {
  const auto dir = job_sandbox();
  auto engine = make_engine(dir);
  const auto nodes = builtin("heat", {9, 13, 6});
  const uwjit::runtime::NodeFactory factory = [](const std::string& type, const std::string& name,
                                                 const Params& params) {
    return uwjit::nodes::make(type, name, params);
  };
  Simulation simulation(*engine, nodes, sharded({0, 1}));
  simulation.step(4);
  const auto path = dir / "heat.ckpt";
  simulation.checkpoint(path); // collective: one file for the job
  simulation.step(5);
  const uwjit::runtime::Snapshot reference = simulation.gathered();

  Simulation resumed = Simulation::restore(*engine, path, factory, sharded({0, 1}));
  MPI_CHECK(resumed.steps_taken() == 4);
  resumed.step(5);
  const uwjit::runtime::Snapshot again = resumed.gathered();
  MPI_CHECK(again.field("heat", "u").interior_equals(reference.field("heat", "u")));
  // The same ranks add the same partial sums in the same order: the same bits.
  MPI_CHECK(uwjit_test::same_bits(resumed.integrals("heat"), simulation.integrals("heat")));
  if (comm()->rank() == 0) {
    // The job's file is the serial format: a serial run resumes from it too.
    Simulation serial = Simulation::restore(*engine, path, factory);
    serial.step(5);
    MPI_CHECK(serial.field("heat", "u").interior_equals(reference.field("heat", "u")));
  }
  // Another grid of the same ranks reads other slabs of the same file.
  for (const std::vector<int>& axes : {std::vector<int>{0}, std::vector<int>{0, 2}}) {
    Simulation regridded = Simulation::restore(*engine, path, factory, sharded(axes));
    regridded.step(5);
    const auto state = regridded.gathered();
    MPI_CHECK(state.field("heat", "u").interior_equals(reference.field("heat", "u")));
  }
}

MPI_TEST_CASE("a sharded checkpoint is written by every rank, each its slab, and holds the bytes "
              "the serial writer writes for the same state") {
  const auto dir = job_sandbox();
  auto engine = make_engine(dir);
  // Split unevenly along two axes, with a node of 19 fields (populations before the domain).
  for (const auto& [type, size, axes] :
       {std::tuple{"heat", std::vector<std::int64_t>{9, 13, 6}, std::vector<int>{0, 1}},
        std::tuple{"pipe-flow", std::vector<std::int64_t>{11, 7, 7}, std::vector<int>{0, 2}}}) {

    Simulation simulation(*engine, builtin(type, size), sharded(axes));
    simulation.step(3);
    const auto path = dir / (std::string(type) + ".ckpt");
    simulation.checkpoint(path);
    const uwjit::runtime::Snapshot whole = simulation.gathered();
    if (comm()->rank() == 0) {
      const auto serial = dir / (std::string(type) + "-serial.ckpt");
      whole.checkpoint(serial);
      MPI_CHECK(uwjit_test::read_text(path) == uwjit_test::read_text(serial));
    }
    comm()->barrier();
  }
}

MPI_TEST_CASE("sharded checkpoint and restore errors are raised on every rank alike") {
  auto engine = make_engine(job_sandbox());
  Simulation simulation(*engine, builtin("heat", {8, 8, 8}), sharded({0}));
  simulation.step(1);
  const auto nowhere = job_sandbox() / "no-such-directory" / "heat.ckpt";
  const auto written = uwjit_test::same_failure_everywhere([&] { simulation.checkpoint(nowhere); });
  MPI_CHECK(contains(written, "io: checkpoint " + nowhere.string()));
  const auto read = uwjit_test::same_failure_everywhere(
      [&] { (void)Simulation::restore(*engine, nowhere, {}, sharded({0})); });
  MPI_CHECK(contains(read, "io: checkpoint " + nowhere.string() + ": cannot open"));
}

MPI_TEST_CASE("ranks asking for other step counts or naming other checkpoints fail alike, never "
              "hang or write one rank's file alone") {
  if (comm()->size() < 2) {
    return; // one rank cannot disagree with itself
  }
  auto engine = make_engine(job_sandbox());
  Simulation simulation(*engine, builtin("heat", {8, 8, 8}), sharded({0}));
  const int rank = comm()->rank();
  const auto steps =
      uwjit_test::same_failure_everywhere([&] { simulation.step(rank == 1 ? 3 : 2); });
  MPI_CHECK(contains(steps, "usage: step count: the ranks ask for 2 to 3 steps"));
  MPI_CHECK(simulation.steps_taken() == 0);
  const auto ran = uwjit_test::same_failure_everywhere(
      [&] { simulation.run(rank == 1 ? 0 : 1, [](const Simulation&) {}); });
  MPI_CHECK(contains(ran, "the ranks ask for 0 to 1 steps"));
  // Names of other files in one directory: rank 0's file must not be written alone.
  const auto dir = job_sandbox();
  const auto mine = dir / (rank == 1 ? "b.ckpt" : "a.ckpt");
  // Each rank's error names its own path first, then what the ranks disagree on.
  std::string named = "(no error)";
  try {
    simulation.checkpoint(mine);
  } catch (const uwjit::Error& error) {
    named = error.what();
  }
  MPI_CHECK(contains(named, mine.string() + ": rank 1 names the file \"b.ckpt\" and rank 0 "
                                            "\"a.ckpt\": the ranks write one file together"));
  MPI_CHECK(!std::filesystem::exists(dir / "a.ckpt") && !std::filesystem::exists(dir / "b.ckpt"));
  simulation.step(1); // the job goes on
  MPI_CHECK(simulation.steps_taken() == 1);
}

int main(int argc, char** argv) {
  return uwjit_test::run_job(argc, argv);
}

namespace {

// A 1-D node (64 cells, halo 1) whose kernel returns status 7 at step 3 on the ranks that
// `fails` picks (by where their shard lies), and otherwise copies its neighbours' mean.
class FailingNode final : public uwjit::runtime::Node {
public:
  explicit FailingNode(std::string when)
      : Node("failing", "f", Params{}), m_when(std::move(when)) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 64, .halo = 1}}, .fields = {{"u"}}, .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 64; ++i) {
      state["u"].at<double>(i) = static_cast<double>(i);
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("total");
    w.update_box();
    const std::string fails = m_when == "first" ? "nx_offset == 0" : "nx_offset != 0";
    w.body("    if (args->step == 3 && " + fails +
           ") {\n"
           "      return 7;\n"
           "    }\n"
           "    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
           "      u_out(i) = 0.5 * (u(i - 1) + u(i + 1));\n"
           "      total += u_out(i);\n"
           "    }\n");
  }

private:
  std::string m_when;
};

} // namespace

MPI_TEST_CASE("a kernel failing on one rank ends every rank with the same error, sync and "
              "overlap") {
  auto engine = make_engine(job_sandbox());
  for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
    for (const char* when : {"first", "others"}) {
      const NodeList nodes{std::make_shared<FailingNode>(when)};
      Simulation simulation(*engine, nodes, sharded({0}, mode));
      const std::string message = uwjit_test::same_failure_everywhere([&] { simulation.step(5); });
      if (comm()->size() == 1 && std::string(when) == "others") {
        MPI_CHECK(message == "(no error)"); // no rank has a non-zero offset
        continue;
      }
      MPI_CHECK(
          contains(message, "kernel: node \"f\": kernel returned status 7 at step 3 on rank "));
      // The lowest failing rank names itself.
      MPI_CHECK(
          contains(message, std::string("on rank ") + (std::string(when) == "first" ? "0" : "1")));
      MPI_CHECK(simulation.steps_taken() == 3);
      // The job goes on: the ranks still agree in the next collective.
      MPI_CHECK(comm()->all_gather("alive").size() == static_cast<std::size_t>(comm()->size()));
    }
  }
}

namespace {

// A 2-D node whose cells cost a few sines each, so that the threads share each step's slabs
// even on a busy machine, and whose state varies along x, so that the slabs' integrals differ
// (pipe-flow's do not: its flow is the same at every x).
class WavesNode final : public uwjit::runtime::Node {
public:
  WavesNode() : Node("waves", "waves", Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = uwjit::runtime::NodeLayout::grid({90, 8100}, 1),
            .fields = {{"u"}},
            .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 90; ++i) {
      for (std::int64_t j = 0; j < 8100; ++j) {
        state["u"].at<double>(i, j) =
            std::sin(0.1 * static_cast<double>(i)) + std::cos(0.001 * static_cast<double>(j));
      }
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("total");
    w.for_each_cell(
        {.indices = {"i", "j"}},
        R"(          double v = u(i, j) + 0.1 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * u(i, j));
          for (int k = 0; k < 4; ++k) {
            v += 0.01 * uwm::sin(v + k);
          }
          u_out(i, j) = v;
          total += v;
)");
  }
};

} // namespace

MPI_TEST_CASE("sharded heat, pipe-flow and a node of costly cells give the same state bytes and "
              "integral bits at 1, 2, 3 and 7 threads, sync and overlap, on shards of many uneven "
              "slabs") {
  auto engine = make_engine(job_sandbox());
  // Each rank's CPU executor cuts its box along x into slabs of about 16384 cells (at most 64)
  // and adds their integrals in slab order (runtime/src/cpu_executor.cpp). The grids give every
  // rank many slabs of uneven widths at 1 to 4 ranks (heat and the costly node: 44 slabs
  // serially, 11 of 2 or 3 planes on a quarter; pipe-flow: 17 and 4), so that an order that
  // followed the threads would show in the integrals' bits; overlap cuts its interior box the
  // same way.
  const NodeList waves{std::make_shared<WavesNode>()};
  for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
    for (const auto& [nodes, steps] :
         {std::pair{builtin("heat", {90, 90, 90}), 4},
          std::pair{builtin("pipe-flow", {44, 80, 80}), 2}, std::pair{waves, 4}}) {
      const auto& node = nodes.front();
      // Every step's integrals: one reordered sum in any step shows.
      auto integrals_per_step = [&](Simulation& simulation) {
        std::vector<double> all;
        for (int s = 0; s < steps; ++s) {
          simulation.step();
          const auto now = simulation.integrals(node->name());
          all.insert(all.end(), now.begin(), now.end());
        }
        return all;
      };
      SimulationOptions options = sharded({0}, mode);
      options.threads = 1;
      Simulation one(*engine, nodes, options);
      const auto one_integrals = integrals_per_step(one);
      for (const int threads : {2, 3, 7}) {
        options.threads = threads;
        Simulation many(*engine, nodes, options);
        MPI_CHECK(many.threads() == threads);
        MPI_CHECK(uwjit_test::same_bits(integrals_per_step(many), one_integrals));
        for (const auto& f : node->layout().fields) {
          MPI_CHECK(
              many.field(node->name(), f.name).interior_equals(one.field(node->name(), f.name)));
        }
      }
    }
  }
}

namespace {

// A heat-like 1-D node whose own code throws on rank `bad` only: in emit_update or in
// initial_state.
class ThrowingNode final : public uwjit::runtime::Node {
public:
  ThrowingNode(std::string where, int bad)
      : Node("throwing", "t", Params{}), m_where(std::move(where)), m_bad(bad) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 32, .halo = 1}}, .fields = {{"u"}}};
  }
  void initial_state(uwjit::runtime::State&) const override {
    if (m_where == "initial_state" && comm()->rank() == m_bad) {
      throw std::runtime_error("initial_state fails here");
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    if (m_where == "emit_update" && comm()->rank() == m_bad) {
      throw uwjit::Error(uwjit::ErrorKind::usage, "emit_update fails here");
    }
    w.state_out("u");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n      u_out(i) = u(i - 1);\n    }\n");
  }

private:
  std::string m_where;
  int m_bad;
};

} // namespace

MPI_TEST_CASE("a node's own code failing on one rank fails every rank: an Error alike, a foreign "
              "exception as itself there and named with its rank elsewhere") {
  auto engine = make_engine(job_sandbox());
  const int bad = comm()->size() - 1;
  const std::string emit = uwjit_test::same_failure_everywhere([&] {
    Simulation simulation(*engine, {std::make_shared<ThrowingNode>("emit_update", bad)},
                          sharded({0}));
  });
  MPI_CHECK(emit == "usage: emit_update fails here");
  std::string initial = "(no error)";
  try {
    Simulation simulation(*engine, {std::make_shared<ThrowingNode>("initial_state", bad)},
                          sharded({0}));
  } catch (const uwjit::Error& error) {
    initial = std::string(uwjit::to_string(error.kind())) + ": " + error.what();
  } catch (const std::runtime_error& error) {
    initial = std::string("own: ") + error.what();
  }
  MPI_CHECK(initial == (comm()->rank() == bad
                            ? std::string("own: initial_state fails here")
                            : "usage: rank " + std::to_string(bad) + ": initial_state fails here"));
  // The job goes on: the ranks still agree in the next collective.
  MPI_CHECK(comm()->all_gather("alive").size() == static_cast<std::size_t>(comm()->size()));
}

namespace {

// A 1-D node whose kernel reads two cells to its left, beyond its halo of one, only on ranks
// whose shard does not start the domain.
class OverreachingNode final : public uwjit::runtime::Node {
public:
  OverreachingNode() : Node("overreaching", "bad", Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 16, .halo = 1}}, .fields = {{"u"}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      u_out(i) = u(i) + (nx_offset > 0 && i == 0 ? u(i - 2) : 0.0);\n"
           "    }\n");
  }
};

// A 1-D node that declares update_box() and updates the whole interior anyway: sharded in
// overlap mode it is called three times per step and sums its mass three times.
class BoxIgnoringNode final : public uwjit::runtime::Node {
public:
  BoxIgnoringNode() : Node("box-ignoring", "ignores", Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 24, .halo = 1}}, .fields = {{"u"}}, .integrals = {"mass"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 24; ++i) {
      state["u"].at<double>(i) = 1.0;
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.integral("mass");
    w.update_box();
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      u_out(i) = u(i);\n"
           "      mass += u(i);\n"
           "    }\n");
  }
};

} // namespace

MPI_TEST_CASE("checked mode: an update box declared and ignored is caught in sync and overlap; "
              "unchecked, overlap's first step catches it") {
  auto engine = make_engine(job_sandbox());
  const NodeList nodes{std::make_shared<BoxIgnoringNode>()};
  if (comm()->size() > 1) {
    // Its own loops: the first step runs checked, and overlap's first box is not the interior.
    Simulation plain(*engine, nodes, sharded({0}, ExchangeMode::overlap));
    const std::string message = uwjit_test::same_failure_everywhere([&] { plain.step(1); });
    MPI_CHECK(message == "kernel: node \"ignores\", step 0, rank 0: kernel wrote \"u\" at (0), "
                         "outside its update box ([1, " +
                             std::to_string(plain.shard("ignores").extent[0] - 1) +
                             ") on axis 0); found by the check of the first step, which a kernel "
                             "gets when its text does not show its reads within their halos: a "
                             "kernel writes only the cells of the update box it is given "
                             "(checked mode checks every step)");
    MPI_CHECK(plain.steps_taken() == 0);
  }
  for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
    SimulationOptions options = sharded({0}, mode);
    options.checked = true;
    Simulation simulation(*engine, nodes, options);
    const std::string message = uwjit_test::same_failure_everywhere([&] { simulation.step(1); });
    // Every rank fails on its first box (the cells that read no halo, [1, n - 1)); the lowest,
    // rank 0, names itself.
    MPI_CHECK(message == "kernel: node \"ignores\", step 0, rank 0"
                         ": kernel wrote \"u\" at (0), outside its update box ([1, " +
                             std::to_string(simulation.shard("ignores").extent[0] - 1) +
                             ") on axis 0)");
  }
}

MPI_TEST_CASE("checked mode: a read beyond the halo on one rank is the same kernel error on every "
              "rank") {
  auto engine = make_engine(job_sandbox());
  for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
    SimulationOptions options = sharded({0}, mode);
    options.checked = true;
    Simulation simulation(*engine, {std::make_shared<OverreachingNode>()}, options);
    const std::string message = uwjit_test::same_failure_everywhere([&] { simulation.step(2); });
    if (comm()->size() == 1) {
      MPI_CHECK(message == "(no error)"); // one shard: it starts the domain
      continue;
    }
    // The lowest failing rank's message, on every rank.
    MPI_CHECK(message == "kernel: node \"bad\", step 0, rank 1: kernel read \"u\" at (-2), outside "
                         "its layout (halo 1 on axis 0)");
    MPI_CHECK(simulation.steps_taken() == 0);
    // The job goes on: the ranks still agree in the next collective.
    MPI_CHECK(comm()->all_gather("alive").size() == static_cast<std::size_t>(comm()->size()));
  }
}

MPI_TEST_CASE("checked mode: sharded heat and pipe-flow give the unchecked state bit for bit, sync "
              "and overlap") {
  auto engine = make_engine(job_sandbox());
  for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
    for (const auto& nodes : {builtin("heat", {13, 6, 5}), builtin("pipe-flow", {12, 8, 8})}) {
      const auto& node = nodes.front();
      SimulationOptions options = sharded({0}, mode);
      Simulation plain(*engine, nodes, options);
      options.checked = true;
      Simulation careful(*engine, nodes, options);
      MPI_CHECK(careful.kernel_reports()[0].info.key != plain.kernel_reports()[0].info.key);
      plain.step(4);
      careful.step(4);
      for (const auto& f : node->layout().fields) {
        MPI_CHECK(
            careful.field(node->name(), f.name).interior_equals(plain.field(node->name(), f.name)));
      }
    }
  }
}
