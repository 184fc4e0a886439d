// run_main: the command line of a program that runs nodes, what `uwjit run` is for the built-in
// nodes, for any node kinds: --size and --set over the node params, --steps, --threads, --shard
// under MPI, a progress bar, VTK output and its time series, checkpoints, Ctrl-C, --plot, --json.
#pragma once

#include <uwjit/comm/job.hpp>
#include <uwjit/driver/node_kind.hpp>

#include <exception>
#include <span>
#include <string>
#include <vector>

namespace uwjit::driver {

/// Who runs the nodes: the program's name and help, and the MPI job --shard joins.
struct Program {
  /// The program's name in usage lines and messages, e.g. "advect"; "" in run_main: argv[0]'s
  /// file name.
  std::string name = {};
  /// The words after the name that select this run, e.g. "run" for `uwjit run`; "" for a
  /// program that is its own command. Messages begin with it ("run: --steps: ...").
  std::string command = {};
  /// What --help says the program does; "": a sentence naming the node kinds.
  std::string summary = {};
  /// Text --help prints last (e.g. examples).
  std::string epilog = {};
  /// What the node kinds are called: --help lists them under "WORD nodes:", and an unknown
  /// type is answered with "(WORD: A, B)"; "": "nodes:" and "(known: A, B)". The uwjit CLI says
  /// "built-in".
  std::string kinds_word = {};
  /// The MPI job that --shard joins: &uwjit::mpi::job() (from <uwjit/mpi.hpp>; link
  /// uwjit::mpi). Null: --shard is refused, saying so. It must outlive the run.
  comm::Job* job = nullptr;
};

/// Runs a node of one of `kinds` as `args` (the command line after the program's name, and its
/// command) say:
///
///   NODE                 the node type (optional when there is one kind)
///   --size N|NXxNYxNZ    the node params for a size (NodeKind::sized)
///   --set NAME=VALUE     one node param (repeatable); --set help lists them with their
///                        defaults, meaning and accepted range, and exits
///   --steps N            steps to take (default: NodeKind::default_steps)
///   --threads N          threads per process; --device cpu|cuda|cuda:N; --checked
///   --shard x[,y[,z]]    split the domain over the ranks of Program::job (under mpiexec), with
///                        --exchange sync|overlap
///   --output DIR         where the VTK files go (NODE.vti, as the node's write_vtk writes them)
///   --output-every N     also the fields every N steps (NODE_000000.vti, ...) and NODE.pvd
///   --checkpoint FILE    a checkpoint after the last step; --restore FILE continues one (the
///                        node and its params come from it, through the kinds' make functions)
///   --plot               PNG pictures (NodeKind::figures, else default_figures)
///   --json               the report as JSON on stdout; --print-kernel; --help
///
/// Paths are checked before any work. A progress bar is drawn on stderr when it is a terminal.
/// SIGINT and SIGTERM stop the run after the current step (sharded: every rank after the same
/// step); the report, output and checkpoint are of that step. The report gives the kernels and
/// where they came from, the throughput, the integrals and the verdict of NodeKind::check (or
/// that the run was not judged). Sharded, rank 0 prints and writes every file (one writer per
/// file); the other ranks print nothing.
///
/// Returns the exit code: 0 (the check passed, or did not judge), 1 (it failed, or a file could
/// not be written), 130 (interrupted); --help and --set help print and return 0. Throws
/// UsageError or Error(usage) for misuse (found before anything runs, where it can be), and
/// the other errors of a run (Error(io), Error(compile), ...). Not thread-safe: it handles the
/// process's SIGINT and SIGTERM while it runs.
[[nodiscard]] int run(const Program& program, std::span<const NodeKind> kinds,
                      const std::vector<std::string>& args);

/// Prints `error` as a program's main does: "NAME: error: MESSAGE" on stderr, after a misuse
/// the usage line and where to read more; under a job of several ranks, ends every rank (an
/// error may have reached this rank alone: Job::end_on_error). Returns the exit code: 2 for
/// usage errors, 1 for the others.
int report_error(const Program& program, const std::exception& error);

/// A program's main: run() over argv, every error reported (report_error), the job finished.
/// For example:
///
///   int main(int argc, char** argv) {
///     return uwjit::driver::run_main(argc, argv, std::vector{advect_kind()});
///   }
[[nodiscard]] int run_main(int argc, char** argv, std::span<const NodeKind> kinds,
                           Program program = {});

} // namespace uwjit::driver
