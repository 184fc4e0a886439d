// What a sharded job does without a gather, under mpiexec. VTK output: every rank writes the
// image of its own slab and rank 0 the parallel index; joined, the pieces hold the arrays the
// serial writer writes for the same state; a node without an image is gathered and written once;
// a failure is the same error on every rank. Checks: the built-in nodes judge a rank's slab
// (local_snapshot) as they judge the whole domain, the same verdict on every rank.
#include "harness.hpp"
#include "job.hpp"
#include "vtk_reader.hpp"

#include <uwjit/driver/check.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/builtin.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using uwjit::engine::Engine;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;

namespace {

using uwjit_test::comm;

std::unique_ptr<Engine> make_engine(const std::filesystem::path& cache) {
  uwjit::engine::EngineOptions options;
  options.cache_dir = cache;
  return std::make_unique<Engine>(options);
}

SimulationOptions sharded(std::vector<int> axes) {
  SimulationOptions options;
  options.comm = comm().get();
  options.shard_axes = std::move(axes);
  return options;
}

std::vector<std::shared_ptr<const uwjit::runtime::Node>>
builtin(const std::string& type, const std::vector<std::int64_t>& size) {
  return {uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size))};
}

// A built-in node's layout and kernel that records the slab of each image asked of it, or, with
// `image` false, has no image and counts the files it writes itself.
class Recorder final : public uwjit::runtime::Node {
public:
  explicit Recorder(bool image)
      : Node("recorder", "probe", Params{}), m_image(image),
        m_inner(uwjit::nodes::make(
            "heat", "probe",
            uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{10, 6, 4}))) {}
  uwjit::runtime::NodeLayout layout() const override { return m_inner->layout(); }
  void initial_state(uwjit::runtime::State& state) const override { m_inner->initial_state(state); }
  void emit_update(uwjit::codegen::KernelWriter& w) const override { m_inner->emit_update(w); }
  uwjit::runtime::StaticData build_static_data() const override { return m_inner->static_data(); }
  std::optional<uwjit::runtime::VtkImage>
  vtk_image(const uwjit::runtime::Snapshot& snapshot) const override {
    slabs.push_back(snapshot.slab(name()));
    return m_image ? Node::vtk_image(snapshot) : std::nullopt;
  }
  std::vector<std::filesystem::path> write_vtk(const uwjit::runtime::Snapshot& snapshot,
                                               const std::filesystem::path& directory,
                                               std::string_view stem) const override {
    if (m_image) {
      return Node::write_vtk(snapshot, directory, stem);
    }
    ++writes;
    const auto path = directory / (std::string(stem) + ".txt");
    std::ofstream(path) << "cells " << snapshot.field(name(), "u").interior_count() << "\n";
    return {path};
  }

  mutable std::vector<uwjit::runtime::Slab> slabs;
  mutable int writes = 0;

private:
  bool m_image;
  std::shared_ptr<const uwjit::runtime::Node> m_inner;
};

} // namespace

MPI_TEST_CASE("sharded write_vtk: each rank writes its slab's piece, rank 0 the index, and the "
              "pieces joined are the serial file's arrays") {
  const auto dir = uwjit_test::job_sandbox("uwjit-vtk");
  auto engine = make_engine(dir / "cache");
  // Split unevenly along two axes; pipe-flow's arrays are derived (density, velocity) and static
  // (the wall), heat's its state and its conductivity.
  for (const auto& [type, size, axes] :
       {std::tuple{"heat", std::vector<std::int64_t>{9, 13, 6}, std::vector<int>{0, 1}},
        std::tuple{"pipe-flow", std::vector<std::int64_t>{11, 7, 7}, std::vector<int>{0, 2}}}) {
    Simulation simulation(*engine, builtin(type, size), sharded(axes));
    simulation.step(3);
    const auto paths = simulation.write_vtk(dir / "out" / type, "run");
    const auto whole = simulation.gathered();
    MPI_CHECK(paths.size() == 1);
    const int ranks = comm()->size();
    if (paths.size() != 1) {
      continue;
    }
    MPI_CHECK(paths[0].filename() == (ranks == 1 ? "run_" + std::string(type) + ".vti"
                                                 : "run_" + std::string(type) + ".pvti"));
    for (const auto& other : comm()->all_gather(paths[0].string())) {
      MPI_CHECK(other == paths[0].string());
    }
    if (comm()->rank() != 0) {
      continue;
    }
    const auto serial = whole.write_vtk(dir / "serial" / type, "run");
    const auto expected = uwjit_test::read_vti(serial.at(0));
    if (ranks == 1) {
      MPI_CHECK(uwjit_test::read_vti(paths[0]).arrays == expected.arrays);
      continue;
    }
    const auto index = uwjit_test::read_pvti(paths[0]);
    MPI_CHECK(index.pieces.size() == static_cast<std::size_t>(ranks));
    MPI_CHECK(index.whole == expected.extent);
    MPI_CHECK(index.arrays.size() == expected.arrays.size());
    for (const auto& [name, bytes] : expected.arrays) {
      MPI_CHECK(index.arrays.count(name) == 1);
    }
    MPI_CHECK(index.pieces[0].second ==
              "run_" + std::string(type) + "/run_" + std::string(type) + "_0000.vti");
    MPI_CHECK(uwjit_test::joined_arrays(paths[0]) == expected.arrays);
  }
}

MPI_TEST_CASE("sharded write_vtk asks each rank for the image of its own slab only") {
  const auto dir = uwjit_test::job_sandbox("uwjit-vtk");
  auto engine = make_engine(dir / "cache");
  const auto node = std::make_shared<Recorder>(true);
  Simulation simulation(*engine, {node}, sharded({0}));
  simulation.step(2);
  (void)simulation.write_vtk(dir / "out");
  MPI_CHECK(node->writes == 0);
  MPI_CHECK(node->slabs.size() == 1);
  if (!node->slabs.empty()) {
    const auto& shard = simulation.shard("probe");
    const uwjit::runtime::Slab mine{shard.offset, shard.extent, shard.global};
    MPI_CHECK(node->slabs[0] == mine);
  }
}

MPI_TEST_CASE("a node without an image is gathered and written once, by rank 0, and every rank "
              "gets its paths") {
  const auto dir = uwjit_test::job_sandbox("uwjit-vtk");
  auto engine = make_engine(dir / "cache");
  const auto node = std::make_shared<Recorder>(false);
  Simulation simulation(*engine, {node}, sharded({0}));
  simulation.step(1);
  const auto paths = simulation.write_vtk(dir / "out", "run");
  std::uint64_t writes[1] = {static_cast<std::uint64_t>(node->writes)};
  comm()->all_reduce_sum(std::span<std::uint64_t>(writes));
  MPI_CHECK(writes[0] == 1);
  MPI_CHECK(node->writes == (comm()->rank() == 0 ? 1 : 0));
  MPI_CHECK(paths.size() == 1);
  if (!paths.empty()) {
    MPI_CHECK(paths[0] == dir / "out" / "run_probe.txt");
    MPI_CHECK(uwjit_test::read_text(paths[0]) == "cells 240\n"); // the whole 10×6×4 domain
  }
}

MPI_TEST_CASE("sharded write_vtk where the pieces cannot be written is the same io error on "
              "every rank") {
  const auto dir = uwjit_test::job_sandbox("uwjit-vtk");
  auto engine = make_engine(dir / "cache");
  Simulation simulation(*engine, builtin("heat", {8, 8, 8}), sharded({0}));
  if (comm()->rank() == 0) {
    std::filesystem::create_directories(dir / "out");
    std::ofstream(dir / "out" / "run_heat") << "a file where the pieces go";
  }
  comm()->barrier();
  std::string message = "(no error)";
  bool io = false;
  try {
    (void)simulation.write_vtk(dir / "out", "run");
  } catch (const uwjit::Error& error) {
    message = error.what();
    io = error.kind() == uwjit::ErrorKind::io;
  }
  if (comm()->size() > 1) { // serially the file is run_heat.vti, beside it
    MPI_CHECK(io);
    MPI_CHECK(message.find("run_heat") != std::string::npos);
  }
  for (const auto& other : comm()->all_gather(message)) {
    MPI_CHECK(other == message);
  }
}

MPI_TEST_CASE("the built-in checks and pictures read each rank's slab as they read the whole "
              "domain, with the same verdict on every rank") {
  const auto dir = uwjit_test::job_sandbox("uwjit-check");
  auto engine = make_engine(dir / "cache");
  // Split unevenly along two axes; heat with fixed walls (its profile's maximum) and without
  // (conservation, the mode's projection) and pipe-flow (mass, the profile's norms).
  for (const auto& [type, size, axes, sets] :
       {std::tuple{"heat", std::vector<std::int64_t>{9, 13, 6}, std::vector<int>{0, 1},
                   std::vector<std::string>{}},
        std::tuple{"heat", std::vector<std::int64_t>{12, 5, 4}, std::vector<int>{0},
                   std::vector<std::string>{"boundary=fixed"}},
        std::tuple{"pipe-flow", std::vector<std::int64_t>{11, 7, 7}, std::vector<int>{0, 2},
                   std::vector<std::string>{}}}) {
    Params params = uwjit::nodes::sized_params(type, size);
    for (const auto& set : sets) {
      params.set_from_text(set.substr(0, set.find('=')), set.substr(set.find('=') + 1));
    }
    const auto node = uwjit::nodes::make(type, type, params);
    Simulation simulation(*engine, {node}, sharded(axes));
    uwjit::driver::Trace trace;
    for (int step = 0; step < 20; ++step) {
      simulation.step(1);
      trace.record(simulation, 0);
    }
    const auto& builtin = dynamic_cast<const uwjit::nodes::BuiltinNode&>(*node);
    const auto mine = builtin.check(simulation.local_snapshot(), trace);
    const auto whole = builtin.check(simulation.gathered(), trace);
    MPI_CHECK(mine.passed == whole.passed);
    MPI_CHECK(mine.notes == whole.notes);
    MPI_CHECK(mine.measurements.size() == whole.measurements.size());
    MPI_CHECK(!mine.measurements.empty());
    std::string values;
    for (std::size_t m = 0; m < mine.measurements.size() && m < whole.measurements.size(); ++m) {
      const auto& a = mine.measurements[m];
      const auto& b = whole.measurements[m];
      MPI_CHECK(a.name == b.name);
      MPI_CHECK(a.passed == b.passed);
      // Partial sums added over the ranks instead of one sum: the same to round-off, which is
      // all that measurements of round-off (conservation: 1e-17 against a limit of 1e-12) are.
      MPI_CHECK(std::abs(a.value - b.value) <= std::max(1e-9 * std::abs(b.value), 1e-3 * b.limit));
      values += a.name + "=" + std::to_string(a.value) + ";";
    }
    for (const auto& other : comm()->all_gather(values)) { // every rank judges alike
      MPI_CHECK(other == values);
    }
    // The pictures: the slices joined from the ranks' slabs are the whole domain's bit for bit
    // (walls NaN alike); the charts' sums agree to round-off.
    const auto drawn = builtin.figures(simulation.local_snapshot());
    const auto expected = builtin.figures(simulation.gathered());
    MPI_CHECK(drawn.slices.size() == expected.slices.size());
    for (std::size_t s = 0; s < drawn.slices.size() && s < expected.slices.size(); ++s) {
      const auto& a = drawn.slices[s].values;
      const auto& b = expected.slices[s].values;
      MPI_CHECK(a.size() == b.size());
      bool same = a.size() == b.size();
      for (std::size_t v = 0; same && v < a.size(); ++v) {
        same = std::isnan(a[v]) ? std::isnan(b[v]) : a[v] == b[v];
      }
      MPI_CHECK(same);
    }
    MPI_CHECK(drawn.charts.size() == expected.charts.size());
    for (std::size_t c = 0; c < drawn.charts.size() && c < expected.charts.size(); ++c) {
      const auto& a = drawn.charts[c].curves;
      const auto& b = expected.charts[c].curves;
      MPI_CHECK(a.size() == b.size());
      for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
        MPI_CHECK(a[k].x == b[k].x);
        MPI_CHECK(a[k].y.size() == b[k].y.size());
        for (std::size_t v = 0; v < a[k].y.size() && v < b[k].y.size(); ++v) {
          MPI_CHECK(std::abs(a[k].y[v] - b[k].y[v]) <= 1e-12 * (1 + std::abs(b[k].y[v])));
        }
      }
    }
  }
}

namespace {

// A 1-D node of `cells` cells that fills its whole domain (slab_initial_state false, the
// default), with a shard-mode static array given whole or computed by box.
class WholeFill final : public uwjit::runtime::Node {
public:
  WholeFill(std::int64_t cells, bool by_box)
      : Node("whole-fill", "big", Params{}), m_cells(cells), m_by_box(by_box) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = m_cells, .halo = 1, .name = "n"}}, .fields = {{"u"}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.body("    u_out(0) = u(0);\n");
  }
  uwjit::runtime::StaticData build_static_data() const override {
    using uwjit::runtime::StaticArray;
    uwjit::runtime::StaticData data;
    if (m_by_box) {
      data.add(StaticArray::computed_by_box<double>(
          "table", {m_cells}, [](const uwjit::runtime::ArrayBox&, std::span<double>) {},
          uwjit::runtime::Replication::shard, 0));
    } else {
      data.add(StaticArray::computed<double>(
          "table", {m_cells}, [](std::span<double>) {}, uwjit::runtime::Replication::shard, 0));
    }
    return data;
  }

private:
  std::int64_t m_cells;
  bool m_by_box;
};

} // namespace

MPI_TEST_CASE("the memory estimate counts what a rank holds whole: a whole-domain fill and a "
              "shard array not computed by box") {
  auto engine = make_engine(uwjit_test::job_sandbox("uwjit-estimate") / "cache");
  // 2^40 cells: 8.8 TB per state buffer, refused at any rank count here, with the figures.
  for (const bool by_box : {false, true}) {
    std::string message = "(no error)";
    try {
      Simulation simulation(*engine, {std::make_shared<WholeFill>(std::int64_t{1} << 40, by_box)},
                            sharded({0}));
    } catch (const uwjit::Error& error) {
      message = error.what();
    }
    const bool sharded_run = comm()->size() > 1;
    MPI_CHECK(message.find("run needs about") != std::string::npos);
    // The fill of the whole domain counts once sharded (serially it is the state itself).
    MPI_CHECK((message.find("the whole domain's state while a node that does not fill by slab "
                            "is filled 8.8 TB") != std::string::npos) == sharded_run);
    // The table (8.8 TB whole): a rank's slab when computed by box, and the whole as well when
    // it is not.
    const double slab = 8.796093022208 / comm()->size();
    const double table = by_box || !sharded_run ? slab : slab + 8.796093022208;
    char expected[64];
    std::snprintf(expected, sizeof expected, "static data %.3g TB", table);
    MPI_CHECK(message.find(expected) != std::string::npos);
  }
}

int main(int argc, char** argv) {
  return uwjit_test::run_job(argc, argv);
}
