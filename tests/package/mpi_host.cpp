// A host of uwjit::mpi built against the installed package: a sharded heat run over the job's
// ranks, through <uwjit/mpi.hpp> only.
#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  uwjit::mpi::Session session(&argc, &argv);
  const auto comm = session.world();
  uwjit::engine::Engine engine;
  const auto node = uwjit::nodes::make("heat", "heat", uwjit::nodes::default_params("heat"));
  uwjit::runtime::SimulationOptions options;
  options.comm = comm.get();
  uwjit::runtime::Simulation simulation(engine, {node}, options);
  simulation.step(3);
  if (comm->rank() == 0) {
    std::printf("mpi host: %d ranks, %lld steps\n", comm->size(),
                static_cast<long long>(simulation.steps_taken()));
  }
  return 0;
}
