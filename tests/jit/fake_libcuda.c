/* A test double for the loader only: a shared library named libcuda.so.1 that exports the CUDA
 * driver entry points uwjit resolves, with CPU stand-ins behind them, so that opening the driver,
 * its errors, the probe and the checked-call idiom are tested on machines without a GPU. It
 * compiles no PTX and runs no kernel itself: a test may register a CPU emulation of a kernel's
 * entry (uwjit_fake_cuda_register, below), which a launch then calls.
 *
 * Chosen by environment variables read when called:
 *   UWJIT_FAKE_CUDA_DEVICES  number of devices (default 1); 0 makes cuInit fail with
 *                            CUDA_ERROR_NO_DEVICE, as the real driver does without a GPU
 *   UWJIT_FAKE_CUDA_VERSION  cuDriverGetVersion's number (default 12040)
 *   UWJIT_FAKE_CUDA_FREE_MIB the free device memory cuMemGetInfo reports, in MiB (default
 *                            81920, the whole 80 GiB)
 *   UWJIT_FAKE_CUDA_EMULATE  a uwjit cache directory: a launch of a generated kernel's entry
 *                            (uwjit_KEY) that no test registered is emulated on the CPU from the
 *                            kernel's source there (KEY.cpp), compiled by UWJIT_FAKE_CUDA_CLANG
 *                            (default clang++-19) into a shared library on first use
 * Built with UWJIT_FAKE_CUDA_OLD, it lacks the cuLink* entry points, like a driver too old.
 * Every device is "uwjit fake GPU", compute capability 9.0, 80 GiB; device memory is malloc'd. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum {
  ok = 0,
  invalid_value = 1,
  out_of_memory = 2,
  not_initialized = 3,
  no_device = 100,
  invalid_device = 101,
  invalid_context = 201,
  not_found = 500,
  not_supported = 801,
};

static int initialised;

static int env_int(const char* name, int fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? atoi(text) : fallback;
}
static int device_count(void) { return env_int("UWJIT_FAKE_CUDA_DEVICES", 1); }

CUresult cuInit(unsigned flags) {
  if (flags != 0) {
    return invalid_value;
  }
  if (device_count() <= 0) {
    return no_device;
  }
  initialised = 1;
  return ok;
}
/* The driver's private tables, which NVIDIA's runtime compiler (NVRTC) asks a libcuda.so.1 for
 * when one is loaded: the stand-in has none, and says so. */
CUresult cuGetExportTable(const void** table, const void* id) {
  (void)id;
  if (table != NULL) {
    *table = NULL;
  }
  return 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuDriverGetVersion(int* version) {
  if (version == NULL) {
    return invalid_value;
  }
  *version = env_int("UWJIT_FAKE_CUDA_VERSION", 12040);
  return ok;
}
CUresult cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
  case ok: *text = "CUDA_SUCCESS"; return ok;
  case invalid_value: *text = "CUDA_ERROR_INVALID_VALUE"; return ok;
  case out_of_memory: *text = "CUDA_ERROR_OUT_OF_MEMORY"; return ok;
  case not_initialized: *text = "CUDA_ERROR_NOT_INITIALIZED"; return ok;
  case no_device: *text = "CUDA_ERROR_NO_DEVICE"; return ok;
  case invalid_device: *text = "CUDA_ERROR_INVALID_DEVICE"; return ok;
  case invalid_context: *text = "CUDA_ERROR_INVALID_CONTEXT"; return ok;
  case not_supported: *text = "CUDA_ERROR_NOT_SUPPORTED"; return ok;
  case not_found: *text = "CUDA_ERROR_NOT_FOUND"; return ok;
  }
  *text = NULL;
  return invalid_value;
}
CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
  case ok: *text = "no error"; return ok;
  case invalid_value: *text = "invalid argument"; return ok;
  case out_of_memory: *text = "out of memory"; return ok;
  case not_initialized: *text = "initialization error"; return ok;
  case no_device: *text = "no CUDA-capable device is detected"; return ok;
  case invalid_device: *text = "invalid device ordinal"; return ok;
  case invalid_context: *text = "invalid device context"; return ok;
  case not_supported: *text = "operation not supported"; return ok;
  case not_found: *text = "named symbol not found"; return ok;
  }
  *text = NULL;
  return invalid_value;
}

/* Devices. */
CUresult cuDeviceGetCount(int* count) {
  if (!initialised) {
    return not_initialized;
  }
  *count = device_count();
  return ok;
}
CUresult cuDeviceGet(int* device, int ordinal) {
  if (!initialised) {
    return not_initialized;
  }
  if (ordinal < 0 || ordinal >= device_count()) {
    return invalid_device;
  }
  *device = ordinal;
  return ok;
}
static CUresult check_device(int device) {
  if (!initialised) {
    return not_initialized;
  }
  return device >= 0 && device < device_count() ? ok : invalid_device;
}
CUresult cuDeviceGetName(char* name, int length, int device) {
  CUresult result = check_device(device);
  if (result != ok) {
    return result;
  }
  if (name == NULL || length <= 0) {
    return invalid_value;
  }
  strncpy(name, "uwjit fake GPU", (size_t)length - 1);
  name[length - 1] = '\0';
  return ok;
}
CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  CUresult result = check_device(device);
  if (result != ok) {
    return result;
  }
  switch (attribute) {
  case 75: *value = 9; return ok; /* compute capability major */
  case 76: *value = 0; return ok; /* compute capability minor */
  }
  return invalid_value;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int device) {
  CUresult result = check_device(device);
  if (result == ok) {
    *bytes = (size_t)80 << 30;
  }
  return result;
}

/* Contexts: one token per device stands for its primary context. */
static char contexts[64];
static _Thread_local void* current; /* per thread, as the driver's current context */
CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
  CUresult result = check_device(device);
  if (result != ok) {
    return result;
  }
  if (device >= 64) {
    return not_supported;
  }
  *context = &contexts[device];
  return ok;
}
CUresult cuDevicePrimaryCtxRelease_v2(int device) { return check_device(device); }
CUresult cuCtxSetCurrent(void* context) {
  if (!initialised) {
    return not_initialized;
  }
  current = context;
  return ok;
}
CUresult cuCtxSynchronize(void) {
  if (!initialised) {
    return not_initialized;
  }
  return current != NULL ? ok : invalid_context;
}

/* Memory: device pointers are host allocations. */
static CUresult allocate(void** pointer, size_t bytes) {
  if (!initialised) {
    return not_initialized;
  }
  if (current == NULL) {
    return invalid_context;
  }
  if (bytes == 0) {
    return invalid_value;
  }
  *pointer = malloc(bytes);
  return *pointer != NULL ? ok : out_of_memory;
}
CUresult cuMemAlloc_v2(unsigned long long* pointer, size_t bytes) {
  void* host = NULL;
  CUresult result = allocate(&host, bytes);
  *pointer = (unsigned long long)(uintptr_t)host;
  return result;
}
CUresult cuMemFree_v2(unsigned long long pointer) {
  free((void*)(uintptr_t)pointer);
  return ok;
}
CUresult cuMemAllocHost_v2(void** pointer, size_t bytes) { return allocate(pointer, bytes); }
CUresult cuMemFreeHost(void* pointer) {
  free(pointer);
  return ok;
}
CUresult cuMemcpyHtoD_v2(unsigned long long destination, const void* source, size_t bytes) {
  memcpy((void*)(uintptr_t)destination, source, bytes);
  return ok;
}
CUresult cuMemcpyDtoH_v2(void* destination, unsigned long long source, size_t bytes) {
  memcpy(destination, (const void*)(uintptr_t)source, bytes);
  return ok;
}
CUresult cuMemcpyDtoD_v2(unsigned long long destination, unsigned long long source, size_t bytes) {
  memmove((void*)(uintptr_t)destination, (const void*)(uintptr_t)source, bytes);
  return ok;
}
CUresult cuMemsetD8_v2(unsigned long long destination, unsigned char value, size_t count) {
  memset((void*)(uintptr_t)destination, value, count);
  return ok;
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (!initialised) {
    return not_initialized;
  }
  if (current == NULL) {
    return invalid_context;
  }
  *total_bytes = (size_t)80 << 30;
  *free_bytes = (size_t)env_int("UWJIT_FAKE_CUDA_FREE_MIB", 81920) << 20;
  return ok;
}

/* Modules and kernels: the stand-in compiles no PTX and runs no kernel itself. A test that
 * emulates a GPU kernel on the CPU registers a launcher for the kernel's entry name
 * (uwjit_fake_cuda_register); a module whose PTX defines an entry (".entry NAME(") loads, and
 * cuModuleGetFunction finds that entry whether or not a launcher is registered yet (a test may
 * register it after a simulation has loaded its modules, once it knows their sources). A launch
 * calls the launcher with the grid, the block's x extent and the argument struct (params[0]);
 * CUDA_ERROR_NOT_FOUND if none was registered. PTX without any entry is not supported. */
typedef void (*fake_launcher)(void* context, const void* args, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx);
struct fake_function {
  char name[256];
  fake_launcher launch; /* NULL until registered */
  void* context;
};
enum { k_max_functions = 512 };
static struct fake_function registry[k_max_functions];
static int registered;

/* The registry's entry for `name`, added (without a launcher) if missing; NULL when full. */
static struct fake_function* function_named(const char* name) {
  for (int i = 0; i < registered; ++i) {
    if (strcmp(registry[i].name, name) == 0) {
      return &registry[i];
    }
  }
  if (strlen(name) >= sizeof registry[0].name || registered == k_max_functions) {
    return NULL;
  }
  strcpy(registry[registered].name, name);
  return &registry[registered++];
}

int uwjit_fake_cuda_register(const char* name, fake_launcher launch, void* context) {
  struct fake_function* f = function_named(name);
  if (f == NULL) {
    return invalid_value;
  }
  f->launch = launch;
  f->context = context;
  return ok;
}

/* The emulation of a generated kernel from its source in the cache (UWJIT_FAKE_CUDA_EMULATE):
 * the source with its GPU registers read from an array this library sets per emulated thread,
 * shuffles giving nothing (each thread is its warp's lane 0 and adds its own share) and atomics
 * plain additions and maxima, compiled for this CPU. */
struct emulation {
  void (*thread)(const void* args);
  unsigned* registers; /* ctaid x, y, z, tid x, ntid x */
};
static const char emulation_prefix[] =
    "static unsigned uwjit_registers[5];\n"
    "extern \"C\" unsigned* uwjit_emulated_registers() { return uwjit_registers; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_ctaid_x() { return uwjit_registers[0]; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_ctaid_y() { return uwjit_registers[1]; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_ctaid_z() { return uwjit_registers[2]; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_tid_x() { return uwjit_registers[3]; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_ntid_x() { return uwjit_registers[4]; }\n"
    "static inline unsigned __nvvm_read_ptx_sreg_laneid() { return 0; }\n"
    "static inline int __nvvm_shfl_sync_down_i32(unsigned, int, int, int) { return 0; }\n"
    "static inline double __nvvm_atom_add_gen_d(double* total, double value) {\n"
    "  const double old = *total;\n  *total += value;\n  return old;\n}\n"
    "static inline unsigned long long __nvvm_atom_max_gen_ull(unsigned long long* total,\n"
    "                                                         unsigned long long value) {\n"
    "  const unsigned long long old = *total;\n  *total = value > old ? value : old;\n"
    "  return old;\n}\n"
    "#define __UWJIT_ENTRY__ uwjit_emulated_entry\n"
    "#define __UWJIT_MODULE__ uwjit_emulated_module\n";
static const char emulation_suffix[] =
    "\nextern \"C\" void uwjit_emulated_thread(const void* args) {\n"
    "  uwjit_emulated_entry(*static_cast<const uwjit_kernel_args*>(args));\n}\n";

static void emulated_launch(void* context, const void* args, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx) {
  struct emulation* e = (struct emulation*)context;
  e->registers[4] = bx;
  for (unsigned z = 0; z < gz; ++z) {
    for (unsigned y = 0; y < gy; ++y) {
      for (unsigned x = 0; x < gx; ++x) {
        for (unsigned t = 0; t < bx; ++t) {
          e->registers[0] = x;
          e->registers[1] = y;
          e->registers[2] = z;
          e->registers[3] = t;
          e->thread(args);
        }
      }
    }
  }
}

/* Compiles the emulation of entry `name` (uwjit_KEY) into f; 0 if there is nothing to emulate. */
static int emulate(struct fake_function* f) {
  const char* cache = getenv("UWJIT_FAKE_CUDA_EMULATE");
  const char* clang = getenv("UWJIT_FAKE_CUDA_CLANG");
  if (cache == NULL || *cache == '\0' || strncmp(f->name, "uwjit_", 6) != 0) {
    return 0;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.cpp", cache, f->name + 6);
  FILE* in = fopen(path, "rb");
  if (in == NULL) {
    return 0;
  }
  char work[] = "/tmp/uwjit-fake-cuda-XXXXXX";
  if (mkdtemp(work) == NULL) {
    fclose(in);
    return 0;
  }
  char source[4200];
  char library[4200];
  char command[12000];
  snprintf(source, sizeof source, "%s/emulation.cpp", work);
  snprintf(library, sizeof library, "%s/emulation.so", work);
  FILE* out = fopen(source, "wb");
  if (out == NULL) {
    fclose(in);
    return 0;
  }
  fputs(emulation_prefix, out);
  char buffer[65536];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, in)) > 0) {
    fwrite(buffer, 1, got, out);
  }
  fputs(emulation_suffix, out);
  fclose(in);
  fclose(out);
  snprintf(command, sizeof command,
           "%s -std=c++20 -O1 -ffp-contract=off -fPIC -shared -w -o '%s' '%s'",
           clang != NULL && *clang != '\0' ? clang : "clang++-19", library, source);
  const int built = system(command);
  void* handle = built == 0 ? dlopen(library, RTLD_NOW | RTLD_LOCAL) : NULL;
  remove(source);
  remove(library);
  remove(work);
  if (handle == NULL) {
    return 0;
  }
  struct emulation* e = (struct emulation*)malloc(sizeof *e);
  unsigned* (*registers)(void) = (unsigned* (*)(void))dlsym(handle, "uwjit_emulated_registers");
  e->thread = (void (*)(const void*))dlsym(handle, "uwjit_emulated_thread");
  if (e->thread == NULL || registers == NULL) {
    free(e);
    return 0;
  }
  e->registers = registers();
  f->launch = emulated_launch;
  f->context = e;
  return 1;
}

/* Linking: the "cubin" of some PTX is the marker line k_cubin, then the PTX (so that a module
 * loads it as it loads the PTX). uwjit_fake_cuda_links counts the links completed and
 * uwjit_fake_cuda_cubin_loads the modules loaded from a cubin, for tests. */
static const char k_cubin[] = "UWJIT FAKE CUBIN\n";
static int links;
static int cubin_loads;
int uwjit_fake_cuda_links(void) { return links; }
int uwjit_fake_cuda_cubin_loads(void) { return cubin_loads; }

CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned count, int* options,
                            void** values) {
  (void)count, (void)options, (void)values;
  if (strstr((const char*)image, ".entry ") == NULL) {
    return not_supported;
  }
  if (!initialised) {
    return not_initialized;
  }
  if (current == NULL) {
    return invalid_context;
  }
  if (strncmp((const char*)image, k_cubin, sizeof k_cubin - 1) == 0) {
    ++cubin_loads;
  }
  const size_t size = strlen((const char*)image) + 1;
  *module = malloc(size);
  if (*module == NULL) {
    return out_of_memory;
  }
  memcpy(*module, image, size);
  return ok;
}
CUresult cuModuleUnload(void* module) {
  free(module);
  return ok;
}
CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  char entry[300];
  if (strlen(name) >= 256) {
    return not_found;
  }
  strcpy(entry, ".entry ");
  strcat(entry, name);
  strcat(entry, "(");
  if (strstr((const char*)module, entry) == NULL) {
    return not_found;
  }
  *function = function_named(name);
  return *function != NULL ? ok : not_found;
}
CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void* stream, void** params,
                        void** extra) {
  (void)shared, (void)stream, (void)extra;
  if (function == NULL || params == NULL || by != 1 || bz != 1 || bx == 0 || bx > 1024) {
    return invalid_value;
  }
  struct fake_function* f = (struct fake_function*)function;
  if (f->launch == NULL && !emulate(f)) {
    return not_found;
  }
  f->launch(f->context, params[0], gx, gy, gz, bx);
  return ok;
}
#ifndef UWJIT_FAKE_CUDA_OLD
struct link_state {
  char* image;
  size_t size;
};
CUresult cuLinkCreate_v2(unsigned count, int* options, void** values, void** state) {
  (void)count, (void)options, (void)values;
  if (!initialised) {
    return not_initialized;
  }
  if (current == NULL) {
    return invalid_context;
  }
  *state = calloc(1, sizeof(struct link_state));
  return *state != NULL ? ok : out_of_memory;
}
CUresult cuLinkAddData_v2(void* state, int type, void* data, size_t size, const char* name,
                          unsigned count, int* options, void** values) {
  (void)name, (void)count, (void)options, (void)values;
  struct link_state* s = (struct link_state*)state;
  if (s == NULL || type != 1 /* CU_JIT_INPUT_PTX */ || data == NULL || size == 0 ||
      s->image != NULL) {
    return invalid_value;
  }
  s->size = sizeof k_cubin - 1 + size;
  s->image = (char*)malloc(s->size);
  if (s->image == NULL) {
    return out_of_memory;
  }
  memcpy(s->image, k_cubin, sizeof k_cubin - 1);
  memcpy(s->image + sizeof k_cubin - 1, data, size);
  return ok;
}
CUresult cuLinkComplete(void* state, void** cubin, size_t* size) {
  struct link_state* s = (struct link_state*)state;
  if (s == NULL || s->image == NULL) {
    return invalid_value;
  }
  *cubin = s->image;
  *size = s->size;
  ++links;
  return ok;
}
CUresult cuLinkDestroy(void* state) {
  struct link_state* s = (struct link_state*)state;
  if (s != NULL) {
    free(s->image);
    free(s);
  }
  return ok;
}
#endif
