// uwjit over MPI: a Comm on the host's MPI communicator. Link uwjit::mpi to use it; a serial
// host includes nothing of MPI.
#pragma once

#include <uwjit/comm/comm.hpp>
#include <uwjit/comm/job.hpp>

#include <mpi.h>

#include <memory>
#include <string_view>

namespace uwjit::mpi {

/// A Comm over a duplicate of `comm` (so uwjit's messages never mix with the host's). MPI must
/// be initialised and stay so while the Comm lives. Collective over `comm`. Also puts the rank in
/// uwjit's log lines. Throws Error(collective) if MPI reports an error.
[[nodiscard]] std::unique_ptr<comm::Comm> make_comm(MPI_Comm comm);

/// MPI for a program that may or may not be started by mpiexec: initialises MPI
/// (MPI_Init_thread, MPI_THREAD_FUNNELED) unless it already is, and finalises it on destruction
/// if it initialised it. Throws Error(collective) if MPI cannot be initialised. One per process;
/// not thread-safe.
///
/// An exception that unwinds past a Session of a job of more than one rank may have been raised
/// on this rank only, while the others wait in a collective: MPI_Finalize would then never
/// return. So the destructor, when it runs during unwinding, ends the whole job with MPI_Abort
/// (exit code 1) after one line on stderr. To print the exception's own message first, catch it
/// inside the Session's scope and call abort().
class Session {
public:
  Session(int* argc, char*** argv);
  ~Session();

  /// Writes "PROGRAM: error: rank R/N: MESSAGE" to stderr and ends every rank of the job at once
  /// (MPI_Abort on MPI_COMM_WORLD with `code`). For an error that some ranks may not share.
  [[noreturn]] void abort(std::string_view message, int code,
                          std::string_view program = "uwjit") const;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// A Comm over MPI_COMM_WORLD (see make_comm).
  [[nodiscard]] std::unique_ptr<comm::Comm> world() const;
  /// The number of ranks in MPI_COMM_WORLD.
  [[nodiscard]] int size() const;

private:
  bool m_owned = false;
  int m_unwinding_at_start = 0; // std::uncaught_exceptions() when the session began
};

/// This process's MPI job (one per process): start() makes a Session (initialising MPI unless
/// something, e.g. mpi4py, already did) and returns a Comm over MPI_COMM_WORLD; end_on_error()
/// is Session::abort when the job has more than one rank; finish() ends the Session (finalising
/// MPI if it initialised it). What uwjit::driver::run_main takes to run sharded
/// (`Program{.job = &uwjit::mpi::job()}`). Not thread-safe.
[[nodiscard]] comm::Job& job();

} // namespace uwjit::mpi
