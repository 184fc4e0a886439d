// The progress bar of `uwjit run` and `uwjit ensemble`: one line on stderr, on a terminal only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace uwjit::driver {

/// The bar's text for `done` of `total` `unit` (e.g. "steps") after `elapsed` seconds, at most
/// `width - 1` characters (so that a terminal never wraps it): the bar, percentage, count,
/// elapsed time, `rate` (e.g. "12.5 MLUPS") and the estimated time left; what does not fit is
/// left out, the least useful first.
[[nodiscard]] std::string progress_line(std::int64_t done, std::int64_t total, double elapsed,
                                        std::string_view rate, std::string_view unit, int width);

/// Draws progress_line on stderr, redrawn in place at most ten times a second, when `enabled`
/// (the caller's choice: stderr is a terminal). Not thread-safe.
class Progress {
public:
  /// The rate's text from the count done and the seconds elapsed (elapsed > 0).
  using Rate = std::function<std::string(std::int64_t done, double elapsed)>;
  /// Steps, with the rate in MLUPS from `updates_per_step` (uwjit run).
  Progress(std::int64_t total, std::int64_t updates_per_step, bool enabled);
  /// `unit` of any kind, with the caller's rate.
  Progress(std::int64_t total, std::string unit, Rate rate, bool enabled);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  void update(std::int64_t done);
  /// Ends the line (the cursor on a new line), if one was drawn; later updates draw nothing.
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  std::int64_t m_total;
  std::string m_unit;
  Rate m_rate;
  bool m_enabled;
  bool m_open = false;
  Clock::time_point m_start = Clock::now();
  Clock::time_point m_drawn{};
};

} // namespace uwjit::driver
