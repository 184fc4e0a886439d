// MemberDevice: an ensemble's batch on a CUDA device. Each member's state and static arrays are
// in device memory from its first step in a slot until it stops; a stage of a step is the
// stepping members' halos filled there (one launch per field and axis for all of them) and one
// launch of the batch kernel for all of them; a member's state comes back to the host when it
// stops, and for a checkpoint.
#pragma once

#include "../cuda_device.hpp"
#include "../node_state.hpp"

#include <uwjit/engine/engine.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace uwjit::comm {
class Comm;
}

namespace uwjit::runtime::detail {

class MemberDevice {
public:
  /// Opens the device `choice` names (over `comm` with no ordinal: the rank's place on its node
  /// modulo the devices there, as a Simulation). Error(usage) as CudaDevice.
  MemberDevice(const DeviceChoice& choice, comm::Comm* comm);

  /// "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
  [[nodiscard]] const std::string& description() const noexcept { return m_device.description(); }
  [[nodiscard]] const engine::Target& target() const noexcept { return m_device.target(); }
  /// Free and total device memory now (cuMemGetInfo), in bytes.
  [[nodiscard]] std::pair<double, double> memory() const { return m_device.memory(); }

  /// Loads the batch kernels, one per stage (`ptx`'s first entries, their slots `slots`), and
  /// after them the members' halo kernel of each of `dtypes` (halo_fill_kernel with members, in
  /// that order).
  void load(engine::Engine& engine, std::span<const engine::PtxKernel> ptx,
            std::vector<codegen::SlotTables> slots, std::span<const codegen::Dtype> dtypes);

  /// The member whose state is `s` holds `slot` from now: its state, static arrays and tables
  /// uploaded into the slot's device buffers (allocated the first time a slot is used).
  void place(std::size_t slot, const NodeState& s);
  /// Stage `stage` of one step of the members `stepping` (each a slot and its member's state,
  /// whose stage args hold the member's step): every field's halos that the stage reads filled
  /// on the device (one launch per axis for all the members), one launch of the batch kernel, the
  /// integrals read back into each binding's kernel_integrals; each member's device state then
  /// ping-pongs as a Simulation's does. Error(kernel) naming the driver's error if a launch fails.
  void step(std::size_t stage, std::span<const std::pair<std::size_t, NodeState*>> stepping);
  /// The state of the member in `slot` (its current fields, halos included) into `s`.
  void pull(std::size_t slot, NodeState& s);

private:
  struct Slot {
    DeviceBuffers current, next; // per state field, as NodeState's
    std::vector<DeviceStage> stages;
  };
  CudaDevice m_device;
  std::vector<std::shared_ptr<const LoadedModule>> m_code; // per stage
  std::vector<codegen::SlotTables> m_slots_of;             // per stage
  std::vector<Slot> m_slots;
  std::unique_ptr<cuda::DeviceMemory> m_integrals; // member-major: a launch's integral slots
  std::vector<uwjit_kernel_args> m_args;           // a launch's members, kept from step to step
  std::vector<double> m_sums;
  std::vector<const void*> m_in;
  std::vector<void*> m_out;
  std::vector<CudaDevice::MemberHalos> m_halos;
};

} // namespace uwjit::runtime::detail
