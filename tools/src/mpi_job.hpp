// The CLI's MPI job (uwjit::mpi::job()): joined by a command that runs under mpiexec, ended by
// main(), which on an error ends every rank at once so that no rank waits for ever for one that
// failed.
#pragma once

#include <uwjit/comm/job.hpp>

namespace uwjit::tools {

/// The MPI job of this process, or nullptr when uwjit was built without MPI.
[[nodiscard]] comm::Job* cli_job();

} // namespace uwjit::tools
