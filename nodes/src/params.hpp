// Reading and range-checking the params of the built-in nodes.
#pragma once

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/runtime/value.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

namespace uwjit::nodes::detail {

inline std::int64_t int_param(std::string_view node, const runtime::Params& params,
                              std::string_view key, std::int64_t min,
                              std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t value = 0;
  try {
    value = params.get_int(key);
  } catch (const Error& error) {
    throw Error(ErrorKind::usage, format("{}: {}", node, error.what()));
  }
  if (value < min || value > max) {
    throw Error(ErrorKind::usage, format("{}: param \"{}\" = {} is out of range [{}, {}]", node,
                                         key, value, min, max));
  }
  return value;
}

/// `value` as the shortest text that reads back as it ("1e-320", "50", "0.1"): what a user typed,
/// not six digits of it.
inline std::string shortest(double value) {
  std::array<char, 32> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} ? std::string(text.data(), end) : format("{}", value);
}

/// A double param; `positive` requires > 0, otherwise any finite value within [min, max].
inline double double_param(std::string_view node, const runtime::Params& params,
                           std::string_view key, double min, double max, bool exclusive_min) {
  double value = 0;
  try {
    value = params.get_double(key);
  } catch (const Error& error) {
    throw Error(ErrorKind::usage, format("{}: {}", node, error.what()));
  }
  const bool below = exclusive_min ? !(value > min) : !(value >= min);
  if (!std::isfinite(value) || below || value > max) {
    throw Error(ErrorKind::usage,
                format("{}: param \"{}\" = {} is out of range {}{}, {}]", node, key,
                       shortest(value), exclusive_min ? "(" : "[", min, max));
  }
  return value;
}

/// A time step derived from params (or given as one): Error(usage) unless it is finite and at
/// least the smallest normal double, naming how it was derived and the params it came from, e.g.
/// `heat: dt = courant / (kappa max(1, contrast)) = inf from courant = 0.1, kappa = 1e-320, ...`.
/// A step that overflows to infinity turns every field into NaN; one that underflows to zero or
/// to a subnormal number takes steps that change nothing.
inline double checked_dt(std::string_view node, std::string_view derivation, double dt,
                         const runtime::Params& params,
                         std::initializer_list<std::string_view> keys) {
  if (std::isfinite(dt) && dt >= std::numeric_limits<double>::min()) {
    return dt;
  }
  std::string from;
  for (const auto key : keys) {
    from += from.empty() ? "" : ", ";
    from += format("{} = {}", key, params.contains(key) ? params.at(key).text() : "(unset)");
  }
  throw Error(ErrorKind::usage,
              format("{}: {} = {} from {}: a time step must be finite and positive (at least "
                     "2.2250738585072014e-308, the smallest normal double); change those params",
                     node, derivation, shortest(dt), from));
}

/// The most steps a node's default run may take (what a step counter holds with room to spare).
inline constexpr double k_max_default_steps = 0x1.0p62;

/// A number of steps derived from params (a default run's length), rounded up to whole hundreds:
/// Error(usage) unless it is finite and at most k_max_default_steps, naming how it was derived
/// and the params it came from.
inline std::int64_t checked_steps(std::string_view node, std::string_view derivation, double steps,
                                  const runtime::Params& params,
                                  std::initializer_list<std::string_view> keys) {
  const double whole = std::ceil(steps);
  if (whole >= 0 && whole <= k_max_default_steps) {
    return (static_cast<std::int64_t>(whole) + 99) / 100 * 100;
  }
  std::string from;
  for (const auto key : keys) {
    from += from.empty() ? "" : ", ";
    from += format("{} = {}", key, params.contains(key) ? params.at(key).text() : "(unset)");
  }
  throw Error(ErrorKind::usage,
              format("{}: {} = {} steps from {}: more than a run can take (at most 2^62); change "
                     "those params",
                     node, derivation, shortest(steps), from));
}

/// The larger of `worst` and `value`, NaN if either is: a check's running maximum must not let a
/// NaN (a field that blew up) pass as 0.
inline double worse(double worst, double value) {
  return std::isnan(worst) || std::isnan(value) ? std::numeric_limits<double>::quiet_NaN()
                                                : std::max(worst, value);
}

inline std::string choice_param(std::string_view node, const runtime::Params& params,
                                std::string_view key,
                                std::initializer_list<std::string_view> accepted) {
  std::string value;
  try {
    value = params.get_string(key);
  } catch (const Error& error) {
    throw Error(ErrorKind::usage, format("{}: {}", node, error.what()));
  }
  std::string list;
  for (const auto option : accepted) {
    if (option == value) {
      return value;
    }
    list += list.empty() ? "" : ", ";
    list += option;
  }
  throw Error(ErrorKind::usage, format("{}: param \"{}\" = \"{}\" (accepted: {})", node, key,
                                       printable(value), list));
}

inline codegen::ExtentMode extents_param(std::string_view node, const runtime::Params& params) {
  return choice_param(node, params, "extents", {"compiled", "runtime"}) == "runtime"
             ? codegen::ExtentMode::runtime
             : codegen::ExtentMode::compiled;
}

/// splitmix64: a small, fully specified generator, so generated meshes and weights are the same
/// with every standard library.
class SplitMix {
public:
  explicit SplitMix(std::uint64_t seed) : m_state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  double symmetric() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }

private:
  std::uint64_t m_state;
};

} // namespace uwjit::nodes::detail

namespace uwjit::nodes::detail {

/// Neumaier's compensated sum: the error does not grow with the number of terms, so a
/// conservation check measures the scheme, not the summation.
class Sum {
public:
  void add(double x) {
    const double t = m_sum + x;
    m_compensation += std::abs(m_sum) >= std::abs(x) ? (m_sum - t) + x : (x - t) + m_sum;
    m_sum = t;
  }
  [[nodiscard]] double value() const { return m_sum + m_compensation; }

private:
  double m_sum = 0;
  double m_compensation = 0;
};

/// The worst-case relative error of summing n terms of one sign in floating point, n·2^-52:
/// what a kernel's plain sum of n cells may differ from the exact sum by.
inline double summation_bound(std::int64_t n) {
  return static_cast<double>(n) * 0x1.0p-52;
}

} // namespace uwjit::nodes::detail
