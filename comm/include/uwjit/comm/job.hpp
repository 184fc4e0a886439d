// Job: how a program joins the parallel job it was started in (under mpiexec) when it is asked to
// run sharded, and how it ends that job on an error only some of its ranks may have seen.
#pragma once

#include <uwjit/comm/comm.hpp>

#include <memory>
#include <string_view>

namespace uwjit::comm {

/// The parallel job a program may run in. A program that can run sharded holds one and calls
/// start() only when asked to shard, so that a serial run never starts MPI. `uwjit::mpi::job()`
/// (in <uwjit/mpi.hpp>, library uwjit::mpi) is MPI's: what `uwjit run --shard` and
/// uwjit::driver::run_main use. Not thread-safe: one thread of the program calls it.
class Job {
public:
  virtual ~Job() = default;

  /// Joins the job (starting MPI for this process once, if nothing started it yet) and returns
  /// a Comm over all its ranks. Collective over the job. Throws Error(collective) when the job
  /// cannot be joined.
  [[nodiscard]] virtual std::unique_ptr<Comm> start() = 0;

  /// When the job was started and has more than one rank: writes
  /// "PROGRAM: error: rank R/N: MESSAGE" on stderr and ends every rank at once with exit code
  /// `code`, never returning. Otherwise does nothing: a serial program reports its own errors.
  /// For an error that some ranks may not share (they would wait for ever in a collective).
  virtual void end_on_error(std::string_view program, std::string_view message, int code) = 0;

  /// Leaves the job: finalises MPI if start() initialised it. Later calls do nothing.
  virtual void finish() = 0;
};

} // namespace uwjit::comm
