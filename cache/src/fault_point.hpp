// Test-only fault injection: named points in the store's write paths where the fault suite
// (tests/faults) makes a process kill or stop itself, so that every step of a publish and of a
// removal is interrupted deterministically, not only where a random kill happens to land.
//
//   UWJIT_TEST_FAULT=kill@POINT   raise SIGKILL on reaching POINT (as `kill -9` would)
//   UWJIT_TEST_FAULT=stop@POINT   raise SIGSTOP on reaching POINT (a hung holder; SIGCONT resumes)
//
// Never set outside tests. Unset, a point costs one test of a flag read once per process.
#pragma once

#include <string_view>

namespace uwjit::cache::detail {

/// The points, in the order a publish reaches them, then the removal of a bad entry.
inline constexpr std::string_view k_fault_points[] = {
    "publish:begin",               // holding the key lock, nothing written
    "publish:object-partial",      // half of the object's temporary written
    "publish:temporaries-written", // object, source and manifest temporaries complete, synced
    "publish:object-committed",    // the object renamed into place, not the source or manifest
    "publish:source-committed",    // object and source in place, no manifest yet
    "publish:manifest-committed",  // the manifest renamed into place (the entry is visible)
    "remove:manifest-removed",     // removing an entry: the manifest is gone, the object is not
};

/// Kills or stops this process if UWJIT_TEST_FAULT names `point`; otherwise does nothing.
/// Thread-safe; never throws.
void fault_point(std::string_view point) noexcept;

} // namespace uwjit::cache::detail
