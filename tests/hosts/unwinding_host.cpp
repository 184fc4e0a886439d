// A host whose rank `argv[1]` throws past uwjit::mpi::Session while the other ranks wait in a
// collective: the job must end promptly (MPI_Abort), never hang. Run under mpiexec with a time-out.
#include <uwjit/mpi.hpp>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int main(int argc, char** argv) {
  const int bad = argc > 1 ? std::atoi(argv[1]) : 0;
  try {
    uwjit::mpi::Session session(&argc, &argv);
    const auto comm = session.world();
    if (comm->rank() == bad) {
      throw std::runtime_error("this rank's own error");
    }
    comm->barrier(); // the others wait here for a rank that will never come
    std::printf("rank %d passed the barrier\n", comm->rank());
  } catch (const std::exception& error) {
    // Only reached if the Session let the exception through (it must not: it aborts the job).
    std::fprintf(stderr, "caught after the session ended: %s\n", error.what());
    return 3;
  }
  return 0;
}
