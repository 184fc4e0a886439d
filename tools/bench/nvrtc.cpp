#include "nvrtc.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/engine/target.hpp>

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace uwjit::bench {

namespace {

// Defines the NVVM builtins the GPU form calls by CUDA's own, and what Clang has and NVRTC may
// lack. The launch is in blocks of whole warps along x, as the runtime's.
constexpr std::string_view k_cuda_prelude = R"(// a uwjit GPU kernel as CUDA C++, for NVRTC
#define __nvvm_read_ptx_sreg_tid_x() threadIdx.x
#define __nvvm_read_ptx_sreg_ntid_x() blockDim.x
#define __nvvm_read_ptx_sreg_ctaid_x() blockIdx.x
#define __nvvm_read_ptx_sreg_ctaid_y() blockIdx.y
#define __nvvm_read_ptx_sreg_ctaid_z() blockIdx.z
#define __nvvm_read_ptx_sreg_laneid() uwjit_nvrtc_lane()
#define __nvvm_shfl_sync_down_i32(mask, value, delta, clamp) __shfl_down_sync((mask), (value), (delta))
#define __nvvm_atom_add_gen_d(address, value) atomicAdd((address), (value))
#define __builtin_bit_cast(type, value) uwjit_nvrtc_bit_cast<type>(value)
#ifndef __has_builtin
#define __has_builtin(name) 0
#endif
static __device__ __forceinline__ unsigned uwjit_nvrtc_lane() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
template <class To, class From>
static __device__ __forceinline__ To uwjit_nvrtc_bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between types of one size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}
)";

// The math prelude's functions (uwjit_kernel_prelude.h) call Clang's builtins, which NVRTC lacks:
// they become CUDA's functions of the same names (double and, with an f, float).
constexpr std::array<std::string_view, 25> k_math = {
    "sqrt", "cbrt",  "exp",   "log",  "sin",      "cos",   "tan",  "asin",  "acos",
    "atan", "sinh",  "cosh",  "tanh", "fabs",     "floor", "ceil", "round", "trunc",
    "pow",  "atan2", "hypot", "fmin", "copysign", "fmax",  "fma"};

constexpr std::string_view k_clang_entry = "__attribute__((nvptx_kernel))";

} // namespace

std::string cuda_cxx(const codegen::KernelSource& source, std::string_view entry) {
  std::string text = source.instantiate(entry, "nvrtc");
  std::size_t entries = 0;
  for (std::size_t at = text.find(k_clang_entry); at != std::string::npos;
       at = text.find(k_clang_entry, at)) {
    text.replace(at, k_clang_entry.size(), "__global__");
    ++entries;
  }
  if (entries != 1) {
    throw Error(ErrorKind::usage,
                format("{}: not a kernel of the GPU form (it has {} entries marked {})",
                       source.origin(), entries, k_clang_entry));
  }
  std::string math;
  for (const std::string_view name : k_math) {
    for (const std::string_view suffix : {"", "f"}) {
      math +=
          format("#define __builtin_{}{}(...) ::{}{}(__VA_ARGS__)\n", name, suffix, name, suffix);
    }
  }
  return std::string(k_cuda_prelude) + math + text;
}

// NVRTC's C API, declared by hand (no CUDA header at build time); each result is an int, 0 is
// success.
struct Nvrtc::Api {
  using Program = struct Opaque*;
  const char* (*nvrtcGetErrorString)(int);
  int (*nvrtcVersion)(int*, int*);
  int (*nvrtcCreateProgram)(Program*, const char*, const char*, int, const char* const*,
                            const char* const*);
  int (*nvrtcDestroyProgram)(Program*);
  int (*nvrtcCompileProgram)(Program, int, const char* const*);
  int (*nvrtcGetPTXSize)(Program, std::size_t*);
  int (*nvrtcGetPTX)(Program, char*);
  int (*nvrtcGetProgramLogSize)(Program, std::size_t*);
  int (*nvrtcGetProgramLog)(Program, char*);
};

namespace {

// The library opened, or why none was: decided once per process; never closed.
struct Opening {
  std::unique_ptr<Nvrtc::Api> api;
  std::string path;
  std::string error;
};

template <class F> bool resolve(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(::dlsym(library, name));
  return slot != nullptr;
}

Opening open_nvrtc() {
  Opening out;
  const auto cuda = engine::cuda_installation();
  const std::vector<std::string> candidates = {cuda.root + "/lib64/libnvrtc.so",
                                               cuda.root + "/lib/libnvrtc.so", "libnvrtc.so.13",
                                               "libnvrtc.so.12"};
  std::vector<std::string> tried;
  for (const auto& candidate : candidates) {
    void* library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      tried.push_back(format("{} ({})", candidate, why != nullptr ? why : "not loaded"));
      continue;
    }
    auto api = std::make_unique<Nvrtc::Api>();
    const bool complete = resolve(library, "nvrtcGetErrorString", api->nvrtcGetErrorString) &&
                          resolve(library, "nvrtcVersion", api->nvrtcVersion) &&
                          resolve(library, "nvrtcCreateProgram", api->nvrtcCreateProgram) &&
                          resolve(library, "nvrtcDestroyProgram", api->nvrtcDestroyProgram) &&
                          resolve(library, "nvrtcCompileProgram", api->nvrtcCompileProgram) &&
                          resolve(library, "nvrtcGetPTXSize", api->nvrtcGetPTXSize) &&
                          resolve(library, "nvrtcGetPTX", api->nvrtcGetPTX) &&
                          resolve(library, "nvrtcGetProgramLogSize", api->nvrtcGetProgramLogSize) &&
                          resolve(library, "nvrtcGetProgramLog", api->nvrtcGetProgramLog);
    if (!complete) {
      tried.push_back(candidate + " (lacks an entry point NVRTC has had since CUDA 7)");
      continue;
    }
    out.api = std::move(api);
    out.path = candidate;
    return out;
  }
  out.error = format("NVIDIA's runtime compiler (NVRTC) could not be loaded: tried {}; the CUDA "
                     "installation is {} ({})",
                     join(tried, ", "), cuda.root, cuda.rule);
  return out;
}

} // namespace

const Nvrtc& Nvrtc::get() {
  static const Opening opening = open_nvrtc();
  static const Nvrtc nvrtc = [] {
    Nvrtc n;
    n.m_api = opening.api.get();
    n.m_path = opening.path;
    return n;
  }();
  if (opening.api == nullptr) {
    throw Error(ErrorKind::usage, opening.error);
  }
  return nvrtc;
}

std::string Nvrtc::describe() const {
  int major = 0;
  int minor = 0;
  const bool known = m_api->nvrtcVersion(&major, &minor) == 0;
  return format("NVRTC {} ({})", known ? format("{}.{}", major, minor) : "of unknown version",
                m_path);
}

std::string Nvrtc::ptx(const std::string& cuda_source, std::string_view arch) const {
  const Api& api = *m_api;
  auto fail = [&](const char* call, int result, const std::string& log) {
    return Error(ErrorKind::jit,
                 format("NVRTC: {} failed: {}{}", call, api.nvrtcGetErrorString(result),
                        log.empty() ? std::string() : ":\n" + log));
  };
  Api::Program program = nullptr;
  if (const int r = api.nvrtcCreateProgram(&program, cuda_source.c_str(), "uwjit_kernel.cu", 0,
                                           nullptr, nullptr);
      r != 0) {
    throw fail("nvrtcCreateProgram", r, "");
  }
  struct Destroy {
    const Api& api;
    Api::Program& program;
    ~Destroy() { (void)api.nvrtcDestroyProgram(&program); }
  } destroy{api, program};
  const std::string architecture =
      "--gpu-architecture=compute_" + std::string(arch.substr(arch.find('_') + 1));
  const std::vector<const char*> options = {
      architecture.c_str(), "--device-as-default-execution-space", "--fmad=false", "-std=c++20",
      // unknown #pragma clang, unused constants
      "--diag-suppress=161,177"};
  const int compiled =
      api.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  std::size_t log_size = 0;
  std::string log;
  if (api.nvrtcGetProgramLogSize(program, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    if (api.nvrtcGetProgramLog(program, log.data()) == 0) {
      log.resize(log_size - 1);
    } else {
      log.clear();
    }
  }
  if (compiled != 0) {
    throw fail("nvrtcCompileProgram", compiled, log);
  }
  std::size_t size = 0;
  if (const int r = api.nvrtcGetPTXSize(program, &size); r != 0) {
    throw fail("nvrtcGetPTXSize", r, "");
  }
  std::string ptx(size, '\0');
  if (const int r = api.nvrtcGetPTX(program, ptx.data()); r != 0) {
    throw fail("nvrtcGetPTX", r, "");
  }
  ptx.resize(size > 0 ? size - 1 : 0); // without its terminating NUL; c_str() still ends in one
  return ptx;
}

} // namespace uwjit::bench
