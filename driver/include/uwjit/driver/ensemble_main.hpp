// `uwjit ensemble`: many members of one node kind, differing in node params, stepped as one
// batch until each stops (runtime::Ensemble), with a progress bar, a report of every member and
// an HDF5 file of their results.
#pragma once

#include <uwjit/driver/node_kind.hpp>
#include <uwjit/driver/run_main.hpp>

#include <span>
#include <string>
#include <vector>

namespace uwjit::driver {

/// Runs an ensemble of one of `kinds` as `args` (after the program's name and command) say:
///
///   NODE                  the node type (optional when there is one kind)
///   --size N|NXxNYxNZ     the members' size; --set NAME=VALUE the params they share
///   --vary NAME=LO:HI:N   a varied param (repeatable): every combination, the last fastest
///   --random N            N members drawn uniformly in the --vary ranges instead (--seed S)
///   --until RULE          the stop rule (repeatable; StopRule::parse); default: the kind's
///                         default steps as the step cap
///   --batch B             members stepped together (default: from memory)
///   --threads N           threads (default: this process's cores)
///   --output FILE.h5      every member's result, as it leaves (runtime::FileSink)
///   --json                the report as JSON on stdout; --help
///
/// Paths and params are checked before any member runs. A progress bar (members done of the
/// total, member-steps per second, the time left) is drawn on stderr when it is a terminal. The
/// report lists every member: its id, varied params, steps, status and integrals; with --json,
/// an object with "members" (one per member: "id", "params", "integrals", "steps", "status",
/// "reason"), "compiles", "batch" and the kernels. Returns 0 when every member converged or ran
/// to its cap, 1 when one failed; throws UsageError or Error(usage) for misuse.
[[nodiscard]] int ensemble(const Program& program, std::span<const NodeKind> kinds,
                           const std::vector<std::string>& args);

} // namespace uwjit::driver
