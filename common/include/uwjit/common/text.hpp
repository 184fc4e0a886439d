// Small text helpers shared by every folder: joining lists, shapes, identifiers, hex digits.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit {

/// The items with `separator` between them: join({"a", "b"}) is "a, b"; no items give "".
/// Thread-safe.
[[nodiscard]] std::string join(const std::vector<std::string>& items,
                               std::string_view separator = ", ");

/// A shape as people write it: "(2, 3, 4)"; "()" for no axes. Thread-safe.
[[nodiscard]] std::string shape_text(const std::vector<std::int64_t>& shape);

/// Whether `name` is a C identifier: a letter or '_' first, then letters, digits and '_'.
/// Keywords are not checked. Thread-safe.
/// The lines of `text`, without their '\n' (a last line without one counts; none after a final
/// '\n').
[[nodiscard]] std::vector<std::string> split_lines(const std::string& text);

[[nodiscard]] bool is_identifier(std::string_view name) noexcept;

/// Two lowercase hex digits per byte, in order. Thread-safe.
[[nodiscard]] std::string hex_text(std::span<const unsigned char> bytes);

/// Sixteen lowercase hex digits, the most significant first. Thread-safe.
[[nodiscard]] std::string hex_text(std::uint64_t value);

} // namespace uwjit
