// The CUDA driver API, reached at run time: libcuda.so.1 opened once per process on demand, its
// entry points in a typed table, and the one idiom that turns a failed call into uwjit::Error.
#pragma once

#include <uwjit/common/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace uwjit::cuda {

// The driver API's types, declared as its documentation gives them (no CUDA header is used):
// CUresult and the enums are ints, the handles are pointers to opaque structs.
using Result = int;                   ///< CUresult; 0 is CUDA_SUCCESS
using Device = int;                   ///< CUdevice
using DevicePtr = unsigned long long; ///< CUdeviceptr (64-bit)
using DeviceAttribute = int;          ///< CUdevice_attribute
using JitOption = int;                ///< CUjit_option
using JitInputType = int;             ///< CUjitInputType
struct ContextHandle;
struct ModuleHandle;
struct FunctionHandle;
struct StreamHandle;
struct LinkHandle;
using Context = ContextHandle*;   ///< CUcontext
using Module = ModuleHandle*;     ///< CUmodule
using Function = FunctionHandle*; ///< CUfunction
using Stream = StreamHandle*;     ///< CUstream; nullptr is the default stream
using LinkState = LinkHandle*;    ///< CUlinkState

inline constexpr Result k_success = 0;
inline constexpr DeviceAttribute k_attribute_compute_capability_major = 75;
inline constexpr DeviceAttribute k_attribute_compute_capability_minor = 76;
inline constexpr JitInputType k_jit_input_ptx = 1; ///< CU_JIT_INPUT_PTX

/// The entry points uwjit uses, named as the driver exports them (the `_v2` names are the 64-bit
/// memory API). Every one is resolved before a Driver exists, so none is ever null.
struct Api {
  Result (*cuInit)(unsigned flags);
  Result (*cuDriverGetVersion)(int* version);
  Result (*cuDeviceGetCount)(int* count);
  Result (*cuDeviceGet)(Device* device, int ordinal);
  Result (*cuDeviceGetName)(char* name, int length, Device device);
  Result (*cuDeviceGetAttribute)(int* value, DeviceAttribute attribute, Device device);
  Result (*cuDeviceTotalMem_v2)(std::size_t* bytes, Device device);
  Result (*cuGetErrorName)(Result error, const char** text);
  Result (*cuGetErrorString)(Result error, const char** text);
  Result (*cuDevicePrimaryCtxRetain)(Context* context, Device device);
  Result (*cuDevicePrimaryCtxRelease_v2)(Device device);
  Result (*cuCtxSetCurrent)(Context context);
  Result (*cuModuleLoadDataEx)(Module* module, const void* image, unsigned option_count,
                               JitOption* options, void** option_values);
  Result (*cuModuleUnload)(Module module);
  Result (*cuModuleGetFunction)(Function* function, Module module, const char* name);
  Result (*cuMemAlloc_v2)(DevicePtr* pointer, std::size_t bytes);
  Result (*cuMemFree_v2)(DevicePtr pointer);
  Result (*cuMemcpyHtoD_v2)(DevicePtr destination, const void* source, std::size_t bytes);
  Result (*cuMemcpyDtoH_v2)(void* destination, DevicePtr source, std::size_t bytes);
  Result (*cuMemcpyDtoD_v2)(DevicePtr destination, DevicePtr source, std::size_t bytes);
  Result (*cuMemsetD8_v2)(DevicePtr destination, unsigned char value, std::size_t count);
  Result (*cuMemGetInfo_v2)(std::size_t* free, std::size_t* total);
  Result (*cuMemAllocHost_v2)(void** pointer, std::size_t bytes);
  Result (*cuMemFreeHost)(void* pointer);
  Result (*cuLaunchKernel)(Function function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                           unsigned block_x, unsigned block_y, unsigned block_z,
                           unsigned shared_bytes, Stream stream, void** params, void** extra);
  Result (*cuCtxSynchronize)();
  Result (*cuLinkCreate_v2)(unsigned option_count, JitOption* options, void** option_values,
                            LinkState* state);
  Result (*cuLinkAddData_v2)(LinkState state, JitInputType type, void* data, std::size_t size,
                             const char* name, unsigned option_count, JitOption* options,
                             void** option_values);
  Result (*cuLinkComplete)(LinkState state, void** cubin, std::size_t* size);
  Result (*cuLinkDestroy)(LinkState state);
};

/// The name of the library opened: "libcuda.so.1", found by the dynamic loader's search path.
inline constexpr std::string_view k_library = "libcuda.so.1";

/// "12.4" for the driver API version 12040 (cuDriverGetVersion's number).
[[nodiscard]] std::string version_text(int version);

/// The NVIDIA driver, opened and initialised (cuInit) once per process, on the first get().
/// Nothing opens libcuda.so.1 before something asks for a Driver or a probe().
class Driver {
public:
  /// The process's driver. Throws Error(usage) when there is none to give, naming what is
  /// missing and what to do: libcuda.so.1 cannot be loaded (the loader's message), it lacks an
  /// entry point (the driver is too old), or cuInit fails (e.g. CUDA_ERROR_NO_DEVICE). The
  /// outcome is decided once: later calls return the same driver or throw the same error.
  /// Thread-safe.
  [[nodiscard]] static const Driver& get();

  /// The entry points; the driver API itself is thread-safe.
  [[nodiscard]] const Api& api() const noexcept { return m_api; }
  /// cuDriverGetVersion's number, e.g. 12040.
  [[nodiscard]] int version() const noexcept { return m_version; }

  /// The one way to check a call: does nothing for CUDA_SUCCESS, else throws Error(kind) naming
  /// `call` (the entry point, with what it was doing if that helps: "cuMemAlloc_v2 of 8.0 GiB")
  /// and the driver's error name and text. Thread-safe.
  ///   driver.check(driver.api().cuMemAlloc_v2(&pointer, bytes), "cuMemAlloc_v2", kind);
  void check(Result result, std::string_view call, ErrorKind kind) const;

  /// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"; "CUresult 999" for a code the
  /// driver does not name. Thread-safe.
  [[nodiscard]] std::string describe(Result result) const;

  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

private:
  Driver(const Api& api, int version) : m_api(api), m_version(version) {}
  friend struct DriverOpening;

  const Api& m_api;
  int m_version;
};

} // namespace uwjit::cuda
