// Store's persisted counters: stats.json, merged under a flock on stats.lock.
#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include "entry_names.hpp"
#include "file_lock.hpp"
#include "store_impl.hpp"
#include <uwjit/common/posix_file.hpp>

#include <nlohmann/json.hpp>

#include <limits>

namespace uwjit::cache {

namespace {

constexpr int k_stats_format = 1;

// Never fails: a missing, unreadable or foreign file reads as no counters, so that a damaged
// stats file heals at the next flush instead of blocking every flush after it.
nlohmann::json read_stats_json(int dir_fd) {
  std::string text;
  const auto read =
      posix::read_file_at(dir_fd, std::string(names::k_stats), k_manifest_limit, text);
  if (read.error != 0) {
    return nlohmann::json::object();
  }
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("counters") || !json["counters"].is_object()) {
    return nlohmann::json::object();
  }
  return json;
}

} // namespace

void Store::flush_stats(const StatsSnapshot& delta) noexcept {
  if (delta.empty() || m_impl->site) { // a site cache's counters are its writers'
    return;
  }
  try {
    const int fd = m_impl->fd();
    // Stats are worth a short wait, not more: a lost delta only makes the numbers low.
    auto attempt =
        detail::FileLock::acquire(fd, std::string(names::k_stats_lock),
                                  std::chrono::milliseconds(2000), detail::CreateFile::yes);
    if (attempt.state == detail::LockState::busy) {
      m_impl->logger.debug("stats not saved: stats.lock stayed busy");
      return;
    }
    auto json = read_stats_json(fd);
    auto counters = json.contains("counters") ? json["counters"] : nlohmann::json::object();
    for (const auto stat : k_all_stats) {
      const auto added = delta.get(stat);
      if (added == 0) {
        continue;
      }
      const std::string name(to_string(stat));
      std::uint64_t value = 0;
      if (counters.contains(name) && counters[name].is_number_unsigned()) {
        value = counters[name].get<std::uint64_t>();
      }
      constexpr auto k_max = std::numeric_limits<std::uint64_t>::max();
      counters[name] = added > k_max - value ? k_max : value + added;
    }
    // Unknown counters (from a newer uwjit) are kept as they are.
    json["format"] = k_stats_format;
    json["counters"] = std::move(counters);
    // Not fsynced: counters are not worth a disk flush on every update.
    posix::AtomicFile file(fd, std::string(names::k_stats),
                           {.mode = 0644, .durability = posix::Durability::buffered});
    file.write(json.dump(2) + "\n");
    file.commit();
  } catch (const std::exception& e) {
    m_impl->logger.debug("stats not saved in {}: {}", dir().string(), e.what());
  }
}

void Store::flush_stats(const Stats& delta) noexcept {
  flush_stats(delta.snapshot());
}

StatsSnapshot Store::read_stats() {
  StatsSnapshot snapshot;
  try {
    const auto json = read_stats_json(m_impl->fd());
    if (!json.contains("counters")) {
      return snapshot;
    }
    for (const auto& [name, value] : json["counters"].items()) {
      if (const auto stat = parse_stat(name); stat && value.is_number_unsigned()) {
        snapshot.set(*stat, value.get<std::uint64_t>());
      }
    }
  } catch (const std::exception& e) {
    m_impl->logger.debug("stats not read from {}: {}", dir().string(), e.what());
  }
  return snapshot;
}

} // namespace uwjit::cache
