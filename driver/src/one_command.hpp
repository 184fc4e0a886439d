// The ranks of a job run one command: a job whose ranks were started with other arguments would
// run other step counts, write other files or wait in other collectives, so it is refused on
// every rank alike before any work.
#pragma once

#include <uwjit/comm/comm.hpp>

#include <string>
#include <vector>

namespace uwjit::driver {

/// Whether a launcher (mpiexec, srun) started this process as one of several ranks, from the
/// launchers' variables: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE or SLURM_STEP_NUM_TASKS > 1.
[[nodiscard]] bool launched_as_ranks();

/// Collective: returns when every rank of `comm` was given the `arguments` rank 0 was (its
/// command line after the program's name); otherwise throws, on every rank alike, Error(usage)
/// naming the lowest rank that differs and its first argument that differs from rank 0's. One
/// broadcast of rank 0's arguments and the verdict's all-reduce: nothing grows with the ranks.
void check_one_command(comm::Collectives& comm, const std::vector<std::string>& arguments);

} // namespace uwjit::driver
