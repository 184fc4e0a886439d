// Deterministic, locale-free C++ literals for numbers in generated source (round-trip exact).
#pragma once

#include <cstdint>
#include <string>

namespace uwjit::codegen {

/// A C++ literal of type double that reads back as exactly `value`: "0.1", "1.0", "-0.0",
/// "1e+300", "__builtin_inf()", "(-__builtin_inf())", "__builtin_nan(\"\")". Thread-safe.
[[nodiscard]] std::string literal(double value);

/// A C++ literal of type float that reads back as exactly `value`, e.g. "0.1f".
[[nodiscard]] std::string literal(float value);

/// A C++ literal of type long long, e.g. "42LL"; the minimum value is written as an expression.
[[nodiscard]] std::string literal(std::int64_t value);

} // namespace uwjit::codegen
