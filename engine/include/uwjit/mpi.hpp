// uwjit over MPI: a Comm on the host's MPI communicator. Link uwjit::mpi to use it; a serial
// host includes nothing of MPI.
#pragma once

#include <uwjit/engine/comm.hpp>

#include <mpi.h>

#include <memory>

namespace uwjit::mpi {

/// A Comm over a duplicate of `comm` (so uwjit's messages never mix with the host's). MPI must
/// be initialised and stay so while the Comm lives. Collective over `comm`. Also puts the rank in
/// uwjit's log lines. Throws Error(collective) if MPI reports an error.
[[nodiscard]] std::unique_ptr<engine::Comm> make_comm(MPI_Comm comm);

} // namespace uwjit::mpi
