// The one error type of uwjit, and the always-on assertion for internal bugs.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace uwjit {

/// What kind of failure an Error reports; stable, so hosts may branch on it.
enum class ErrorKind {
  usage,      ///< bad input from the caller: arguments, environment variables, node declarations
  io,         ///< a file or directory could not be read or written where that was required
  compile,    ///< the kernel source did not compile (the message carries the diagnostics)
  jit,        ///< the object could not be linked or its entry not found
  collective, ///< ranks of an MPI job disagreed (raised on every rank alike)
  internal,   ///< a bug in uwjit: an assertion failed
  kernel,     ///< a kernel returned a non-zero status of its own while it ran
};

/// The last ErrorKind, for code that encodes kinds as numbers.
inline constexpr ErrorKind k_last_error_kind = ErrorKind::kernel;

/// "usage", "io", "compile", "jit", "collective", "internal" or "kernel".
[[nodiscard]] std::string_view to_string(ErrorKind kind) noexcept;

/// The exception uwjit throws. The message starts lowercase and names the object at fault.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return m_kind; }

private:
  ErrorKind m_kind;
};

namespace detail {
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   std::string_view message);
} // namespace detail

} // namespace uwjit

/// Always-on assertion (also in release builds): throws Error(internal) naming the condition,
/// the place and the message. For bugs only; bad input is Error(usage).
#define UWJIT_ASSERT(condition, message)                                                           \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      ::uwjit::detail::assertion_failed(#condition, __FILE__, __LINE__, (message));                \
    }                                                                                              \
  } while (false)
