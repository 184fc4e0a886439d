// A CUDA device made current on this thread, and memory on it that frees itself.
#pragma once

#include <uwjit/cuda/driver.hpp>

#include <cstddef>

namespace uwjit::cuda {

/// Makes the primary context of device `ordinal` current on this thread (retained for the
/// process's life) and returns it (cuCtxSetCurrent makes it current on another thread). Throws
/// what Driver::get() throws, or Error(usage) naming the driver's error for an ordinal the
/// driver does not have.
Context make_current(int ordinal);

/// Device memory in the current context, freed when it goes. Allocation and copies throw
/// Error(io) naming the call and the driver's error (e.g. CUDA_ERROR_OUT_OF_MEMORY).
class DeviceMemory {
public:
  /// `bytes` of uninitialised device memory (at least 8, so that a table of no entries still
  /// has an address).
  explicit DeviceMemory(std::size_t bytes);
  /// A device copy of `bytes` bytes at `host`.
  DeviceMemory(const void* host, std::size_t bytes);
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  [[nodiscard]] DevicePtr pointer() const noexcept { return m_pointer; }
  [[nodiscard]] std::size_t bytes() const noexcept { return m_bytes; }
  /// The address as a pointer of the kernel ABI's tables (device memory: never dereferenced on
  /// the host).
  template <class T> [[nodiscard]] T* as() const noexcept {
    return reinterpret_cast<T*>(m_pointer);
  }
  /// Copies all of it to `host`.
  void download(void* host) const;
  /// Copies its size in bytes from `host` into it.
  void upload(const void* host) const;

private:
  DevicePtr m_pointer = 0;
  std::size_t m_bytes = 0;
};

/// Page-locked host memory (cuMemAllocHost), which the device copies to and from at full speed,
/// freed when it goes. Allocation throws Error(io) naming the call and the driver's error.
class PinnedMemory {
public:
  /// `bytes` of uninitialised page-locked memory (at least 8).
  explicit PinnedMemory(std::size_t bytes);
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  ~PinnedMemory();

  [[nodiscard]] void* data() const noexcept { return m_data; }
  [[nodiscard]] std::size_t bytes() const noexcept { return m_bytes; }

private:
  void* m_data = nullptr;
  std::size_t m_bytes = 0;
};

} // namespace uwjit::cuda
