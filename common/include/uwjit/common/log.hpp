// Named loggers for uwjit's folders ("uwjit.cache", "uwjit.engine", ...), writing to stderr.
// The level comes from UWJIT_LOG_LEVEL (default warn). The host's default logger is never touched.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <uwjit/common/format.hpp>

namespace uwjit::log {

enum class Level { trace, debug, info, warn, error, off };

/// A handle on one named logger; cheap to copy. Thread-safe.
class Logger {
public:
  [[nodiscard]] bool enabled(Level level) const noexcept;
  void write(Level level, std::string_view message) const;

  template <class... Args> void trace(FormatPattern<Args...> pattern, const Args&... args) const {
    emit(Level::trace, pattern, args...);
  }
  template <class... Args> void debug(FormatPattern<Args...> pattern, const Args&... args) const {
    emit(Level::debug, pattern, args...);
  }
  template <class... Args> void info(FormatPattern<Args...> pattern, const Args&... args) const {
    emit(Level::info, pattern, args...);
  }
  template <class... Args> void warn(FormatPattern<Args...> pattern, const Args&... args) const {
    emit(Level::warn, pattern, args...);
  }
  template <class... Args> void error(FormatPattern<Args...> pattern, const Args&... args) const {
    emit(Level::error, pattern, args...);
  }

  struct Impl;
  explicit Logger(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}

private:
  template <class... Args>
  void emit(Level level, FormatPattern<Args...> pattern, const Args&... args) const {
    if (enabled(level)) {
      write(level, uwjit::format(pattern, args...));
    }
  }
  std::shared_ptr<Impl> m_impl;
};

/// The logger named `name` (created on first use, then shared). Reads UWJIT_LOG_LEVEL on the
/// first call of the process; throws Error(usage) on an unrecognised level. Thread-safe.
[[nodiscard]] Logger get(std::string_view name);

/// Changes the level of every uwjit logger, present and future. Thread-safe.
void set_level(Level level);

/// Puts "rank R/N" in every uwjit logger's pattern when size > 1 (called by the MPI layer).
void set_rank(int rank, int size);

} // namespace uwjit::log
