// A small fork-join helper: runs fn(0..count-1) on up to `threads` threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace uwjit::runtime::detail {

/// Calls fn(i) for every i in [0, count) on min(threads, count) threads (the caller's among
/// them) and waits for all. Exceptions never cross a thread: each is caught where it is thrown,
/// and after the join the one of the lowest index is rethrown.
template <class Fn> void parallel_for(std::size_t count, int threads, Fn&& fn) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(count);
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t helpers =
      std::min<std::size_t>(count, static_cast<std::size_t>(std::max(threads, 1))) - (count > 0);
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (std::size_t t = 0; t < helpers; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break; // fewer threads: the ones running (and this one) do all the work
    }
  }
  worker();
  for (auto& thread : pool) {
    thread.join();
  }
  for (const auto& error : errors) {
    if (error) {
      std::rethrow_exception(error);
    }
  }
}

} // namespace uwjit::runtime::detail
