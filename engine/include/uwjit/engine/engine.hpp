// Engine: KernelSource in, callable Kernel out — memory, then the verified disk cache, then a
// cold in-process compile published atomically under a per-key lock.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/cache/stats.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/comm/comm.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/kernel.hpp>
#include <uwjit/engine/target.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine {

/// Whether an engine uses the disk cache.
enum class DiskCache {
  environment, ///< as UWJIT_CACHE / UWJIT_CACHE_DIR / XDG_CACHE_HOME / HOME say (the default)
  off,         ///< memory only
};

/// A kernel compiled for a GPU target: PTX text, which the engine stores and hands over (a
/// runtime on a CUDA device loads it, or its cubin: Engine::cuda_image).
struct PtxKernel {
  std::shared_ptr<const std::string> ptx; ///< the PTX text (".version", ".target sm_XX", ...)
  std::shared_ptr<const KernelInfo> info; ///< key, entry, tier, timings; load_ms is 0
};

/// What the CUDA driver of this process loads for a PtxKernel (Engine::cuda_image).
struct CudaImage {
  /// A cubin, or (when none could be made) the PTX text with its terminating NUL.
  std::shared_ptr<const std::vector<char>> bytes;
  bool cubin = false;
  /// "memory", "disk" or "linked" for a cubin; else why the PTX is loaded instead.
  std::string from;
  double link_ms = 0; ///< the driver's link of the PTX to a cubin, when made now
};

struct EngineOptions {
  CompileOptions compile;
  DiskCache disk_cache = DiskCache::environment;
  /// The cache directory, overriding the environment's (when disk_cache is environment).
  std::optional<std::filesystem::path> cache_dir;
  /// How long to wait for another process compiling the same key before compiling privately.
  std::chrono::milliseconds lock_timeout{std::chrono::seconds{60}};
  /// When set, each compiled kernel's canonical source, optimised IR and assembly are written
  /// here (named by origin and key); the key and the cached object do not change.
  std::optional<std::filesystem::path> dump_dir;
  /// With compile.debug_info: where the sources a debugger shows are written when a kernel is
  /// compiled or loaded from disk: `uwjit_KEY.cpp` (the body, with the real entry name, under
  /// the name the debug info gives it) and the headers `uwjit_kernel_abi.h` and
  /// `uwjit_kernel_prelude.h`. Unset: dump_dir, else the working directory (where gdb looks by
  /// default). A header replaces only an earlier copy of itself: a user's file of that name is
  /// kept, with a warning.
  std::optional<std::filesystem::path> debug_source_dir;

  /// The defaults adjusted by the environment: UWJIT_DEBUG (-g, and gdb registration),
  /// UWJIT_LOCK_TIMEOUT (seconds), UWJIT_DUMP_DIR. Throws Error(usage) on a bad value of any
  /// variable of the table in <uwjit/common/env_variables.hpp>, the first in its order.
  [[nodiscard]] static EngineOptions from_environment();
};

/// Turns kernel sources into loaded kernels. Each key is compiled at most once per engine
/// (concurrent requests wait for one compile) and, through the per-key lock of the disk cache,
/// at most once per machine. A disk-cache failure (read-only, full, corrupt) never fails a
/// request: it is logged, counted, and the kernel is compiled. Thread-safe.
class Engine {
public:
  /// An engine configured by EngineOptions::from_environment().
  Engine();
  /// Throws Error(usage) on bad options or a bad value of any variable of the table in
  /// <uwjit/common/env_variables.hpp>, Error(jit) if the JIT cannot be set up. An unusable
  /// cache directory is not an error: the engine runs memory-only with one warning.
  explicit Engine(EngineOptions options);
  /// Persists this engine's counters in the cache directory (softly).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The kernel for `source`: kernels({source}, comm)[0]. Without a comm (nullptr, the
  /// default), this process's alone. Throws Error(compile) with diagnostics
  /// (Error::diagnostics(); for a source with a line map, each names the node and counts lines
  /// in the text the node wrote; the failing source goes to the dump directory, if any, and the
  /// message names the file), or naming the functions the kernel defines when its entry is not
  /// one of them (checked before anything is published, also on memory and disk hits);
  /// Error(jit) if the object cannot be loaded. A failed request leaves nothing behind and may
  /// be retried.
  [[nodiscard]] Kernel kernel(const codegen::KernelSource& source,
                              comm::Collectives* comm = nullptr);

  /// The kernels for `sources`, in order. The comm is optional, as everywhere in uwjit
  /// (SimulationOptions::comm, Python's comm=None): a pointer, nullptr for this process alone.
  ///
  /// Without a comm: distinct cold kernels compile in parallel threads; throws as kernel() does
  /// (the first failure, after every request has finished).
  ///
  /// With a comm: collective over it: every rank asks for the same sources, in the same order.
  /// The ranks' keys are compared first: if they differ, every rank throws the same
  /// Error(collective) naming the ranks that differ and the first line where their sources
  /// differ, and each distinct source is written to `mismatch/KEY.cpp` in each rank's cache
  /// directory. Otherwise rank 0 alone looks each missing kernel up on disk or compiles it (under
  /// the per-key lock, so concurrent jobs compile once too) and broadcasts the outcome and the
  /// object; the other ranks load it (tier `received`), and one rank per node publishes it to
  /// its node's cache if that lacks it. A compile error on rank 0 raises the same
  /// Error(compile) on every rank. Never hangs: no rank branches into a collective alone.
  [[nodiscard]] std::vector<Kernel> kernels(std::span<const codegen::KernelSource> sources,
                                            comm::Collectives* comm = nullptr);

  /// Deprecated (uwjit 0.1; removed in the next release): kernels(sources, &comm).
  [[deprecated(
      "pass the comm as a pointer: kernels(sources, &comm)")]] [[nodiscard]] std::vector<Kernel>
  kernels(std::span<const codegen::KernelSource> sources, comm::Collectives& comm) {
    return kernels(sources, &comm);
  }

  /// Deprecated (uwjit 0.1; removed in the next release): kernel(source, &comm).
  [[deprecated("pass the comm as a pointer: kernel(source, &comm)")]] [[nodiscard]] Kernel
  kernel(const codegen::KernelSource& source, comm::Collectives& comm) {
    return kernel(source, &comm);
  }

  /// The PTX of `source` compiled for `target` (a cuda target; Error(usage) for the host),
  /// through the same three tiers as kernel(): this process's memory, the verified disk cache
  /// (`KEY.ptx` beside the manifest), a compile published under the key's lock. The kernel's
  /// entry must be a GPU kernel, `extern "C" __attribute__((nvptx_kernel)) void ENTRY(...)`:
  /// otherwise Error(compile) naming the kernels it defines. Throws Error(compile) as
  /// Compiler::compile does (libdevice missing, an undefined call). Thread-safe.
  [[nodiscard]] PtxKernel ptx(const codegen::KernelSource& source, const Target& target);

  /// The PTX of each of `sources` for `target`, in order. Without a comm (nullptr), ptx(source,
  /// target) for each. With one, collective over it, as kernels(sources, comm): the ranks' keys
  /// for `target` agree (or every rank throws the same Error(collective) naming what differs:
  /// the source, or salt components such as the target's sm), rank 0 alone finds or compiles
  /// each PTX some rank lacks and broadcasts it (tier `received` on the other ranks), one rank
  /// per node publishes it to its node's cache, and an error on rank 0 (a compile error,
  /// libdevice missing) is the same error on every rank. One compile per job. Error(usage) (on
  /// every rank) for a host target.
  [[nodiscard]] std::vector<PtxKernel> ptx(std::span<const codegen::KernelSource> sources,
                                           const Target& target, comm::Collectives* comm = nullptr);

  /// Deprecated (uwjit 0.1; removed in the next release): ptx(sources, target, &comm).
  [[deprecated("pass the comm as a pointer: ptx(sources, target, &comm)")]] [[nodiscard]] std::
      vector<PtxKernel>
      ptx(std::span<const codegen::KernelSource> sources, const Target& target,
          comm::Collectives& comm) {
    return ptx(sources, target, &comm);
  }

  /// The cubin of `ptx` for the device of the current CUDA context (`device_arch` is its
  /// "sm_XX"), made by this process's driver: from this engine's memory, else the disk cache's
  /// `{key}.cubin` when the same driver version made it for the same sm (another driver's is never
  /// used: a driver upgrade links the PTX again and replaces it), else linked now by the driver
  /// (cuLinkCreate, cuLinkAddData, cuLinkComplete) and published beside the entry. Where the
  /// driver cannot link, the PTX is returned for the driver to JIT when it loads it (`from` says
  /// why). Throws what cuda::Driver::get() throws. Thread-safe.
  [[nodiscard]] CudaImage cuda_image(const PtxKernel& ptx, std::string_view device_arch);

  /// The key `source` has under this engine: under salt_of(source).
  [[nodiscard]] cache::Key key_of(const codegen::KernelSource& source) const;

  /// The key `source` has for `target`: for the host the same as key_of(source); for a cuda
  /// target one under that target's salt (NVPTX triple, the sm, the PTX ISA, libdevice's
  /// digest), so never a host key. Thread-safe.
  [[nodiscard]] cache::Key key_of(const codegen::KernelSource& source, const Target& target) const;

  /// The salt of `source` for `target` (salt_of(source) for the host). Thread-safe.
  [[nodiscard]] const cache::Salt& salt_of(const codegen::KernelSource& source,
                                           const Target& target) const;

  /// The engine's salt: uwjit version, entry format, kernel ABI, LLVM version, target, CPU,
  /// features, optimisation level and flags (those of EngineOptions::compile).
  [[nodiscard]] const cache::Salt& salt() const noexcept;

  /// The salt `source` is keyed under: salt(), or, when the source carries KernelOptions, the
  /// same with its effective optimisation level and flags. Throws Error(usage) if the options
  /// are rejected by the compiler. Thread-safe.
  [[nodiscard]] const cache::Salt& salt_of(const codegen::KernelSource& source) const;

  /// This engine's counters, read with .get(cache::Stat::memory_hits), Stat::disk_hits,
  /// Stat::compiles, Stat::rejected, Stat::published, ...
  [[nodiscard]] cache::StatsSnapshot stats() const;

  /// The cache directory in use, or nullopt when running memory-only.
  [[nodiscard]] std::optional<std::filesystem::path> cache_dir() const;

  /// The read-only site caches this engine consults after the cache directory misses, in order
  /// (UWJIT_CACHE_SITE_DIR; a listed directory that cannot be used is left out, with one warning
  /// per process saying why). Empty with DiskCache::off or UWJIT_CACHE=0.
  [[nodiscard]] std::vector<std::filesystem::path> site_cache_dirs() const;

  [[nodiscard]] const Compiler& compiler() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::engine
