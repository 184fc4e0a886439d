// Compile targets: the host CPU (an ELF object the JIT loads) or an NVIDIA GPU (PTX text).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine {

/// The PTX ISA version of every cuda target's PTX (the newest LLVM 19 writes; a CUDA 12.5 driver
/// or later loads it). Part of cuda keys' salt.
inline constexpr std::string_view k_ptx_isa = "8.5";

/// What a kernel is compiled for. `host` is the CPU this process runs on (its triple, CPU name
/// and features are in the salt); `cuda:sm_XX` is PTX for an NVIDIA GPU of that compute
/// capability, compiled in process by LLVM's NVPTX backend and never loaded by uwjit.
class Target {
public:
  /// The host CPU.
  Target() = default;
  [[nodiscard]] static Target host() { return {}; }
  /// `text` as a target: "host" or "cuda:sm_XX" for a GPU architecture LLVM's NVPTX backend
  /// knows (sm_50 ... sm_90a). Throws Error(usage) naming the accepted forms. Thread-safe.
  [[nodiscard]] static Target parse(std::string_view text);

  [[nodiscard]] bool is_host() const noexcept { return m_sm.empty(); }
  [[nodiscard]] bool is_cuda() const noexcept { return !m_sm.empty(); }
  /// "sm_90" for cuda:sm_90; "" for the host.
  [[nodiscard]] const std::string& sm() const noexcept { return m_sm; }
  /// "host" or "cuda:sm_90", as parse() reads it.
  [[nodiscard]] std::string text() const;
  friend bool operator==(const Target&, const Target&) = default;

private:
  std::string m_sm;
};

/// Where libdevice (CUDA's math library as LLVM bitcode, needed on GPUs by exp, log, pow, tanh
/// and the like) was looked for, and where it was found.
struct LibdeviceSearch {
  std::optional<std::string> path;    ///< the first file found, or nullopt
  std::vector<std::string> looked_at; ///< the file tried, with the rule that named it
};

/// The CUDA installation asked for: UWJIT_CUDA_PATH when set, else CUDA_HOME when set, else
/// /usr/local/cuda; with the rule that named it ("UWJIT_CUDA_PATH", "CUDA_HOME", "the default").
/// Never throws (but std::bad_alloc). Thread-safe.
struct CudaInstallation {
  std::string root;
  std::string_view rule;
};
[[nodiscard]] CudaInstallation cuda_installation();

/// Looks for `nvvm/libdevice/libdevice.10.bc` under UWJIT_CUDA_PATH when set, else CUDA_HOME
/// when set, else /usr/local/cuda: only there (a directory asked for is never replaced by
/// another). Never throws. Thread-safe.
[[nodiscard]] LibdeviceSearch find_libdevice();

} // namespace uwjit::engine
