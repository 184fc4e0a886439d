// Locale-free "{}" text formatting for messages and logs (GCC 12 has no std::format). The pattern
// is checked at compile time: as many "{}" as arguments, and no format specs ("{:x}") that this
// formatter would print literally.
#pragma once

#include <concepts>
#include <cstddef>
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
} // namespace detail

/// Replaces each "{}" in `pattern` by the next argument, streamed in the classic locale. The
/// pattern must hold exactly one "{}" per argument (checked at compile time). Thread-safe.
template <class... Args>
[[nodiscard]] std::string format(FormatPattern<Args...> pattern, const Args&... args) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  std::string_view rest = pattern.text();
  detail::format_next(out, rest, args...);
  return std::move(out).str();
}

} // namespace uwjit
