// What a simulation will hold in memory, estimated from its layout before anything is allocated,
// and what this machine can give it: a run that cannot fit is refused with both figures.
#pragma once

#include <cstdint>
#include <string>

namespace uwjit::runtime::detail {

/// One limit on memory: its size in bytes (+inf when nothing is known) and where it comes from.
struct MemoryLimit {
  double bytes = 0;
  std::string source; ///< "MemAvailable", "physical memory", "cgroup memory limit", "RLIMIT_AS..."
};

/// What this process can still use: the machine's memory, the lowest of MemAvailable (else the
/// physical memory) and the memory limit of its cgroup (v2 memory.max or v1 limit_in_bytes, here
/// or in a parent group), which every rank on the machine shares; and the address space RLIMIT_AS
/// leaves this one process beside what it maps already.
struct MemoryLimits {
  MemoryLimit machine;
  MemoryLimit process;
};

/// Reads /proc and /sys as described above; never throws. Thread-safe.
[[nodiscard]] MemoryLimits available_memory();

/// A byte count for people, in decimal units with three significant digits: "812 MB", "35.2 TB".
[[nodiscard]] std::string bytes_text(double bytes);

/// What one process of a simulation holds while it steps, estimated from the layouts.
struct MemoryNeed {
  double state = 0;   ///< every state field's two buffers (current and next), halos included
  double statics = 0; ///< the static arrays this process binds (a rank's slabs when sharded), and
                      ///< a shard-mode array not computed by box whole (it is built whole)
  double fill = 0;    ///< sharded: the whole state of the largest node that does not fill by
                      ///< slab, held while it is filled
  [[nodiscard]] double total() const noexcept { return state + statics + fill; }
};

/// Throws Error(usage) when one process needing `need` cannot fit in `limits.process`, or
/// `processes` processes on this machine, each needing `need`, cannot fit in `limits.machine`,
/// e.g. "run needs about 70.4 TB of memory (state 35.2 TB: ...; static data 35.2 TB) and this
/// machine has 22.7 GB (MemAvailable); ...". Does nothing when they fit or nothing is known.
void check_fits(const MemoryNeed& need, int processes, const MemoryLimits& limits);

} // namespace uwjit::runtime::detail
