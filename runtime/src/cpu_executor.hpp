// CpuExecutor: calls a kernel on the CPU cores of this process, the update box cut into slabs
// that a persistent thread pool runs, with results that do not depend on the thread count.
#pragma once

#include "face_fill.hpp"
#include "thread_pool.hpp"

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/reduction.hpp>
#include <uwjit/engine/kernel.hpp>
#include <uwjit/runtime/field.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace uwjit::runtime::detail {

/// How a box is cut into `count` slabs along `axis`, whose box range is [begin, begin + extent):
/// slab s is [bound(s), bound(s + 1)).
struct SlabPlan {
  std::size_t axis = 0;
  std::int64_t begin = 0;
  std::int64_t extent = 0;
  std::int64_t count = 1;
  [[nodiscard]] std::int64_t bound(std::int64_t s) const noexcept {
    return begin + extent * s / count;
  }
};

/// The slabs of the box args.update_begin..update_end over `axes` domain axes: cut along the
/// first axis wider than one cell, about k_slab_cells cells each, at most k_max_slabs. A pure
/// function of the box: the same box is cut the same way whatever the thread count, so that the
/// integrals (summed slab by slab, in slab order) are too.
[[nodiscard]] SlabPlan plan_slabs(const uwjit_kernel_args& args, std::size_t axes);

/// Slabs are at least this many cells (fewer, thicker slabs for small boxes) ...
inline constexpr std::int64_t k_slab_cells = 16384;
/// ... and at most this many per call.
inline constexpr std::int64_t k_max_slabs = 64;

/// The CPU cores this process may run on (its affinity mask), at least 1.
[[nodiscard]] int affinity_cores() noexcept;

/// The thread count a simulation uses when the host does not choose: the cores of this process's
/// affinity mask; when that mask is the whole machine (ranks not bound to cores by the launcher),
/// shared among the ranks on this node (`node_ranks`).
[[nodiscard]] int default_threads(int node_ranks) noexcept;

/// Calls kernels on a team of threads. Not thread-safe: one caller (the step loop).
class CpuExecutor {
public:
  explicit CpuExecutor(int threads);

  /// The threads that take part in a call.
  [[nodiscard]] int threads() const noexcept { return m_pool.size(); }

  /// Calls `kernel` on the box in `args` (axes: the domain's rank). A kernel that honours its
  /// box (`splits`) is called once per slab of plan_slabs(args), the slabs spread over the
  /// threads; otherwise once, on this thread. On success, combines each integral slot over the
  /// slabs, taken in slab order, into `sums` by its reduction (kernel slot order; sums.size() ==
  /// args.n_integrals of the kernel; codegen::combine) and returns UWJIT_KERNEL_OK; else returns
  /// the status of the first failing slab (in slab order) and leaves `sums` alone; a checked
  /// call (args.check set) gives each slab a record of its own and copies the failing slab's to
  /// args.check. `args` itself is not changed. Allocates only when a call needs more slab
  /// storage than any call before it.
  [[nodiscard]] int call(const engine::Kernel& kernel, const uwjit_kernel_args& args,
                         std::size_t axes, bool splits, std::span<double> sums,
                         std::span<const codegen::Reduction> reductions);

  /// Fills the halos of `field` as Field::fill_halos(boundary) does, bit for bit, each axis's
  /// faces cut into parts that the threads fill (the axes in order: an axis's corners come from
  /// the halos of the axes before it). Throws as fill_halos does, before filling anything.
  /// `read`: only the halos the field's kernels read; the others are left as they are.
  void fill_halos(Field& field, std::span<const Boundary> boundary, const ReadHalos& read = {});

  /// Fills the halos of one axis `d` of `field` with `boundary`, as fill_halos does for that
  /// axis (no check: the caller has checked the boundary against the field), of the components
  /// that `read` says read it.
  void fill_axis(Field& field, std::size_t d, const Boundary& boundary, const ReadHalos& read = {});

private:
  ThreadPool m_pool;
  std::vector<uwjit_kernel_args> m_slab_args;
  std::vector<double> m_slab_integrals; // slab-major: slab s's slots at s * slots
  std::vector<int> m_slab_status;
  std::vector<uw_i64> m_slab_checks; // checked kernels: slab s's record at s * record size
};

} // namespace uwjit::runtime::detail
