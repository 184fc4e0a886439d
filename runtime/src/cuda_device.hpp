// CudaDevice: the NVIDIA GPU a simulation runs on: its kernels' PTX loaded through the CUDA
// driver, state and static arrays in device memory, halos filled and kernels launched there.
#pragma once

#include "kernel_binding.hpp"

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/cuda/device.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/runtime/field.hpp>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::comm {
class Comm;
}

namespace uwjit::runtime::detail {

/// SimulationOptions::device read: the CPU, or a CUDA device (`ordinal` -1 when the text named
/// none: device 0 serially, sharded the rank's place on its node modulo the devices there).
struct DeviceChoice {
  bool cuda = false;
  int ordinal = -1;
};

/// "cpu", "cuda" or "cuda:N"; Error(usage) naming the accepted forms otherwise, its message
/// starting with `who` ("simulation: device ...").
[[nodiscard]] DeviceChoice parse_device(std::string_view text, std::string_view who = "simulation");

/// The ordinal `choice` names: its own, or with none, device 0 alone and over the ranks of
/// `ranks` (null: alone) this rank's place on its node modulo the devices the driver lists.
[[nodiscard]] int device_ordinal(const DeviceChoice& choice, const comm::Comm* ranks);

/// A kernel's module loaded into the current context (its cubin, or its PTX where the driver
/// could make none), and its entry. Unloaded when it goes.
class LoadedModule {
public:
  LoadedModule(const engine::PtxKernel& ptx, const engine::CudaImage& image);
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();
  [[nodiscard]] cuda::Function function() const noexcept { return m_function; }
  /// How long the driver took to make it loadable and load it: the link of the PTX to a cubin
  /// when made now, plus the module load (a JIT of the PTX when there is no cubin).
  [[nodiscard]] double load_ms() const noexcept { return m_load_ms; }
  /// What was loaded, for the log: "its cubin, from the disk cache", "its cubin, linked now",
  /// or "its PTX (why)".
  [[nodiscard]] const std::string& from() const noexcept { return m_from; }

private:
  cuda::Module m_module = nullptr;
  cuda::Function m_function = nullptr;
  double m_load_ms = 0;
  std::string m_from;
};

/// One stage's kernel on the device: its code, copies of its static arrays and tables, the
/// state-pointer tables uploaded so far (ping-pong makes two per stage) and room for its
/// integrals read back.
struct DeviceStage {
  std::shared_ptr<const LoadedModule> code;
  codegen::SlotTables slots;
  std::vector<std::unique_ptr<cuda::DeviceMemory>> statics; // per static slot
  std::unique_ptr<cuda::DeviceMemory> static_table;
  std::unique_ptr<cuda::DeviceMemory> extents;
  std::unique_ptr<cuda::DeviceMemory> params;
  std::unique_ptr<cuda::DeviceMemory> integrals;
  std::vector<std::pair<std::vector<const void*>, std::unique_ptr<cuda::DeviceMemory>>>
      state_tables; // the state_in pointers, then the state_out ones
  std::vector<double> read_back;
};

/// A state field's two buffers on the device, as NodeState's current and next.
using DeviceBuffers = std::vector<std::unique_ptr<cuda::DeviceMemory>>;

/// One CUDA device, current on the thread that made it (the simulation's). Calls are queued on
/// the default stream in order; downloads wait for what was queued before them.
class CudaDevice {
public:
  /// Device `ordinal`, made current. Error(usage) naming what is missing: the driver (its
  /// message says why it cannot be had), or a device of that ordinal (naming how many there are).
  explicit CudaDevice(int ordinal);

  /// Makes the device's context current on this thread: the simulation calls it before it uses
  /// the device, so that it may be stepped on another thread than the one that built it.
  void bind() const;
  /// The target its kernels are compiled for: its sm, or sm_90 when LLVM 19 does not know a
  /// newer one (whose driver loads sm_90 PTX).
  [[nodiscard]] const engine::Target& target() const noexcept { return m_target; }
  /// "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
  [[nodiscard]] const std::string& description() const noexcept { return m_description; }

  /// The module of `ptx`, loaded once per key from its cubin (Engine::cuda_image).
  [[nodiscard]] std::shared_ptr<const LoadedModule> load(engine::Engine& engine,
                                                         const engine::PtxKernel& ptx);
  /// Makes the halo kernel of `dtype` (compiled as `ptx`) the one fill_halos uses.
  void use_halo_kernel(engine::Engine& engine, codegen::Dtype dtype, const engine::PtxKernel& ptx);
  /// Makes the members' halo kernel of `dtype` (halo_fill_kernel with members, compiled as
  /// `ptx`) the one fill_members_halos uses.
  void use_members_halo_kernel(engine::Engine& engine, codegen::Dtype dtype,
                               const engine::PtxKernel& ptx);
  /// Makes the layers kernel of `dtype` (halo_layers_kernel, compiled as `ptx`) the one
  /// download_faces and upload_halos use.
  void use_layers_kernel(engine::Engine& engine, codegen::Dtype dtype,
                         const engine::PtxKernel& ptx);

  /// A stage of `binding`'s kernel running `code` (whose slots are `slots`): its static arrays
  /// (the binding's, halo-padded where the kernel reads halos) and tables uploaded.
  [[nodiscard]] DeviceStage stage(const Binding& binding, const codegen::SlotTables& slots,
                                  std::shared_ptr<const LoadedModule> code);
  /// Uploads `binding`'s static arrays, extents and params into `stage`, made by stage() for a
  /// binding of the same layout (an ensemble's member taking another's slot): nothing allocated.
  void refresh(DeviceStage& stage, const Binding& binding);

  /// The device's free and total memory in bytes (cuMemGetInfo), now.
  [[nodiscard]] std::pair<double, double> memory() const;

  /// A device copy of `field`'s padded array.
  [[nodiscard]] std::unique_ptr<cuda::DeviceMemory> copy_of(const Field& field);
  void upload(const Field& field, const cuda::DeviceMemory& to);
  void download(const cuda::DeviceMemory& from, Field& field);

  /// Fills the halos of the field whose padded array (laid out as `layout`) is at `data`, axis
  /// by axis as Field::fill_halos does. Error(usage) as fill_halos for a bad boundary.
  void fill_halos(const cuda::DeviceMemory& data, const Field& layout,
                  std::span<const Boundary> boundaries);

  /// One member's field for fill_members_halos: its padded array on the device, and its
  /// boundaries per axis.
  struct MemberHalos {
    const cuda::DeviceMemory* data;
    std::span<const Boundary> boundaries;
  };
  /// Fills the halos of every one of `members`' fields, all laid out as `layout`, as fill_halos
  /// fills each: one launch per axis for all of them (the members' tables uploaded in one copy
  /// per axis). Error(usage) as fill_halos for a bad boundary.
  void fill_members_halos(std::span<const MemberHalos> members, const Field& layout);

  /// Sharded halos go through the host: brings into `host` the interior layers next to each
  /// face of the field at `data` (laid out as `host`), on every axis with a halo: what an
  /// exchange sends and a boundary face reads. The layers are packed on the device, copied in
  /// one transfer to page-locked memory, and unpacked into `host`.
  void download_faces(const cuda::DeviceMemory& data, Field& host);
  /// Then takes the halo layers of `host`, as the exchange filled them (corners included), back
  /// to the field at `data`, the same way in reverse.
  void upload_halos(Field& host, const cuda::DeviceMemory& data);

  /// Zeroes `stage`'s integrals on the device, before the launches of one stage of a step.
  void clear_integrals(DeviceStage& stage);
  /// Launches `stage` on the update box of `args` over a domain of `rank` axes, its state
  /// tables the device buffers in `in` and `out` (device addresses); it adds its integrals to
  /// the stage's on the device. Returns at once (the kernel runs on the device, in order with
  /// every other launch and copy). Allocates only for a table of pointers not seen before.
  /// Error(kernel) naming the driver's error if the launch fails.
  void launch(DeviceStage& stage, const uwjit_kernel_args& args, std::span<const void* const> in,
              std::span<void* const> out, std::size_t rank);
  /// `args` as `stage` launches it: its tables those on the device, its state tables the device
  /// buffers in `in` and `out` (uploaded once per distinct table), its integrals `integrals`
  /// (device memory; the stage's own when null).
  [[nodiscard]] uwjit_kernel_args device_args(DeviceStage& stage, const uwjit_kernel_args& args,
                                              std::span<const void* const> in,
                                              std::span<void* const> out,
                                              double* integrals = nullptr);
  /// One launch of the batch kernel `code` (KernelWriter::batch, for a GPU) over `members`, each
  /// made by device_args, over a domain of `rank` axes: they share the update box of the first.
  /// Returns at once, as launch(). Error(kernel) naming the driver's error if it fails, or
  /// Error(usage) if the members' blocks exceed the grid's x.
  void launch_batch(const LoadedModule& code, std::span<const uwjit_kernel_args> members,
                    std::size_t rank);
  /// Waits for the stage's launches and combines its integrals into `sums`, each by its
  /// reduction (none: nothing to wait for here). Error(kernel) naming the driver's error if a
  /// kernel failed.
  void read_integrals(DeviceStage& stage, std::span<double> sums,
                      std::span<const codegen::Reduction> reductions);

  /// Waits for everything queued; Error(kernel) naming the driver's error if any of it failed.
  void synchronize();

private:
  // The tables of a launch of a halo kernel: its buffers, six extents, two params.
  struct HaloTables {
    cuda::DevicePtr out[2];
    uw_i64 extents[6];
    double params[2];
  };
  // Layers [first, first + count) of the padded array seen as [outer][padded][inner].
  struct Layers {
    std::int64_t outer, padded, inner, first, count;
  };
  // The page-locked and device buffers a field's layers pass through.
  struct Staging {
    std::unique_ptr<cuda::PinnedMemory> host;
    std::unique_ptr<cuda::DeviceMemory> device;
  };
  // Launches `function` over `grid` in blocks of `block` threads on x.
  void run(cuda::Function function, const uwjit_kernel_args& args, std::array<unsigned, 3> grid,
           unsigned block);
  // Launches a halo kernel with `tables` (uploaded once per distinct value) over `threads`.
  void run_halo_kernel(const LoadedModule& kernel, const HaloTables& tables, std::int64_t threads);
  // Each axis's layers next to its faces: the interior's (`interior`) or the halos'.
  static std::vector<Layers> face_layers(const Field& field, bool interior);
  Staging& staging_for(const cuda::DeviceMemory& data, std::size_t bytes);
  void move_face_layers(const cuda::DeviceMemory& data, Field& host, bool down);
  const LoadedModule& layers_kernel(codegen::Dtype dtype) const;

  cuda::Context m_context = nullptr;
  std::string m_arch; // the device's own "sm_XX"
  engine::Target m_target;
  std::string m_description;
  std::map<std::string, std::weak_ptr<const LoadedModule>> m_modules; // by key
  std::map<codegen::Dtype, std::shared_ptr<const LoadedModule>> m_halo_kernels;
  std::map<codegen::Dtype, std::shared_ptr<const LoadedModule>> m_members_halo_kernels;
  std::unique_ptr<cuda::DeviceMemory> m_members_halo_tables; // fill_members_halos', grown
  std::vector<char> m_members_halo_bytes;
  std::map<codegen::Dtype, std::shared_ptr<const LoadedModule>> m_layers_kernels;
  std::map<cuda::DevicePtr, Staging> m_staging;      // by the field buffer's address
  std::unique_ptr<cuda::DeviceMemory> m_batch_table; // launch_batch's members, grown as needed
  // The halo kernels' tables per distinct launch (a field buffer, an axis, a layer range),
  // uploaded on first use: a few per field (ping-pong, axes, faces).
  std::map<std::array<char, sizeof(HaloTables)>, std::unique_ptr<cuda::DeviceMemory>> m_halo_tables;
};

/// Threads per block of a halo kernel's launch, and the most of a cell-form kernel's
/// (codegen::cell_launch fits its blocks to the rows): a multiple of 32, as the cell form needs.
inline constexpr unsigned k_block_threads = 128;
/// The most blocks a launch may have along y and z (CUDA's grid limit there).
inline constexpr std::int64_t k_max_grid_rows = 65535;

} // namespace uwjit::runtime::detail
