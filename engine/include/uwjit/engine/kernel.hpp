// Kernel: a callable compiled kernel, and what it cost to get.
#pragma once

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/engine/compiler.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace uwjit::engine {

/// Which tier served a kernel request.
enum class Tier {
  memory,   ///< already loaded in this process
  disk,     ///< loaded from a verified cache entry
  compiled, ///< compiled now (cold)
  received, ///< received from the rank that compiled or loaded it (collective requests)
};

/// "memory", "disk", "compiled" or "received".
[[nodiscard]] const char* to_string(Tier tier) noexcept;

/// Whether a request wrote its kernel to the disk cache.
enum class Publication {
  not_needed,    ///< served from memory, disk or another rank: nothing to write
  published,     ///< compiled now and published to the cache directory
  not_published, ///< compiled now and not written: KernelInfo::not_published_because says why
};

/// "not_needed", "published" or "not_published".
[[nodiscard]] const char* to_string(Publication publication) noexcept;

/// What a kernel request did and what it cost.
struct KernelInfo {
  std::string key;    ///< the cache key (16 hex digits)
  std::string entry;  ///< the entry symbol
  std::string origin; ///< the node that emitted it, or "source"
  Tier tier = Tier::compiled;
  CompileTimings compile; ///< zero unless tier == compiled
  double load_ms = 0;     ///< JIT link and symbol lookup (zero for memory hits)
  double request_ms = 0;  ///< the whole request, from source to callable
  std::size_t object_size = 0;
  codegen::SlotTables slots;
  /// The compiler's warnings: those of the compile (compiled tier), or those the compile stored
  /// with the cache entry (disk tier); empty for memory hits.
  std::string warnings;
  Publication publication = Publication::not_needed;
  /// For people, when not published: e.g. "the disk cache is disabled by UWJIT_CACHE=0; memory
  /// only", or the reason the cache directory was refused or could not be written.
  std::string not_published_because;
  /// The disk tier: the directory whose entry served it, the cache directory or a read-only
  /// site cache (UWJIT_CACHE_SITE_DIR); empty for the other tiers.
  std::string served_from;
};

namespace detail {
struct KernelAccess; // the engine's private way to make kernels
} // namespace detail

/// A loaded kernel, made only by an Engine. Copies share the code, which stays loaded while any
/// copy lives. Calling is thread-safe if the kernel's buffers are not shared between concurrent
/// calls.
class Kernel {
public:
  /// Fills args.abi_version and the table lengths from the slot tables, then calls the entry.
  /// Returns the kernel's status (UWJIT_KERNEL_OK = 0). Never throws from inside the kernel.
  int operator()(uwjit_kernel_args& args) const noexcept {
    args.abi_version = UWJIT_KERNEL_ABI_VERSION;
    args.n_state_in = m_counts[0];
    args.n_state_out = m_counts[1];
    args.n_statics = m_counts[2];
    args.n_extents = m_counts[3];
    args.n_integrals = m_counts[4];
    args.n_params = m_counts[5];
    return m_function(&args);
  }

  [[nodiscard]] uwjit_kernel_fn function() const noexcept { return m_function; }
  [[nodiscard]] const KernelInfo& info() const noexcept { return *m_info; }

private:
  friend struct detail::KernelAccess;
  /// `code` keeps the machine code loaded.
  Kernel(uwjit_kernel_fn function, std::shared_ptr<const void> code,
         std::shared_ptr<const KernelInfo> info);

  uwjit_kernel_fn m_function;
  int m_counts[6];
  std::shared_ptr<const void> m_code;
  std::shared_ptr<const KernelInfo> m_info;
};

} // namespace uwjit::engine
