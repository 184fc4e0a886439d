// Reading and range-checking the params of the built-in nodes.
#pragma once

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/value.hpp>

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
    throw Error(ErrorKind::usage, format("{}: param \"{}\" = {} is out of range {}{}, {}]", node,
                                         key, value, exclusive_min ? "(" : "[", min, max));
  }
  return value;
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
  throw Error(ErrorKind::usage,
              format("{}: param \"{}\" = \"{}\" (accepted: {})", node, key, value, list));
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
