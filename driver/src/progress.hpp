// The progress bar of `uwjit run`: one line on stderr, on a terminal only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace uwjit::driver {

/// The bar's text for `done` of `total` steps after `elapsed` seconds, at most `width - 1`
/// characters (so that a terminal never wraps it): the bar, percentage, steps, elapsed time,
/// rate in MLUPS (from `updates_per_step`) and the estimated time left; what does not fit is
/// left out, the least useful first.
[[nodiscard]] std::string progress_line(std::int64_t done, std::int64_t total, double elapsed,
                                        std::int64_t updates_per_step, int width);

/// Draws progress_line on stderr, redrawn in place at most ten times a second, when `enabled`
/// (the caller's choice: stderr is a terminal). Not thread-safe.
class Progress {
public:
  Progress(std::int64_t total, std::int64_t updates_per_step, bool enabled);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  void update(std::int64_t done);
  /// Ends the line (the cursor on a new line), if one was drawn; later updates draw nothing.
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  std::int64_t m_total, m_updates_per_step;
  bool m_enabled;
  bool m_open = false;
  Clock::time_point m_start = Clock::now();
  Clock::time_point m_drawn{};
};

} // namespace uwjit::driver
