// uwjit owns only what it made: a directory holding other files (UWJIT_CACHE_DIR=. or $HOME)
// is never marked, cleaned or wiped; the store lives in its uwjit/ subdirectory instead.
#include "cache_sandbox.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;

namespace {
using Clock = std::chrono::system_clock;

// A user's directory: files under the names uwjit uses inside its own cache, and an old
// temporary of another program, each with its content and an mtime to compare afterwards.
struct UserFiles {
  std::vector<std::pair<fs::path, std::string>> files;

  explicit UserFiles(const fs::path& dir) {
    fs::create_directories(dir);
    files = {{dir / "stats.json", "{\"mine\": true}\n"},
             {dir / ".tmp.report.1234.o", "a draft"},
             {dir / ".tmp.x.1.0000000000000000.o", "another draft"},
             {dir / "0123456789abcdef.o", "not a kernel"},
             {dir / "notes.txt", "keep"}};
    for (const auto& [path, text] : files) {
      write_text(path, text);
      // Older than any grace period a clean-up of temporaries would honour.
      set_mtime(path, Clock::now() - std::chrono::hours(24));
    }
  }

  void check_untouched() const {
    for (const auto& [path, text] : files) {
      CAPTURE(path);
      REQUIRE(fs::exists(path));
      CHECK(read_text(path) == text);
    }
  }
};
} // namespace

TEST_CASE("a directory holding other files gets a uwjit/ subdirectory and is left as it was") {
  const Sandbox sandbox;
  const auto home = sandbox.root() / "home";
  const UserFiles user(home);
  CHECK(store_directory(home) == home / "uwjit");
  Stats stats;
  {
    auto store = Store::open(home, stats);
    CHECK(store.dir() == home / "uwjit");
    const auto entry = sample_entry();
    publish_or_throw(store, entry);
    CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
    store.flush_stats(stats);
    (void)store.clean_temporaries(std::chrono::seconds(0));
    (void)store.verify(Fix::yes);
    (void)store.evict(EvictBy{.max_size = 0, .older_than = std::chrono::seconds(0)}, DryRun::no);
    (void)store.wipe(DryRun::no);
  }
  user.check_untouched();
  CHECK_FALSE(fs::exists(home / "CACHEDIR.TAG"));
  CHECK(fs::exists(home / "uwjit" / "CACHEDIR.TAG"));
  // The next process finds the same subdirectory, now uwjit's.
  CHECK(Store::open(home, stats).dir() == home / "uwjit");
  user.check_untouched();
}

TEST_CASE("a directory uwjit made, or found empty, is used as it is and marked") {
  const Sandbox sandbox;
  Stats stats;
  const auto made = sandbox.root() / "made";
  CHECK(store_directory(made) == made);
  CHECK(Store::open(made, stats).dir() == made);
  const auto empty = sandbox.root() / "empty";
  fs::create_directories(empty);
  CHECK(store_directory(empty) == empty);
  auto store = Store::open(empty, stats);
  CHECK(store.dir() == empty);
  CHECK(read_text(empty / "CACHEDIR.TAG").find("created by uwjit") != std::string::npos);
  // Entries do not make it foreign: the marker says it is uwjit's.
  publish_or_throw(store, sample_entry());
  CHECK(store_directory(empty) == empty);
  CHECK(Store::open(empty, stats).dir() == empty);
}

TEST_CASE("another program's CACHEDIR.TAG does not make a directory uwjit's") {
  const Sandbox sandbox;
  const auto dir = sandbox.root() / "other-cache";
  fs::create_directories(dir);
  const std::string theirs =
      "Signature: 8a477f597d28d172789f06886806bc55\n# made by another tool\n";
  write_text(dir / "CACHEDIR.TAG", theirs);
  Stats stats;
  auto store = Store::open(dir, stats);
  CHECK(store.dir() == dir / "uwjit");
  CHECK(read_text(dir / "CACHEDIR.TAG") == theirs);
}

TEST_CASE("a uwjit/ subdirectory holding other files is refused, not used") {
  const Sandbox sandbox;
  const auto home = sandbox.root() / "home";
  const UserFiles user(home);
  const UserFiles user_sub(home / "uwjit");
  Stats stats;
  try {
    (void)Store::open(home, stats);
    FAIL("a foreign uwjit/ subdirectory was used");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::io);
    CHECK(std::string(e.what()).find("not uwjit's, and so does") != std::string::npos);
  }
  user.check_untouched();
  user_sub.check_untouched();
  CHECK_FALSE(fs::exists(home / "uwjit" / "CACHEDIR.TAG"));
}
