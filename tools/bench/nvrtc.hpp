// uwjit-bench: NVIDIA's runtime compiler (NVRTC, nvcc's front end and optimiser as a library),
// opened at run time like the driver, and the CUDA C++ form of a uwjit GPU kernel, so that the
// benchmark can set the PTX Clang makes beside the PTX NVIDIA's compiler makes of the same cell.
#pragma once

#include <uwjit/codegen/kernel_source.hpp>

#include <string>
#include <string_view>

namespace uwjit::bench {

/// `source` (a kernel of KernelWriter's GPU form) as CUDA C++: its text as it is compiled, its
/// entry `extern "C" __global__` named `entry` (e.g. the symbol uwjit gives it: a module of its
/// own holds it), and the NVVM builtins it calls (thread registers, the lane, the warp shuffle,
/// the double atomic) defined by CUDA's own. Compiled with NVRTC's
/// --device-as-default-execution-space, its inline functions are device functions.
[[nodiscard]] std::string cuda_cxx(const codegen::KernelSource& source, std::string_view entry);

/// NVRTC, opened once per process: from the CUDA installation (engine::cuda_installation()'s
/// lib64/ or lib/libnvrtc.so), else libnvrtc.so.13 or .so.12 on the loader's path.
class Nvrtc {
public:
  /// The process's NVRTC. Throws Error(usage) naming every library tried when none opens.
  static const Nvrtc& get();

  /// "13.0" (nvrtcVersion) and the library it was loaded from.
  [[nodiscard]] std::string describe() const;

  /// PTX of `cuda_source` for `arch` ("sm_90": compiled for compute_90), with floating-point
  /// contraction off (--fmad=false, as uwjit compiles) and C++20. Throws Error(jit) with the
  /// compiler's log when it does not compile.
  [[nodiscard]] std::string ptx(const std::string& cuda_source, std::string_view arch) const;

  struct Api;

private:
  Nvrtc() = default;
  const Api* m_api = nullptr;
  std::string m_path;
};

} // namespace uwjit::bench
