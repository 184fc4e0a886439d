#include "progress.hpp"

#include <uwjit/common/text.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace uwjit::driver {

namespace {

// The terminal's width: the window size of stderr, else $COLUMNS, else 80.
int terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    const int value = std::atoi(columns);
    if (value > 0) {
      return value;
    }
  }
  return 80;
}

std::string fixed1(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

} // namespace

std::string progress_line(std::int64_t done, std::int64_t total, double elapsed,
                          std::string_view rate, std::string_view unit, int width) {
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0)
                : 1.0;
  const std::string percent = std::to_string(static_cast<int>(fraction * 100)) + "%";
  const std::string steps = std::to_string(done) + "/" + std::to_string(total);
  const std::string clock = clock_text(elapsed);
  const std::string eta =
      "ETA " + (done > 0 ? clock_text(elapsed * static_cast<double>(total - done) /
                                      static_cast<double>(done))
                         : std::string("-:--"));
  const std::string tails[] = {
      percent + " " + steps + " " + std::string(unit) + "  " + clock + " elapsed  " +
          std::string(rate) + "  " + eta,
      percent + " " + steps + "  " + clock + "  " + std::string(rate) + "  " + eta,
      percent + " " + steps + "  " + eta,
      percent + "  " + eta,
  };
  const int room = std::max(1, width - 1);
  constexpr int k_min_bar = 10;
  for (const auto& tail : tails) {
    // "  [" + bar + "] " + tail
    const int bar = std::min(40, room - 5 - static_cast<int>(tail.size()));
    if (bar >= k_min_bar) {
      const auto filled = static_cast<std::size_t>(fraction * bar);
      std::string line = "  [" + std::string(filled, '#');
      line.resize(3 + static_cast<std::size_t>(bar), '.');
      return line + "] " + tail;
    }
  }
  return tails[3].substr(0, static_cast<std::size_t>(room));
}

Progress::Progress(std::int64_t total, std::int64_t updates_per_step, bool enabled)
    : Progress(
          total, "steps",
          [updates_per_step](std::int64_t done, double elapsed) {
            return fixed1(static_cast<double>(updates_per_step) * static_cast<double>(done) /
                          elapsed / 1e6) +
                   " MLUPS";
          },
          enabled) {}

Progress::Progress(std::int64_t total, std::string unit, Rate rate, bool enabled)
    : m_total(total), m_unit(std::move(unit)), m_rate(std::move(rate)),
      m_enabled(enabled && total > 0) {}

Progress::~Progress() {
  finish();
}

void Progress::update(std::int64_t done) {
  if (!m_enabled) {
    return;
  }
  const auto now = Clock::now();
  if (done != m_total && now - m_drawn < std::chrono::milliseconds(100)) {
    return;
  }
  m_drawn = now;
  const double elapsed = std::chrono::duration<double>(now - m_start).count();
  // \r, the line, then erase what a longer earlier line left to its right.
  std::fprintf(stderr, "\r%s\x1b[K",
               progress_line(done, m_total, elapsed, elapsed > 0 ? m_rate(done, elapsed) : "-",
                             m_unit, terminal_width())
                   .c_str());
  m_open = true;
  if (done == m_total) {
    finish();
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (m_open) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
    m_open = false;
  }
  m_enabled = false;
}

} // namespace uwjit::driver
