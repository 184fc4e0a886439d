// runtime/src: the persistent thread pool, the slab plan and the halo filling of the CPU
// executor.
#include "cpu_executor.hpp"
#include "thread_pool.hpp"

#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using uwjit::runtime::detail::plan_slabs;
using uwjit::runtime::detail::ThreadPool;

TEST_CASE("the pool runs every index exactly once, call after call, on several threads") {
  ThreadPool pool(4);
  REQUIRE(pool.size() == 4);
  std::vector<std::atomic<int>> hits(257);
  std::atomic<int> on_other_threads{0};
  const auto caller = std::this_thread::get_id();
  auto fn = [&](std::size_t i) {
    hits[i]++;
    if (std::this_thread::get_id() != caller) {
      on_other_threads++;
    }
    // Long enough that the workers wake before the caller has taken every index.
    volatile double x = 0;
    for (int k = 0; k < 20000; ++k) {
      x = x + 1.0;
    }
  };
  for (int call = 0; call < 50; ++call) {
    pool.run(hits.size(), fn);
  }
  for (const auto& h : hits) {
    CHECK(h.load() == 50);
  }
  CHECK(on_other_threads.load() > 0);
}

TEST_CASE("each thread of the pool starts on a contiguous share of its own") {
  // Three threads and 30 indices: shares [0, 10), [10, 20), [20, 30). Each thread's first index
  // waits until all three have taken one, so that none can finish its share and help another
  // before every thread has started on its own.
  ThreadPool pool(3);
  REQUIRE(pool.size() == 3);
  for (int call = 0; call < 20; ++call) {
    std::atomic<int> started{0};
    std::mutex mutex;
    std::map<std::thread::id, std::vector<std::size_t>> taken;
    auto fn = [&](std::size_t i) {
      bool first = false;
      {
        const std::lock_guard lock(mutex);
        auto& mine = taken[std::this_thread::get_id()];
        first = mine.empty();
        mine.push_back(i);
      }
      if (first) {
        ++started;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 3 && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
      }
    };
    pool.run(std::size_t{30}, fn);
    std::vector<std::size_t> firsts;
    for (const auto& [thread, indices] : taken) {
      firsts.push_back(indices.front());
      // Within its own share a thread goes forwards (the threads that help it take from the same
      // front), until it leaves the share to help another.
      const std::size_t end = (indices.front() / 10 + 1) * 10;
      for (std::size_t k = 1;
           k < indices.size() && indices[k] >= indices.front() && indices[k] < end; ++k) {
        CHECK(indices[k] > indices[k - 1]);
      }
    }
    std::sort(firsts.begin(), firsts.end());
    CHECK(firsts == std::vector<std::size_t>{0, 10, 20});
  }
}

TEST_CASE("an exception in a pool thread reaches the caller: the one of the lowest index") {
  ThreadPool pool(3);
  auto fn = [](std::size_t i) {
    if (i == 5 || i == 17) {
      throw std::runtime_error("index " + std::to_string(i));
    }
  };
  CHECK_THROWS_WITH(pool.run(std::size_t{40}, fn), "index 5");
  std::atomic<int> count{0};
  auto ok = [&](std::size_t) { count++; };
  pool.run(std::size_t{10}, ok); // the pool still works
  CHECK(count.load() == 10);
}

TEST_CASE("a pool of one thread runs everything on the caller") {
  ThreadPool pool(1);
  CHECK(pool.size() == 1);
  const auto caller = std::this_thread::get_id();
  bool same = true;
  auto fn = [&](std::size_t) { same = same && std::this_thread::get_id() == caller; };
  pool.run(std::size_t{9}, fn);
  CHECK(same);
}

TEST_CASE("slabs tile the box along its first wide axis and depend on the box alone") {
  uwjit_kernel_args args{};
  args.update_begin[0] = 0;
  args.update_end[0] = 1; // one cell wide: not cut along it
  args.update_begin[1] = 3;
  args.update_end[1] = 131;
  args.update_begin[2] = 0;
  args.update_end[2] = 256;
  const auto plan = plan_slabs(args, 3);
  CHECK(plan.axis == 1);
  CHECK(plan.count == 2); // 32768 cells, at least 16384 per slab
  CHECK(plan.bound(0) == 3);
  CHECK(plan.bound(plan.count) == 131);
  for (std::int64_t s = 0; s < plan.count; ++s) {
    CHECK(plan.bound(s) < plan.bound(s + 1));
  }
  args.update_end[2] = 1 << 20; // a large box: at most 64 slabs, no slab empty
  const auto big = plan_slabs(args, 3);
  CHECK(big.count == 64);
  CHECK(big.bound(64) == 131);
  // A small box is one slab.
  args.update_end[2] = 8;
  CHECK(plan_slabs(args, 3).count == 1);
  // An empty box is one (empty) slab.
  args.update_end[1] = 3;
  CHECK(plan_slabs(args, 3).count == 1);
}

TEST_CASE("the executor's threads fill halos bit for bit as Field::fill_halos does") {
  using uwjit::runtime::Boundary;
  using uwjit::runtime::BoundaryFace;
  using uwjit::runtime::Dtype;
  using uwjit::runtime::Field;
  // A component axis (no halo) before three domain axes; each boundary kind, halos of 1 and 2.
  // Large enough that every halo axis has 2 or 3 parts of at least 16384 elements (the least
  // the executor hands a thread), so that 2 and 3 threads really share each axis.
  const std::vector<Boundary> kinds = {
      Boundary::periodic,
      Boundary::edge,
      {.low = BoundaryFace::dirichlet(1.5), .high = BoundaryFace::neumann(-0.25)}};
  for (const int halo : {1, 2}) {
    for (const auto& kind : kinds) {
      const std::vector<Boundary> boundary = {Boundary::edge, kind, Boundary::edge, kind};
      auto filled = [&](int threads) {
        Field field("f", Dtype::f64, {3, 100, 60, 100}, {0, halo, halo, halo});
        auto* values = static_cast<double*>(field.data());
        for (std::int64_t e = 0; e < field.padded_count(); ++e) {
          values[e] = static_cast<double>((e * 7919) % 1013) / 17.0; // halos too: overwritten
        }
        if (threads == 0) {
          field.fill_halos(boundary);
        } else {
          uwjit::runtime::detail::CpuExecutor executor(threads);
          executor.fill_halos(field, boundary);
        }
        return std::vector<double>(values, values + field.padded_count());
      };
      const auto serial = filled(0);
      for (const int threads : {1, 2, 3}) {
        CHECK(filled(threads) == serial);
      }
    }
  }
  // Refused as fill_halos refuses, before anything is filled.
  Field field("f", Dtype::f64, {4, 4}, {1, 1});
  uwjit::runtime::detail::CpuExecutor executor(2);
  CHECK_THROWS_WITH_AS(executor.fill_halos(field, std::vector<Boundary>{Boundary::edge}),
                       doctest::Contains("1 boundaries for 2 axes"), uwjit::Error);
}

TEST_CASE("only the halos a field's kernels read are filled, on any number of threads") {
  using uwjit::runtime::Boundary;
  using uwjit::runtime::BoundaryFace;
  using uwjit::runtime::Dtype;
  using uwjit::runtime::Field;
  using uwjit::runtime::detail::ReadHalos;
  // Four components over three domain axes: one that reads no halo, one that reads x, one that
  // reads y and z (and their corners), one that reads every halo. Large enough that 2 and 3
  // threads share the axes that half the components read.
  const std::vector<std::uint32_t> masks = {0b000, 0b001, 0b110, 0b111};
  const std::vector<std::int64_t> n = {120, 80, 120};
  const int h = 1;
  const std::vector<Boundary> boundary = {
      Boundary::edge,
      Boundary::periodic,
      Boundary::edge,
      {.low = BoundaryFace::dirichlet(1.5), .high = BoundaryFace::neumann(-0.25)}};
  auto make = [&] {
    Field field("f", Dtype::f64, {4, n[0], n[1], n[2]}, {0, h, h, h});
    auto* values = static_cast<double*>(field.data());
    for (std::int64_t e = 0; e < field.padded_count(); ++e) {
      values[e] = static_cast<double>((e * 7919) % 1013) / 17.0;
    }
    return field;
  };
  Field initial = make();
  Field full = make();
  full.fill_halos(boundary);
  const auto* before = static_cast<const double*>(initial.data());
  const auto* every = static_cast<const double*>(full.data());
  for (const int threads : {0, 1, 2, 3}) {
    CAPTURE(threads);
    Field field = make();
    const ReadHalos read(masks, 1);
    if (threads == 0) {
      uwjit::runtime::detail::fill_read_halos(field, boundary, read);
    } else {
      uwjit::runtime::detail::CpuExecutor executor(threads);
      executor.fill_halos(field, boundary, read);
    }
    const auto* got = static_cast<const double*>(field.data());
    // A cell outside the interior along the axes `outside`: filled as fill_halos fills it where
    // the component reads all of them, untouched where it reads none (a corner of a read and an
    // unread axis holds whatever the read axis copied there).
    std::int64_t filled = 0, kept = 0, wrong = 0;
    for (std::int64_t c = 0; c < 4; ++c) {
      for (std::int64_t i = -h; i < n[0] + h; ++i) {
        for (std::int64_t j = -h; j < n[1] + h; ++j) {
          for (std::int64_t k = -h; k < n[2] + h; ++k) {
            const std::uint32_t outside = (i < 0 || i >= n[0] ? 1U : 0U) |
                                          (j < 0 || j >= n[1] ? 2U : 0U) |
                                          (k < 0 || k >= n[2] ? 4U : 0U);
            const std::int64_t index[] = {c, i, j, k};
            const std::int64_t at = field.offset(index);
            const auto mask = masks[static_cast<std::size_t>(c)];
            if ((outside & ~mask) == 0) {
              ++filled;
              wrong += got[at] == every[at] ? 0 : 1;
            } else if ((outside & mask) == 0) {
              ++kept;
              wrong += got[at] == before[at] ? 0 : 1;
            }
          }
        }
      }
    }
    CHECK(wrong == 0);
    CHECK(filled > 0);
    CHECK(kept > 0);
  }
  // No masks: every halo, as fill_halos.
  Field all = make();
  uwjit::runtime::detail::CpuExecutor executor(2);
  executor.fill_halos(all, boundary, ReadHalos());
  CHECK(std::equal(every, every + full.padded_count(), static_cast<const double*>(all.data())));
}
