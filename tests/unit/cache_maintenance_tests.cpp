// The store's upkeep: LRU eviction that deletes only entry files, listing, verify (--fix), and
// wipe, which refuses a directory without the marker.
#include "cache_sandbox.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <future>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;
using namespace std::chrono_literals;

namespace {
using Clock = std::chrono::system_clock;

// Publishes entries named by `names`, each last used one hour later than the one before it.
std::vector<SampleEntry> publish_aged(Store& store, std::initializer_list<const char*> names) {
  std::vector<SampleEntry> entries;
  auto when = Clock::now() - std::chrono::hours(24 * 10);
  for (const char* name : names) {
    entries.push_back(sample_entry(name));
    publish_or_throw(store, entries.back());
    set_mtime(entries.back().manifest_path(store.dir()), when);
    when += std::chrono::hours(1);
  }
  return entries;
}

bool has_entry(const Store& store, const SampleEntry& entry) {
  return std::filesystem::exists(entry.manifest_path(store.dir()));
}

std::vector<std::string> keys_of(const EvictReport& report) {
  std::vector<std::string> keys;
  for (const auto& evicted : report.evicted) {
    keys.push_back(evicted.key.hex());
  }
  return keys;
}
} // namespace

TEST_CASE("eviction removes the least recently used entries first, down to 90% of the limit") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"oldest", "middle", "newest", "fresh"});
  const auto total = store.total_size();
  const auto per_entry = total / 4;

  // A limit that three entries fit: trimming to 90% of it leaves two, the most recently used.
  const std::uint64_t limit = total - per_entry;
  REQUIRE(limit * 9 / 10 < total - per_entry);
  REQUIRE(limit * 9 / 10 >= total - 2 * per_entry + 3); // entries differ by a byte or so
  const auto report =
      store.evict(EvictBy{.max_size = limit, .older_than = std::nullopt}, DryRun::no);
  CHECK(keys_of(report) == std::vector<std::string>{entries[0].key.hex(), entries[1].key.hex()});
  CHECK(report.size_before == total);
  CHECK(report.size_after == store.total_size());
  CHECK(report.size_after <= limit * 9 / 10);
  CHECK_FALSE(has_entry(store, entries[0]));
  CHECK_FALSE(std::filesystem::exists(entries[0].object_path(store.dir())));
  CHECK_FALSE(std::filesystem::exists(entries[0].source_path(store.dir())));
  CHECK(has_entry(store, entries[2]));
  CHECK(has_entry(store, entries[3]));
  CHECK(stats.get(Stat::evicted) == 2);
}

TEST_CASE("a cache under its limit is not evicted") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  publish_aged(store, {"a", "b"});
  const auto report =
      store.evict(EvictBy{.max_size = store.total_size(), .older_than = {}}, DryRun::no);
  CHECK(report.evicted.empty());
  CHECK(stats.get(Stat::evicted) == 0);
}

TEST_CASE("a disk hit makes an entry the most recently used") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"oldest", "middle", "newest"});
  REQUIRE(store.lookup(entries[0].key, entries[0].salt, entries[0].slots).hit());
  const auto report =
      store.evict(EvictBy{.max_size = store.total_size() - 1, .older_than = {}}, DryRun::no);
  CHECK(keys_of(report) == std::vector<std::string>{entries[1].key.hex()});
  CHECK(has_entry(store, entries[0]));
}

TEST_CASE("evicting by age removes the entries unused for longer than the bound") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"old", "recent"});
  set_mtime(entries[1].manifest_path(store.dir()), Clock::now() - std::chrono::hours(1));
  const auto report = store.evict(
      EvictBy{.max_size = std::nullopt, .older_than = std::chrono::hours(24 * 7)}, DryRun::no);
  CHECK(keys_of(report) == std::vector<std::string>{entries[0].key.hex()});
  CHECK(has_entry(store, entries[1]));
}

TEST_CASE("eviction deletes only files named like entries") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"a", "b"});
  const auto dir = store.dir();
  const std::vector<std::string> foreign = {"notes.txt",
                                            "0123456789ABCDEF.o", // upper case: not a key
                                            "0123456789abcdef.o.bak",
                                            "0123456789abcde.o",       // 15 digits
                                            "0123456789abcdefa.json"}; // 17 digits
  for (const auto& name : foreign) {
    write_text(dir / name, std::string(100000, 'x'));
    set_mtime(dir / name, Clock::now() - std::chrono::hours(24 * 365));
  }
  std::filesystem::create_directory(dir / "fedcba9876543210.o"); // a directory named like one
  {
    const auto lock = store.lock(entries[0].key, 0ms); // leaves a lock file behind
  }

  const auto report =
      store.evict(EvictBy{.max_size = 0, .older_than = std::chrono::seconds(0)}, DryRun::no);
  CHECK(report.evicted.size() == 2);
  for (const auto& name : foreign) {
    CAPTURE(name);
    CHECK(std::filesystem::exists(dir / name));
  }
  CHECK(std::filesystem::is_directory(dir / "fedcba9876543210.o"));
  CHECK(std::filesystem::exists(entries[0].lock_path(dir)));
  CHECK(std::filesystem::exists(dir / "CACHEDIR.TAG"));
  CHECK(store.total_size() == 0);
}

TEST_CASE("a dry-run eviction reports without deleting") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"a", "b"});
  const auto before = names_in(store.dir());
  const auto report = store.evict(EvictBy{.max_size = 0, .older_than = {}}, DryRun::yes);
  CHECK(report.evicted.size() == 2);
  CHECK(report.size_after == 0);
  CHECK(names_in(store.dir()) == before);
  CHECK(stats.get(Stat::evicted) == 0);
}

TEST_CASE("an entry whose key lock is held by a writer is not evicted") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"busy", "idle"});
  const auto held = std::async(std::launch::async, [&] {
                      return std::make_unique<KeyLock>(store.lock(entries[0].key, 0ms));
                    }).get();
  REQUIRE(held->acquired());
  const auto report = store.evict(EvictBy{.max_size = 0, .older_than = {}}, DryRun::no);
  CHECK(keys_of(report) == std::vector<std::string>{entries[1].key.hex()});
  REQUIRE(report.in_use.size() == 1);
  CHECK(report.in_use[0] == entries[0].key);
  CHECK(has_entry(store, entries[0]));
}

TEST_CASE("maybe_evict does nothing under the limit and trims above it") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"a", "b", "c"});
  const auto total = store.total_size();
  CHECK_FALSE(store.maybe_evict(total));
  const auto report = store.maybe_evict(total - 1);
  REQUIRE(report);
  CHECK(keys_of(*report) == std::vector<std::string>{entries[0].key.hex()});
}

TEST_CASE("maybe_evict leaves the work to a process already evicting") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  publish_aged(store, {"a", "b"});
  const int fd = ::open((store.dir() / "evict.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK_FALSE(store.maybe_evict(0));
  ::close(fd);
  CHECK(store.maybe_evict(0));
  CHECK(store.total_size() == 0);
}

TEST_CASE("list describes each entry from its manifest") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"alpha", "beta"});
  write_text(store.dir() / "ffffffffffffffff.json", "broken"); // unreadable: not listed
  auto listed = store.list();
  REQUIRE(listed.size() == 2);
  std::sort(listed.begin(), listed.end(),
            [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  CHECK(listed[0].key == entries[0].key);
  CHECK(listed[0].origin == "alpha");
  CHECK(listed[0].entry == "uwjit_" + entries[0].key.hex());
  CHECK(listed[0].object_size == entries[0].object.size());
  CHECK(listed[0].total_size > listed[0].object_size);
  CHECK(listed[0].compile_ms == 12.5);
  CHECK(listed[1].origin == "beta");
  CHECK(store.read_source(entries[1].key) == entries[1].source);
  REQUIRE(store.read_manifest(entries[1].key));
  CHECK(store.read_manifest(entries[1].key)->origin == "beta");
  CHECK_FALSE(store.read_manifest(sample_entry("absent").key));
}

TEST_CASE("verify reports bad entries and orphans, and fix removes them") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"good", "truncated", "orphan"});
  const auto dir = store.dir();
  std::filesystem::resize_file(entries[1].object_path(dir), 3);
  std::filesystem::remove(entries[2].manifest_path(dir));
  const auto stale = dir / ".uwjit-tmp.x.1.0000000000000000.o";
  write_text(stale, "partial");
  set_mtime(stale, Clock::now() - k_temporary_grace - std::chrono::minutes(1));

  const auto report = store.verify(Fix::no);
  CHECK_FALSE(report.ok());
  REQUIRE(report.entries.size() == 2);
  for (const auto& verdict : report.entries) {
    CAPTURE(verdict.key.hex());
    if (verdict.key == entries[0].key) {
      CHECK_FALSE(verdict.problem);
    } else {
      CHECK(verdict.problem == RejectReason::truncated_object);
      CHECK_FALSE(verdict.removed);
    }
  }
  CHECK(report.orphans ==
        std::vector<std::string>{entries[2].key.hex() + ".cpp", entries[2].key.hex() + ".o"});
  CHECK(report.stale_temporaries == std::vector<std::string>{stale.filename().string()});
  CHECK(report.removed.empty());
  CHECK(std::filesystem::exists(entries[1].manifest_path(dir)));

  const auto fixed = store.verify(Fix::yes);
  CHECK(fixed.removed.size() == 3 + 2 + 1);
  CHECK_FALSE(std::filesystem::exists(entries[1].manifest_path(dir)));
  CHECK_FALSE(std::filesystem::exists(entries[2].object_path(dir)));
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(has_entry(store, entries[0]));
  CHECK(store.verify(Fix::no).ok());
}

TEST_CASE("verify finds a stored source that does not hash to its key") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  write_text(entry.source_path(store.dir()), entry.source + "// edited by hand\n");
  const auto report = store.verify(Fix::no);
  REQUIRE(report.entries.size() == 1);
  CHECK(report.entries[0].problem == RejectReason::key_mismatch);
  // Lookups do not read the source: the object is still sound for them.
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("wipe refuses a directory without the marker") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  for (const std::string_view tag : {"", "Signature: something else\n"}) {
    CAPTURE(tag);
    if (tag.empty()) {
      std::filesystem::remove(store.dir() / "CACHEDIR.TAG");
    } else {
      write_text(store.dir() / "CACHEDIR.TAG", tag);
    }
    const auto before = names_in(store.dir());
    try {
      (void)store.wipe(DryRun::no);
      FAIL("wipe did not refuse an unmarked directory");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      CHECK(std::string(e.what()).find("CACHEDIR.TAG") != std::string::npos);
    }
    CHECK(names_in(store.dir()) == before);
  }
}

TEST_CASE("wipe removes uwjit's files and keeps the others") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"a", "b"});
  const auto dir = store.dir();
  {
    const auto lock = store.lock(entries[0].key, 0ms);
  }
  store.flush_stats(stats);
  write_text(dir / ".uwjit-tmp.y.2.0000000000000000.json", "partial");
  set_mtime(dir / ".uwjit-tmp.y.2.0000000000000000.json",
            Clock::now() - k_temporary_grace - std::chrono::minutes(1));
  write_text(dir / "README.md", "mine");
  write_text(dir / "0123456789abcdef.o.bak", "mine too");

  const auto dry = store.wipe(DryRun::yes);
  CHECK(std::find(dry.removed.begin(), dry.removed.end(), "stats.json") != dry.removed.end());
  CHECK(std::filesystem::exists(entries[0].manifest_path(dir)));

  const auto report = store.wipe(DryRun::no);
  // As the dry run said, plus the lock files the wipe itself made to exclude writers.
  for (const auto& name : dry.removed) {
    CHECK(std::find(report.removed.begin(), report.removed.end(), name) != report.removed.end());
  }
  for (const auto& name : report.removed) {
    CHECK((std::find(dry.removed.begin(), dry.removed.end(), name) != dry.removed.end() ||
           name.ends_with(".lock")));
  }
  CHECK(report.bytes > 0);
  CHECK(report.kept == std::vector<std::string>{"0123456789abcdef.o.bak", "README.md"});
  CHECK(report.failed.empty());
  CHECK(names_in(dir) ==
        std::vector<std::string>{"0123456789abcdef.o.bak", "CACHEDIR.TAG", "README.md"});
  // A young temporary may be a live writer's: kept, and said to be in use.
  write_text(dir / ".uwjit-tmp.z.3.0000000000000000.o", "being written");
  const auto busy = store.wipe(DryRun::no);
  CHECK(busy.in_use == std::vector<std::string>{".uwjit-tmp.z.3.0000000000000000.o"});
  CHECK(std::filesystem::exists(dir / ".uwjit-tmp.z.3.0000000000000000.o"));
  std::filesystem::remove(dir / ".uwjit-tmp.z.3.0000000000000000.o");
  // Still a cache: it works on.
  publish_or_throw(store, entries[0]);
  CHECK(store.lookup(entries[0].key, entries[0].salt, entries[0].slots).hit());
}

namespace {
// Takes the key lock of `entry` on another thread, as a writer publishing it would; held until
// the returned lock is destroyed.
std::unique_ptr<KeyLock> held_by_a_writer(Store& store, const SampleEntry& entry) {
  auto lock = std::async(std::launch::async, [&] {
                return std::make_unique<KeyLock>(store.lock(entry.key, 0ms));
              }).get();
  REQUIRE(lock->acquired());
  return lock;
}
} // namespace

TEST_CASE("wipe leaves alone an entry whose key lock a writer holds, and says so") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"busy", "idle"});
  const auto dir = store.dir();
  {
    const auto held = held_by_a_writer(store, entries[0]);
    const auto report = store.wipe(DryRun::no);
    CHECK(has_entry(store, entries[0]));
    CHECK(std::filesystem::exists(entries[0].object_path(dir)));
    CHECK(std::filesystem::exists(entries[0].lock_path(dir)));
    CHECK_FALSE(has_entry(store, entries[1]));
    CHECK(std::find(report.in_use.begin(), report.in_use.end(), entries[0].key.hex() + ".o") !=
          report.in_use.end());
    CHECK(std::find(report.in_use.begin(), report.in_use.end(), entries[0].key.hex() + ".lock") !=
          report.in_use.end());
    CHECK(store.lookup(entries[0].key, entries[0].salt, entries[0].slots).hit());
  }
  // Once the writer is done, wipe takes it too.
  CHECK(store.wipe(DryRun::no).in_use.empty());
  CHECK_FALSE(has_entry(store, entries[0]));
}

TEST_CASE("verify --fix leaves a bad entry a writer holds, and reports it as remaining") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entries = publish_aged(store, {"busy", "orphan"});
  const auto dir = store.dir();
  std::filesystem::resize_file(entries[0].object_path(dir), 3);
  std::filesystem::remove(entries[1].manifest_path(dir));
  {
    const auto held = held_by_a_writer(store, entries[0]);
    const auto held_orphan = held_by_a_writer(store, entries[1]);
    const auto report = store.verify(Fix::yes);
    CHECK(std::filesystem::exists(entries[0].manifest_path(dir)));
    CHECK(std::filesystem::exists(entries[1].object_path(dir)));
    std::vector<std::string> expected{entries[0].key.hex() + ".cpp", entries[0].key.hex() + ".json",
                                      entries[0].key.hex() + ".o", entries[1].key.hex() + ".cpp",
                                      entries[1].key.hex() + ".o"};
    std::sort(expected.begin(), expected.end());
    CHECK(report.remaining == expected);
  }
  const auto fixed = store.verify(Fix::yes);
  CHECK(fixed.remaining.empty());
  CHECK(store.verify(Fix::no).ok());
}

TEST_CASE("verify reports a directory in an entry's place and never removes it") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  const auto dir = store.dir();
  std::filesystem::remove(entry.object_path(dir));
  std::filesystem::create_directory(entry.object_path(dir));
  write_text(entry.object_path(dir) / "inside", "mine");
  const auto report = store.verify(Fix::no);
  CHECK_FALSE(report.ok());
  CHECK(report.foreign == std::vector<std::string>{entry.key.hex() + ".o"});
  const auto fixed = store.verify(Fix::yes);
  CHECK(std::find(fixed.remaining.begin(), fixed.remaining.end(), entry.key.hex() + ".o") !=
        fixed.remaining.end());
  CHECK(read_text(entry.object_path(dir) / "inside") == "mine");
}

TEST_CASE("a manifest larger than a reader accepts is refused before anything is written") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  auto entry = sample_entry();
  entry.manifest.origin = std::string((std::size_t{1} << 20) + 1, 'o');
  const auto outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  CHECK_FALSE(outcome.published());
  CHECK(outcome.reason.find("manifest") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(entry.object_path(store.dir())));
  CHECK_FALSE(std::filesystem::exists(entry.manifest_path(store.dir())));
  CHECK(temporaries_in(store.dir()).empty());
  CHECK(stats.get(Stat::publish_failed) == 1);
}

TEST_CASE("a source larger than a reader accepts is refused before anything is written") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  auto entry = sample_entry();
  entry.source.resize((std::size_t{256} << 20) + 1, ' ');
  entry.key = Key::of(entry.source, entry.salt);
  const auto outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  CHECK_FALSE(outcome.published());
  CHECK(outcome.reason.find("source") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(entry.object_path(store.dir())));
  CHECK_FALSE(std::filesystem::exists(entry.source_path(store.dir())));
  CHECK(temporaries_in(store.dir()).empty());
}

TEST_CASE("verify --fix keeps a sound entry whose source is too large to judge") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  // As another version might have left it: a source beyond what verify reads.
  std::filesystem::resize_file(entry.source_path(store.dir()), (std::uintmax_t{256} << 20) + 1);
  const auto report = store.verify(Fix::yes);
  CHECK(report.remaining.empty());
  CHECK(report.removed.empty());
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("eviction reports an entry that alone is larger than the limit") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry("big", 8192);
  publish_or_throw(store, entry);
  const auto report = store.maybe_evict(1024);
  REQUIRE(report);
  REQUIRE(report->larger_than_limit.size() == 1);
  CHECK(report->larger_than_limit[0].key == entry.key);
  CHECK(report->larger_than_limit[0].bytes > 1024);
  // A limit that holds it is no warning.
  publish_or_throw(store, entry);
  const auto fits = store.evict(EvictBy{.max_size = 1 << 20, .older_than = {}}, DryRun::no);
  CHECK(fits.larger_than_limit.empty());
}

TEST_CASE("an entry's binary serves only the loader that made it, and goes with its entry") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry("with a binary");
  const std::string code = "machine code\n\n\0 with a NUL";
  const std::span<const char> bytes(code.data(), code.size());
  // Not before its entry: it would be an orphan.
  CHECK_FALSE(store.publish_binary(entry.key, "cuda driver 12040 sm_90", bytes).published());
  CHECK(store.lookup_binary(entry.key, "cuda driver 12040 sm_90").status ==
        BinaryLookup::Status::miss);
  publish_or_throw(store, entry);
  const auto without_binary = store.total_size();
  REQUIRE(store.publish_binary(entry.key, "cuda driver 12040 sm_90", bytes).published());
  const auto hit = store.lookup_binary(entry.key, "cuda driver 12040 sm_90");
  REQUIRE(hit.hit());
  CHECK(std::string(hit.bytes.begin(), hit.bytes.end()) == code);
  const auto other = store.lookup_binary(entry.key, "cuda driver 12050 sm_90");
  CHECK(other.status == BinaryLookup::Status::stale);
  CHECK(other.detail == "cuda driver 12040 sm_90");
  CHECK(store.binary_problem(entry.key).empty());
  CHECK(store.verify(Fix::no).ok());

  // Its size counts, and eviction takes it with the entry.
  const auto binary = store.dir() / (entry.key.hex() + ".cubin");
  REQUIRE(std::filesystem::exists(binary));
  CHECK(store.total_size() == without_binary + std::filesystem::file_size(binary));
  (void)store.evict(EvictBy{.max_size = 0, .older_than = std::nullopt}, DryRun::no);
  CHECK_FALSE(std::filesystem::exists(binary));
  CHECK(store.total_size() == 0);
}

TEST_CASE(
    "a damaged binary is named by verify, removed by the fix or by a lookup, the entry kept") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry("damaged binary");
  publish_or_throw(store, entry);
  const std::string code(300, 'x');
  REQUIRE(store.publish_binary(entry.key, "loader", std::span<const char>(code)).published());
  const auto binary = store.dir() / (entry.key.hex() + ".cubin");
  auto damage = [&] {
    std::fstream file(binary, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('y');
  };
  damage();
  CHECK(store.binary_problem(entry.key) == "its 300 bytes do not have the SHA-256 of its header");
  const auto found = store.verify(Fix::no);
  CHECK_FALSE(found.ok());
  REQUIRE(found.entries.size() == 1);
  CHECK(found.entries[0].problem == RejectReason::checksum_mismatch);
  CHECK(found.entries[0].detail.find(".cubin: its 300 bytes") != std::string::npos);
  const auto fixed = store.verify(Fix::yes);
  CHECK(fixed.removed == std::vector<std::string>{entry.key.hex() + ".cubin"});
  CHECK_FALSE(std::filesystem::exists(binary));
  CHECK(has_entry(store, entry));
  CHECK(store.verify(Fix::no).ok());

  REQUIRE(store.publish_binary(entry.key, "loader", std::span<const char>(code)).published());
  damage();
  CHECK(store.lookup_binary(entry.key, "loader").status == BinaryLookup::Status::rejected);
  CHECK_FALSE(std::filesystem::exists(binary));
  CHECK(has_entry(store, entry));
}
