// Locale-free "{}" text formatting for messages and logs (GCC 12 has no std::format). The pattern
// is checked at compile time: as many "{}" as arguments, and no format specs ("{:x}") that this
// formatter would print literally.
#pragma once

#include <concepts>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace uwjit {

namespace detail {
// Not constexpr on purpose: reaching one of these in a consteval check stops the compile, and
// the compiler's message names the function.
void format_pattern_and_argument_count_differ();
void format_specs_are_not_supported_use_plain_braces();

consteval void check_format_pattern(std::string_view pattern, std::size_t arguments) {
  std::size_t slots = 0;
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '{') {
      continue;
    }
    if (pattern[i + 1] == '}') {
      ++slots;
      ++i;
    } else if (pattern[i + 1] == ':') {
      format_specs_are_not_supported_use_plain_braces();
    }
  }
  if (slots != arguments) {
    format_pattern_and_argument_count_differ();
  }
}
} // namespace detail

/// A pattern for format() with one "{}" per argument, checked when it is built (at compile time):
/// a mismatch, or a spec such as "{:x}", does not compile.
template <class... Args> class FormatString {
public:
  template <class Text>
    requires std::convertible_to<const Text&, std::string_view>
  consteval FormatString(const Text& text) // NOLINT: implicit, as a string literal is passed
      : m_text(text) {
    detail::check_format_pattern(m_text, sizeof...(Args));
  }
  [[nodiscard]] constexpr std::string_view text() const noexcept { return m_text; }

private:
  std::string_view m_text;
};

/// The pattern type format() takes for `Args` (keeps Args deduced from the arguments only).
template <class... Args> using FormatPattern = FormatString<std::type_identity_t<Args>...>;

namespace detail {
inline void format_next(std::ostringstream& out, std::string_view& pattern) {
  out << pattern;
  pattern = {};
}
template <class First, class... Rest>
void format_next(std::ostringstream& out, std::string_view& pattern, const First& first,
                 const Rest&... rest) {
  const auto slot = pattern.find("{}");
  out << pattern.substr(0, slot) << first;
  pattern.remove_prefix(slot + 2);
  format_next(out, pattern, rest...);
}

/// This thread's stream for format(), empty and in the classic locale, or null while it is in use
/// (an argument's operator<< that formats) or after the thread's own objects were destroyed.
[[nodiscard]] std::ostringstream* borrow_format_stream();
/// Empties a stream borrow_format_stream() gave, resets its state and flags, and frees it.
void return_format_stream(std::ostringstream* stream) noexcept;

/// The stream one format() call writes to: this thread's, or one of its own when that is taken.
/// Making a stream and imbuing its locale cost 4-5 times the formatting of a kernel line, and a
/// kernel text is hundreds of them.
class FormatStream {
public:
  FormatStream() : m_shared(borrow_format_stream()) {
    if (m_shared == nullptr) {
      m_own.emplace();
      m_own->imbue(std::locale::classic());
    }
  }
  FormatStream(const FormatStream&) = delete;
  FormatStream& operator=(const FormatStream&) = delete;
  ~FormatStream() {
    if (m_shared != nullptr) {
      return_format_stream(m_shared);
    }
  }
  [[nodiscard]] std::ostringstream& get() noexcept {
    return m_shared != nullptr ? *m_shared : *m_own;
  }

private:
  std::ostringstream* m_shared;
  std::optional<std::ostringstream> m_own;
};
} // namespace detail

/// Replaces each "{}" in `pattern` by the next argument, streamed in the classic locale. The
/// pattern must hold exactly one "{}" per argument (checked at compile time). Thread-safe.
template <class... Args>
[[nodiscard]] std::string format(FormatPattern<Args...> pattern, const Args&... args) {
  detail::FormatStream stream;
  std::string_view rest = pattern.text();
  detail::format_next(stream.get(), rest, args...);
  return stream.get().str();
}

} // namespace uwjit
