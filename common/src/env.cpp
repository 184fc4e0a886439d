#include <uwjit/common/env.hpp>

#include <uwjit/common/format.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace uwjit::env {

std::optional<std::string> get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

namespace detail {
void throw_unrecognised(std::string_view name, std::string_view value, std::string_view accepted) {
  throw Error(ErrorKind::usage,
              format("{}: unrecognised value \"{}\" (accepted: {})", name, value, accepted));
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}
} // namespace detail

bool parse_bool(std::string_view name, std::string_view value) {
  static constexpr std::array<std::string_view, 4> k_true{"1", "true", "yes", "on"};
  static constexpr std::array<std::string_view, 4> k_false{"0", "false", "no", "off"};
  for (const auto word : k_true) {
    if (detail::iequals(value, word)) {
      return true;
    }
  }
  for (const auto word : k_false) {
    if (detail::iequals(value, word)) {
      return false;
    }
  }
  detail::throw_unrecognised(name, value, k_boolean_accepted);
}

bool get_bool(const char* name, bool fallback) {
  const auto value = get(name);
  return value ? parse_bool(name, *value) : fallback;
}

namespace {
// The number at the start of `text` and the rest: digits with an optional fraction ("12.5");
// no sign, no exponent.
struct Number {
  std::string_view digits; // as written
  double value = 0;
  bool whole = true; // digits only, no fraction
  std::string_view rest;
};

std::optional<Number> split_number(std::string_view text) {
  std::size_t end = 0;
  bool whole = true;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    whole = whole && text[end] != '.';
    ++end;
  }
  if (end == 0) {
    return std::nullopt;
  }
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc{} || ptr != text.data() + end || !std::isfinite(number)) {
    return std::nullopt;
  }
  return Number{text.substr(0, end), number, whole, text.substr(end)};
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}
} // namespace

std::uint64_t parse_size(std::string_view name, std::string_view text) {
  constexpr std::string_view k_accepted = k_size_accepted;
  const auto parts = split_number(trim(text));
  if (!parts) {
    detail::throw_unrecognised(name, text, k_accepted);
  }
  const std::string_view unit = parts->rest;
  std::uint64_t scale = 1;
  if (!unit.empty()) {
    static constexpr std::array<std::pair<char, std::uint64_t>, 4> k_units{
        {{'K', 1ULL << 10}, {'M', 1ULL << 20}, {'G', 1ULL << 30}, {'T', 1ULL << 40}}};
    const char first = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    bool known = false;
    for (const auto& [letter, factor] : k_units) {
      if (first == letter) {
        scale = factor;
        known = true;
      }
    }
    const auto rest = unit.substr(1);
    const bool b_suffix = rest.empty() || detail::iequals(rest, "B") || detail::iequals(rest, "iB");
    if (!(known && b_suffix) && !detail::iequals(unit, "B")) {
      detail::throw_unrecognised(name, text, k_accepted);
    }
  }
  if (parts->whole) {
    // Exactly, up to 2^64 - 1 bytes: a double would round the largest counts.
    std::uint64_t count = 0;
    const auto [ptr, ec] =
        std::from_chars(parts->digits.data(), parts->digits.data() + parts->digits.size(), count);
    if (ec != std::errc{} || count > std::numeric_limits<std::uint64_t>::max() / scale) {
      detail::throw_unrecognised(name, text, k_accepted);
    }
    return count * scale;
  }
  // A fraction: it must come to whole bytes ("1.5K", not "1.5" or "0.3K").
  const double bytes = parts->value * static_cast<double>(scale);
  if (!(bytes < 0x1.0p64) || bytes != std::floor(bytes)) {
    detail::throw_unrecognised(name, text, k_accepted);
  }
  return static_cast<std::uint64_t>(bytes);
}

double parse_seconds(std::string_view name, std::string_view text) {
  constexpr std::string_view k_accepted = k_duration_accepted;
  const auto parts = split_number(trim(text));
  if (!parts) {
    detail::throw_unrecognised(name, text, k_accepted);
  }
  const double number = parts->value;
  const std::string_view unit = parts->rest;
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else {
    detail::throw_unrecognised(name, text, k_accepted);
  }
  // Callers turn the value into integral milliseconds and subtract it from the clock: bound it
  // far inside what those can hold.
  const double seconds = number * scale;
  if (!(seconds <= k_max_seconds)) {
    detail::throw_unrecognised(name, text, k_accepted);
  }
  return seconds;
}

std::optional<std::string> get(const Variable& variable) {
  return get(std::string(variable.name).c_str());
}

namespace {
// The variable's value, or its fallback when unset; asserts that the table gives it `kind`.
std::string value_or_fallback(const Variable& variable, Kind kind) {
  UWJIT_ASSERT(variable.kind == kind, format("{} is read as another kind", variable.name));
  const auto value = get(variable);
  return value ? *value : std::string(variable.fallback);
}
} // namespace

std::string_view get_choice_name(const Variable& variable) {
  const std::string value = value_or_fallback(variable, Kind::choice);
  std::string_view rest = variable.accepted;
  while (!rest.empty()) {
    const auto comma = rest.find(", ");
    const auto name = rest.substr(0, comma);
    if (detail::iequals(value, name)) {
      return name;
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
  }
  detail::throw_unrecognised(variable.name, value, variable.accepted);
}

bool get_bool(const Variable& variable) {
  return parse_bool(variable.name, value_or_fallback(variable, Kind::boolean));
}

std::uint64_t get_size(const Variable& variable) {
  return parse_size(variable.name, value_or_fallback(variable, Kind::size));
}

double get_seconds(const Variable& variable) {
  return parse_seconds(variable.name, value_or_fallback(variable, Kind::duration));
}

std::optional<std::string> get_path(const Variable& variable) {
  UWJIT_ASSERT(variable.kind == Kind::path, format("{} is not a path", variable.name));
  return get(variable);
}

void check(const Variable& variable) {
  switch (variable.kind) {
  case Kind::boolean:
    (void)get_bool(variable);
    return;
  case Kind::size:
    (void)get_size(variable);
    return;
  case Kind::duration:
    (void)get_seconds(variable);
    return;
  case Kind::choice:
    (void)get_choice_name(variable);
    return;
  case Kind::path:
    return;
  }
}

} // namespace uwjit::env
