// Per-key locks: threads and processes exclude each other, waits are bounded, and racing
// writers of one cold key publish it once.
#include "cache_sandbox.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

using namespace uwjit;
using namespace uwjit::cache;
using namespace uwjit::cache::testing;
using namespace std::chrono_literals;

TEST_CASE("a second lock on a key from another thread times out, and acquires after release") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();

  auto first = store.lock(entry.key, 0ms);
  REQUIRE(first.acquired());
  CHECK(std::filesystem::exists(entry.lock_path(store.dir())));

  const auto blocked =
      std::async(std::launch::async, [&] { return store.lock(entry.key, 20ms).outcome(); }).get();
  CHECK(blocked == LockOutcome::timed_out);
  CHECK(stats.get(Stat::lock_waits) == 1);
  CHECK(stats.get(Stat::lock_timeouts) == 1);

  first.release();
  const auto after =
      std::async(std::launch::async, [&] { return store.lock(entry.key, 0ms).outcome(); }).get();
  CHECK(after == LockOutcome::acquired);
  CHECK(stats.get(Stat::lock_timeouts) == 1);
  // The lock file stays: unlinking it would let a waiter and a newcomer lock different files.
  CHECK(std::filesystem::exists(entry.lock_path(store.dir())));
}

TEST_CASE("a waiting lock is granted when the holder releases within the time-out") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  auto held = store.lock(entry.key, 0ms);
  REQUIRE(held.acquired());

  std::atomic<bool> waiting{false};
  auto waiter = std::async(std::launch::async, [&] {
    waiting = true;
    return store.lock(entry.key, 10s).outcome();
  });
  while (!waiting) {
    std::this_thread::yield();
  }
  // Give the waiter time to find the lock busy; the outcome does not depend on it.
  std::this_thread::sleep_for(5ms);
  held.release();
  CHECK(waiter.get() == LockOutcome::acquired);
  CHECK(stats.get(Stat::lock_timeouts) == 0);
}

TEST_CASE("locks on different keys do not interfere") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto a = store.lock(sample_entry("a").key, 0ms);
  const auto b = std::async(std::launch::async, [&] {
                   return store.lock(sample_entry("b").key, 0ms).outcome();
                 }).get();
  CHECK(a.acquired());
  CHECK(b == LockOutcome::acquired);
  CHECK(stats.get(Stat::lock_waits) == 0);
}

TEST_CASE("asking again for a key lock this thread holds is a bug, reported at once") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto key = sample_entry().key;
  const auto held = store.lock(key, 0ms);
  REQUIRE(held.acquired());
  try {
    (void)store.lock(key, 10s);
    FAIL("a re-entrant lock request did not throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::internal);
  }
}

TEST_CASE("a key lock excludes a lock taken through another store on the same directory") {
  const Sandbox sandbox;
  Stats stats;
  auto one = Store::open(sandbox.cache(), stats);
  auto two = Store::open(sandbox.cache(), stats);
  const auto key = sample_entry().key;
  const auto held = one.lock(key, 0ms);
  REQUIRE(held.acquired());
  const auto other =
      std::async(std::launch::async, [&] { return two.lock(key, 0ms).outcome(); }).get();
  CHECK(other == LockOutcome::timed_out);
}

namespace {
// The engine's protocol: lock, look again, compile and publish only on a miss.
enum class Served { published, hit, failed };

Served request(Store& store, const SampleEntry& entry) {
  const auto lock = store.lock(entry.key, 30s);
  if (!lock.acquired()) {
    return Served::failed;
  }
  if (store.lookup(entry.key, entry.salt, entry.slots).hit()) {
    return Served::hit;
  }
  return store.publish(entry.key, entry.object, entry.manifest, entry.source).published()
             ? Served::published
             : Served::failed;
}
} // namespace

TEST_CASE("four threads racing on one cold key publish it once") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  std::vector<std::future<Served>> racers;
  for (int i = 0; i < 4; ++i) {
    racers.push_back(std::async(std::launch::async, [&] { return request(store, entry); }));
  }
  int published = 0;
  int hits = 0;
  for (auto& racer : racers) {
    const auto served = racer.get();
    published += served == Served::published;
    hits += served == Served::hit;
  }
  CHECK(published == 1);
  CHECK(hits == 3);
  CHECK(stats.get(Stat::published) == 1);
}

TEST_CASE("four processes racing on one cold key publish it once") {
  const Sandbox sandbox;
  const auto dir = sandbox.cache();
  const auto entry = sample_entry();
  int start[2];
  REQUIRE(::pipe(start) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: no doctest machinery from here on, only _exit with a code the parent reads.
      ::alarm(60); // a hang kills the child, and the parent sees a failure, not a hang
      ::close(start[1]);
      char byte = 0;
      (void)!::read(start[0], &byte, 1); // returns at EOF: all children start together
      int code = 5;
      try {
        Stats stats;
        auto store = Store::open(dir, stats);
        const auto served = request(store, entry);
        code = served == Served::published ? 10 : served == Served::hit ? 20 : 4;
      } catch (...) {
        code = 6;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  int published = 0;
  int hits = 0;
  for (const pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    published += WEXITSTATUS(status) == 10;
    hits += WEXITSTATUS(status) == 20;
  }
  CHECK(published == 1);
  CHECK(hits == 3);
  Stats stats;
  auto store = Store::open(dir, stats);
  CHECK(store.lookup(entry.key, entry.salt, entry.slots).hit());
}

TEST_CASE("a key lock held by a killed process is free at once") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  const auto entry = sample_entry();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    Stats child_stats;
    auto child_store = Store::open(sandbox.cache(), child_stats);
    const auto lock = child_store.lock(entry.key, 0ms);
    (void)!::write(ready[1], lock.acquired() ? "y" : "n", 1);
    ::pause(); // holds the lock until killed
    ::_exit(0);
  }
  ::close(ready[1]);
  char answer = 0;
  REQUIRE(::read(ready[0], &answer, 1) == 1);
  ::close(ready[0]);
  REQUIRE(answer == 'y');
  CHECK(store.lock(entry.key, 0ms).outcome() == LockOutcome::timed_out);
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(store.lock(entry.key, 0ms).outcome() == LockOutcome::acquired);
}
