// The cache's trust rules: who may own and write the directory, symlinks are never followed,
// keys are validated before they become file names, and upkeep deletes only uwjit's files.
#include "cache_sandbox.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;
using namespace std::chrono_literals;

namespace {

std::string open_error(const fs::path& dir) {
  Stats stats;
  try {
    (void)Store::open(dir, stats);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::io);
    return e.what();
  }
  return "(opened)";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a cache directory that its group or other users can write is refused") {
  const Sandbox sandbox;
  const ScopedEnv trust(k_trust_shared_variable, std::nullopt);
  fs::create_directory(sandbox.cache());
  for (const auto& [mode, who] : {std::pair{0770, "its group"}, std::pair{0777, "other users"},
                                  std::pair{01777, "other users"}, std::pair{0720, "its group"}}) {
    CAPTURE(mode);
    REQUIRE(::chmod(sandbox.cache().c_str(), static_cast<mode_t>(mode)) == 0);
    const auto message = open_error(sandbox.cache());
    CHECK(contains(message, "cache directory \"" + sandbox.cache().string() + "\" is refused"));
    CHECK(contains(message, std::string("it is writable by ") + who));
    CHECK(contains(message, "whoever can write it can run code in this process"));
    CHECK(contains(message, "UWJIT_CACHE_TRUST_SHARED=1"));
    CHECK(names_in(sandbox.cache()).empty()); // refused before anything is written
  }
  // Read access for others is fine: only writing plants code.
  REQUIRE(::chmod(sandbox.cache().c_str(), 0755) == 0);
  CHECK(open_error(sandbox.cache()) == "(opened)");
}

TEST_CASE("a cache directory owned by another user is refused") {
  const Sandbox sandbox;
  const ScopedEnv trust(k_trust_shared_variable, std::nullopt);
  if (::geteuid() == 0) {
    fs::create_directory(sandbox.cache());
    REQUIRE(::chmod(sandbox.cache().c_str(), 0700) == 0);
    REQUIRE(::chown(sandbox.cache().c_str(), 65534, 65534) == 0);
    CHECK(contains(open_error(sandbox.cache()),
                   "it is owned by uid 65534, not by this user (uid 0)"));
    return;
  }
  // Not root: no directory can be given away, but the file system's root is someone else's.
  struct stat st{};
  REQUIRE(::stat("/", &st) == 0);
  INFO("/ is owned by uid " << st.st_uid << ", this user is uid " << ::geteuid());
  REQUIRE(st.st_uid != ::geteuid()); // else nothing here belongs to another user
  CHECK(contains(open_error("/"), "it is owned by uid " + std::to_string(st.st_uid) +
                                      ", not by this user (uid " + std::to_string(::geteuid()) +
                                      ")"));
}

TEST_CASE("a symlink to someone else's directory is judged by the directory it names") {
  const Sandbox sandbox;
  const ScopedEnv trust(k_trust_shared_variable, std::nullopt);
  const auto shared = sandbox.root() / "shared";
  fs::create_directory(shared);
  REQUIRE(::chmod(shared.c_str(), 0777) == 0);
  fs::create_directory_symlink(shared, sandbox.cache());
  CHECK(contains(open_error(sandbox.cache()), "it is writable by other users"));
}

TEST_CASE("UWJIT_CACHE_TRUST_SHARED=1 accepts a shared directory; a bad value is a usage error") {
  const Sandbox sandbox;
  fs::create_directory(sandbox.cache());
  REQUIRE(::chmod(sandbox.cache().c_str(), 0777) == 0);
  {
    const ScopedEnv trust(k_trust_shared_variable, "1");
    Stats stats;
    auto store = Store::open(sandbox.cache(), stats);
    const auto entry = sample_entry();
    publish_or_throw(store, entry);
    CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
  }
  {
    const ScopedEnv trust(k_trust_shared_variable, "0");
    CHECK(contains(open_error(sandbox.cache()), "is refused"));
  }
  const ScopedEnv trust(k_trust_shared_variable, "sure");
  try {
    (void)Store::open(sandbox.cache());
    FAIL("no error for UWJIT_CACHE_TRUST_SHARED=sure");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) == "UWJIT_CACHE_TRUST_SHARED: unrecognised value \"sure\" "
                                   "(accepted: 0, false, no, off, 1, true, yes, on)");
  }
}

TEST_CASE("a symlinked manifest is refused and its target neither read nor removed") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  // A perfectly valid manifest, but reached through a link: refused all the same.
  const auto elsewhere = sandbox.root() / "manifest.json";
  fs::rename(entry.manifest_path(store.dir()), elsewhere);
  fs::create_symlink(elsewhere, entry.manifest_path(store.dir()));
  const auto found = store.lookup(entry.key, entry.salt, entry.slots);
  CHECK(found.reason == RejectReason::corrupt_manifest);
  CHECK(contains(found.detail, "it is a symlink"));
  CHECK(fs::exists(elsewhere));
  CHECK_FALSE(fs::exists(fs::symlink_status(entry.manifest_path(store.dir()))));
  CHECK_FALSE(store.read_manifest(entry.key));
}

TEST_CASE("a symlinked source is never read") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  const auto secret = sandbox.root() / "secret.txt";
  write_text(secret, "not for the cache");
  fs::remove(entry.source_path(store.dir()));
  fs::create_symlink(secret, entry.source_path(store.dir()));
  CHECK_FALSE(store.read_source(entry.key));
  const auto report = store.verify(Fix::no);
  REQUIRE(report.entries.size() == 1);
  CHECK(report.entries[0].problem == RejectReason::key_mismatch);
  CHECK(contains(report.entries[0].detail, "cannot read the source"));
}

TEST_CASE("a symlinked lock file is neither followed nor created through") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  const auto target = sandbox.root() / "created-through-the-link";
  fs::create_symlink(target, entry.lock_path(store.dir()));
  // O_NOFOLLOW: the lock cannot be taken, so the store runs unlocked rather than follow it.
  CHECK(store.lock(entry.key, 0ms).outcome() == LockOutcome::unsupported);
  CHECK_FALSE(fs::exists(target));
  publish_or_throw(store, entry);
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
  CHECK_FALSE(fs::exists(target));
}

TEST_CASE("wipe, eviction and verify remove symlinks named like entries, never their targets") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto dir = store.dir();
  const auto victim = sandbox.root() / "precious.txt";
  write_text(victim, "keep me");
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  const std::vector<std::string> links = {"0123456789abcdef.o", "0123456789abcdef.cpp",
                                          "fedcba9876543210.json", "stats.json",
                                          ".uwjit-tmp.x.1.0000000000000000.o"};
  auto plant = [&] {
    for (const auto& name : links) {
      fs::remove(dir / name);
      fs::create_symlink(victim, dir / name);
    }
  };

  plant();
  (void)store.verify(Fix::yes);
  const auto evicted =
      store.evict(EvictBy{.max_size = 0, .older_than = std::chrono::seconds(0)}, DryRun::no);
  CHECK_FALSE(evicted.evicted.empty());
  CHECK(read_text(victim) == "keep me");

  plant();
  const auto report = store.wipe(DryRun::no);
  CHECK(report.failed.empty());
  for (const auto& name : links) {
    CAPTURE(name);
    CHECK_FALSE(fs::exists(fs::symlink_status(dir / name)));
  }
  CHECK(read_text(victim) == "keep me");
}

TEST_CASE("keys that could name a path outside the directory do not parse") {
  for (const std::string_view text : std::initializer_list<std::string_view>{
           "../../etc/passwd", "0123456789abcde/", "/123456789abcdef", "0123456789abcde.",
           "0123456789abcdeF", "0123456789abcdef\n", std::string_view("0123456789abcde\0", 16), "",
           "0123456789abcdef0"}) {
    CAPTURE(text);
    CHECK_FALSE(Key::parse(text));
  }
  CHECK(Key::parse("0123456789abcdef"));
}

TEST_CASE("wipe and eviction never delete a file not named like uwjit's") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto dir = store.dir();
  publish_or_throw(store, sample_entry());
  const std::vector<std::string> foreign = {"0123456789abcdef.so",
                                            "0123456789abcdef.O",
                                            "0123456789abcdef.json~",
                                            "x0123456789abcdef.o",
                                            "0123456789abcdef..o",
                                            ".0123456789abcdef.o",
                                            "tmp.0123.o",
                                            "stats.json.bak",
                                            "CACHEDIR.TAG.old",
                                            "evict.lock2",
                                            "0123456789abcdef.lock.",
                                            "ABCDEF0123456789.cpp",
                                            ".tmp.x.1.0000000000000000.o"};
  for (const auto& name : foreign) {
    write_text(dir / name, "mine");
  }
  fs::create_directory(dir / "subdir");
  write_text(dir / "subdir" / "0123456789abcdef.o", "mine");
  (void)store.evict(EvictBy{.max_size = 0, .older_than = std::chrono::seconds(0)}, DryRun::no);
  (void)store.verify(Fix::yes);
  const auto report = store.wipe(DryRun::no);
  for (const auto& name : foreign) {
    CAPTURE(name);
    CHECK(read_text(dir / name) == "mine");
  }
  CHECK(read_text(dir / "subdir" / "0123456789abcdef.o") == "mine");
  CHECK(report.kept.size() == foreign.size() + 1);
}
