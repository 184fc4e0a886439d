// Reading UWJIT_* environment variables: an unrecognised value is an Error(usage) that names
// the variable and the values it accepts.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <uwjit/common/error.hpp>

namespace uwjit::env {

/// The variable's value, or nullopt when unset. An empty value counts as unset.
/// Thread-safe as long as nobody calls setenv concurrently.
[[nodiscard]] std::optional<std::string> get(const char* name);

/// A boolean switch: 1/true/yes/on or 0/false/no/off (any case); `fallback` when unset.
/// Throws Error(usage) on any other value, e.g.
/// `UWJIT_CACHE: unrecognised value "maybe" (accepted: 0, false, no, off, 1, true, yes, on)`.
[[nodiscard]] bool get_bool(const char* name, bool fallback);

/// Parses a boolean value as get_bool does; `name` is used in the error message only.
[[nodiscard]] bool parse_bool(std::string_view name, std::string_view value);

/// One of a fixed set of named values (case-insensitive); `fallback` when unset.
/// Throws Error(usage) naming the variable and the accepted names.
template <class T>
[[nodiscard]] T get_choice(const char* name,
                           std::initializer_list<std::pair<std::string_view, T>> choices,
                           T fallback);

/// A size in bytes: a whole number with an optional suffix K, M, G or T (powers of 1024, an
/// optional trailing "B" or "iB"), e.g. "500M", "2G", "4096". Throws Error(usage).
[[nodiscard]] std::uint64_t parse_size(std::string_view name, std::string_view text);

/// The longest duration parse_seconds accepts: 1e9 s (about 31 years), so that any result fits
/// in integral milliseconds or nanoseconds and can be subtracted from the clock.
inline constexpr double k_max_seconds = 1e9;

/// A duration in seconds: a number (fractions allowed) with an optional unit s, m, h, d
/// (default s), e.g. "30", "1.5", "10m", "7d", at most k_max_seconds. Throws Error(usage);
/// negative values are refused.
[[nodiscard]] double parse_seconds(std::string_view name, std::string_view text);

namespace detail {
[[noreturn]] void throw_unrecognised(std::string_view name, std::string_view value,
                                     std::string_view accepted);
bool iequals(std::string_view a, std::string_view b) noexcept;
} // namespace detail

template <class T>
T get_choice(const char* name, std::initializer_list<std::pair<std::string_view, T>> choices,
             T fallback) {
  const auto value = get(name);
  if (!value) {
    return fallback;
  }
  std::string accepted;
  for (const auto& [label, result] : choices) {
    if (detail::iequals(*value, label)) {
      return result;
    }
    accepted += accepted.empty() ? "" : ", ";
    accepted += label;
  }
  detail::throw_unrecognised(name, *value, accepted);
}

} // namespace uwjit::env
