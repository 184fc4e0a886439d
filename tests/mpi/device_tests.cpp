// The sharded runtime on a CUDA device under mpiexec: each rank steps its shard on a GPU (under
// the tests' stand-in driver, an emulated one), halos going through the host. Two nodes, one
// reading the other's field across the shards' faces (its halos exchanged too), give the serial
// CPU run's state bit for bit, sharded along either axis, in sync and overlap mode (which
// launches the kernel on each shard's interior while the host exchanges the halos).
// Without a CUDA device every rank says so and exits 77 (ctest: skipped).
#include "gpu/gpu_support.hpp"
#include "harness.hpp"
#include "job.hpp"

#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <memory>
#include <vector>

using uwjit::engine::Engine;
using uwjit::runtime::ExchangeMode;
using uwjit::runtime::Simulation;
using uwjit::runtime::SimulationOptions;

namespace {

using uwjit_test::comm;
using NodeList = std::vector<std::shared_ptr<const uwjit::runtime::Node>>;

// Shear2d and Carried2d, which reads its field; Shear2d's static array sharded along `axis`.
NodeList coupled(bool reader_first, int axis) {
  auto shear = std::make_shared<uwjit_gpu_test::Shear2d>(axis);
  auto carried = std::make_shared<uwjit_gpu_test::Carried2d>();
  return reader_first ? NodeList{carried, shear} : NodeList{shear, carried};
}

// Runs `nodes` sharded over `axes` on the device and, on rank 0, serially on the CPU: the
// gathered fields must equal the serial ones bit for bit, the integrals to round-off (and alike
// on every rank, bit for bit).
void device_equals_serial_cpu(const NodeList& nodes, std::vector<int> axes, ExchangeMode mode) {
  Engine engine(uwjit_gpu_test::engine_options());
  SimulationOptions options;
  options.comm = comm().get();
  options.shard_axes = std::move(axes);
  options.exchange = mode;
  options.device = "cuda";
  Simulation simulation(engine, nodes, options);
  MPI_CHECK(simulation.device().rfind("cuda:0 (", 0) == 0);
  simulation.step(3);
  simulation.step(2);
  // Overlap mode overlaps every node step on the device (each shard has an interior).
  MPI_CHECK(simulation.exchange_stats().overlapped ==
            (mode == ExchangeMode::overlap ? 5 * static_cast<std::int64_t>(nodes.size()) : 0));
  uwjit_test::check_integrals_alike_on_every_rank(simulation);
  const uwjit::runtime::Snapshot whole = simulation.gathered();
  if (comm()->rank() != 0) {
    return;
  }
  Simulation serial(engine, nodes);
  serial.step(5);
  uwjit_test::check_same_state(whole, simulation, serial);
}

} // namespace

MPI_TEST_CASE("coupled nodes sharded on the device give the serial CPU run's state bit for bit, "
              "along x and along y, sync and overlap") {
  for (const int axis : {0, 1}) {
    for (const bool reader_first : {false, true}) {
      for (const auto mode : {ExchangeMode::sync, ExchangeMode::overlap}) {
        device_equals_serial_cpu(coupled(reader_first, axis), {axis}, mode);
      }
    }
  }
}

int main(int argc, char** argv) {
  if (!uwjit_gpu_test::device_present()) {
    return uwjit_gpu_test::k_skipped;
  }
  return uwjit_test::run_job(argc, argv);
}
