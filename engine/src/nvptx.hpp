// The NVPTX side of the engine: the target's registration, libm calls mapped to libdevice, and
// the entry points a PTX module defines.
#pragma once

#include <uwjit/engine/target.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace uwjit::engine::detail {

inline constexpr const char* k_nvptx_triple = "nvptx64-nvidia-cuda";

/// Registers LLVM's NVPTX target (info, machine, MC layer, assembly printer), once per process.
void initialise_nvptx_target();

/// The GPU architectures LLVM's NVPTX backend knows ("sm_20" ... "sm_90a"), in its order.
[[nodiscard]] const std::vector<std::string>& nvptx_architectures();

/// libdevice as a compile for a cuda target uses it: its bytes and digest when found, and where
/// it was looked for.
struct Libdevice {
  LibdeviceSearch search;
  std::shared_ptr<const std::string> bytes; ///< null when not found
  std::string digest;                       ///< SHA-256 of the bytes, 64 hex; "none" when absent
};

/// find_libdevice(), read. A file found but unreadable throws Error(io) naming it.
[[nodiscard]] Libdevice load_libdevice();

/// Replaces the module's calls of libm functions that NVPTX cannot lower (exp, log, pow, tanh,
/// ... and their float forms, as plain calls or as llvm.* intrinsics) by calls of libdevice's
/// `__nv_*` functions and links those from `libdevice` (only what is needed; the linked
/// definitions become internal). Throws Error(compile) naming the functions and the paths looked
/// at when some are needed and libdevice was not found.
void link_libdevice(llvm::Module& module, const Libdevice& libdevice, const Target& target);

/// Throws Error(compile) if the optimised module still calls a function it does not define
/// (other than LLVM's intrinsics): the driver could not load such PTX.
void reject_undefined_calls(const llvm::Module& module, const Target& target);

/// The names of the kernels (`.entry`) a PTX text defines, in order.
[[nodiscard]] std::vector<std::string> ptx_entries(std::string_view ptx);

/// The names of the device functions (`.func`) a PTX text defines or declares, in order.
[[nodiscard]] std::vector<std::string> ptx_functions(std::string_view ptx);

} // namespace uwjit::engine::detail
