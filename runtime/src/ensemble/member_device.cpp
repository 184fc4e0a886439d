#include "member_device.hpp"

#include <uwjit/comm/comm.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/cuda/driver.hpp>

#include <algorithm>

namespace uwjit::runtime::detail {

MemberDevice::MemberDevice(const DeviceChoice& choice, comm::Comm* comm)
    : m_device(device_ordinal(choice, comm)) {}

void MemberDevice::load(engine::Engine& engine, std::span<const engine::PtxKernel> ptx,
                        std::vector<codegen::SlotTables> slots,
                        std::span<const codegen::Dtype> dtypes) {
  m_device.bind();
  m_slots_of = std::move(slots);
  m_code.clear();
  for (std::size_t stage = 0; stage < m_slots_of.size(); ++stage) {
    m_code.push_back(m_device.load(engine, ptx[stage]));
  }
  for (std::size_t k = 0; k < dtypes.size(); ++k) {
    m_device.use_members_halo_kernel(engine, dtypes[k], ptx[m_slots_of.size() + k]);
  }
}

void MemberDevice::place(std::size_t slot, const NodeState& s) {
  m_device.bind();
  if (slot >= m_slots.size()) {
    m_slots.resize(slot + 1);
  }
  Slot& d = m_slots[slot];
  if (d.current.empty()) {
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      d.current.push_back(m_device.copy_of(*s.current[i]));
      d.next.push_back(s.next[i] ? m_device.copy_of(*s.next[i]) : nullptr);
    }
    for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
      d.stages.push_back(m_device.stage(s.stages[stage].binding, m_slots_of[stage], m_code[stage]));
    }
    return;
  }
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    m_device.upload(*s.current[i], *d.current[i]);
    if (s.next[i]) {
      m_device.upload(*s.next[i], *d.next[i]);
    }
  }
  for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
    m_device.refresh(d.stages[stage], s.stages[stage].binding);
  }
}

void MemberDevice::step(std::size_t stage,
                        std::span<const std::pair<std::size_t, NodeState*>> stepping) {
  if (stepping.empty()) {
    return;
  }
  m_device.bind();
  const std::size_t sums = stepping.front().second->stages[stage].binding.kernel_integrals.size();
  const std::size_t bytes = std::max<std::size_t>(1, stepping.size() * sums) * sizeof(double);
  if (!m_integrals || m_integrals->bytes() < bytes) {
    m_integrals = std::make_unique<cuda::DeviceMemory>(bytes);
  }
  const cuda::Driver& driver = cuda::Driver::get();
  if (sums > 0) {
    driver.check(driver.api().cuMemsetD8_v2(m_integrals->pointer(), 0,
                                            stepping.size() * sums * sizeof(double)),
                 "cuMemsetD8_v2 of a batch's integrals", ErrorKind::kernel);
  }
  // The halos the stage reads, field by field: one launch per axis for every member (the
  // members share the layout, so the same fields and axes).
  const NodeState& first = *stepping.front().second;
  for (std::size_t i = 0; i < first.current.size(); ++i) {
    if (!first.refills(stage, i)) {
      continue;
    }
    m_halos.clear();
    for (const auto& [slot, s] : stepping) {
      m_halos.push_back({m_slots[slot].current[i].get(), s->boundaries[i]});
    }
    m_device.fill_members_halos(m_halos, *first.current[i]);
  }
  m_args.clear();
  for (std::size_t k = 0; k < stepping.size(); ++k) {
    const auto& [slot, s] = stepping[k];
    Slot& d = m_slots[slot];
    const StageKernel& kernel = s->stages[stage];
    m_in.clear();
    m_out.clear();
    for (const std::size_t i : kernel.binding.in_field) {
      m_in.push_back(d.current[i]->as<const void>());
    }
    for (const std::size_t i : kernel.binding.out_field) {
      m_out.push_back(d.next[i]->as<void>());
    }
    m_args.push_back(m_device.device_args(d.stages[stage], kernel.args, m_in, m_out,
                                          m_integrals->as<double>() + k * sums));
  }
  m_device.launch_batch(*m_code[stage], m_args, stepping.front().second->layout.domain.size());
  // The copy waits for the launch, and reports a kernel's failure.
  m_sums.resize(stepping.size() * sums);
  if (sums > 0) {
    driver.check(driver.api().cuMemcpyDtoH_v2(m_sums.data(), m_integrals->pointer(),
                                              m_sums.size() * sizeof(double)),
                 "the batch kernel (or cuMemcpyDtoH_v2 of its integrals)", ErrorKind::kernel);
  } else {
    m_device.synchronize();
  }
  for (std::size_t k = 0; k < stepping.size(); ++k) {
    const auto& [slot, s] = stepping[k];
    Binding& binding = s->stages[stage].binding;
    std::copy_n(m_sums.begin() + static_cast<std::ptrdiff_t>(k * sums), sums,
                binding.kernel_integrals.begin());
    Slot& d = m_slots[slot];
    for (const std::size_t i : binding.out_field) {
      std::swap(d.current[i], d.next[i]);
    }
  }
}

void MemberDevice::pull(std::size_t slot, NodeState& s) {
  m_device.bind();
  Slot& d = m_slots[slot];
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    m_device.download(*d.current[i], *s.current[i]);
  }
}

} // namespace uwjit::runtime::detail
