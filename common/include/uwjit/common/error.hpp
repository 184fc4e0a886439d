// The one error type of uwjit, and the always-on assertion for internal bugs.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

/// One diagnostic of a kernel that did not compile. For a kernel a node wrote through a
/// KernelWriter, `section` is the text the node wrote ("kernel" for body(), "kernel helpers" for
/// helpers()) and line and column count in that text; a line the writer generated has section
/// "generated" and counts in the generated text; a hand-written kernel's lines are its own
/// (section "kernel.cpp"); a header's keep its name (e.g. "uwjit_kernel_abi.h").
struct CompileDiagnostic {
  std::string severity; ///< "error", "warning", "note" or "fatal error"
  std::string section;
  int line = 0;   ///< from 1; 0 when the diagnostic has no place
  int column = 0; ///< from 1; 0 when the diagnostic has no place
  std::string message;
};

/// The exception uwjit throws. The message starts lowercase and names the object at fault.
/// Copies are cheap and never throw (the diagnostics are shared).
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  /// An Error(compile) with its diagnostics, in the order the compiler gave them.
  Error(ErrorKind kind, const std::string& message, std::vector<CompileDiagnostic> diagnostics)
      : std::runtime_error(message), m_kind(kind),
        m_diagnostics(
            std::make_shared<const std::vector<CompileDiagnostic>>(std::move(diagnostics))) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return m_kind; }
  /// The compile diagnostics (empty unless a kernel did not compile in this process).
  [[nodiscard]] const std::vector<CompileDiagnostic>& diagnostics() const noexcept {
    static const std::vector<CompileDiagnostic> none;
    return m_diagnostics ? *m_diagnostics : none;
  }

private:
  ErrorKind m_kind;
  std::shared_ptr<const std::vector<CompileDiagnostic>> m_diagnostics;
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
