// The engine's insides, shared by its rooms: the request logic (request.cpp: three tiers, single
// flight per key), the MPI collective request protocol (collective_request.cpp) and the public
// front (engine.cpp).
#pragma once

#include "dumps.hpp"
#include "timing.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/cache/manifest.hpp>
#include <uwjit/cache/stats.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/comm/comm.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/jit.hpp>
#include <uwjit/engine/kernel.hpp>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace uwjit::engine {

namespace detail {

/// A loaded kernel as the engine keeps it.
struct Loaded {
  uwjit_kernel_fn entry;
  std::shared_ptr<const void> code;
  std::shared_ptr<const KernelInfo> info;
  std::shared_ptr<const std::vector<char>> object; // kept to hand to other ranks
};

/// The one place that may call Kernel's private constructor.
struct KernelAccess {
  [[nodiscard]] static Kernel make(const Loaded& loaded) {
    return Kernel(loaded.entry, loaded.code, loaded.info);
  }
};

/// The Kernel a user gets for a loaded kernel.
[[nodiscard]] inline Kernel to_kernel(const Loaded& loaded) {
  return KernelAccess::make(loaded);
}

/// A kernel's compiler and the salt its keys are computed under: the engine's, or those of a
/// kernel that carries its own options (codegen::KernelOptions).
struct Flavour {
  explicit Flavour(const CompileOptions& options, const Target& target = {});
  /// What `source`'s key hashes with the salt, and what the cache stores as its source: the
  /// canonical text, and after it, in a comment, its included_headers() when it has any.
  /// Error(compile) as included_headers.
  [[nodiscard]] std::string keyed_text(const codegen::KernelSource& source) const;
  /// The key of `source` compiled so: Key::of(keyed_text(source), salt).
  [[nodiscard]] cache::Key key_of(const codegen::KernelSource& source) const;
  Compiler compiler;
  cache::Salt salt;
  std::string salt_text;
  std::string salt_digest;
};

/// A GPU kernel's PTX as the engine keeps it.
struct Ptx {
  std::shared_ptr<const std::string> text;
  std::shared_ptr<const KernelInfo> info;
};

/// The manifest's slot tables of a kernel's slots.
[[nodiscard]] std::vector<cache::SlotTable> slot_tables(const codegen::SlotTables& slots);

/// A fresh KernelInfo for `source` under `key`, served by `tier`.
[[nodiscard]] std::shared_ptr<KernelInfo> new_info(const codegen::KernelSource& source,
                                                   const cache::Key& key, Tier tier);

} // namespace detail

struct Engine::Impl {
  using Loaded = detail::Loaded;
  using Clock = detail::Clock;

  explicit Impl(EngineOptions engine_options);

  // request.cpp: the three tiers for one request, with single flight per key in this process.
  Loaded request(const codegen::KernelSource& source, const cache::Key& key);
  // The compiler and salt of a kernel: the engine's own unless the kernel carries options.
  const detail::Flavour& flavour(const codegen::KernelSource& source);
  const detail::Flavour& flavour(const codegen::KernelSource& source, const Target& target);
  // ptx_request.cpp: the three tiers for a GPU target's PTX, single flight per key.
  detail::Ptx request_ptx(const codegen::KernelSource& source, const cache::Key& key,
                          const Target& target);
  Loaded load(const codegen::KernelSource& source, const cache::Key& key,
              std::span<const char> object, std::shared_ptr<KernelInfo> info,
              Clock::time_point start);
  // Publishes a cold compile made under `lock`, unless another process held the lock past the
  // time-out; says in `info` what became of it.
  void publish_cold(const codegen::KernelSource& source, const cache::Key& key, KernelInfo& info,
                    const CompiledObject& object, const cache::KeyLock& lock,
                    const detail::Flavour& f);
  // Error(io) unless `source`'s key under `f` is still `key` (its headers unchanged).
  void check_headers_unchanged(const codegen::KernelSource& source, const cache::Key& key,
                               const detail::Flavour& f);
  cache::PublishOutcome publish(const codegen::KernelSource& source, const cache::Key& key,
                                const KernelInfo& info, const CompiledObject& object);
  cache::PublishOutcome publish(const codegen::KernelSource& source, const cache::Key& key,
                                const KernelInfo& info, const CompiledObject& object,
                                const detail::Flavour& f);

  // collective_request.cpp: the MPI protocol (key agreement, rank 0 fetches and broadcasts,
  // every rank adopts).
  std::vector<Kernel> collective(std::span<const codegen::KernelSource> sources,
                                 comm::Collectives& comm);
  Loaded adopt(const codegen::KernelSource& source, const cache::Key& key,
               const std::string& object, const KernelInfo& root_info, comm::Collectives& comm);
  // The same protocol for a GPU target's PTX: the text is broadcast, adopted as this process's
  // memory entry and published by one rank per node.
  std::vector<detail::Ptx> collective_ptx(std::span<const codegen::KernelSource> sources,
                                          const Target& target, comm::Collectives& comm);
  detail::Ptx adopt_ptx(const codegen::KernelSource& source, const cache::Key& key,
                        const Target& target, const std::string& text, const KernelInfo& root_info,
                        comm::Collectives& comm);
  // The protocol, for a kind of result (collective_request.cpp: HostKernels, GpuPtx).
  struct HostKernels;
  struct GpuPtx;
  template <class Kind>
  std::vector<typename Kind::Result> run_collective(Kind& kind,
                                                    std::span<const codegen::KernelSource> sources,
                                                    comm::Collectives& comm);
  template <class Kind>
  std::string fetch_needed(Kind& kind, std::span<const codegen::KernelSource> sources,
                           const std::vector<cache::Key>& keys, const std::vector<bool>& needed,
                           std::vector<std::optional<typename Kind::Result>>& fetched);
  // Every rank raises the same Error(collective), naming the ranks' keys, where their sources
  // and salts (`salt_text`, this rank's) differ.
  [[noreturn]] void raise_disagreement(std::span<const codegen::KernelSource> sources,
                                       std::size_t i, const std::vector<std::string>& rank_keys,
                                       const std::string& salt_text, comm::Collectives& comm);

  EngineOptions options;
  detail::Flavour base;
  std::mutex flavours_mutex;
  std::map<std::string, std::unique_ptr<detail::Flavour>> flavours; // by options_text
  std::shared_ptr<Jit> jit;
  std::string no_store_reason; // why there is no store, when there is none
  detail::Dumps dumps;
  cache::Stats stats;
  std::optional<cache::Store> store;
  std::vector<cache::Store> sites; // read-only site caches, consulted in order after `store`
  std::uint64_t max_size = cache::k_default_max_cache_size;
  log::Logger logger = log::get("uwjit.engine");
  std::mutex mutex;
  // One slot per key: the first request fills it, later ones share the result (single flight).
  std::map<cache::Key, std::shared_future<Loaded>> loaded;
  std::map<cache::Key, std::shared_future<detail::Ptx>> ptx_loaded; // GPU targets' PTX, as loaded
  std::mutex images_mutex;
  // Cubins by key and loader ("cuda driver 12040 sm_90"): what cuda_image made or found.
  std::map<std::pair<cache::Key, std::string>, std::shared_ptr<const std::vector<char>>> images;

  // Single flight per key within this process: the first request of `key` runs `build` while
  // later ones wait for its result or its error; a failure frees the slot, so a later request
  // tries again. Returns the result and whether this call built it (else it is a memory hit).
  template <class T, class Build>
  std::pair<T, bool> single_flight(std::map<cache::Key, std::shared_future<T>>& slots,
                                   const cache::Key& key, Build&& build) {
    std::shared_future<T> pending;
    std::promise<T> promise;
    bool owner = false;
    {
      std::lock_guard lock(mutex);
      auto [slot, inserted] = slots.try_emplace(key);
      if (inserted) {
        slot->second = promise.get_future().share();
        owner = true;
      }
      pending = slot->second;
    }
    if (owner) {
      try {
        promise.set_value(build());
      } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard lock(mutex);
        slots.erase(key);
        throw;
      }
    }
    return {pending.get(), owner};
  }

  // The result for `key` in `slots` if this process has it already (a finished request).
  template <class T>
  bool holds(std::map<cache::Key, std::shared_future<T>>& slots, const cache::Key& key) {
    std::lock_guard lock(mutex);
    const auto slot = slots.find(key);
    if (slot == slots.end() ||
        slot->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return false;
    }
    try {
      (void)slot->second.get();
      return true;
    } catch (...) {
      return false;
    }
  }

  // What a memory hit reports: the built request's info, as tier memory with nothing compiled,
  // published or loaded by this request, counted in the stats.
  std::shared_ptr<KernelInfo> memory_hit(const KernelInfo& built, Clock::time_point start);

private:
  // request.cpp
  void open_store();
  Loaded build(const codegen::KernelSource& source, const cache::Key& key);
  std::optional<Loaded> try_disk(cache::Store& from, const codegen::KernelSource& source,
                                 const cache::Key& key, const std::vector<cache::SlotTable>& tables,
                                 const std::shared_ptr<KernelInfo>& info, Clock::time_point start);
  // The site caches in order: the first verified entry that loads, or nullopt.
  std::optional<Loaded> try_sites(const codegen::KernelSource& source, const cache::Key& key,
                                  const std::vector<cache::SlotTable>& tables,
                                  const std::shared_ptr<KernelInfo>& info, Clock::time_point start);
  void open_sites();
  void open_cache_dir();
  CompiledObject compile(const codegen::KernelSource& source, const cache::Key& key,
                         KernelInfo& info);
  void check_entry(const codegen::KernelSource& source, const std::string& entry,
                   std::span<const char> object);
  // ptx_request.cpp
  detail::Ptx build_ptx(const codegen::KernelSource& source, const cache::Key& key,
                        const Target& target);
  std::optional<detail::Ptx> try_disk_ptx(cache::Store& from, const codegen::KernelSource& source,
                                          const cache::Key& key, const Target& target,
                                          const std::shared_ptr<KernelInfo>& info,
                                          Clock::time_point start);
  std::optional<detail::Ptx> try_sites_ptx(const codegen::KernelSource& source,
                                           const cache::Key& key, const Target& target,
                                           const std::shared_ptr<KernelInfo>& info,
                                           Clock::time_point start);

public:
  // Whether the cache directory or a site cache holds a verified entry of `key` (a node leader
  // then need not publish a copy of what it received).
  bool on_disk(const cache::Key& key, const cache::Salt& salt,
               const std::vector<cache::SlotTable>& tables);
};

} // namespace uwjit::engine
