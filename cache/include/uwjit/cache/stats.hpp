// Counters of cache and engine decisions, per process and persisted in the cache directory.
#pragma once

#include <uwjit/cache/reject_reason.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace uwjit::cache {

/// One counter. The ids (the enum's values) and the names (to_string) are stable: they are
/// printed by `uwjit cache stats` and stored in stats.json. New counters get new ids at the end.
enum class Stat : int {
  memory_hits = 0,    ///< requests served from the in-process map (counted by the engine)
  disk_hits = 1,      ///< requests served by a verified disk entry
  compiles = 2,       ///< cold compiles (counted by the engine)
  rejected = 3,       ///< disk entries refused and removed, all reasons together
  published = 4,      ///< entries written to disk
  publish_failed = 5, ///< entries that could not be written (read-only, full, no permission)
  evicted = 6,        ///< entries removed by eviction
  lock_waits = 7,     ///< key locks that were busy at first and had to be waited for
  lock_timeouts = 8,  ///< key locks given up after the time-out
  rejected_corrupt_manifest = 9, ///< one counter per RejectReason, in its order
  rejected_format_mismatch = 10,
  rejected_key_mismatch = 11,
  rejected_salt_mismatch = 12,
  rejected_missing_object = 13,
  rejected_truncated_object = 14,
  rejected_checksum_mismatch = 15,
  rejected_slot_mismatch = 16,
  site_hits = 17, ///< of disk_hits, those served by a read-only site cache (Store::open_site)
};

inline constexpr std::size_t k_stat_count = 18;

/// Every counter, in id order.
inline constexpr std::array<Stat, k_stat_count> k_all_stats{
    Stat::memory_hits,
    Stat::disk_hits,
    Stat::compiles,
    Stat::rejected,
    Stat::published,
    Stat::publish_failed,
    Stat::evicted,
    Stat::lock_waits,
    Stat::lock_timeouts,
    Stat::rejected_corrupt_manifest,
    Stat::rejected_format_mismatch,
    Stat::rejected_key_mismatch,
    Stat::rejected_salt_mismatch,
    Stat::rejected_missing_object,
    Stat::rejected_truncated_object,
    Stat::rejected_checksum_mismatch,
    Stat::rejected_slot_mismatch,
    Stat::site_hits,
};

/// The counter's stable name, e.g. "disk_hits", "rejected_truncated_object". Thread-safe.
[[nodiscard]] std::string_view to_string(Stat stat) noexcept;

/// The counter named `name`, or nullopt. Thread-safe.
[[nodiscard]] std::optional<Stat> parse_stat(std::string_view name) noexcept;

/// The per-reason counter of `reason` (rejected_<reason>). Thread-safe.
[[nodiscard]] Stat rejected_stat(RejectReason reason) noexcept;

/// A copy of every counter's value at one moment. A plain value; not synchronised.
class StatsSnapshot {
public:
  [[nodiscard]] std::uint64_t get(Stat stat) const noexcept {
    return m_values[static_cast<std::size_t>(stat)];
  }
  void set(Stat stat, std::uint64_t value) noexcept {
    m_values[static_cast<std::size_t>(stat)] = value;
  }
  /// True when every counter is zero.
  [[nodiscard]] bool empty() const noexcept;
  /// Adds `other` counter by counter (saturating).
  StatsSnapshot& operator+=(const StatsSnapshot& other) noexcept;
  /// `a` minus `b` counter by counter, never below zero: what happened between two snapshots.
  friend StatsSnapshot operator-(const StatsSnapshot& a, const StatsSnapshot& b) noexcept;
  friend bool operator==(const StatsSnapshot&, const StatsSnapshot&) = default;

private:
  std::array<std::uint64_t, k_stat_count> m_values{};
};

/// A set of counters that many threads may bump at once. Thread-safe; not copyable.
class Stats {
public:
  Stats() = default;
  Stats(const Stats&) = delete;
  Stats& operator=(const Stats&) = delete;

  /// Adds `n` to `stat`. Thread-safe, lock-free.
  void add(Stat stat, std::uint64_t n = 1) noexcept {
    m_counters[static_cast<std::size_t>(stat)].fetch_add(n, std::memory_order_relaxed);
  }
  /// The current value of `stat`. Thread-safe.
  [[nodiscard]] std::uint64_t get(Stat stat) const noexcept {
    return m_counters[static_cast<std::size_t>(stat)].load(std::memory_order_relaxed);
  }
  /// Every counter's value (each read atomically; the set is not one atomic moment). Thread-safe.
  [[nodiscard]] StatsSnapshot snapshot() const noexcept;

private:
  std::array<std::atomic<std::uint64_t>, k_stat_count> m_counters{};
};

/// The counters of this process: what a Store counts into unless given others. Thread-safe.
[[nodiscard]] Stats& process_stats() noexcept;

} // namespace uwjit::cache
