// Counters: stable names and ids, thread-safe counting, and stats.json merged across processes.
#include "cache_sandbox.hpp"

#include <uwjit/cache/stats.hpp>
#include <uwjit/cache/store.hpp>

#include <doctest/doctest.h>

#include <thread>

using namespace uwjit::cache;
using namespace uwjit::cache::testing;

TEST_CASE("counter names and ids are stable") {
  // These appear in stats.json and in scripts that read `uwjit cache stats --json`: never change
  // one, only add new ones at the end.
  const std::pair<Stat, const char*> pinned[] = {
      {Stat::memory_hits, "memory_hits"},
      {Stat::disk_hits, "disk_hits"},
      {Stat::compiles, "compiles"},
      {Stat::rejected, "rejected"},
      {Stat::published, "published"},
      {Stat::publish_failed, "publish_failed"},
      {Stat::evicted, "evicted"},
      {Stat::lock_waits, "lock_waits"},
      {Stat::lock_timeouts, "lock_timeouts"},
      {Stat::rejected_corrupt_manifest, "rejected_corrupt_manifest"},
      {Stat::rejected_format_mismatch, "rejected_format_mismatch"},
      {Stat::rejected_key_mismatch, "rejected_key_mismatch"},
      {Stat::rejected_salt_mismatch, "rejected_salt_mismatch"},
      {Stat::rejected_missing_object, "rejected_missing_object"},
      {Stat::rejected_truncated_object, "rejected_truncated_object"},
      {Stat::rejected_checksum_mismatch, "rejected_checksum_mismatch"},
      {Stat::rejected_slot_mismatch, "rejected_slot_mismatch"},
      {Stat::site_hits, "site_hits"},
  };
  REQUIRE(std::size(pinned) == k_stat_count);
  for (std::size_t id = 0; id < k_stat_count; ++id) {
    CAPTURE(id);
    CHECK(static_cast<std::size_t>(pinned[id].first) == id);
    CHECK(k_all_stats[id] == pinned[id].first);
    CHECK(to_string(pinned[id].first) == pinned[id].second);
    CHECK(parse_stat(pinned[id].second) == pinned[id].first);
  }
  CHECK_FALSE(parse_stat("hits"));
}

TEST_CASE("every reject reason has its own counter, named after it") {
  for (const auto reason : k_all_reject_reasons) {
    CAPTURE(to_string(reason));
    CHECK(to_string(rejected_stat(reason)) == "rejected_" + std::string(to_string(reason)));
    CHECK(parse_reject_reason(to_string(reason)) == reason);
  }
}

TEST_CASE("counters add up across threads") {
  Stats stats;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats] {
      for (int i = 0; i < 10000; ++i) {
        stats.add(Stat::memory_hits);
      }
      stats.add(Stat::compiles, 5);
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(stats.get(Stat::memory_hits) == 40000);
  CHECK(stats.snapshot().get(Stat::compiles) == 20);
}

TEST_CASE("snapshots subtract without going below zero and add up") {
  StatsSnapshot a;
  StatsSnapshot b;
  a.set(Stat::disk_hits, 10);
  b.set(Stat::disk_hits, 4);
  b.set(Stat::evicted, 2);
  const auto delta = a - b;
  CHECK(delta.get(Stat::disk_hits) == 6);
  CHECK(delta.get(Stat::evicted) == 0);
  auto sum = delta;
  sum += b;
  CHECK(sum.get(Stat::disk_hits) == 10);
  CHECK(sum.get(Stat::evicted) == 2);
  CHECK(StatsSnapshot{}.empty());
  CHECK_FALSE(sum.empty());
}

TEST_CASE("stats persist in the cache directory and merge across flushes and stores") {
  const Sandbox sandbox;
  Stats first;
  first.add(Stat::disk_hits, 3);
  first.add(Stat::rejected_truncated_object);
  {
    auto store = Store::open(sandbox.cache(), first);
    store.flush_stats(first);
  }
  Stats second;
  second.add(Stat::disk_hits, 2);
  second.add(Stat::compiles);
  auto store = Store::open(sandbox.cache(), second);
  store.flush_stats(second.snapshot());
  const auto persisted = store.read_stats();
  CHECK(persisted.get(Stat::disk_hits) == 5);
  CHECK(persisted.get(Stat::compiles) == 1);
  CHECK(persisted.get(Stat::rejected_truncated_object) == 1);
  CHECK(persisted.get(Stat::published) == 0);
  CHECK(temporaries_in(store.dir()).empty());
}

TEST_CASE("concurrent flushes lose no counts") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  StatsSnapshot one;
  one.set(Stat::memory_hits, 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        store.flush_stats(one);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(store.read_stats().get(Stat::memory_hits) == 100);
}

TEST_CASE("counters stats.json holds that this uwjit does not know are kept") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  write_text(store.dir() / "stats.json",
             R"({"format": 1, "counters": {"disk_hits": 7, "from_the_future": 9}})");
  StatsSnapshot delta;
  delta.set(Stat::disk_hits, 1);
  store.flush_stats(delta);
  CHECK(store.read_stats().get(Stat::disk_hits) == 8);
  CHECK(read_text(store.dir() / "stats.json").find("\"from_the_future\": 9") != std::string::npos);
}

TEST_CASE("a corrupt stats.json reads as zero and is replaced at the next flush") {
  const Sandbox sandbox;
  Stats stats;
  auto store = Store::open(sandbox.cache(), stats);
  write_text(store.dir() / "stats.json", "{\"counters\": [");
  CHECK(store.read_stats().empty());
  StatsSnapshot delta;
  delta.set(Stat::published, 2);
  store.flush_stats(delta);
  CHECK(store.read_stats().get(Stat::published) == 2);
}

TEST_CASE("a store counts into process_stats unless given its own counters") {
  const Sandbox sandbox;
  const auto before = process_stats().snapshot();
  auto store = Store::open(sandbox.cache());
  const auto entry = sample_entry();
  publish_or_throw(store, entry);
  REQUIRE(store.lookup(entry.key, entry.salt, entry.slots).hit());
  const auto delta = process_stats().snapshot() - before;
  CHECK(delta.get(Stat::published) == 1);
  CHECK(delta.get(Stat::disk_hits) == 1);
}
