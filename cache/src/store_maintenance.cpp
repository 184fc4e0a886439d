// Store's upkeep: listing, eviction, verification and wiping. All of it walks the directory and
// touches only files whose names say they are uwjit's (entry_names.hpp).
#include <uwjit/cache/store.hpp>

#include "entry_names.hpp"
#include "file_lock.hpp"
#include "store_impl.hpp"
#include <uwjit/common/posix_file.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>

namespace uwjit::cache {

namespace {

using Clock = std::chrono::system_clock;

// The files of one key as found on disk.
struct Group {
  std::vector<std::string> files; // entry files but the lock file
  bool has_manifest = false;
  std::uint64_t bytes = 0;
  std::optional<std::int64_t> manifest_mtime_ns;
  std::int64_t newest_mtime_ns = 0;

  // LRU age: the manifest's mtime (touched on each hit); an orphan ages by its newest file, so
  // that one a writer is still completing is not the first to go.
  [[nodiscard]] Clock::time_point last_used() const {
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(manifest_mtime_ns.value_or(newest_mtime_ns))));
  }
};

struct Scan {
  std::map<Key, Group> groups; // keys with at least one entry file besides the lock
  std::vector<std::string> temporaries;
  std::vector<std::string> others;  // names uwjit never touches
  std::vector<std::string> foreign; // named like entry files but directories: reported only
};

// nullopt when the directory cannot be listed.
std::optional<Scan> scan(int dir_fd, int& error) {
  const auto listed = posix::list_names(dir_fd, error);
  if (!listed) {
    return std::nullopt;
  }
  Scan result;
  for (const auto& name : *listed) {
    const auto classified = names::classify(name);
    switch (classified.kind) {
    case names::FileKind::temporary:
      result.temporaries.push_back(name);
      continue;
    case names::FileKind::other:
      result.others.push_back(name);
      continue;
    case names::FileKind::lock:
    case names::FileKind::tag:
    case names::FileKind::housekeeping:
      continue;
    case names::FileKind::object:
    case names::FileKind::binary:
    case names::FileKind::manifest:
    case names::FileKind::source:
      break;
    }
    const auto status = posix::status_at(dir_fd, name);
    if (!status) {
      continue; // vanished meanwhile
    }
    if (status->directory) {
      // Not a file uwjit wrote, and not ours to delete: verify reports it.
      result.foreign.push_back(name);
      continue;
    }
    Group& group = result.groups[*classified.key];
    group.files.push_back(name);
    group.bytes += status->size;
    group.newest_mtime_ns = std::max(group.newest_mtime_ns, status->mtime_ns);
    if (classified.kind == names::FileKind::manifest) {
      group.has_manifest = true;
      group.manifest_mtime_ns = status->mtime_ns;
    }
  }
  std::sort(result.temporaries.begin(), result.temporaries.end());
  std::sort(result.others.begin(), result.others.end());
  std::sort(result.foreign.begin(), result.foreign.end());
  return result;
}

std::uint64_t total_of(const Scan& scanned) {
  std::uint64_t total = 0;
  for (const auto& [key, group] : scanned.groups) {
    total += group.bytes;
  }
  return total;
}

bool has_valid_tag(int dir_fd) {
  std::string text;
  const auto read = posix::read_file_at(dir_fd, std::string(names::k_tag), 4096, text);
  return read.error == 0 && names::is_uwjit_tag(text);
}

} // namespace

bool VerifyReport::ok() const noexcept {
  return orphans.empty() && foreign.empty() &&
         std::none_of(entries.begin(), entries.end(),
                      [](const auto& entry) { return entry.problem.has_value(); });
}

std::uint64_t Store::total_size() {
  int error = 0;
  const auto scanned = scan(m_impl->fd(), error);
  return scanned ? total_of(*scanned) : 0;
}

EvictReport Store::evict(EvictBy by, DryRun dry) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never evicted from");
  EvictReport report;
  int error = 0;
  const auto scanned = scan(m_impl->fd(), error);
  if (!scanned) {
    m_impl->logger.debug("cannot list {}: {}", dir().string(), posix::error_text(error));
    return report;
  }
  report.size_before = total_of(*scanned);

  std::vector<std::pair<const Key*, const Group*>> order;
  for (const auto& [key, group] : scanned->groups) {
    order.emplace_back(&key, &group);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    const auto at = a.second->last_used();
    const auto bt = b.second->last_used();
    return at != bt ? at < bt : *a.first < *b.first;
  });

  const auto cutoff = by.older_than ? std::optional(Clock::now() - *by.older_than) : std::nullopt;
  const bool over = by.max_size && report.size_before > *by.max_size;
  const std::uint64_t target = over ? *by.max_size / 100 * k_evict_target_percent +
                                          *by.max_size % 100 * k_evict_target_percent / 100
                                    : 0;
  std::uint64_t remaining = report.size_before;
  for (const auto& [key, group] : order) {
    const bool old = cutoff && group->last_used() < *cutoff;
    const bool too_big = over && remaining > target;
    if (!old && !too_big) {
      continue;
    }
    if (dry == DryRun::no) {
      // A held lock means a writer is publishing this key right now: it is not stale. The lock
      // file is created if missing: a writer that starts now must wait for our removal, or it
      // could rename its new object in just before we unlink the old one's name.
      const auto lock = m_impl->try_lock(*key, detail::CreateFile::yes);
      if (lock.state == MaintenanceLock::State::busy) {
        report.in_use.push_back(*key);
        continue;
      }
      if (m_impl->remove_entry(*key).empty()) {
        continue; // gone already, or not ours to remove (permissions)
      }
      m_impl->stats->add(Stat::evicted);
      m_impl->logger.info("evicted key={} ({} bytes)", key->hex(), group->bytes);
    }
    report.evicted.push_back(EvictedEntry{*key, group->bytes, group->last_used()});
    if (by.max_size && group->bytes > *by.max_size) {
      report.larger_than_limit.push_back(report.evicted.back());
    }
    remaining -= std::min(remaining, group->bytes);
  }
  report.size_after = remaining;
  return report;
}

std::optional<EvictReport> Store::maybe_evict(std::uint64_t max_size) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never evicted from");
  if (total_size() <= max_size) {
    return std::nullopt;
  }
  // One evicting process at a time; the others go on, since one is already trimming.
  auto attempt = detail::FileLock::acquire(m_impl->fd(), std::string(names::k_evict_lock),
                                           std::chrono::milliseconds(0), detail::CreateFile::yes);
  if (attempt.state == detail::LockState::busy) {
    return std::nullopt;
  }
  auto report = evict(EvictBy{.max_size = max_size, .older_than = std::nullopt}, DryRun::no);
  static std::atomic<bool> warned{false};
  if (!report.larger_than_limit.empty() && !warned.exchange(true)) {
    const auto& entry = report.larger_than_limit.front();
    m_impl->logger.warn("the cache size limit ({} bytes, UWJIT_CACHE_MAX_SIZE) is smaller than "
                        "entry {} alone ({} bytes): the cache cannot keep it, so every process "
                        "compiles it again",
                        max_size, entry.key.hex(), entry.bytes);
  }
  return report;
}

std::optional<Manifest> Store::read_manifest(const Key& key) {
  std::string text;
  const auto read = posix::read_file_at(m_impl->fd(), names::manifest(key), k_manifest_limit, text);
  return read.error == 0 ? parse_manifest(text) : std::nullopt;
}

std::optional<std::string> Store::read_source(const Key& key) {
  std::string text;
  const auto read = posix::read_file_at(m_impl->fd(), names::source(key), k_source_limit, text);
  return read.error == 0 ? std::optional(std::move(text)) : std::nullopt;
}

std::optional<std::vector<char>> Store::read_object(const Key& key) {
  std::vector<char> bytes;
  const auto manifest = read_manifest(key);
  const std::string name = manifest ? names::object(key, manifest->salt) : names::object(key);
  const auto read = posix::read_file_at(m_impl->fd(), name, k_source_limit, bytes);
  return read.error == 0 ? std::optional(std::move(bytes)) : std::nullopt;
}

std::vector<EntryInfo> Store::list() {
  std::vector<EntryInfo> entries;
  int error = 0;
  const auto scanned = scan(m_impl->fd(), error);
  if (!scanned) {
    return entries;
  }
  for (const auto& [key, group] : scanned->groups) {
    if (!group.has_manifest) {
      continue;
    }
    const auto manifest = read_manifest(key);
    if (!manifest) {
      continue;
    }
    entries.push_back(EntryInfo{.key = key,
                                .origin = manifest->origin,
                                .entry = manifest->entry,
                                .target = target_of(std::string_view(manifest->salt)),
                                .object_size = manifest->object_size,
                                .total_size = group.bytes,
                                .created_utc = manifest->created_utc,
                                .last_used = group.last_used(),
                                .compile_ms = manifest->compile_ms,
                                .uwjit_version = manifest->uwjit_version});
  }
  return entries;
}

VerifyReport Store::verify(Fix fix) {
  UWJIT_ASSERT(!m_impl->site || fix == Fix::no, "a read-only site cache is never fixed");
  VerifyReport report;
  int error = 0;
  const auto scanned = scan(m_impl->fd(), error);
  if (!scanned) {
    m_impl->logger.warn("cannot list {}: {}", dir().string(), posix::error_text(error));
    return report;
  }
  // The files of `key` that are still there, for `remaining`.
  auto still_there = [this](const Key& key) {
    std::vector<std::string> names;
    for (const auto& name : names::entry_files(key)) {
      if (const auto status = posix::status_at(m_impl->fd(), name); status && !status->directory) {
        names.push_back(name);
      }
    }
    return names;
  };
  const Expected expected{.salt = nullptr, .slots = nullptr, .source_matches_key = true};
  for (const auto& [key, group] : scanned->groups) {
    if (!group.has_manifest) {
      // An object or source without a manifest: a writer died between its renames, or one is
      // between them right now (then it holds the key's lock).
      auto lock =
          fix == Fix::yes ? m_impl->try_lock(key, detail::CreateFile::yes) : MaintenanceLock{};
      const bool still_orphan = !posix::status_at(m_impl->fd(), names::manifest(key));
      if (!still_orphan) {
        continue;
      }
      report.orphans.insert(report.orphans.end(), group.files.begin(), group.files.end());
      if (fix == Fix::yes) {
        if (lock.state != MaintenanceLock::State::busy) {
          const auto removed = m_impl->remove_entry(key);
          report.removed.insert(report.removed.end(), removed.begin(), removed.end());
        }
        const auto left = still_there(key);
        report.remaining.insert(report.remaining.end(), left.begin(), left.end());
      }
      continue;
    }
    EntryVerdict verdict{.key = key, .problem = std::nullopt, .detail = {}, .removed = false};
    auto check = m_impl->check_entry(key, expected);
    if (check.status == LookupStatus::rejected && fix == Fix::yes) {
      const auto lock = m_impl->try_lock(key, detail::CreateFile::yes);
      if (lock.state == MaintenanceLock::State::held) {
        check = m_impl->check_entry(key, expected);
      }
      if (check.status == LookupStatus::rejected) {
        if (lock.state == MaintenanceLock::State::busy) {
          check.detail += "; in use by a writer, left alone";
        } else {
          const auto removed = m_impl->remove_entry(key);
          verdict.removed = !removed.empty();
          report.removed.insert(report.removed.end(), removed.begin(), removed.end());
        }
        const auto left = still_there(key);
        report.remaining.insert(report.remaining.end(), left.begin(), left.end());
      }
    }
    if (check.status == LookupStatus::miss) {
      continue; // removed by someone else meanwhile
    }
    verdict.problem = check.reason;
    verdict.detail = check.detail;
    if (!verdict.problem) {
      // A sound entry with a damaged binary: only the binary goes (made again from the PTX).
      if (const std::string bad = binary_problem(key); !bad.empty()) {
        verdict.problem = RejectReason::checksum_mismatch;
        verdict.detail = names::binary(key) + ": " + bad;
        if (fix == Fix::yes && ::unlinkat(m_impl->fd(), names::binary(key).c_str(), 0) == 0) {
          report.removed.push_back(names::binary(key));
        }
      }
    }
    report.entries.push_back(std::move(verdict));
  }
  std::sort(report.orphans.begin(), report.orphans.end());
  report.foreign = scanned->foreign;
  if (fix == Fix::yes) {
    report.remaining.insert(report.remaining.end(), scanned->foreign.begin(),
                            scanned->foreign.end());
    std::sort(report.remaining.begin(), report.remaining.end());
  }
  const auto cutoff = Clock::now() - k_temporary_grace;
  for (const auto& name : scanned->temporaries) {
    const auto status = posix::status_at(m_impl->fd(), name);
    if (status && !status->directory && status->mtime() < cutoff) {
      report.stale_temporaries.push_back(name);
    }
  }
  if (fix == Fix::yes) {
    const auto removed = clean_temporaries(k_temporary_grace);
    report.removed.insert(report.removed.end(), removed.begin(), removed.end());
  }
  return report;
}

WipeReport Store::wipe(DryRun dry) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never wiped");
  const int fd = m_impl->fd();
  if (!has_valid_tag(fd)) {
    throw Error(ErrorKind::usage,
                format("cache directory \"{}\" has no CACHEDIR.TAG marker written by uwjit: not "
                       "wiping it (it may not be a uwjit cache)",
                       dir().string()));
  }
  int error = 0;
  const auto listed = posix::list_names(fd, error);
  if (!listed) {
    posix::throw_io(format("cannot list cache directory \"{}\"", dir().string()), error);
  }
  std::map<Key, std::vector<std::string>> entries; // entry files but lock files, by key
  std::vector<std::string> plain;                  // temporaries and housekeeping files
  std::vector<std::string> locks;
  WipeReport report;
  for (const auto& name : *listed) {
    const auto classified = names::classify(name);
    switch (classified.kind) {
    case names::FileKind::object:
    case names::FileKind::binary:
    case names::FileKind::manifest:
    case names::FileKind::source:
      entries[*classified.key].push_back(name);
      break;
    case names::FileKind::temporary:
    case names::FileKind::housekeeping:
      plain.push_back(name);
      break;
    case names::FileKind::lock:
      locks.push_back(name);
      break;
    case names::FileKind::tag:
      break; // the directory stays a marked cache
    case names::FileKind::other:
      report.kept.push_back(name);
      break;
    }
  }
  // Removes `name` unless it is a directory (then not ours); false when it is not removed.
  auto remove = [&](const std::string& name) {
    const auto status = posix::status_at(fd, name);
    if (!status) {
      return true; // gone meanwhile
    }
    if (status->directory) {
      report.kept.push_back(name);
      return false;
    }
    if (dry == DryRun::yes || posix::remove_at(fd, name)) {
      report.removed.push_back(name);
      report.bytes += status->size;
      return true;
    }
    report.failed.push_back(format("{}: {}", name, posix::error_text(errno)));
    return false;
  };
  for (auto& [key, files] : entries) {
    // Under the key's lock, manifest first: a writer publishing this key right now is left
    // alone, and no reader finds a manifest whose object is gone.
    MaintenanceLock lock;
    if (dry == DryRun::no) {
      lock = m_impl->try_lock(key, detail::CreateFile::yes);
      if (lock.state == MaintenanceLock::State::busy) {
        report.in_use.insert(report.in_use.end(), files.begin(), files.end());
        continue;
      }
    }
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
      const bool a_manifest = names::classify(a).kind == names::FileKind::manifest;
      const bool b_manifest = names::classify(b).kind == names::FileKind::manifest;
      return a_manifest != b_manifest ? a_manifest : a < b;
    });
    for (const auto& name : files) {
      remove(name);
    }
  }
  std::sort(plain.begin(), plain.end());
  const auto cutoff = Clock::now() - k_temporary_grace;
  for (const auto& name : plain) {
    // A young temporary may be a live writer's next file (always a regular file): removing it
    // would fail its publish.
    const auto status = posix::status_at(fd, name);
    if (dry == DryRun::no && names::classify(name).kind == names::FileKind::temporary && status &&
        status->regular && status->mtime() >= cutoff) {
      report.in_use.push_back(name);
      continue;
    }
    remove(name);
  }
  // Lock files last, and only those nobody holds: unlinking a held one would let a second
  // writer lock a new file of the same name while the first is still publishing.
  if (dry == DryRun::no) {
    // Locks taken above created lock files the first listing did not see.
    if (const auto relisted = posix::list_names(fd, error)) {
      locks.clear();
      for (const auto& name : *relisted) {
        if (names::classify(name).kind == names::FileKind::lock) {
          locks.push_back(name);
        }
      }
    }
  }
  std::sort(locks.begin(), locks.end());
  for (const auto& name : locks) {
    if (dry == DryRun::yes) {
      remove(name);
      continue;
    }
    auto attempt =
        detail::FileLock::acquire(fd, name, std::chrono::milliseconds(0), detail::CreateFile::no);
    if (attempt.state == detail::LockState::busy) {
      report.in_use.push_back(name);
      continue;
    }
    remove(name);
  }
  std::sort(report.kept.begin(), report.kept.end());
  if (dry == DryRun::no) {
    m_impl->logger.info("wiped {}: removed {} files ({} bytes), kept {} other files, {} in use",
                        dir().string(), report.removed.size(), report.bytes, report.kept.size(),
                        report.in_use.size());
  }
  return report;
}

} // namespace uwjit::cache
