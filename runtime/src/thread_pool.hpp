// ThreadPool: persistent worker threads for the step loop, made once, with no allocation and no
// thread creation per call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace uwjit::runtime::detail {

/// A fixed team of `threads` threads: the caller of run() and threads - 1 workers that wait
/// between calls. run(count, fn) calls fn(i) for every i in [0, count), each exactly once, spread
/// over the team, and returns when all are done. Each thread starts on a contiguous share of
/// [0, count) of its own, in order (neighbouring slabs share halo planes, which then stay in one
/// core's cache), and then helps with the shares left of the others. Which thread runs which i
/// is not fixed; callers that need deterministic results write per-index outputs and combine
/// them in index order.
///
/// Exceptions never cross a thread: each is caught where it is thrown, and run() rethrows the one
/// of the lowest index after every call has finished. Not reentrant; one caller at a time.
///
/// Between calls a thread polls for up to 50 us before it sleeps on a condition variable (the
/// caller likewise for the workers' end of a job), so that a step loop's calls do not each pay
/// a wake-up.
class ThreadPool {
public:
  /// Starts threads - 1 workers (threads >= 1). If the system refuses a thread, the team is
  /// smaller: size() says how many take part.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// The threads that take part in run(), the caller included.
  [[nodiscard]] int size() const noexcept { return static_cast<int>(m_workers.size()) + 1; }

  /// Calls fn(i) for i in [0, count) on the team and waits for all of them.
  template <class Fn> void run(std::size_t count, Fn& fn) {
    run_erased(count, &fn, [](void* context, std::size_t i) { (*static_cast<Fn*>(context))(i); });
  }

private:
  using Call = void (*)(void* context, std::size_t index);
  void run_erased(std::size_t count, void* context, Call call);
  void work_loop(std::size_t self);
  // Takes indices of the current job until none is left, from share `self` first, then from the
  // others in turn; records the first failure.
  void drain(std::size_t self);

  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_wake; // workers wait for a new job (or the stop)
  std::condition_variable m_idle; // the caller waits for the workers to leave the job
  // Written under the mutex (so that the condition variables' predicates cannot miss a change),
  // read with or without it by threads that poll.
  std::atomic<std::uint64_t> m_generation = 0; // counts jobs, so that a worker joins each job once
  std::atomic<bool> m_stop = false;
  std::atomic<int> m_active = 0; // workers still inside the current job
  // The current job; written by run_erased under the mutex before any worker may read it.
  void* m_context = nullptr;
  Call m_call = nullptr;
  // One share of the current job's indices per thread (the caller's is 0): [next, end), next
  // taken atomically by the owner and by the threads that help it. A cache line each.
  struct alignas(64) Share {
    std::atomic<std::size_t> next = 0;
    std::size_t end = 0;
  };
  std::unique_ptr<Share[]> m_shares;
  std::size_t m_error_index = 0;
  std::exception_ptr m_error;
};

} // namespace uwjit::runtime::detail
