#include "thread_pool.hpp"

#include <system_error>
#include <utility>

namespace uwjit::runtime::detail {

ThreadPool::ThreadPool(int threads) {
  const int workers = threads > 1 ? threads - 1 : 0;
  m_workers.reserve(static_cast<std::size_t>(workers));
  for (int t = 0; t < workers; ++t) {
    try {
      m_workers.emplace_back([this] { work_loop(); });
    } catch (const std::system_error&) {
      break; // a smaller team: size() tells
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    const std::lock_guard lock(m_mutex);
    m_stop = true;
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
    const std::lock_guard lock(m_mutex);
    m_context = context;
    m_call = call;
    m_count = count;
    m_next = 0;
    m_error = nullptr;
    m_active = static_cast<int>(m_workers.size());
    ++m_generation;
  }
  if (!m_workers.empty()) {
    m_wake.notify_all();
  }
  drain();
  std::exception_ptr error;
  {
    std::unique_lock lock(m_mutex);
    // Every worker leaves the job before the caller's `fn` (and the job's fields) go away.
    m_idle.wait(lock, [this] { return m_active == 0; });
    m_context = nullptr;
    m_call = nullptr;
    error = std::exchange(m_error, nullptr);
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

void ThreadPool::drain() {
  for (;;) {
    std::size_t index = 0;
    {
      const std::lock_guard lock(m_mutex);
      if (m_next >= m_count) {
        return;
      }
      index = m_next++;
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

void ThreadPool::work_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) {
        return;
      }
      seen = m_generation;
    }
    drain();
    bool last = false;
    {
      const std::lock_guard lock(m_mutex);
      last = --m_active == 0;
    }
    if (last) {
      m_idle.notify_one();
    }
  }
}

} // namespace uwjit::runtime::detail
