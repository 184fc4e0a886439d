// The engine's one clock for the timings it reports (compile phases, loads, whole requests).
#pragma once

#include <chrono>

namespace uwjit::engine::detail {

using Clock = std::chrono::steady_clock;

/// Milliseconds from `start` to now.
inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace uwjit::engine::detail
