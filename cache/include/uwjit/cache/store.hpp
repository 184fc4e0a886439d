// The on-disk kernel cache: verified entries, atomic publish, per-key locks, eviction, upkeep.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/cache/manifest.hpp>
#include <uwjit/cache/reject_reason.hpp>
#include <uwjit/cache/stats.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::cache {

/// The cache directory, layout version 1 (its entries have format k_entry_format). Every file
/// lives directly in the directory; `{key}` is always 16 lowercase hex digits.
///
/// | name                             | what                                                 |
/// |----------------------------------|------------------------------------------------------|
/// | `{key}.o`                        | the object (ELF), exactly the manifest's object_size |
/// | `{key}.ptx`                      | instead of `{key}.o` when the salt's `target` is     |
/// |                                  | `cuda:sm_XX`: the PTX text, checked the same way     |
/// | `{key}.cubin`                    | a GPU entry's machine code made from its PTX by the  |
/// |                                  | CUDA driver (binary format below); optional          |
/// | `{key}.cpp`                      | the canonical source exactly as hashed, for people   |
/// | `{key}.json`                     | the manifest (manifest.hpp); written last: the       |
/// |                                  | commit point                                         |
/// | `{key}.lock`                     | the key's lock file for flock(2); empty; only wipe   |
/// |                                  | unlinks it                                           |
/// | `.uwjit-tmp.{name}.{pid}.{hex16}` | a file being written (posix::AtomicFile), renamed |
/// |                                  | into place when complete; removed once older than   |
/// |                                  | k_temporary_grace                                    |
/// | `CACHEDIR.TAG`                   | uwjit's marker (https://bford.info/cachedir/, with   |
/// |                                  | a line naming uwjit); wipe refuses a directory       |
/// |                                  | without it                                           |
/// | `stats.json`                     | the persisted counters (format below)                |
/// | `stats.lock`, `evict.lock`       | lock files of the stats merge and of eviction        |
/// | `cleanup.stamp`                  | its mtime says when temporaries were last cleaned    |
///
/// Ownership: Store::open uses a directory as it is only when it is new, empty (but for uwjit's
/// temporaries) or carries uwjit's marker, and marks it then. A directory holding other files
/// (UWJIT_CACHE_DIR=. or $HOME) is never marked, cleaned or wiped: the store lives in its
/// subdirectory `uwjit` instead, which must itself be new, empty or uwjit's (else open throws).
///
/// Files with any other name are never touched, not even by wipe. Entry files are opened with
/// O_NOFOLLOW: a symlink in an entry's place is refused, never followed; removing one unlinks
/// the link, never its target. The directory itself may be a symlink.
///
/// Trust: whoever can write the directory can run code in every process that uses it. Store::open
/// refuses a directory (after following a symlink to it) that is writable by its group or by
/// others, or that is owned by another user, unless UWJIT_CACHE_TRUST_SHARED is 1/true/yes/on.
///
/// `{key}.cubin`, binary format 1: the text "uwjit binary 1\nloader LOADER\nsha256 HEX\n\n"
/// (LOADER names what made it, e.g. "cuda driver 12040"; HEX is the SHA-256 of the bytes after
/// the header), then the bytes. A binary serves only the loader that made it: another loader's
/// (a driver upgrade) is stale, so the PTX is loaded and a new binary made, never the old one.
///
/// stats.json, format 1: one JSON object, updated under a flock on stats.lock.
///
/// | field      | JSON type                   | meaning                                        |
/// |------------|-----------------------------|------------------------------------------------|
/// | `format`   | integer                     | 1                                              |
/// | `counters` | object: name -> integer >= 0 | each Stat by its stable name; unknown names   |
/// |            |                             | (from newer versions) are kept                 |

/// Site caches (Store::open_site): read-only caches, typically kept by an administrator or a
/// project account on a shared file system, that a process consults after its own writable cache
/// misses and before it compiles (UWJIT_CACHE_SITE_DIR, a list separated by ':'). Their entries
/// are verified as any and never written, locked, touched or removed; a bad one is a miss.
///
/// The variable that makes Store::open accept a cache directory that other users can write or
/// that another user owns (e.g. a read-only site cache): UWJIT_CACHE_TRUST_SHARED=1.
inline constexpr const char* k_trust_shared_variable = "UWJIT_CACHE_TRUST_SHARED";

/// A temporary older than this was left by a killed writer: writing one takes milliseconds.
inline constexpr std::chrono::seconds k_temporary_grace{600};

/// Store::open cleans temporaries at most this often (the mtime of cleanup.stamp says when).
inline constexpr std::chrono::seconds k_cleanup_interval{3600};

/// The cache size limit when UWJIT_CACHE_MAX_SIZE is unset: 2 GiB.
inline constexpr std::uint64_t k_default_max_cache_size = std::uint64_t{2} << 30;

/// Eviction trims an over-full cache to this percentage of the limit, so that it does not run
/// again after the very next publish.
inline constexpr std::uint64_t k_evict_target_percent = 90;

/// The cache size limit: UWJIT_CACHE_MAX_SIZE parsed by env::parse_size ("500M", "2G", ...), or
/// k_default_max_cache_size when unset. Throws Error(usage) on a malformed value. Thread-safe.
[[nodiscard]] std::uint64_t max_cache_size();

enum class LookupStatus {
  hit,      ///< a verified entry: `object` and `manifest` are set
  miss,     ///< no entry (no manifest)
  rejected, ///< an entry failed verification (`reason` says why); removed unless a writer
            ///< holding its key lock is about to replace it
};

/// What Store::lookup found.
struct LookupOutcome {
  LookupStatus status = LookupStatus::miss;
  std::vector<char> object;           ///< hit: the object's bytes, checksum verified
  std::optional<Manifest> manifest;   ///< hit: the entry's manifest
  std::optional<RejectReason> reason; ///< rejected: why
  std::string detail;                 ///< rejected: for people, e.g. "object has 10 of 4096 bytes"
  [[nodiscard]] bool hit() const noexcept { return status == LookupStatus::hit; }
};

/// What Store::lookup_binary found.
struct BinaryLookup {
  enum class Status {
    hit,      ///< `bytes` holds the binary, its checksum verified
    miss,     ///< no binary
    stale,    ///< a binary made by another loader (`detail` names it): not used
    rejected, ///< a damaged binary (`detail` says how): removed
  } status = Status::miss;
  std::vector<char> bytes;
  std::string detail;
  [[nodiscard]] bool hit() const noexcept { return status == Status::hit; }
};

enum class PublishStatus { published, failed };

/// What Store::publish did. A failure is an outcome, never an exception: the host goes on.
struct PublishOutcome {
  PublishStatus status = PublishStatus::failed;
  std::string reason; ///< failed: for people, e.g. `cannot create ".tmp...": Permission denied`
  [[nodiscard]] bool published() const noexcept { return status == PublishStatus::published; }
};

enum class LockOutcome {
  acquired,    ///< this KeyLock holds the key's lock until it is released or destroyed
  timed_out,   ///< another holder kept it for the whole time-out
  unsupported, ///< the filesystem refuses locks or the lock file cannot be created: run unlocked
};

namespace detail {
class FileLock;
}

/// A held (or not obtained) per-key lock; releases on destruction. Move-only. One KeyLock must
/// be used by one thread at a time; different KeyLocks on one key exclude each other across
/// threads and processes alike.
class [[nodiscard]] KeyLock {
public:
  KeyLock(KeyLock&&) noexcept;
  KeyLock& operator=(KeyLock&&) noexcept;
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  ~KeyLock();

  [[nodiscard]] LockOutcome outcome() const noexcept { return m_outcome; }
  [[nodiscard]] bool acquired() const noexcept { return m_outcome == LockOutcome::acquired; }
  /// Drops the lock now (idempotent). Never throws.
  void release() noexcept;

private:
  friend class Store;
  KeyLock(LockOutcome outcome, std::unique_ptr<detail::FileLock> lock) noexcept;
  LockOutcome m_outcome;
  std::unique_ptr<detail::FileLock> m_lock;
};

enum class DryRun { no, yes };
enum class Fix { no, yes };

/// What to evict: entries unused for longer than `older_than`, then, while the cache is larger
/// than `max_size`, the least recently used until it is at most k_evict_target_percent of it.
struct EvictBy {
  std::optional<std::uint64_t> max_size;
  std::optional<std::chrono::seconds> older_than;
};

struct EvictedEntry {
  Key key;
  std::uint64_t bytes = 0; ///< all its files together
  std::chrono::system_clock::time_point last_used;
};

struct EvictReport {
  std::vector<EvictedEntry> evicted; ///< least recently used first (with DryRun::yes: would be)
  std::vector<Key> in_use;           ///< due for eviction but locked by a writer: left alone
  /// Evicted entries that alone are larger than EvictBy::max_size: a limit that small can never
  /// keep them, so every process compiles them again.
  std::vector<EvictedEntry> larger_than_limit;
  std::uint64_t size_before = 0; ///< bytes in entry files before
  std::uint64_t size_after = 0;  ///< bytes in entry files after (with DryRun::yes: would be)
};

/// One entry, as its manifest describes it.
struct EntryInfo {
  Key key;
  std::string origin;
  std::string entry;  ///< the entry symbol
  std::string target; ///< what it was compiled for: "host" or "cuda:sm_XX" (target_of its salt)
  std::uint64_t object_size = 0;
  std::uint64_t total_size = 0; ///< object, manifest and source together
  std::string created_utc;
  std::chrono::system_clock::time_point last_used; ///< the manifest's mtime, touched on each hit
  double compile_ms = 0;
  std::string uwjit_version;
};

/// verify's verdict on one entry.
struct EntryVerdict {
  Key key;
  std::optional<RejectReason> problem; ///< nullopt: the entry is sound
  std::string detail;
  bool removed = false; ///< Fix::yes removed it
};

struct VerifyReport {
  std::vector<EntryVerdict> entries;          ///< one per manifest, by key
  std::vector<std::string> orphans;           ///< object or source files without a manifest
  std::vector<std::string> stale_temporaries; ///< temporaries older than k_temporary_grace
  std::vector<std::string> removed;           ///< Fix::yes: the files removed
  /// Names like entry files that are no files (e.g. a directory): never removed.
  std::vector<std::string> foreign;
  /// Fix::yes: what is still wrong afterwards: files of bad entries and orphans that a writer
  /// holds the lock of or that could not be removed, and every foreign name.
  std::vector<std::string> remaining;
  /// True when no entry is bad and there are no orphans and no foreign objects (as found,
  /// before any fix).
  [[nodiscard]] bool ok() const noexcept;
};

struct WipeReport {
  std::vector<std::string> removed; ///< file names (with DryRun::yes: would be)
  std::vector<std::string> kept;    ///< names that are not uwjit's, left alone
  std::vector<std::string> failed;  ///< "name: why" of uwjit files that could not be removed
  std::vector<std::string> in_use;  ///< files a live writer may be using: left alone
  std::uint64_t bytes = 0;          ///< size of the removed files
};

/// The disk cache in one directory. Every method is thread-safe and safe against other
/// processes using the same directory: readers never see a torn entry, a bad entry is removed
/// and recompiled, nothing waits longer than its time-out, and a failure to write is an outcome,
/// never an exception. Decisions are logged (one line with the key) on logger "uwjit.cache" and
/// counted in the Stats given to open().
class Store {
public:
  /// Opens the cache in `dir`, creating it and missing parents with mode 0700, or in
  /// `dir`/uwjit when `dir` holds files that are not uwjit's (see Ownership above), writing
  /// uwjit's CACHEDIR.TAG into a new or empty directory, and cleaning old temporaries at most
  /// every k_cleanup_interval.
  /// A read-only directory opens (lookups work; publishing fails softly). Counts into
  /// process_stats(). Throws Error(io) if the directory cannot be created or opened at all, or
  /// if it is writable by its group or others or owned by another user and
  /// UWJIT_CACHE_TRUST_SHARED is not set, or if `dir` and `dir`/uwjit both hold files that are
  /// not uwjit's (the caller then runs memory-only, with one warning);
  /// Error(usage) on a bad UWJIT_LOG_LEVEL or UWJIT_CACHE_TRUST_SHARED.
  [[nodiscard]] static Store open(std::filesystem::path dir);
  /// As open(dir), counting into `counters`, which must outlive the Store.
  [[nodiscard]] static Store open(std::filesystem::path dir, Stats& counters);

  /// Opens a read-only site cache (UWJIT_CACHE_SITE_DIR): a cache another account filled (e.g.
  /// with `uwjit warm`) and made read-only, consulted after the writable cache. Nothing in it is
  /// ever created, written, locked, touched or removed: `dir` must exist; it is used as it is
  /// when it carries uwjit's marker or is empty, or its subdirectory `uwjit` when that does (as
  /// Store::open would have put the cache there). Trust: naming a site cache trusts the account
  /// that owns it, so another owner (root, a project account) is accepted; a directory that its
  /// group or others can write is refused unless UWJIT_CACHE_TRUST_SHARED is on, as for
  /// Store::open. Lookups verify entries as lookup() says; a bad entry is a miss, reported once,
  /// left where it is. publish(), lock(), publish_binary(), evict(), maybe_evict(), wipe(),
  /// clean_temporaries(), flush_stats() and verify(Fix::yes) must not be called on it (a bug:
  /// Error(internal)). Throws Error(io) naming the directory and why it cannot be used.
  [[nodiscard]] static Store open_site(std::filesystem::path dir, Stats& counters);

  /// Whether this store is a read-only site cache (open_site).
  [[nodiscard]] bool is_site() const noexcept;

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  [[nodiscard]] const std::filesystem::path& dir() const noexcept;

  /// Why this process cannot write the directory (no write permission, a read-only
  /// filesystem), as found by open(); nullopt when it can. Lookups still work; lock() and
  /// publish() then fail without warning, so that the caller says it once, in its own words.
  [[nodiscard]] const std::optional<std::string>& unwritable() const noexcept;

  /// Looks `key` up and verifies it: the manifest parses, its format is k_entry_format, its key
  /// and salt text equal `key` and `salt`, its slot tables equal `slots`, and the object has the
  /// manifest's size and SHA-256. A hit touches the manifest and object (LRU) and counts
  /// disk_hits. A refused entry is re-checked and removed under the key's lock (left alone if
  /// another holder has the lock: it is about to replace it), logged once as a warning and
  /// counted (rejected and rejected_<reason>). Never throws for I/O or bad data.
  [[nodiscard]] LookupOutcome lookup(const Key& key, const Salt& salt,
                                     const std::vector<SlotTable>& slots);

  /// Publishes an entry: `object`, `source` (the canonical text exactly as hashed) and
  /// `manifest`, each written to a temporary in the directory, fsynced and renamed into place,
  /// the manifest last, then the directory fsynced. The manifest's key, format, object_size and
  /// object_sha256 are set from the arguments; empty created_utc, uwjit_version and
  /// salt_components are filled in. Call it while holding the key's lock; it does not evict
  /// (call maybe_evict afterwards). Counts published or publish_failed; I/O failures (read-only
  /// directory, disk full, no permission) are returned as failed with one warning per process,
  /// never thrown. Throws Error(internal) only when `key` is not the key of `source` under
  /// `manifest.salt` (a bug in the caller).
  [[nodiscard]] PublishOutcome publish(const Key& key, std::span<const char> object,
                                       const Manifest& manifest, std::string_view source);

  /// The binary of `key` made by `loader` (`{key}.cubin`, format above), verified. A damaged one
  /// is removed and logged once. Never throws for I/O.
  [[nodiscard]] BinaryLookup lookup_binary(const Key& key, std::string_view loader);

  /// Publishes `bytes` as the binary of the entry `key` made by `loader`, atomically, replacing
  /// any binary it had; failed (not thrown) when the entry has no manifest (the binary would be
  /// an orphan) or on an I/O failure. Needs no lock: the file is replaced atomically.
  [[nodiscard]] PublishOutcome publish_binary(const Key& key, std::string_view loader,
                                              std::span<const char> bytes);

  /// What is wrong with the binary of `key`, if it has one: "" when it has none or it is sound.
  [[nodiscard]] std::string binary_problem(const Key& key);

  /// Takes the lock of `key`: flock(2) LOCK_EX on `{key}.lock`, polled until `timeout` passes
  /// (zero: one attempt). Counts lock_waits when it had to wait and lock_timeouts when it gave
  /// up; warns once per process when locks are unsupported. Not re-entrant: a thread that asks
  /// again for a key it holds is a bug (Error(internal)); otherwise never throws.
  [[nodiscard]] KeyLock lock(const Key& key, std::chrono::milliseconds timeout);

  /// Removes temporaries (`.tmp.*`) last modified more than `older_than` ago, which killed
  /// writers left behind; returns their names. Never throws for I/O.
  std::vector<std::string> clean_temporaries(std::chrono::seconds older_than);

  /// Evicts whole entries (all files of a key except its lock file) as `by` says, least
  /// recently used first (by the manifest's mtime, which each hit touches; an orphan by its
  /// newest file). Skips keys whose lock is held. Deletes only files named like entries.
  /// Counts evicted. Never throws for I/O.
  [[nodiscard]] EvictReport evict(EvictBy by, DryRun dry);

  /// Evicts to k_evict_target_percent of `max_size` if the cache is larger than `max_size` and
  /// no other process is evicting (a non-blocking flock on evict.lock); nullopt when it did
  /// nothing. Warns once per process when it evicts an entry larger than `max_size` alone.
  /// Cheap enough to call after every publish. Never throws for I/O.
  std::optional<EvictReport> maybe_evict(std::uint64_t max_size);

  /// Bytes in entry files (objects, manifests, sources). Never throws for I/O.
  [[nodiscard]] std::uint64_t total_size();

  /// Every entry with a readable manifest, by key. Never throws for I/O.
  [[nodiscard]] std::vector<EntryInfo> list();

  /// The manifest of `key` as stored (not verified against the object), or nullopt.
  [[nodiscard]] std::optional<Manifest> read_manifest(const Key& key);

  /// The canonical source stored for `key`, or nullopt (also when it is a symlink).
  [[nodiscard]] std::optional<std::string> read_source(const Key& key);

  /// The object stored for `key` as it is (not verified), or nullopt (also when it is a
  /// symlink). For people: inspect --asm.
  [[nodiscard]] std::optional<std::vector<char>> read_object(const Key& key);

  /// Checks every entry as lookup does, without a request to compare salt and slot tables
  /// with, and also that its stored source and salt hash to its key (a source larger than a
  /// reader accepts is not judged); lists orphans, foreign objects and stale temporaries. With
  /// Fix::yes removes bad entries and orphans, each under its key lock (a key a writer holds is
  /// left alone and listed in `remaining`), and stale temporaries. Never throws for I/O.
  [[nodiscard]] VerifyReport verify(Fix fix);

  /// Removes every uwjit file but CACHEDIR.TAG: entries (each under its key lock, manifest
  /// first), lock files nobody holds, temporaries older than k_temporary_grace, stats and
  /// housekeeping files; leaves and reports files with other names, and (in `in_use`) the files
  /// of keys a writer holds the lock of and younger temporaries. Throws
  /// Error(usage) if the directory has no CACHEDIR.TAG written by uwjit (it may not be a uwjit
  /// cache), and Error(io) if it cannot be listed; a file that cannot be removed is reported,
  /// not thrown.
  [[nodiscard]] WipeReport wipe(DryRun dry);

  /// Adds `delta` to stats.json under a flock on stats.lock. Soft: a failure is logged at debug
  /// level and the delta is lost. Never throws.
  void flush_stats(const StatsSnapshot& delta) noexcept;
  /// As flush_stats(delta.snapshot()).
  void flush_stats(const Stats& delta) noexcept;

  /// The persisted counters; all zero when stats.json is missing or unreadable. Never throws.
  [[nodiscard]] StatsSnapshot read_stats();

private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::cache
