// Store: the verified, atomic, locked cache directory: lookup (the checks a disk hit must pass),
// publish (the per-key lock, temporaries, fsync, rename, the manifest last) and the open-time
// trust and ownership rules. One idea, a lookup and the publish it must agree with, kept in one
// file on purpose although it is over 700 lines: split, each half would have to restate the
// other's naming, locking and fsync order. Upkeep (verify, prune, wipe) lives in
// store_maintenance.cpp.
#include <uwjit/cache/store.hpp>

#include "entry_names.hpp"
#include "fault_point.hpp"
#include "file_lock.hpp"
#include "manifest_json.hpp"
#include "store_impl.hpp"
#include <uwjit/common/posix_file.hpp>

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/common/version.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace uwjit::cache {

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// mkdir -p with mode 0700 for every directory it creates (the XDG specification asks for 0700;
// kernels are code, and other users must not plant objects in our cache).
void make_directories(const std::filesystem::path& dir) {
  std::filesystem::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      continue;
    }
    const int error = errno;
    struct stat st{};
    if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      continue;
    }
    posix::throw_io(
        format("cache directory \"{}\": cannot create \"{}\"", dir.string(), prefix.string()),
        error == EEXIST ? ENOTDIR : error);
  }
}

std::string describe_salt_difference(const std::string& stored, const Salt& wanted) {
  const auto parsed = Salt::parse(stored);
  if (!parsed) {
    return "the entry's salt is malformed";
  }
  const auto found = differences(wanted, *parsed);
  if (found.empty()) {
    return "the salt's components are in another order";
  }
  const SaltDifference& first = found.front(); // left: here, right: the entry
  if (!first.right) {
    return format("salt component \"{}\" is missing in the entry", first.name);
  }
  if (!first.left) {
    return format("salt component \"{}\" is only in the entry", first.name);
  }
  return format("salt component \"{}\" is \"{}\" in the entry, \"{}\" here", first.name,
                *first.right, *first.left);
}

std::string describe_slot_difference(const std::vector<SlotTable>& stored,
                                     const std::vector<SlotTable>& wanted) {
  for (std::size_t i = 0; i < std::max(stored.size(), wanted.size()); ++i) {
    if (i >= stored.size()) {
      return format("slot table \"{}\" is missing in the entry", wanted[i].name);
    }
    if (i >= wanted.size()) {
      return format("slot table \"{}\" is only in the entry", stored[i].name);
    }
    if (stored[i] != wanted[i]) {
      return format("slot table \"{}\" is [{}] in the entry, \"{}\" is [{}] here", stored[i].name,
                    join(stored[i].slots), wanted[i].name, join(wanted[i].slots));
    }
  }
  return "slot tables differ";
}

// Touching needs write access or ownership; a read-only cache still serves hits, it just
// cannot record them for LRU.
void touch(const posix::UniqueFd& fd) noexcept {
  if (fd) {
    (void)::futimens(fd.get(), nullptr);
  }
}

// Whoever can write the cache directory can put code into every process that uses it: a
// directory that others may write, or that another user owns, is refused unless the user says
// it is a trusted shared cache (e.g. a read-only site cache kept by an administrator).
void check_trusted(int dir_fd, const std::filesystem::path& dir, const log::Logger& logger) {
  // Read whether or not it matters here, so that a bad value is reported on every machine.
  const bool trust_shared = env::get_bool(env::vars::cache_trust_shared);
  struct stat st{};
  if (::fstat(dir_fd, &st) != 0) {
    posix::throw_io(format("cache directory \"{}\": cannot examine", dir.string()), errno);
  }
  std::string why;
  if (st.st_uid != ::geteuid()) {
    why = format("it is owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8] = {};
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = format("it is writable by {} (mode {})",
                 (st.st_mode & S_IWOTH) != 0 ? "other users" : "its group", mode);
  } else {
    return;
  }
  if (trust_shared) {
    logger.debug("cache directory {}: {}, trusted by {}=1", dir.string(), why,
                 k_trust_shared_variable);
    return;
  }
  throw Error(ErrorKind::io,
              format("cache directory \"{}\" is refused: {}; whoever can write it can run code in "
                     "this process (use a directory of your own with mode 0700, or set {}=1 to "
                     "trust a shared cache)",
                     dir.string(), why, k_trust_shared_variable));
}

// A site cache is named by whoever sets UWJIT_CACHE_SITE_DIR: that trusts its owner (root, a
// project account), as a directory on PATH is trusted. Its writers are the question: a directory
// that its group or others can write is refused unless the user trusts shared caches.
void check_site_trusted(int dir_fd, const std::filesystem::path& dir, const log::Logger& logger) {
  const bool trust_shared = env::get_bool(env::vars::cache_trust_shared);
  struct stat st{};
  if (::fstat(dir_fd, &st) != 0) {
    posix::throw_io(format("site cache \"{}\": cannot examine", dir.string()), errno);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    if (st.st_uid != ::geteuid()) {
      logger.debug("site cache {}: owned by uid {}, trusted as named in UWJIT_CACHE_SITE_DIR",
                   dir.string(), st.st_uid);
    }
    return;
  }
  char mode[8] = {};
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  const std::string why = format("it is writable by {} (mode {})",
                                 (st.st_mode & S_IWOTH) != 0 ? "other users" : "its group", mode);
  if (trust_shared) {
    logger.debug("site cache {}: {}, trusted by {}=1", dir.string(), why, k_trust_shared_variable);
    return;
  }
  throw Error(ErrorKind::io,
              format("site cache \"{}\" is refused: {}; whoever can write it can run code in this "
                     "process (make it writable by its owner only, or set {}=1 to trust it)",
                     dir.string(), why, k_trust_shared_variable));
}

// Marks a directory uwjit may use (created by it or found empty). Soft: an unmarked empty
// directory still works, and the next open marks it.
void mark(int dir_fd, const std::filesystem::path& dir, const log::Logger& logger) {
  try {
    posix::AtomicFile file(dir_fd, std::string(names::k_tag),
                           {.mode = 0644, .durability = posix::Durability::buffered});
    file.write(names::k_tag_text);
    file.commit();
  } catch (const Error& e) {
    logger.debug("cannot mark cache directory {}: {}", dir.string(), e.what());
  }
}

std::atomic<bool> g_subdirectory_said{false};

// uwjit owns only what it made: a directory that holds other files (UWJIT_CACHE_DIR=. or
// $HOME) is never marked, cleaned or wiped; the store moves into its subdirectory uwjit/, which
// must itself be uwjit's or empty.
} // namespace

void Store::Impl::use_owned_directory() {
  Impl& impl = *this;
  switch (names::ownership_of(impl.fd())) {
  case names::Ownership::ours:
    return;
  case names::Ownership::empty:
    mark(impl.fd(), impl.dir, impl.logger);
    return;
  case names::Ownership::foreign:
    break;
  }
  const std::string sub(names::k_subdirectory);
  const auto sub_path = impl.dir / sub;
  if (::mkdirat(impl.fd(), sub.c_str(), 0700) != 0 && errno != EEXIST) {
    posix::throw_io(format("cache directory \"{}\" holds files that are not uwjit's, and \"{}\" "
                           "cannot be created",
                           impl.dir.string(), sub_path.string()),
                    errno);
  }
  posix::UniqueFd sub_fd(posix::open_at(impl.fd(), sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (!sub_fd) {
    posix::throw_io(format("cache directory \"{}\": cannot open", sub_path.string()), errno);
  }
  check_trusted(sub_fd.get(), sub_path, impl.logger);
  switch (names::ownership_of(sub_fd.get())) {
  case names::Ownership::ours:
    break;
  case names::Ownership::empty:
    mark(sub_fd.get(), sub_path, impl.logger);
    break;
  case names::Ownership::foreign:
    throw Error(
        ErrorKind::io,
        format("cache directory \"{}\" holds files that are not uwjit's, and so does \"{}\"; "
               "uwjit uses neither (point UWJIT_CACHE_DIR at a directory of its own)",
               impl.dir.string(), sub_path.string()));
  }
  if (!g_subdirectory_said.exchange(true)) {
    impl.logger.info("cache directory {} holds other files: using {}", impl.dir.string(),
                     sub_path.string());
  }
  impl.dir = sub_path;
  impl.dir_fd = std::move(sub_fd);
}

namespace {

std::atomic<bool> g_publish_failure_warned{false};
std::atomic<bool> g_unsupported_lock_warned{false};

} // namespace

// --- Impl ----------------------------------------------------------------------------------------

EntryCheck Store::Impl::check_entry(const Key& key, const Expected& expected) const {
  EntryCheck check;
  auto reject = [&check](RejectReason reason, std::string detail) -> EntryCheck {
    check.status = LookupStatus::rejected;
    check.reason = reason;
    check.detail = std::move(detail);
    return std::move(check);
  };

  std::string text;
  auto manifest_read = posix::read_file_at(fd(), names::manifest(key), k_manifest_limit, text);
  check.manifest_status = manifest_read.status;
  if (manifest_read.error == ENOENT) {
    return check; // no manifest, no entry: a plain miss
  }
  if (manifest_read.error != 0) {
    if (const auto status = posix::status_at(fd(), names::manifest(key))) {
      check.manifest_status = *status;
    }
    const std::string why = manifest_read.error == ELOOP    ? "it is a symlink"
                            : manifest_read.error == EINVAL ? "it is not a regular file"
                            : manifest_read.error == EFBIG  ? "it is too large"
                                                           : posix::error_text(manifest_read.error);
    return reject(RejectReason::corrupt_manifest, format("cannot read the manifest: {}", why));
  }
  check.manifest_fd = std::move(manifest_read.fd);

  if (const auto version = manifest_format(text); version && *version != k_entry_format) {
    return reject(RejectReason::format_mismatch,
                  format("entry format {}, this uwjit reads format {}", *version, k_entry_format));
  }
  std::string why;
  auto manifest = parse_manifest(text, &why);
  if (!manifest) {
    return reject(RejectReason::corrupt_manifest, "manifest: " + why);
  }
  if (manifest->format != k_entry_format) {
    return reject(
        RejectReason::format_mismatch,
        format("entry format {}, this uwjit reads format {}", manifest->format, k_entry_format));
  }
  if (manifest->key != key.hex()) {
    return reject(RejectReason::key_mismatch, format("the manifest names key {}", manifest->key));
  }
  if (expected.salt != nullptr && manifest->salt != expected.salt->text()) {
    return reject(RejectReason::salt_mismatch,
                  describe_salt_difference(manifest->salt, *expected.salt));
  }
  if (expected.slots != nullptr && manifest->slot_tables != *expected.slots) {
    return reject(RejectReason::slot_mismatch,
                  describe_slot_difference(manifest->slot_tables, *expected.slots));
  }

  std::vector<char> object;
  // Read at most what the manifest promises plus one byte, so that a longer file is noticed
  // without reading a huge one.
  const std::uint64_t limit =
      manifest->object_size < UINT64_MAX ? manifest->object_size + 1 : manifest->object_size;
  auto object_read = posix::read_file_at(fd(), names::object(key, manifest->salt), limit, object);
  if (object_read.error == ENOENT || object_read.error == ELOOP || object_read.error == EINVAL) {
    const std::string what = object_read.error == ENOENT  ? "no object file"
                             : object_read.error == ELOOP ? "the object is a symlink"
                                                          : "the object is not a regular file";
    return reject(RejectReason::missing_object, what);
  }
  if (object_read.error == EFBIG) {
    return reject(RejectReason::checksum_mismatch,
                  format("the object has {} bytes, the manifest says {}", object_read.status.size,
                         manifest->object_size));
  }
  if (object_read.error != 0) {
    return reject(RejectReason::missing_object,
                  format("cannot read the object: {}", posix::error_text(object_read.error)));
  }
  if (object.size() < manifest->object_size) {
    return reject(RejectReason::truncated_object,
                  format("the object has {} of {} bytes", object.size(), manifest->object_size));
  }
  if (object.size() > manifest->object_size) {
    return reject(RejectReason::checksum_mismatch,
                  format("the object has {} bytes, the manifest says {}", object.size(),
                         manifest->object_size));
  }
  const auto digest = sha256_hex(std::string_view(object.data(), object.size()));
  if (digest != manifest->object_sha256) {
    return reject(RejectReason::checksum_mismatch,
                  format("the object's SHA-256 is {}, the manifest says {}", digest,
                         manifest->object_sha256));
  }

  if (expected.source_matches_key) {
    std::string source;
    const auto source_read = posix::read_file_at(fd(), names::source(key), k_source_limit, source);
    if (source_read.error == 0) {
      const auto recomputed = sha256_hex({source, "\n---\n", manifest->salt}).substr(0, 16);
      if (recomputed != key.hex()) {
        return reject(RejectReason::key_mismatch,
                      format("the stored source and salt hash to key {}", recomputed));
      }
    } else if (source_read.error != ENOENT && source_read.error != EFBIG) {
      // A source too large to read (written by another version) is not judged: the entry's
      // object is verified and serves lookups, so it is not removed for that.
      return reject(RejectReason::key_mismatch,
                    format("cannot read the source: {}", posix::error_text(source_read.error)));
    }
  }

  check.status = LookupStatus::hit;
  check.object = std::move(object);
  check.object_fd = std::move(object_read.fd);
  check.manifest = std::move(manifest);
  return check;
}

std::vector<std::string> Store::Impl::remove_entry(const Key& key) const {
  std::vector<std::string> removed;
  for (const auto& name : names::entry_files(key)) {
    if (posix::status_at(fd(), name) && ::unlinkat(fd(), name.c_str(), 0) == 0) {
      removed.push_back(name);
      if (removed.size() == 1 && name == names::manifest(key)) {
        detail::fault_point("remove:manifest-removed");
      }
    }
  }
  return removed;
}

MaintenanceLock Store::Impl::try_lock(const Key& key, detail::CreateFile create) const {
  MaintenanceLock result;
  const auto name = names::lock(key);
  if (detail::FileLock::held_by_this_thread(fd(), name)) {
    result.state = MaintenanceLock::State::held;
    return result;
  }
  auto attempt = detail::FileLock::acquire(fd(), name, std::chrono::milliseconds(0), create);
  switch (attempt.state) {
  case detail::LockState::acquired:
    result.state = MaintenanceLock::State::held;
    result.lock = std::move(attempt.lock);
    break;
  case detail::LockState::busy:
    result.state = MaintenanceLock::State::busy;
    break;
  case detail::LockState::unavailable:
    result.state = MaintenanceLock::State::unlocked;
    break;
  }
  return result;
}

void Store::Impl::report_rejection(const Key& key, const EntryCheck& check,
                                   std::string_view outcome) {
  const auto& status = check.manifest_status;
  {
    std::lock_guard guard(reported_mutex);
    if (reported.size() >= 4096) {
      reported.clear(); // bounded memory; at worst a bad entry is reported twice
    }
    if (!reported.emplace(key.hex(), status.device, status.inode, status.mtime_ns, status.size)
             .second) {
      logger.debug("rejected key={} reason={} again ({}); {}", key.hex(), to_string(*check.reason),
                   check.detail, outcome);
      return;
    }
  }
  stats->add(Stat::rejected);
  stats->add(rejected_stat(*check.reason));
  logger.warn("rejected key={} reason={} ({}); {}", key.hex(), to_string(*check.reason),
              check.detail, outcome);
}

// --- KeyLock -------------------------------------------------------------------------------------

KeyLock::KeyLock(LockOutcome outcome, std::unique_ptr<detail::FileLock> lock) noexcept
    : m_outcome(outcome), m_lock(std::move(lock)) {}
KeyLock::KeyLock(KeyLock&&) noexcept = default;
KeyLock& KeyLock::operator=(KeyLock&&) noexcept = default;
KeyLock::~KeyLock() = default;

void KeyLock::release() noexcept {
  m_lock.reset();
}

// --- Store ---------------------------------------------------------------------------------------

Store::Store(std::unique_ptr<Impl> impl) noexcept : m_impl(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(std::filesystem::path dir) {
  return open(std::move(dir), process_stats());
}

Store Store::open(std::filesystem::path dir, Stats& counters) {
  std::error_code error;
  auto absolute = std::filesystem::absolute(dir, error).lexically_normal();
  if (error) {
    throw Error(ErrorKind::io, format("cache directory \"{}\": cannot make the path absolute: {}",
                                      dir.string(), error.message()));
  }
  if (!absolute.has_filename()) {
    absolute = absolute.parent_path(); // "/x/cache/" names the directory "/x/cache"
  }
  auto impl = std::unique_ptr<Impl>(new Impl{.dir = std::move(absolute),
                                             .dir_fd = {},
                                             .stats = &counters,
                                             .logger = log::get("uwjit.cache"),
                                             .unwritable = std::nullopt,
                                             .site = false,
                                             .reported_mutex = {},
                                             .reported = {}});
  make_directories(impl->dir);
  // The directory itself may be a symlink (a cache moved to a bigger disk): follow it. Every
  // later access is relative to this descriptor, so a rename of the path cannot redirect us.
  impl->dir_fd.reset(posix::open_at(AT_FDCWD, impl->dir.string(), O_RDONLY | O_DIRECTORY));
  if (!impl->dir_fd) {
    posix::throw_io(format("cache directory \"{}\": cannot open", impl->dir.string()), errno);
  }
  check_trusted(impl->dir_fd.get(), impl->dir, impl->logger);
  impl->use_owned_directory();
  // access(2) with W_OK also reports a read-only filesystem (EROFS).
  if (::faccessat(impl->fd(), ".", W_OK, AT_EACCESS) != 0) {
    impl->unwritable = posix::error_text(errno);
  }
  Store store(std::move(impl));
  const int fd = store.m_impl->fd();
  // Temporaries of killed writers: looked for at most once per interval, by whoever first finds
  // the stamp old, so that opening stays cheap.
  const std::string stamp(names::k_cleanup_stamp);
  const auto stamp_status = posix::status_at(fd, stamp);
  if (!stamp_status ||
      stamp_status->mtime() < std::chrono::system_clock::now() - k_cleanup_interval) {
    posix::UniqueFd stamp_fd(
        posix::open_at(fd, stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644));
    if (stamp_fd && ::futimens(stamp_fd.get(), nullptr) == 0) {
      (void)store.clean_temporaries(k_temporary_grace);
    }
  }
  return store;
}

Store Store::open_site(std::filesystem::path dir, Stats& counters) {
  std::error_code error;
  auto absolute = std::filesystem::absolute(dir, error).lexically_normal();
  if (error) {
    throw Error(ErrorKind::io, format("site cache \"{}\": cannot make the path absolute: {}",
                                      dir.string(), error.message()));
  }
  if (!absolute.has_filename()) {
    absolute = absolute.parent_path();
  }
  auto impl = std::unique_ptr<Impl>(new Impl{.dir = std::move(absolute),
                                             .dir_fd = {},
                                             .stats = &counters,
                                             .logger = log::get("uwjit.cache"),
                                             .unwritable = "a read-only site cache",
                                             .site = true,
                                             .reported_mutex = {},
                                             .reported = {}});
  impl->dir_fd.reset(posix::open_at(AT_FDCWD, impl->dir.string(), O_RDONLY | O_DIRECTORY));
  if (!impl->dir_fd) {
    posix::throw_io(format("site cache \"{}\": cannot open", impl->dir.string()), errno);
  }
  check_site_trusted(impl->fd(), impl->dir, impl->logger);
  if (names::ownership_of(impl->fd()) == names::Ownership::foreign) {
    // Store::open puts the cache in uwjit/ inside a directory that holds other files.
    const auto sub_path = impl->dir / names::k_subdirectory;
    posix::UniqueFd sub_fd(posix::open_at(impl->fd(), std::string(names::k_subdirectory),
                                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    if (!sub_fd || names::ownership_of(sub_fd.get()) == names::Ownership::foreign) {
      throw Error(ErrorKind::io,
                  format("site cache \"{}\" is not a uwjit cache: it holds other files and no "
                         "CACHEDIR.TAG written by uwjit, and so does \"{}\" (or it is missing)",
                         impl->dir.string(), sub_path.string()));
    }
    check_site_trusted(sub_fd.get(), sub_path, impl->logger);
    impl->dir = sub_path;
    impl->dir_fd = std::move(sub_fd);
  }
  return Store(std::move(impl));
}

bool Store::is_site() const noexcept {
  return m_impl->site;
}

const std::filesystem::path& Store::dir() const noexcept {
  return m_impl->dir;
}

const std::optional<std::string>& Store::unwritable() const noexcept {
  return m_impl->unwritable;
}

LookupOutcome Store::lookup(const Key& key, const Salt& salt, const std::vector<SlotTable>& slots) {
  const Expected expected{.salt = &salt, .slots = &slots, .source_matches_key = false};
  LookupOutcome outcome;
  try {
    EntryCheck check = m_impl->check_entry(key, expected);
    MaintenanceLock lock;
    if (check.status == LookupStatus::rejected && !m_impl->site) {
      lock = m_impl->try_lock(key, detail::CreateFile::yes);
      if (lock.state == MaintenanceLock::State::held) {
        // A writer may have replaced the entry between our read and the lock: judge again.
        check = m_impl->check_entry(key, expected);
      }
    }
    outcome.status = check.status;
    switch (check.status) {
    case LookupStatus::hit:
      if (!m_impl->site) { // a site cache is read-only, and its LRU order its writers'
        touch(check.manifest_fd);
        touch(check.object_fd);
      }
      m_impl->stats->add(Stat::disk_hits);
      m_impl->logger.debug("disk hit key={} ({} bytes)", key.hex(), check.object.size());
      outcome.object = std::move(check.object);
      outcome.manifest = std::move(check.manifest);
      break;
    case LookupStatus::miss:
      m_impl->logger.debug("miss key={}", key.hex());
      break;
    case LookupStatus::rejected:
      outcome.reason = check.reason;
      outcome.detail = check.detail;
      if (m_impl->site) {
        m_impl->report_rejection(key, check, "left in the read-only site cache; a miss");
      } else if (lock.state == MaintenanceLock::State::busy) {
        // The holder is compiling this key and will replace the entry when it publishes.
        m_impl->report_rejection(key, check, "left to the writer holding its lock");
      } else {
        const auto removed = m_impl->remove_entry(key);
        m_impl->report_rejection(key, check, removed.empty() ? "could not remove it" : "removed");
      }
      break;
    }
  } catch (const std::exception& e) {
    // Only allocation failures can get here; a lookup that cannot run is a miss.
    m_impl->logger.warn("lookup key={} failed: {}", key.hex(), e.what());
    outcome = LookupOutcome{};
  }
  return outcome;
}

PublishOutcome Store::publish(const Key& key, std::span<const char> object,
                              const Manifest& manifest, std::string_view source) {
  UWJIT_ASSERT(
      sha256_hex({source, "\n---\n", manifest.salt}).substr(0, 16) == key.hex(),
      format("publish: key {} is not the key of the source under the manifest's salt", key.hex()));
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never published to");
  PublishOutcome outcome;
  try {
    // Refused here, before anything is written: read_source and verify refuse a larger source.
    if (source.size() > k_source_limit) {
      throw Error(ErrorKind::io,
                  format("the source has {} bytes, more than the {} a reader accepts",
                         source.size(), k_source_limit));
    }
    Manifest m = manifest;
    m.format = k_entry_format;
    m.key = key.hex();
    m.object_size = object.size();
    m.object_sha256 = sha256_hex(std::string_view(object.data(), object.size()));
    if (m.created_utc.empty()) {
      m.created_utc = utc_now();
    }
    if (m.uwjit_version.empty()) {
      m.uwjit_version = k_version;
    }
    if (m.salt_components.empty()) {
      if (const auto salt = Salt::parse(m.salt)) {
        m.salt_components = salt->components();
      }
    }
    if (!std::isfinite(m.compile_ms) || m.compile_ms < 0) {
      m.compile_ms = 0;
    }
    const std::string text = to_json(m);
    // An entry that would not read back would be rejected and recompiled on every run.
    std::string why;
    const auto reread = parse_manifest(text, &why);
    if (!reread || *reread != m) {
      throw Error(ErrorKind::io, format("the manifest would not read back as written ({})",
                                        reread ? "a field changes" : why));
    }

    // Refused here, before anything is written: lookup refuses a larger manifest, so such an
    // entry would be rejected and compiled again on every run.
    if (text.size() > k_manifest_limit) {
      throw Error(ErrorKind::io, format("the manifest has {} bytes, more than the {} a reader "
                                        "accepts",
                                        text.size(), k_manifest_limit));
    }

    const int fd = m_impl->fd();
    detail::fault_point("publish:begin");
    // Readable by others: a trusted shared cache (UWJIT_CACHE_TRUST_SHARED) serves other users.
    const posix::AtomicFileOptions options{.mode = 0644, .durability = posix::Durability::synced};
    posix::AtomicFile object_file(fd, names::object(key, m.salt), options);
    // In two halves, so that the fault suite can stop a writer in the middle of a file.
    const auto half = object.size() / 2;
    object_file.write(object.first(half));
    detail::fault_point("publish:object-partial");
    object_file.write(object.subspan(half));
    object_file.finish();
    posix::AtomicFile source_file(fd, names::source(key), options);
    source_file.write(source);
    source_file.finish();
    posix::AtomicFile manifest_file(fd, names::manifest(key), options);
    manifest_file.write(text);
    manifest_file.finish();

    // The object and source are in place (and durable) before the manifest names them: a crash
    // anywhere leaves either no entry or a whole one.
    detail::fault_point("publish:temporaries-written");
    object_file.rename_into_place();
    detail::fault_point("publish:object-committed");
    source_file.rename_into_place();
    detail::fault_point("publish:source-committed");
    posix::sync_directory(fd, dir().string());
    manifest_file.rename_into_place();
    detail::fault_point("publish:manifest-committed");
    posix::sync_directory(fd, dir().string());

    outcome.status = PublishStatus::published;
    m_impl->stats->add(Stat::published);
    m_impl->logger.info("published key={} origin={} ({} bytes)", key.hex(), m.origin,
                        object.size());
  } catch (const std::exception& e) {
    outcome.status = PublishStatus::failed;
    outcome.reason = e.what();
    m_impl->stats->add(Stat::publish_failed);
    if (!m_impl->unwritable && !g_publish_failure_warned.exchange(true)) {
      m_impl->logger.warn("cannot write to the kernel cache {} ({}); kernels still work but are "
                          "compiled again by each process",
                          dir().string(), outcome.reason);
    } else {
      m_impl->logger.debug("publish key={} failed: {}", key.hex(), outcome.reason);
    }
  }
  return outcome;
}

KeyLock Store::lock(const Key& key, std::chrono::milliseconds timeout) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never locked for writing");
  const auto name = names::lock(key);
  UWJIT_ASSERT(!detail::FileLock::held_by_this_thread(m_impl->fd(), name),
               format("key lock {} requested again by the thread that holds it", key.hex()));
  auto attempt = detail::FileLock::acquire(m_impl->fd(), name, timeout, detail::CreateFile::yes);
  if (attempt.waited) {
    m_impl->stats->add(Stat::lock_waits);
  }
  switch (attempt.state) {
  case detail::LockState::acquired:
    m_impl->logger.trace("locked key={}", key.hex());
    return KeyLock(LockOutcome::acquired, std::move(attempt.lock));
  case detail::LockState::busy:
    m_impl->stats->add(Stat::lock_timeouts);
    m_impl->logger.info("lock of key={} still busy after {} ms", key.hex(), timeout.count());
    return KeyLock(LockOutcome::timed_out, nullptr);
  case detail::LockState::unavailable:
    break;
  }
  if (m_impl->unwritable) {
    m_impl->logger.debug("cannot lock key={} in {} ({}); the directory is not writable", key.hex(),
                         dir().string(), attempt.why);
  } else if (!g_unsupported_lock_warned.exchange(true)) {
    m_impl->logger.warn("cannot lock entries in {} ({}); running unlocked: processes may compile "
                        "the same kernel more than once",
                        dir().string(), attempt.why);
  }
  return KeyLock(LockOutcome::unsupported, nullptr);
}

std::vector<std::string> Store::clean_temporaries(std::chrono::seconds older_than) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never cleaned");
  std::vector<std::string> removed;
  int error = 0;
  const auto listed = posix::list_names(m_impl->fd(), error);
  if (!listed) {
    m_impl->logger.debug("cannot list {}: {}", dir().string(), posix::error_text(error));
    return removed;
  }
  const auto cutoff = std::chrono::system_clock::now() - older_than;
  for (const auto& name : *listed) {
    if (names::classify(name).kind != names::FileKind::temporary) {
      continue;
    }
    const auto status = posix::status_at(m_impl->fd(), name);
    if (status && !status->directory && status->mtime() < cutoff &&
        ::unlinkat(m_impl->fd(), name.c_str(), 0) == 0) {
      m_impl->logger.info("removed stale temporary {}", name);
      removed.push_back(name);
    }
  }
  return removed;
}

std::uint64_t max_cache_size() {
  return env::get_size(env::vars::cache_max_size);
}

} // namespace uwjit::cache
