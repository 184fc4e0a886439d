// One copy per node of large computed replicate arrays: the node's first rank computes each into
// POSIX shared memory, and the node's other ranks map it read-only.
#pragma once

#include <uwjit/comm/comm.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <string>
#include <vector>

namespace uwjit::runtime::detail {

/// A computed replicate array to share, and the node it belongs to (for messages).
struct SharedCandidate {
  std::string node;
  const StaticArray* array = nullptr;
};

/// Gives every array of `candidates` (computed, replicate; in the same order on every rank) one
/// copy per node: the node's first rank creates a shared-memory object per array, computes the
/// array into it and makes it read-only; the node's other ranks map it read-only and adopt it
/// without computing. Collective over `job`. The memory is named only until every rank of the
/// node has mapped it, so nothing is left behind, even by a killed job, but for that moment.
///
/// Never hangs and never fails for want of shared memory: if the ranks list different candidates,
/// or the shared memory cannot be made or mapped, the arrays stay private (each rank computes
/// its own when they are first needed) and the returned NodeShared says why. If a fill throws on a
/// node's first rank, every rank of the job throws the same Error (the fill's kind if it threw an
/// Error, else usage), naming that rank, the node and the array.
NodeShared share_on_node(const std::vector<SharedCandidate>& candidates, comm::Comm& job);

/// A fresh name for a shared-memory object: "/uwjit-PID-NANOSECONDS-COUNTER", the counter
/// counting this process's calls. Thread-safe.
std::string segment_name();

} // namespace uwjit::runtime::detail
