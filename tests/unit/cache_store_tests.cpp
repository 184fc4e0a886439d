// The store's entries: publish, verified lookup, healing of every kind of damage, soft write
// failures, and the clean-up of temporaries left by killed writers.
#include "cache_sandbox.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <thread>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;
using namespace std::chrono_literals;

TEST_CASE("opening a store creates the directory and its parents 0700 and marks it") {
  const Sandbox sandbox;
  const auto dir = sandbox.root() / "a" / "b" / "uwjit";
  Stats stats;
  const auto store = Store::open(dir, stats);
  CHECK(store.dir() == dir);
  for (const auto& made : {sandbox.root() / "a", sandbox.root() / "a" / "b", dir}) {
    CAPTURE(made);
    struct stat st{};
    REQUIRE(::stat(made.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
  }
  const auto tag = read_text(dir / "CACHEDIR.TAG");
  CHECK(tag.starts_with("Signature: 8a477f597d28d172789f06886806bc55\n"));
  CHECK(temporaries_in(dir).empty());
}

TEST_CASE("opening a store where no directory can be made is Error(io)") {
  const Sandbox sandbox;
  write_text(sandbox.root() / "file", "not a directory");
  try {
    (void)Store::open(sandbox.root() / "file" / "cache");
    FAIL("no error for a cache directory under a regular file");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::io);
    CHECK(std::string(e.what()).find("cache") != std::string::npos);
  }
}

TEST_CASE("an empty cache is a miss") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  CHECK(found.status == LookupStatus::miss);
  CHECK(stats.snapshot().empty());
}

TEST_CASE("a published entry is a disk hit with the same bytes and manifest") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  const auto published = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  REQUIRE_MESSAGE(published.published(), published.reason);
  CHECK(stats.get(Stat::published) == 1);

  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  REQUIRE(found.hit());
  CHECK(found.object == entry.object);
  REQUIRE(found.manifest);
  CHECK(found.manifest->key == entry.key.hex());
  CHECK(found.manifest->format == k_entry_format);
  CHECK(found.manifest->object_size == entry.object.size());
  CHECK(found.manifest->object_sha256 ==
        sha256_hex(std::string_view(entry.object.data(), entry.object.size())));
  CHECK(found.manifest->salt_components == entry.salt.components());
  CHECK(found.manifest->slot_tables == entry.slots);
  CHECK(found.manifest->origin == "diffusion");
  CHECK(found.manifest->uwjit_version.empty() == false);
  CHECK(found.manifest->created_utc.size() == 20);
  CHECK(stats.get(Stat::disk_hits) == 1);

  // Anyone can recompute the key from the stored source and salt.
  const auto source = read_text(entry.source_path(store.dir()));
  CHECK(source == entry.source);
  CHECK(Key::of(source, *Salt::parse(found.manifest->salt)) == entry.key);
  CHECK(temporaries_in(store.dir()).empty());
}

TEST_CASE("a second store on the same directory is served from disk") {
  const Sandbox sandbox;
  const auto entry = sample_entry();
  {
    Stats stats;
    auto writer = Store::open(sandbox.cache(), stats);
    publish_or_throw(writer, entry);
  }
  Stats stats;
  auto reader = Store::open(sandbox.cache(), stats);
  CHECK(reader.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("a truncated object is a miss, not an error") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  std::filesystem::resize_file(entry.object_path(store.dir()), 100);

  LookupOutcome found;
  CHECK_NOTHROW(found = store.lookup(entry.key, entry.salt, entry.slots));
  CHECK(found.status == LookupStatus::rejected);
  CHECK(found.reason == RejectReason::truncated_object);
  CHECK(stats.get(Stat::rejected_truncated_object) == 1);
  // Removed: the next request is a plain miss, then recompiles and republishes.
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).status == LookupStatus::miss);
  publish_or_throw(store, entry);
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
}

namespace {
struct Damage {
  const char* what;
  RejectReason reason;
  // Damages the entry of `entry` in `dir`.
  void (*apply)(const std::filesystem::path& dir, const SampleEntry& entry);
};

void rewrite_manifest(const std::filesystem::path& dir, const SampleEntry& entry,
                      void (*change)(Manifest&)) {
  auto manifest = parse_manifest(read_text(entry.manifest_path(dir)));
  REQUIRE(manifest);
  change(*manifest);
  write_text(entry.manifest_path(dir), to_json(*manifest));
}

const Damage k_damages[] = {
    {"truncated object", RejectReason::truncated_object,
     [](const auto& dir, const auto& entry) {
       std::filesystem::resize_file(entry.object_path(dir), entry.object.size() / 2);
     }},
    {"empty object", RejectReason::truncated_object,
     [](const auto& dir, const auto& entry) {
       std::filesystem::resize_file(entry.object_path(dir), 0);
     }},
    {"flipped byte", RejectReason::checksum_mismatch,
     [](const auto& dir, const auto& entry) {
       auto bytes = read_text(entry.object_path(dir));
       bytes[bytes.size() / 3] ^= 0x01;
       write_text(entry.object_path(dir), bytes);
     }},
    {"longer object", RejectReason::checksum_mismatch,
     [](const auto& dir, const auto& entry) {
       write_text(entry.object_path(dir), read_text(entry.object_path(dir)) + "tail");
     }},
    {"missing object", RejectReason::missing_object,
     [](const auto& dir, const auto& entry) { std::filesystem::remove(entry.object_path(dir)); }},
    {"object replaced by a symlink", RejectReason::missing_object,
     [](const auto& dir, const auto& entry) {
       const auto elsewhere = dir.parent_path() / "elsewhere.o";
       std::filesystem::rename(entry.object_path(dir), elsewhere);
       std::filesystem::create_symlink(elsewhere, entry.object_path(dir));
     }},
    {"object replaced by a directory", RejectReason::missing_object,
     [](const auto& dir, const auto& entry) {
       std::filesystem::remove(entry.object_path(dir));
       std::filesystem::create_directory(entry.object_path(dir));
     }},
    {"corrupt manifest", RejectReason::corrupt_manifest,
     [](const auto& dir, const auto& entry) {
       write_text(entry.manifest_path(dir), "{\"format\": 1, \"key\": ");
     }},
    {"empty manifest", RejectReason::corrupt_manifest,
     [](const auto& dir, const auto& entry) { write_text(entry.manifest_path(dir), ""); }},
    {"manifest replaced by a symlink", RejectReason::corrupt_manifest,
     [](const auto& dir, const auto& entry) {
       const auto elsewhere = dir.parent_path() / "elsewhere.json";
       std::filesystem::rename(entry.manifest_path(dir), elsewhere);
       std::filesystem::create_symlink(elsewhere, entry.manifest_path(dir));
     }},
    {"other format version", RejectReason::format_mismatch,
     [](const auto& dir, const auto& entry) {
       // A future format may change any field; only "format" is read first.
       write_text(entry.manifest_path(dir), R"({"format": 2, "layout": "different"})");
     }},
    {"other format version with format 1 fields", RejectReason::format_mismatch,
     [](const auto& dir, const auto& entry) {
       rewrite_manifest(dir, entry, [](Manifest& m) { m.format = 0; });
     }},
    {"foreign salt", RejectReason::salt_mismatch,
     [](const auto& dir, const auto& entry) {
       rewrite_manifest(dir, entry, [](Manifest& m) {
         const Salt other = sample_salt("othercpu");
         m.salt = other.text();
         m.salt_components = other.components();
       });
     }},
    {"manifest of another key", RejectReason::key_mismatch,
     [](const auto& dir, const auto& entry) {
       rewrite_manifest(dir, entry, [](Manifest& m) { m.key = "00000000deadbeef"; });
     }},
    {"slot mismatch", RejectReason::slot_mismatch,
     [](const auto& dir, const auto& entry) {
       rewrite_manifest(dir, entry, [](Manifest& m) { m.slot_tables[0].slots = {"v"}; });
     }},
    {"checksum in the manifest changed", RejectReason::checksum_mismatch,
     [](const auto& dir, const auto& entry) {
       rewrite_manifest(dir, entry, [](Manifest& m) { m.object_sha256 = std::string(64, '0'); });
     }},
};
} // namespace

TEST_CASE("every kind of damage is rejected with its reason, removed, and heals on republish") {
  for (const auto& damage : k_damages) {
    CAPTURE(damage.what);
    const Sandbox sandbox;
    Stats stats;
    auto store = Store::open(sandbox.cache(), stats);
    const auto entry = sample_entry();
    publish_or_throw(store, entry);
    damage.apply(store.dir(), entry);

    LookupOutcome found;
    REQUIRE_NOTHROW(found = store.lookup(entry.key, entry.salt, entry.slots));
    CHECK(found.status == LookupStatus::rejected);
    REQUIRE(found.reason);
    CHECK(to_string(*found.reason) == to_string(damage.reason));
    CHECK_FALSE(found.detail.empty());
    CHECK(found.object.empty());
    CHECK(stats.get(Stat::rejected) == 1);
    CHECK(stats.get(rejected_stat(damage.reason)) == 1);
    CHECK(stats.get(Stat::disk_hits) == 0);

    // The manifest went (a damaged object may be a directory: not ours to delete).
    CHECK_FALSE(
        std::filesystem::exists(std::filesystem::symlink_status(entry.manifest_path(store.dir()))));
    CHECK(store.lookup(entry.key, entry.salt, entry.slots).status == LookupStatus::miss);
    CHECK(stats.get(Stat::rejected) == 1);

    if (!std::filesystem::is_directory(
            std::filesystem::symlink_status(entry.object_path(store.dir())))) {
      publish_or_throw(store, entry);
      const auto healed = store.lookup(entry.key, entry.salt, entry.slots);
      CHECK(healed.hit());
      CHECK(healed.object == entry.object);
    }
  }
}

TEST_CASE("a lookup never follows a symlinked object out of the cache") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  // A symlink to a perfectly valid copy is still refused: the cache holds its own files only.
  const auto elsewhere = sandbox.root() / "copy.o";
  std::filesystem::copy_file(entry.object_path(store.dir()), elsewhere);
  std::filesystem::remove(entry.object_path(store.dir()));
  std::filesystem::create_symlink(elsewhere, entry.object_path(store.dir()));
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  CHECK(found.status == LookupStatus::rejected);
  CHECK(std::filesystem::exists(elsewhere)); // the link went, not its target
}

TEST_CASE("a FIFO in place of an object is refused without blocking") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  std::filesystem::remove(entry.object_path(store.dir()));
  REQUIRE(::mkfifo(entry.object_path(store.dir()).c_str(), 0600) == 0);
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  CHECK(found.reason == RejectReason::missing_object);
}

TEST_CASE("a bad entry whose key lock another thread holds is reported once and left to it") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  std::filesystem::resize_file(entry.object_path(store.dir()), 10);

  std::optional<KeyLock> held;
  std::thread([&] { held.emplace(store.lock(entry.key, 0ms)); }).join();
  REQUIRE(held->acquired());
  for (int i = 0; i < 3; ++i) {
    const auto found = store.lookup(entry.key, entry.salt, entry.slots);
    CHECK(found.reason == RejectReason::truncated_object);
  }
  CHECK(stats.get(Stat::rejected) == 1);
  CHECK(std::filesystem::exists(entry.manifest_path(store.dir()))); // the holder replaces it
  // The lock is a flock on its own descriptor: destroying it here releases the other thread's.
  held.reset();
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).status == LookupStatus::rejected);
  CHECK_FALSE(std::filesystem::exists(entry.manifest_path(store.dir())));
  CHECK(stats.get(Stat::rejected) == 1);
}

TEST_CASE("a lookup under the caller's own key lock removes a bad entry without waiting") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  write_text(entry.manifest_path(store.dir()), "not json");
  const auto lock = store.lock(entry.key, 0ms);
  REQUIRE(lock.acquired());
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  CHECK(found.reason == RejectReason::corrupt_manifest);
  CHECK_FALSE(std::filesystem::exists(entry.manifest_path(store.dir())));
  CHECK(stats.get(Stat::lock_waits) == 0);
  publish_or_throw(store, entry);
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("a disk hit touches the manifest and the object") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  const auto long_ago = std::chrono::system_clock::now() - std::chrono::hours(24 * 30);
  set_mtime(entry.manifest_path(store.dir()), long_ago);
  set_mtime(entry.object_path(store.dir()), long_ago);
  REQUIRE(store.lookup(entry.key, entry.salt, entry.slots).hit());
  const auto recent = std::chrono::system_clock::now() - std::chrono::hours(1);
  CHECK(mtime_of(entry.manifest_path(store.dir())) > recent);
  CHECK(mtime_of(entry.object_path(store.dir())) > recent);
}

namespace {

// Publishes into the cache `cache` made read-only; "" if everything fails softly as it should,
// else what did not. Without doctest's checks, so that a child process can run it.
std::string publish_into_read_only(const fs::path& cache) {
  std::string wrong;
  const auto expect = [&](bool right, const char* what) {
    if (!right) {
      wrong += std::string(wrong.empty() ? "" : "; ") + what;
    }
  };
  Stats stats;
  auto store = Store::open(cache, stats);
  fs::permissions(store.dir(), fs::perms::owner_read | fs::perms::owner_exec);
  // The check proves nothing if this process may write there anyway (root may).
  const auto probe = store.dir() / "probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    ::close(fd);
    return "this process can write into a directory of mode 0500: nothing to check";
  }
  const auto entry = sample_entry();
  PublishOutcome outcome;
  try {
    outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  } catch (const std::exception& error) {
    return std::string("publish threw: ") + error.what();
  }
  expect(!outcome.published(), "the entry was published");
  expect(!outcome.reason.empty(), "the outcome gives no reason");
  expect(stats.get(Stat::publish_failed) == 1, "publish_failed is not 1");
  expect(store.lookup(entry.key, entry.salt, entry.slots).status == LookupStatus::miss,
         "a lookup does not miss");
  // A read-only cache still opens, and its lock attempts fall back to running unlocked.
  try {
    Stats again;
    (void)Store::open(cache, again);
  } catch (const std::exception&) {
    expect(false, "a read-only cache does not open again");
  }
  expect(store.lock(entry.key, 0ms).outcome() == LockOutcome::unsupported,
         "a lock attempt is not unsupported");
  return wrong;
}

} // namespace

TEST_CASE("publishing into a read-only directory fails softly (as root: checked as user nobody)") {
  const Sandbox sandbox;
  if (::geteuid() != 0) {
    CHECK(publish_into_read_only(sandbox.cache()) == "");
    return;
  }
  // Root writes into read-only directories anyway: a child process that has become user nobody
  // runs the check, in a directory of nobody's.
  const auto home = directory_of_nobody(sandbox);
  CHECK(as_nobody([&] { return publish_into_read_only(home / "cache"); }) == "");
}

TEST_CASE("publishing into a directory that vanished fails softly") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  std::filesystem::remove_all(sandbox.cache());
  const auto entry = sample_entry();
  PublishOutcome outcome;
  CHECK_NOTHROW(outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source));
  CHECK_FALSE(outcome.published());
  CHECK(stats.get(Stat::publish_failed) == 1);
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).status == LookupStatus::miss);
  CHECK(store.lock(entry.key, 0ms).outcome() == LockOutcome::unsupported);
  CHECK_NOTHROW(store.flush_stats(stats));
}

TEST_CASE("publishing past the file-size limit (as on a full disk) fails softly, leaving nothing") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto before = names_in(store.dir());
  const auto entry = sample_entry("big", 64 * 1024);

  // Writes past RLIMIT_FSIZE fail with EFBIG (once SIGXFSZ is ignored), as ENOSPC would.
  rlimit old_limit{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const auto outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);

  CHECK_FALSE(outcome.published());
  CHECK(outcome.reason.find("File too large") != std::string::npos);
  CHECK(stats.get(Stat::publish_failed) == 1);
  CHECK(names_in(store.dir()) == before); // no temporaries, no half entry
}

TEST_CASE("publish refuses a key that is not the key of the source: a bug, not an outcome") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  const auto other = sample_entry("other");
  try {
    (void)store.publish(other.key, entry.object, entry.manifest, entry.source);
    FAIL("no error for a key that does not match the source");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::internal);
  }
  CHECK(stats.get(Stat::published) == 0);
}

TEST_CASE("republishing a key replaces the entry whole") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  auto entry = sample_entry();
  publish_or_throw(store, entry);
  entry.object.assign(100, 'x');
  entry.manifest.compile_ms = 1;
  publish_or_throw(store, entry);
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  REQUIRE(found.hit());
  CHECK(found.object == entry.object);
  CHECK(found.manifest->compile_ms == 1);
}

TEST_CASE("leftover temporaries older than the bound are cleaned and young ones kept") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto now = std::chrono::system_clock::now();
  const auto old_temp = store.dir() / ".uwjit-tmp.0123456789abcdef.4242.aaaaaaaaaaaaaaaa.o";
  const auto young_temp = store.dir() / ".uwjit-tmp.0123456789abcdef.4243.bbbbbbbbbbbbbbbb.o";
  const auto not_temp = store.dir() / "tmp.notes";
  for (const auto& path : {old_temp, young_temp, not_temp}) {
    write_text(path, "partial");
    set_mtime(path, now - std::chrono::hours(2));
  }
  set_mtime(young_temp, now - std::chrono::seconds(30));

  const auto removed = store.clean_temporaries(std::chrono::hours(1));
  CHECK(removed == std::vector<std::string>{old_temp.filename().string()});
  CHECK_FALSE(std::filesystem::exists(old_temp));
  CHECK(std::filesystem::exists(young_temp));
  CHECK(std::filesystem::exists(not_temp));
}

TEST_CASE("opening a store cleans old temporaries at most once per interval") {
  const Sandbox sandbox;
  const auto dir = sandbox.cache();
  const auto now = std::chrono::system_clock::now();
  Stats stats;
  (void)Store::open(dir, stats);
  auto plant = [&](const char* name) {
    write_text(dir / name, "partial");
    set_mtime(dir / name, now - k_temporary_grace - std::chrono::minutes(1));
  };

  plant(".uwjit-tmp.first.1.0000000000000000.o");
  set_mtime(dir / "cleanup.stamp", now - k_cleanup_interval - std::chrono::minutes(1));
  (void)Store::open(dir, stats);
  CHECK_FALSE(std::filesystem::exists(dir / ".uwjit-tmp.first.1.0000000000000000.o"));

  plant(".uwjit-tmp.second.1.0000000000000000.o");
  (void)Store::open(dir, stats); // the stamp is fresh: no scan
  CHECK(std::filesystem::exists(dir / ".uwjit-tmp.second.1.0000000000000000.o"));
}
