// One copy per node of computed replicate static arrays, under mpiexec: the node's first rank
// computes the array once into shared memory, the other ranks map it read-only; the job's
// proportional set size (PSS) shows one copy instead of one per rank; results are the same as
// with private copies and as the serial run; a failing fill raises the same error everywhere;
// ranks that disagree on what to share keep private copies instead of hanging.
#include "harness.hpp"
#include "job.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

using uwjit::engine::Engine;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;
using uwjit::runtime::StaticArray;

namespace {

using uwjit_test::comm;

constexpr std::int64_t k_table = 1 << 20; // 8 MiB of f64

double table_value(std::int64_t i) {
  return std::sin(0.001 * static_cast<double>(i));
}

// Which ranks' fills of the table throw.
constexpr int k_no_rank = -2;
constexpr int k_every_rank = -1;

// A 1-D diffusion with a source read from a large computed replicate table. Counts its fills;
// a fill on rank `fail_on` (or on any rank: k_every_rank) throws.
class TableNode final : public uwjit::runtime::Node {
public:
  explicit TableNode(int fail_on = k_no_rank)
      : Node("table", "table", uwjit::runtime::Params{}), m_fail_on(fail_on) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 29, .halo = 1}}, .fields = {{"u"}}, .integrals = {"total"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t i = 0; i < 29; ++i) {
      state["u"].at<double>(i) = static_cast<double>(i % 7);
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("table");
    w.integral("total");
    w.body("    for (uw_i64 i = 0; i < nx; ++i) {\n"
           "      const uw_i64 g = (nx_offset + i) * 36151;\n"
           "      u_out(i) = 0.25 * (u(i - 1) + 2.0 * u(i) + u(i + 1)) + 1e-3 * table(g % " +
           std::to_string(k_table) +
           ");\n"
           "      total += u_out(i);\n"
           "    }\n");
  }
  int fills() const { return m_fills->load(); }

protected:
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    data.add(StaticArray::computed<double>(
        "table", {k_table}, [fills = m_fills, fail_on = m_fail_on](std::span<double> out) {
          fills->fetch_add(1);
          if (fail_on == k_every_rank || fail_on == comm()->rank()) {
            throw std::runtime_error("the table's source file is missing");
          }
          for (std::size_t i = 0; i < out.size(); ++i) {
            out[i] = table_value(static_cast<std::int64_t>(i));
          }
        }));
    return data;
  }

private:
  int m_fail_on;
  std::shared_ptr<std::atomic<int>> m_fills = std::make_shared<std::atomic<int>>(0);
};

std::unique_ptr<Engine> make_engine() {
  static const auto cache = uwjit_test::job_sandbox("uwjit-node-shared");
  uwjit::engine::EngineOptions options;
  options.cache_dir = cache;
  return std::make_unique<Engine>(options);
}

SimulationOptions sharded(bool share) {
  SimulationOptions options;
  options.comm = comm().get();
  options.share_on_node = share;
  return options;
}

double sum_over_ranks(double mine) {
  double values[] = {mine};
  comm()->all_reduce_sum(values);
  return values[0];
}

// The nodes (groups of ranks sharing memory) of the job.
int job_nodes() {
  return static_cast<int>(sum_over_ranks(comm()->node_rank() == 0 ? 1.0 : 0.0));
}

// The proportional set size (kB) of the mapping that holds `address`: its resident pages, each
// divided by the number of processes that map it. (A shared-memory mapping is a mapping of its
// own; private anonymous memory may be merged with its neighbours, so this is for the former.)
double pss_kb_of(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t low = 0;
    std::uintptr_t high = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> low >> dash >> high && dash == '-') {
      inside = low <= at && at < high;
    } else if (inside && line.rfind("Pss:", 0) == 0) {
      return std::stod(line.substr(4));
    }
  }
  return -1;
}

// Reads every element of the table bound to the kernel (so every page is resident here) and
// checks it.
void check_table(const Simulation& simulation) {
  const auto& array = simulation.bound_static_data("table").at("table");
  const auto values = array.values<double>();
  bool right = values.size() == static_cast<std::size_t>(k_table);
  for (std::size_t i = 0; right && i < values.size(); ++i) {
    right = values[i] == table_value(static_cast<std::int64_t>(i));
  }
  MPI_CHECK(right);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr double k_table_kb = static_cast<double>(k_table) * sizeof(double) / 1024.0;

} // namespace

MPI_TEST_CASE("a computed replicate array is computed once per node and its PSS is one copy") {
  const auto node = std::make_shared<TableNode>();
  auto engine = make_engine();
  Simulation simulation(*engine, {node}, sharded(true));
  simulation.step(3);
  const auto shared = simulation.node_shared();
  MPI_CHECK(shared.arrays == 1);
  MPI_CHECK(shared.bytes == k_table * 8);
  MPI_CHECK(shared.kept_private.empty());
  MPI_CHECK(sum_over_ranks(node->fills()) == job_nodes());
  check_table(simulation);
  comm()->barrier(); // every rank has every page resident before anyone reads its PSS
  const double job_pss =
      sum_over_ranks(pss_kb_of(simulation.bound_static_data("table").at("table").data()));
  // One copy for the job's node, to a page per rank (smaps rounds each rank's share down).
  MPI_CHECK(std::abs(job_pss - k_table_kb * job_nodes()) <= 4.0 * comm()->size());
}

MPI_TEST_CASE("private copies are computed on every rank and give the same state bit for bit") {
  const auto shared_node = std::make_shared<TableNode>();
  const auto private_node = std::make_shared<TableNode>();
  auto engine = make_engine();
  Simulation shared(*engine, {shared_node}, sharded(true));
  Simulation own(*engine, {private_node}, sharded(false));
  shared.step(5);
  own.step(5);
  MPI_CHECK(own.node_shared().arrays == 0);
  MPI_CHECK(sum_over_ranks(private_node->fills()) == comm()->size());
  check_table(own);
  const uwjit::runtime::Snapshot a = shared.gathered();
  const uwjit::runtime::Snapshot b = own.gathered();
  MPI_CHECK(a.field("table", "u").interior_equals(b.field("table", "u")));
  if (comm()->rank() == 0) {
    Simulation serial(*engine, {std::make_shared<TableNode>()});
    serial.step(5);
    MPI_CHECK(a.field("table", "u").interior_equals(serial.field("table", "u")));
  }
}

MPI_TEST_CASE("arrays under share_min_bytes stay private to each rank") {
  const auto node = std::make_shared<TableNode>();
  auto engine = make_engine();
  SimulationOptions options = sharded(true);
  options.share_min_bytes = k_table * 8 + 1;
  Simulation simulation(*engine, {node}, options);
  MPI_CHECK(simulation.node_shared().arrays == 0);
  MPI_CHECK(simulation.node_shared().kept_private.empty());
  MPI_CHECK(sum_over_ranks(node->fills()) == comm()->size());
}

MPI_TEST_CASE("a fill that throws on the node's first rank raises one error on every rank") {
  const auto node = std::make_shared<TableNode>(k_every_rank);
  auto engine = make_engine();
  const auto message = uwjit_test::same_failure_everywhere(
      [&] { Simulation simulation(*engine, {node}, sharded(true)); });
  MPI_CHECK(contains(message, "usage: rank 0: node \"table\": computing static array \"table\": "
                              "the table's source file is missing"));
  MPI_CHECK(sum_over_ranks(node->fills()) == job_nodes());
}

MPI_TEST_CASE("a private fill that throws on the last rank only raises one error on every rank") {
  const int last = comm()->size() - 1;
  const auto node = std::make_shared<TableNode>(last);
  auto engine = make_engine();
  const auto message = uwjit_test::same_failure_everywhere(
      [&] { Simulation simulation(*engine, {node}, sharded(false)); });
  MPI_CHECK(contains(message, "usage: rank " + std::to_string(last) +
                                  ": node \"table\": computing static array \"table\": the "
                                  "table's source file is missing"));
  MPI_CHECK(sum_over_ranks(node->fills()) == comm()->size());
  // The job goes on: the ranks still agree in the next collective.
  MPI_CHECK(comm()->all_gather("alive").size() == static_cast<std::size_t>(comm()->size()));
}

MPI_TEST_CASE("a fill that throws on rank 1 only, of ranks that keep private copies, raises one "
              "error on every rank") {
  const auto node = std::make_shared<TableNode>(1);
  auto engine = make_engine();
  // The ranks list different arrays to share: each computes its own copy.
  SimulationOptions options = sharded(true);
  options.share_min_bytes = comm()->rank() == 0 ? 0 : std::numeric_limits<std::size_t>::max();
  const auto message =
      uwjit_test::same_failure_everywhere([&] { Simulation simulation(*engine, {node}, options); });
  if (comm()->size() == 1) {
    MPI_CHECK(message == "(no error)"); // no rank 1
    return;
  }
  MPI_CHECK(contains(message, "usage: rank 1: node \"table\": computing static array \"table\": "
                              "the table's source file is missing"));
  MPI_CHECK(comm()->all_gather("alive").size() == static_cast<std::size_t>(comm()->size()));
}

MPI_TEST_CASE("ranks that list different arrays to share keep private copies, without a hang") {
  const auto node = std::make_shared<TableNode>();
  auto engine = make_engine();
  SimulationOptions options = sharded(true);
  options.share_min_bytes = comm()->rank() == 0 ? 0 : std::numeric_limits<std::size_t>::max();
  Simulation simulation(*engine, {node}, options);
  simulation.step(1);
  if (comm()->size() > 1) {
    MPI_CHECK(contains(simulation.node_shared().kept_private,
                       "ranks 0 and 1 list different computed replicate arrays"));
    MPI_CHECK(sum_over_ranks(node->fills()) == comm()->size());
  } else {
    MPI_CHECK(simulation.node_shared().arrays == 1);
  }
  check_table(simulation);
}

int main(int argc, char** argv) {
  return uwjit_test::run_job(argc, argv);
}
