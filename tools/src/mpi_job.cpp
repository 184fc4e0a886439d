#include "mpi_job.hpp"

#ifdef UWJIT_HAVE_MPI
#include <uwjit/mpi.hpp>
#endif

namespace uwjit::tools {

comm::Job* cli_job() {
#ifdef UWJIT_HAVE_MPI
  return &mpi::job();
#else
  return nullptr;
#endif
}

} // namespace uwjit::tools
