#include "library.hpp"

#include <dlfcn.h>

#include <string>

namespace uwjit::cuda {

namespace {

// Each entry point by the name the driver exports, into its slot of the table.
template <class Entry> void resolve(void* handle, const char* name, Entry& slot, Library& out) {
  if (void* symbol = ::dlsym(handle, name)) {
    slot = reinterpret_cast<Entry>(symbol);
  } else {
    out.missing.emplace_back(name);
  }
}

Library open_library() {
  Library out;
  // RTLD_LOCAL: the driver's symbols never interpose on anything else in the process.
  void* handle = ::dlopen(std::string(k_library).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = ::dlerror();
    out.load_error = text != nullptr ? text : "dlopen gave no reason";
    return out;
  }
  out.loaded = true;
  Api& api = out.api;
#define UWJIT_CUDA_RESOLVE(name) resolve(handle, #name, api.name, out)
  UWJIT_CUDA_RESOLVE(cuInit);
  UWJIT_CUDA_RESOLVE(cuDriverGetVersion);
  UWJIT_CUDA_RESOLVE(cuDeviceGetCount);
  UWJIT_CUDA_RESOLVE(cuDeviceGet);
  UWJIT_CUDA_RESOLVE(cuDeviceGetName);
  UWJIT_CUDA_RESOLVE(cuDeviceGetAttribute);
  UWJIT_CUDA_RESOLVE(cuDeviceTotalMem_v2);
  UWJIT_CUDA_RESOLVE(cuGetErrorName);
  UWJIT_CUDA_RESOLVE(cuGetErrorString);
  UWJIT_CUDA_RESOLVE(cuDevicePrimaryCtxRetain);
  UWJIT_CUDA_RESOLVE(cuDevicePrimaryCtxRelease_v2);
  UWJIT_CUDA_RESOLVE(cuCtxSetCurrent);
  UWJIT_CUDA_RESOLVE(cuModuleLoadDataEx);
  UWJIT_CUDA_RESOLVE(cuModuleUnload);
  UWJIT_CUDA_RESOLVE(cuModuleGetFunction);
  UWJIT_CUDA_RESOLVE(cuMemAlloc_v2);
  UWJIT_CUDA_RESOLVE(cuMemFree_v2);
  UWJIT_CUDA_RESOLVE(cuMemcpyHtoD_v2);
  UWJIT_CUDA_RESOLVE(cuMemcpyDtoH_v2);
  UWJIT_CUDA_RESOLVE(cuMemcpyDtoD_v2);
  UWJIT_CUDA_RESOLVE(cuMemsetD8_v2);
  UWJIT_CUDA_RESOLVE(cuMemGetInfo_v2);
  UWJIT_CUDA_RESOLVE(cuMemAllocHost_v2);
  UWJIT_CUDA_RESOLVE(cuMemFreeHost);
  UWJIT_CUDA_RESOLVE(cuLaunchKernel);
  UWJIT_CUDA_RESOLVE(cuCtxSynchronize);
  UWJIT_CUDA_RESOLVE(cuLinkCreate_v2);
  UWJIT_CUDA_RESOLVE(cuLinkAddData_v2);
  UWJIT_CUDA_RESOLVE(cuLinkComplete);
  UWJIT_CUDA_RESOLVE(cuLinkDestroy);
#undef UWJIT_CUDA_RESOLVE
  // The version needs no cuInit, so even a driver too old or without a device can say it.
  int version = 0;
  if (api.cuDriverGetVersion != nullptr && api.cuDriverGetVersion(&version) == k_success) {
    out.version = version;
  }
  return out;
}

} // namespace

const Library& library() {
  static const Library opened = open_library();
  return opened;
}

std::string describe(const Api& api, Result result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != k_success ||
      name == nullptr) {
    return "CUresult " + std::to_string(result);
  }
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &text) != k_success ||
      text == nullptr) {
    return name;
  }
  return std::string(name) + " (" + text + ")";
}

} // namespace uwjit::cuda
