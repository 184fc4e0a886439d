#include <uwjit/cache/stats.hpp>

#include <limits>

namespace uwjit::cache {

std::string_view to_string(Stat stat) noexcept {
  switch (stat) {
  case Stat::memory_hits:
    return "memory_hits";
  case Stat::disk_hits:
    return "disk_hits";
  case Stat::compiles:
    return "compiles";
  case Stat::rejected:
    return "rejected";
  case Stat::published:
    return "published";
  case Stat::publish_failed:
    return "publish_failed";
  case Stat::evicted:
    return "evicted";
  case Stat::lock_waits:
    return "lock_waits";
  case Stat::lock_timeouts:
    return "lock_timeouts";
  case Stat::rejected_corrupt_manifest:
    return "rejected_corrupt_manifest";
  case Stat::rejected_format_mismatch:
    return "rejected_format_mismatch";
  case Stat::rejected_key_mismatch:
    return "rejected_key_mismatch";
  case Stat::rejected_salt_mismatch:
    return "rejected_salt_mismatch";
  case Stat::rejected_missing_object:
    return "rejected_missing_object";
  case Stat::rejected_truncated_object:
    return "rejected_truncated_object";
  case Stat::rejected_checksum_mismatch:
    return "rejected_checksum_mismatch";
  case Stat::rejected_slot_mismatch:
    return "rejected_slot_mismatch";
  case Stat::site_hits:
    return "site_hits";
  }
  return "unknown";
}

std::optional<Stat> parse_stat(std::string_view name) noexcept {
  for (const auto stat : k_all_stats) {
    if (to_string(stat) == name) {
      return stat;
    }
  }
  return std::nullopt;
}

Stat rejected_stat(RejectReason reason) noexcept {
  // The per-reason counters follow RejectReason's order from rejected_corrupt_manifest on.
  return static_cast<Stat>(static_cast<int>(Stat::rejected_corrupt_manifest) +
                           static_cast<int>(reason));
}

bool StatsSnapshot::empty() const noexcept {
  for (const auto value : m_values) {
    if (value != 0) {
      return false;
    }
  }
  return true;
}

StatsSnapshot& StatsSnapshot::operator+=(const StatsSnapshot& other) noexcept {
  constexpr auto k_max = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < k_stat_count; ++i) {
    m_values[i] = other.m_values[i] > k_max - m_values[i] ? k_max : m_values[i] + other.m_values[i];
  }
  return *this;
}

StatsSnapshot operator-(const StatsSnapshot& a, const StatsSnapshot& b) noexcept {
  StatsSnapshot out;
  for (std::size_t i = 0; i < k_stat_count; ++i) {
    out.m_values[i] = a.m_values[i] > b.m_values[i] ? a.m_values[i] - b.m_values[i] : 0;
  }
  return out;
}

StatsSnapshot Stats::snapshot() const noexcept {
  StatsSnapshot out;
  for (const auto stat : k_all_stats) {
    out.set(stat, get(stat));
  }
  return out;
}

Stats& process_stats() noexcept {
  static Stats instance;
  return instance;
}

} // namespace uwjit::cache
