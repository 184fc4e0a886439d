#include <uwjit/codegen/number.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

namespace uwjit::codegen {

namespace {
template <class T> std::string floating_literal(T value, std::string_view suffix) {
  if (std::isnan(value)) {
    return suffix.empty() ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")";
  }
  if (std::isinf(value)) {
    const std::string inf = suffix.empty() ? "__builtin_inf()" : "__builtin_inff()";
    return value < 0 ? "(-" + inf + ")" : inf;
  }
  std::array<char, 64> buffer{};
  // Shortest representation that reads back exactly; to_chars ignores the locale.
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), end);
  // "1e+300" is a floating literal as it is; "1" needs ".0" to be one.
  if (text.find_first_of(".e") == std::string::npos) {
    text += ".0";
  }
  text += suffix;
  return text;
}
} // namespace

std::string literal(double value) {
  return floating_literal(value, "");
}

std::string literal(float value) {
  return floating_literal(value, "f");
}

std::string literal(std::int64_t value) {
  if (value == std::numeric_limits<std::int64_t>::min()) {
    return "(-9223372036854775807LL - 1)";
  }
  std::array<char, 32> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), end) + "LL";
}

} // namespace uwjit::codegen
