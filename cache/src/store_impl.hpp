// The store's shared private state and the entry check that lookup and verify both use.
#pragma once

#include <uwjit/cache/store.hpp>

#include "file_lock.hpp"
#include <uwjit/common/posix_file.hpp>

#include <uwjit/common/log.hpp>

#include <mutex>
#include <set>

namespace uwjit::cache {

/// A manifest larger than this is not a manifest: refuse it rather than read it.
inline constexpr std::uint64_t k_manifest_limit = std::uint64_t{1} << 20;
/// Sources are read only for people (inspect) and verify.
inline constexpr std::uint64_t k_source_limit = std::uint64_t{256} << 20;

/// What an entry is compared with; null members are not compared.
struct Expected {
  const Salt* salt = nullptr;
  const std::vector<SlotTable>* slots = nullptr;
  /// verify: the stored source must hash, with the stored salt, to the key.
  bool source_matches_key = false;
};

/// The verdict on one entry, with what a hit needs.
struct EntryCheck {
  LookupStatus status = LookupStatus::miss;
  std::optional<RejectReason> reason;
  std::string detail;
  std::vector<char> object;
  std::optional<Manifest> manifest;
  posix::UniqueFd manifest_fd; ///< kept open to touch the files of a hit
  posix::UniqueFd object_fd;
  posix::FileStatus manifest_status; ///< identifies the manifest that was judged
};

/// The key lock as a maintenance task needs it: held by us (or this thread already), not
/// available (run unlocked), or busy (someone is writing: leave the entry alone).
struct MaintenanceLock {
  enum class State { held, unlocked, busy } state = State::unlocked;
  std::unique_ptr<detail::FileLock> lock;
};

struct Store::Impl {
  std::filesystem::path dir;
  posix::UniqueFd dir_fd;
  Stats* stats = nullptr;
  log::Logger logger;
  std::optional<std::string> unwritable; ///< why the directory cannot be written, from open
  bool site = false;                     ///< a read-only site cache (open_site)

  // Rejections already logged and counted, by manifest identity: a bad entry left to a lock
  // holder may be seen again by the next lookup, but is reported once.
  std::mutex reported_mutex;
  std::set<std::tuple<std::string, std::uint64_t, std::uint64_t, std::int64_t, std::uint64_t>>
      reported;

  [[nodiscard]] int fd() const noexcept { return dir_fd.get(); }

  /// Keeps `dir` when it is uwjit's or empty (marking it), else moves to its subdirectory uwjit/
  /// (created with mode 0700, marked when empty). Throws Error(io) when that subdirectory
  /// cannot be made, is not trusted, or holds files that are not uwjit's either.
  void use_owned_directory();

  /// Reads and verifies the entry of `key`. Never throws for I/O.
  [[nodiscard]] EntryCheck check_entry(const Key& key, const Expected& expected) const;

  /// Removes the entry's files (not its lock file), manifest first so that no reader sees an
  /// entry without its object; returns the names removed.
  std::vector<std::string> remove_entry(const Key& key) const;

  /// The key's lock without waiting, for clean-ups. `create` says whether to create the lock
  /// file (not for eviction of entries nobody is writing).
  [[nodiscard]] MaintenanceLock try_lock(const Key& key, detail::CreateFile create) const;

  /// Logs and counts a rejection unless this very manifest was reported before.
  void report_rejection(const Key& key, const EntryCheck& check, std::string_view outcome);
};

} // namespace uwjit::cache
