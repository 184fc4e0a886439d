// Locale-free "{}" text formatting for messages and logs (GCC 12 has no std::format).
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace uwjit {

namespace detail {
inline void format_next(std::ostringstream& out, std::string_view& pattern) {
  out << pattern;
  pattern = {};
}
template <class First, class... Rest>
void format_next(std::ostringstream& out, std::string_view& pattern, const First& first,
                 const Rest&... rest) {
  const auto slot = pattern.find("{}");
  if (slot == std::string_view::npos) {
    out << pattern;
    pattern = {};
    return;
  }
  out << pattern.substr(0, slot) << first;
  pattern.remove_prefix(slot + 2);
  format_next(out, pattern, rest...);
}
} // namespace detail

/// Replaces each "{}" in `pattern` by the next argument, streamed in the classic locale.
/// Surplus arguments are dropped, surplus "{}" are kept. Thread-safe.
template <class... Args>
[[nodiscard]] std::string format(std::string_view pattern, const Args&... args) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  detail::format_next(out, pattern, args...);
  return std::move(out).str();
}

} // namespace uwjit
