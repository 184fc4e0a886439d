// The CLI's MPI job: started by a command that runs under mpiexec, ended by main(), which on an
// error ends every rank at once so that no rank waits for ever for one that failed.
#pragma once

#include <uwjit/comm/comm.hpp>

#include <memory>
#include <string_view>

namespace uwjit::tools {

/// Starts MPI for this process (once) and returns a Comm over MPI_COMM_WORLD. Throws
/// Error(usage) when uwjit was built without MPI.
[[nodiscard]] std::unique_ptr<comm::Comm> start_mpi_job();

/// When a job of more than one rank is running: writes `message` with this rank to stderr and
/// ends every rank (MPI_Abort with `code`); never returns then. Otherwise does nothing.
void end_mpi_job_on_error(std::string_view message, int code);

/// Finalises MPI if start_mpi_job() started it.
void finish_mpi_job();

} // namespace uwjit::tools
