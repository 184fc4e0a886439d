// Read-only site caches (Store::open_site, UWJIT_CACHE_SITE_DIR): entries verified as any, and
// nothing in the directory ever created, written, locked, touched or removed; the trust rules.
#include "cache_sandbox.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;

namespace {

// What "never written" means: every name with its size, mode and modification time, and every
// file's bytes.
std::string snapshot(const fs::path& dir) {
  std::ostringstream out;
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir)) {
    paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    struct stat st{};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    out << path.filename().string() << " " << st.st_size << " " << std::oct << st.st_mode
        << std::dec << " " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << "\n";
    if (S_ISREG(st.st_mode)) {
      out << read_text(path) << "\n";
    }
  }
  return out.str();
}

// A cache in `dir` holding `entry`, made read-only as a site's keeper would (dirs 0555, files
// 0444).
void make_site(const fs::path& dir, const SampleEntry& entry) {
  {
    auto writer = Store::open(dir);
    publish_or_throw(writer, entry);
  }
  for (const auto& file : fs::directory_iterator(dir)) {
    REQUIRE(::chmod(file.path().c_str(), 0444) == 0);
  }
  REQUIRE(::chmod(dir.c_str(), 0555) == 0);
}

std::string site_error(const fs::path& dir) {
  Stats stats;
  try {
    (void)Store::open_site(dir, stats);
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

TEST_CASE("a site cache serves verified entries and nothing in it is written, locked or touched") {
  const Sandbox sandbox;
  const auto entry = sample_entry();
  const auto site_dir = sandbox.root() / "site";
  make_site(site_dir, entry);
  const std::string before = snapshot(site_dir);
  Stats stats;
  auto site = Store::open_site(site_dir, stats);
  CHECK(site.is_site());
  CHECK(site.dir() == site_dir);
  CHECK(site.unwritable().has_value());
  const auto found = site.lookup(entry.key, entry.salt, entry.slots);
  REQUIRE(found.hit());
  CHECK(found.object == entry.object);
  CHECK(stats.get(Stat::disk_hits) == 1);
  // Another request (other slot names) is a miss, and the entry stays.
  CHECK(site.lookup(entry.key, entry.salt, {}).status == LookupStatus::rejected);
  CHECK(site.list().size() == 1);
  CHECK(site.verify(Fix::no).ok());
  site.flush_stats(stats); // a site's counters are its writers': nothing is written
  CHECK(snapshot(site_dir) == before);
  // What would write is a bug in the caller, never a silent write.
  CHECK_THROWS_AS((void)site.lock(entry.key, std::chrono::milliseconds(0)), Error);
  CHECK_THROWS_AS((void)site.publish(entry.key, entry.object, entry.manifest, entry.source), Error);
  CHECK_THROWS_AS((void)site.verify(Fix::yes), Error);
  CHECK_THROWS_AS((void)site.wipe(DryRun::yes), Error);
  CHECK(snapshot(site_dir) == before);
}

TEST_CASE("a damaged site entry is a miss, counted once, and left where it is") {
  const Sandbox sandbox;
  const auto entry = sample_entry();
  const auto site_dir = sandbox.root() / "site";
  {
    auto writer = Store::open(site_dir);
    publish_or_throw(writer, entry);
  }
  auto bytes = read_text(entry.object_path(site_dir));
  bytes[100] ^= 1;
  write_text(entry.object_path(site_dir), bytes);
  const std::string before = snapshot(site_dir);
  Stats stats;
  auto site = Store::open_site(site_dir, stats);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto found = site.lookup(entry.key, entry.salt, entry.slots);
    CHECK(found.status == LookupStatus::rejected);
    CHECK(found.reason == RejectReason::checksum_mismatch);
  }
  CHECK(stats.get(Stat::rejected) == 1);
  CHECK(snapshot(site_dir) == before); // not removed, not locked (no lock file either)
  CHECK(fs::exists(entry.object_path(site_dir)));
  CHECK_FALSE(fs::exists(entry.lock_path(site_dir)));
}

TEST_CASE("a site cache that its group or others can write is refused unless shared caches are "
          "trusted; one another user owns is accepted") {
  const Sandbox sandbox;
  const ScopedEnv trust(k_trust_shared_variable, std::nullopt);
  const auto entry = sample_entry();
  const auto site_dir = sandbox.root() / "site";
  make_site(site_dir, entry);
  for (const auto& [mode, who] : {std::pair{0775, "its group"}, std::pair{0757, "other users"}}) {
    CAPTURE(mode);
    REQUIRE(::chmod(site_dir.c_str(), static_cast<mode_t>(mode)) == 0);
    const auto message = site_error(site_dir);
    CHECK(contains(message, "site cache \"" + site_dir.string() +
                                "\" is refused: it is writable "
                                "by " +
                                std::string(who)));
    CHECK(contains(message, "UWJIT_CACHE_TRUST_SHARED=1"));
    const ScopedEnv trusting(k_trust_shared_variable, "1");
    CHECK(site_error(site_dir) == "(opened)");
  }
  REQUIRE(::chmod(site_dir.c_str(), 0555) == 0);
  if (::geteuid() == 0) {
    // The normal case on a cluster: root or a project account keeps the site cache.
    REQUIRE(::chown(site_dir.c_str(), k_nobody, k_nobody) == 0);
    CHECK(site_error(site_dir) == "(opened)");
    // Store::open refuses the same directory as a cache of one's own.
    Stats stats;
    CHECK_THROWS_AS((void)Store::open(site_dir, stats), Error);
  }
}

TEST_CASE("a site cache must exist and be uwjit's; in a directory of other files, its uwjit/") {
  const Sandbox sandbox;
  CHECK(contains(site_error(sandbox.root() / "missing"),
                 "site cache \"" + (sandbox.root() / "missing").string() + "\": cannot open"));
  const auto shared = sandbox.root() / "shared";
  fs::create_directory(shared);
  write_text(shared / "notes.txt", "not a cache");
  CHECK(contains(site_error(shared), "is not a uwjit cache"));
  // Store::open put the cache in shared/uwjit: a site cache named by shared finds it there.
  const auto entry = sample_entry();
  {
    auto writer = Store::open(shared);
    publish_or_throw(writer, entry);
  }
  Stats stats;
  auto site = Store::open_site(shared, stats);
  CHECK(site.dir() == shared / "uwjit");
  CHECK(site.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("UWJIT_CACHE_SITE_DIR lists site caches in order, made absolute; UWJIT_CACHE=0 turns "
          "them off") {
  const ScopedEnv cache("UWJIT_CACHE", std::nullopt);
  {
    const ScopedEnv sites("UWJIT_CACHE_SITE_DIR", "/a/site::relative/site:");
    const auto dirs = resolve_site_locations();
    REQUIRE(dirs.size() == 2);
    CHECK(dirs[0] == "/a/site");
    CHECK(dirs[1] == fs::current_path() / "relative" / "site");
    const ScopedEnv off("UWJIT_CACHE", "0");
    CHECK(resolve_site_locations().empty());
  }
  const ScopedEnv none("UWJIT_CACHE_SITE_DIR", std::nullopt);
  CHECK(resolve_site_locations().empty());
}
