// What the CUDA driver on this machine offers, asked without ever throwing (for `uwjit env`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace uwjit::cuda {

/// One device as the driver reports it.
struct DeviceReport {
  int ordinal = 0;
  std::string name; ///< cuDeviceGetName, e.g. "NVIDIA H100 80GB HBM3"
  int major = 0;    ///< compute capability
  int minor = 0;
  std::uint64_t total_memory = 0; ///< bytes
  /// The architecture as a target names it: "sm_90".
  [[nodiscard]] std::string arch() const;
};

/// The driver as this process sees it.
struct DriverProbe {
  std::string library;               ///< the library asked for: "libcuda.so.1"
  bool loaded = false;               ///< it was opened
  std::optional<int> version;        ///< cuDriverGetVersion's number, e.g. 12040, when it answered
  bool usable = false;               ///< Driver::get() succeeds: every entry point, and cuInit
  std::string problem;               ///< when not usable: the message Driver::get() raises
  std::vector<DeviceReport> devices; ///< in ordinal order; empty when not usable
};

/// Opens the driver as Driver::get() does (once per process) and lists its devices. Never
/// throws: every failure is described in the result. Thread-safe.
[[nodiscard]] DriverProbe probe() noexcept;

} // namespace uwjit::cuda
