#include "cpu_executor.hpp"

#include "face_fill.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace uwjit::runtime::detail {

SlabPlan plan_slabs(const uwjit_kernel_args& args, std::size_t axes) {
  SlabPlan plan;
  std::int64_t cells = 1;
  bool chosen = false;
  for (std::size_t d = 0; d < axes; ++d) {
    const std::int64_t extent =
        std::max<std::int64_t>(args.update_end[d] - args.update_begin[d], 0);
    cells *= extent;
    if (!chosen && extent > 1) {
      plan.axis = d;
      plan.begin = args.update_begin[d];
      plan.extent = extent;
      chosen = true;
    }
  }
  if (!chosen) {
    plan.begin = args.update_begin[0];
    plan.extent = std::max<std::int64_t>(args.update_end[0] - args.update_begin[0], 0);
    return plan; // one slab: the box as it is
  }
  plan.count =
      std::clamp<std::int64_t>(cells / k_slab_cells, 1, std::min(plan.extent, k_max_slabs));
  return plan;
}

int affinity_cores() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(CPU_COUNT(&set), 1);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int default_threads(int node_ranks) noexcept {
  const int cores = affinity_cores();
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (cores < machine) {
    return cores; // the launcher gave this rank its cores
  }
  return std::max(cores / std::max(node_ranks, 1), 1);
}

CpuExecutor::CpuExecutor(int threads) : m_pool(std::max(threads, 1)) {}

int CpuExecutor::call(const engine::Kernel& kernel, const uwjit_kernel_args& args, std::size_t axes,
                      bool splits, std::span<double> sums,
                      std::span<const codegen::Reduction> reductions) {
  const SlabPlan plan = splits ? plan_slabs(args, axes) : SlabPlan{};
  const auto slabs = static_cast<std::size_t>(plan.count);
  const std::size_t slots = sums.size();
  if (m_slab_args.size() < slabs) {
    m_slab_args.resize(slabs);
    m_slab_status.resize(slabs);
  }
  if (args.check != nullptr && m_slab_checks.size() < slabs * UWJIT_CHECK_RECORD_SIZE) {
    m_slab_checks.resize(slabs * UWJIT_CHECK_RECORD_SIZE);
  }
  if (m_slab_integrals.size() < slabs * slots) {
    m_slab_integrals.resize(slabs * slots);
  }
  for (std::size_t s = 0; s < slabs; ++s) {
    uwjit_kernel_args& slab = m_slab_args[s];
    slab = args;
    slab.integrals = m_slab_integrals.data() + s * slots;
    if (args.check != nullptr) {
      slab.check = m_slab_checks.data() + s * UWJIT_CHECK_RECORD_SIZE;
    }
    if (splits) {
      slab.update_begin[plan.axis] = plan.bound(static_cast<std::int64_t>(s));
      slab.update_end[plan.axis] = plan.bound(static_cast<std::int64_t>(s) + 1);
    }
  }
  auto run_slab = [&](std::size_t s) { m_slab_status[s] = kernel(m_slab_args[s]); };
  if (slabs == 1) {
    run_slab(0);
  } else {
    m_pool.run(slabs, run_slab);
  }
  for (std::size_t s = 0; s < slabs; ++s) {
    if (m_slab_status[s] != UWJIT_KERNEL_OK) {
      if (args.check != nullptr) {
        std::copy_n(m_slab_checks.data() + s * UWJIT_CHECK_RECORD_SIZE, UWJIT_CHECK_RECORD_SIZE,
                    args.check);
      }
      return m_slab_status[s];
    }
  }
  for (std::size_t s = 0; s < slabs; ++s) {
    codegen::combine(sums, std::span(m_slab_integrals).subspan(s * slots, slots), reductions);
  }
  return UWJIT_KERNEL_OK;
}

void CpuExecutor::fill_halos(Field& field, std::span<const Boundary> boundary,
                             const ReadHalos& read) {
  check_fill(field, boundary);
  for (std::size_t d = 0; d < field.shape().size(); ++d) {
    if (field.halo()[d] != 0) {
      fill_axis(field, d, boundary[d], read);
    }
  }
}

void CpuExecutor::fill_axis(Field& field, std::size_t d, const Boundary& boundary,
                            const ReadHalos& read) {
  // Halo filling is memory traffic like a step's (along the innermost axis, a cache line at
  // each end of every row): on one thread it was a fifth of a pipe-flow step, and the share of
  // a step that the other threads wait for. A part is worth waking a thread for only with many
  // elements to copy: a small grid's halos (heat 16³: 648 elements an axis) take less time
  // than the wake-up, and were 4× a step's time when cut into parts.
  constexpr std::int64_t k_least_elements_per_part = 16384;
  const AxisView view(field, d);
  const std::int64_t slabs = read_slabs(field, d, read);
  if (slabs == 0) {
    return;
  }
  const std::int64_t elements = slabs * 2 * view.h * view.inner;
  const auto parts = static_cast<std::size_t>(std::clamp<std::int64_t>(
      std::min(elements / k_least_elements_per_part, slabs), 1, threads()));
  auto fill = [&](std::size_t p) {
    const auto part = static_cast<std::int64_t>(p);
    const auto count = static_cast<std::int64_t>(parts);
    fill_read_faces(field, d, boundary, read, slabs * part / count, slabs * (part + 1) / count);
  };
  if (parts == 1) {
    fill(0);
  } else {
    m_pool.run(parts, fill);
  }
}

} // namespace uwjit::runtime::detail
