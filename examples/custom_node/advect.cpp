// A program that runs the advect node (advect.hpp) as `uwjit run` runs the built-in nodes:
// `advect --set help`, `advect --steps 500 --output out --output-every 50`,
// `advect --checkpoint a.ckpt`, `advect --restore a.ckpt --steps 100`, `advect --json`, and,
// linked with uwjit::mpi, `mpiexec -np 2 advect --shard x`.
#include "advect.hpp"

#include <uwjit/driver/run_main.hpp>
#ifdef ADVECT_WITH_MPI
#include <uwjit/mpi.hpp>
#endif

int main(int argc, char** argv) {
  uwjit::driver::Program program;
#ifdef ADVECT_WITH_MPI
  program.job = &uwjit::mpi::job(); // --shard joins the MPI job
#endif
  return uwjit::driver::run_main(argc, argv, std::vector{advect_kind()}, program);
}
