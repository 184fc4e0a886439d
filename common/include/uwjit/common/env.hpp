// Reading UWJIT_* environment variables: an unrecognised value is an Error(usage) that names
// the variable and the values it accepts. uwjit's own variables are read through their entry in
// the table of env_variables.hpp (kind, accepted values, default), so that the library, `uwjit
// env` and the manual (docs/reference/environment.md) agree on each.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <uwjit/common/error.hpp>

namespace uwjit::env {

/// How a variable's value is read.
enum class Kind {
  boolean,  ///< parse_bool
  size,     ///< parse_size
  duration, ///< parse_seconds
  choice,   ///< one of the names in Variable::accepted (any case)
  path,     ///< any text, taken as a path; never rejected
};

/// Whether a variable changes the key's salt: objects built under it are cached apart.
enum class Salt { no, yes };

/// What parse_bool accepts, as its messages list it.
inline constexpr std::string_view k_boolean_accepted = "0, false, no, off, 1, true, yes, on";
/// What parse_size accepts, as its messages list it.
inline constexpr std::string_view k_size_accepted =
    "a whole number of bytes with an optional suffix K, M, G or T, e.g. 500M or 2G, at most "
    "18446744073709551615";
/// What parse_seconds accepts, as its messages list it.
inline constexpr std::string_view k_duration_accepted =
    "a non-negative number with an optional unit s, m, h or d, e.g. 30, 1.5, 10m, 7d, at most "
    "1000000000 s";

/// One environment variable uwjit reads: one row of the table in env_variables.hpp.
struct Variable {
  std::string_view name;
  Kind kind;
  /// What it accepts, exactly as a rejection lists it after "accepted: " (for a choice, the
  /// names separated by ", "; for a path, words for people).
  std::string_view accepted;
  /// What applies when it is unset (or empty): a value the kind accepts; for a path, words.
  std::string_view fallback;
  Salt salt;
  /// What it changes, for people (Markdown: the manual's table is this text).
  std::string_view effect;
};

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
/// optional trailing "B" or "iB"), e.g. "500M", "2G", "4096", "1.5K" (a fraction must come to whole
/// bytes), from 0 to 18446744073709551615 (2^64 - 1, read exactly). Throws Error(usage).
[[nodiscard]] std::uint64_t parse_size(std::string_view name, std::string_view text);

/// The longest duration parse_seconds accepts: 1e9 s (about 31 years), so that any result fits
/// in integral milliseconds or nanoseconds and can be subtracted from the clock.
inline constexpr double k_max_seconds = 1e9;

/// A duration in seconds: a number (fractions allowed, no exponent) with an optional unit s, m,
/// h, d (default s), e.g. "30", "1.5", "10m", "7d", from 0 to k_max_seconds inclusive. Throws
/// Error(usage); negative values are refused.
[[nodiscard]] double parse_seconds(std::string_view name, std::string_view text);

/// `variable`'s value as set (any kind, unchecked), or nullopt when unset or empty.
[[nodiscard]] std::optional<std::string> get(const Variable& variable);

/// `variable` (a boolean) as parse_bool reads it; its fallback when unset. Throws Error(usage).
[[nodiscard]] bool get_bool(const Variable& variable);

/// `variable` (a size) as parse_size reads it; its fallback when unset. Throws Error(usage).
[[nodiscard]] std::uint64_t get_size(const Variable& variable);

/// `variable` (a duration) in seconds, as parse_seconds reads it; its fallback when unset.
/// Throws Error(usage).
[[nodiscard]] double get_seconds(const Variable& variable);

/// `variable` (a choice) as one of `choices`, whose labels must be exactly the names the table
/// accepts; its fallback when unset. Throws Error(usage) on any other value.
template <class T>
[[nodiscard]] T get_choice(const Variable& variable,
                           std::initializer_list<std::pair<std::string_view, T>> choices);

/// `variable` (a choice): the name in the table that its value spells (any case), or its
/// fallback when unset. Throws Error(usage) on any other value.
[[nodiscard]] std::string_view get_choice_name(const Variable& variable);

/// `variable` (a path) as set, or nullopt when unset.
[[nodiscard]] std::optional<std::string> get_path(const Variable& variable);

/// Reads `variable` as the library does and throws the Error(usage) the library would throw on
/// its present value; does nothing when it is unset or valid. Thread-safe as get() is.
void check(const Variable& variable);

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

template <class T>
T get_choice(const Variable& variable,
             std::initializer_list<std::pair<std::string_view, T>> choices) {
  const std::string_view name = get_choice_name(variable);
  for (const auto& [label, result] : choices) {
    if (label == name) {
      return result;
    }
  }
  UWJIT_ASSERT(false, "a name the table of variables accepts has no choice");
  return choices.begin()->second;
}

} // namespace uwjit::env
