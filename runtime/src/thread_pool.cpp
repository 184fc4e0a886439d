#include "thread_pool.hpp"

#include <chrono>
#include <system_error>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace uwjit::runtime::detail {

namespace {

// How long a thread polls for what it waits for before it sleeps. A step loop calls the team
// every few hundred microseconds or faster: a worker that slept in between pays a futex wake-up
// at every call. A bounded spin keeps that off the common path and costs an idle team at most
// this much CPU per call. (On the AMD Zen 5 of docs/explanation/performance.md it measured
// neutral; the contiguous shares below are what made threads as fast as ranks there.)
constexpr auto k_spin = std::chrono::microseconds(50);

inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `ready` for up to k_spin; true as soon as it holds.
template <class Ready> bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + k_spin;
  for (int polls = 0;; ++polls) {
    if (ready()) {
      return true;
    }
    relax();
    if ((polls & 63) == 63 && std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
  }
}

} // namespace

ThreadPool::ThreadPool(int threads) {
  const int workers = threads > 1 ? threads - 1 : 0;
  m_shares = std::make_unique<Share[]>(static_cast<std::size_t>(workers) + 1);
  m_workers.reserve(static_cast<std::size_t>(workers));
  for (int t = 0; t < workers; ++t) {
    try {
      m_workers.emplace_back([this, t] { work_loop(static_cast<std::size_t>(t) + 1); });
    } catch (const std::system_error&) {
      break; // a smaller team: size() tells
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    const std::lock_guard lock(m_mutex);
    m_stop.store(true);
  }
  m_wake.notify_all();
  for (auto& worker : m_workers) {
    worker.join();
  }
}

void ThreadPool::run_erased(std::size_t count, void* context, Call call) {
  if (count == 0) {
    return;
  }
  {
    // Under the mutex, so that a sleeping worker's predicate sees the new job whole; the
    // generation's increment (seq_cst) publishes it to a spinning one.
    const std::lock_guard lock(m_mutex);
    m_context = context;
    m_call = call;
    const auto team = static_cast<std::size_t>(size());
    for (std::size_t t = 0; t < team; ++t) {
      m_shares[t].next.store(count * t / team);
      m_shares[t].end = count * (t + 1) / team;
    }
    m_error = nullptr;
    m_active.store(static_cast<int>(m_workers.size()));
    m_generation.fetch_add(1);
  }
  if (!m_workers.empty()) {
    m_wake.notify_all();
  }
  drain(0);
  // Every worker leaves the job before the caller's `fn` (and the job's fields) go away.
  if (!spin_until([this] { return m_active.load() == 0; })) {
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return m_active.load() == 0; });
  }
  std::exception_ptr error;
  {
    const std::lock_guard lock(m_mutex);
    m_context = nullptr;
    m_call = nullptr;
    error = std::exchange(m_error, nullptr);
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

void ThreadPool::drain(std::size_t self) {
  const auto team = static_cast<std::size_t>(size());
  for (std::size_t k = 0; k < team; ++k) {
    Share& share = m_shares[(self + k) % team];
    for (;;) {
      const std::size_t index = share.next.fetch_add(1);
      if (index >= share.end) {
        break;
      }
      try {
        m_call(m_context, index);
      } catch (...) {
        const std::lock_guard lock(m_mutex);
        if (!m_error || index < m_error_index) {
          m_error = std::current_exception();
          m_error_index = index;
        }
      }
    }
  }
}

void ThreadPool::work_loop(std::size_t self) {
  std::uint64_t seen = 0;
  const auto news = [&] { return m_stop.load() || m_generation.load() != seen; };
  for (;;) {
    if (!spin_until(news)) {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, news);
    }
    if (m_stop.load()) {
      return;
    }
    seen = m_generation.load();
    drain(self);
    bool last = false;
    {
      // Under the mutex: a caller that found the job unfinished and went to sleep checks
      // m_active under it too, so this decrement and its notify cannot fall between the two.
      const std::lock_guard lock(m_mutex);
      last = m_active.fetch_sub(1) == 1;
    }
    if (last) {
      m_idle.notify_one();
    }
  }
}

} // namespace uwjit::runtime::detail
