// Small text helpers shared by every folder: joining lists, shapes, identifiers, hex digits,
// numbers and durations for people, and the nearest of some words to a mistyped one.
#pragma once

#include <cstdint>
#include <optional>
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

/// The lines of `text`, without their '\n' (a last line without one counts; none after a final
/// '\n').
[[nodiscard]] std::vector<std::string> split_lines(const std::string& text);

/// Line `line` (counted from 1) of `text`, without its '\n'; "" past the end. Thread-safe.
[[nodiscard]] std::string_view line_of(std::string_view text, int line) noexcept;

/// Whether `name` is a C identifier: a letter or '_' first, then letters, digits and '_'.
/// Keywords are not checked. Thread-safe.
[[nodiscard]] bool is_identifier(std::string_view name) noexcept;

/// Whether `name` may name a node or its type: 1 to 64 ASCII letters, digits, '_', '-' and '.',
/// the first a letter, a digit or '_'. Such a name is one plain file name in any directory (no
/// '/', no NUL, never "..", never hidden, never read as an option), so the files named after a
/// node stay in the directory they are written to. Thread-safe.
[[nodiscard]] bool is_safe_name(std::string_view name) noexcept;

/// `text` as a message may show it: printable ASCII kept (a backslash doubled), every other byte
/// as \xHH, at most `limit` bytes of `text` shown and "..." after a longer one. Thread-safe.
[[nodiscard]] std::string printable(std::string_view text, std::size_t limit = 80);

/// `text` as a terminal may show it at length (a listing, a manifest, a diff): each control byte
/// and DEL as \xHH, except a newline and a tab unless `one_line`; everything else, UTF-8
/// included, as it is. What a file says (a cache manifest anyone who can write the cache could
/// have edited) then cannot move the cursor or retitle the terminal. printable() is for a value
/// quoted inside a message. Thread-safe.
[[nodiscard]] std::string terminal_safe(std::string_view text, bool one_line = false);

/// Two lowercase hex digits per byte, in order. Thread-safe.
[[nodiscard]] std::string hex_text(std::span<const unsigned char> bytes);

/// Sixteen lowercase hex digits, the most significant first. Thread-safe.
[[nodiscard]] std::string hex_text(std::uint64_t value);

/// `value` with `digits` decimals, e.g. "12.35" (classic locale). Thread-safe.
[[nodiscard]] std::string fixed(double value, int digits);

/// `value` with up to 10 significant digits (classic locale). Thread-safe.
[[nodiscard]] std::string general(double value);

/// "0:07", "12:34", "1:02:03": a duration in whole seconds, as a clock shows it. Thread-safe.
[[nodiscard]] std::string clock_text(double seconds);

/// The candidate `word` most likely mistypes: the nearest by edit distance (a swap of two
/// neighbours counts once), if it is at most a third of the word's length away (at least 1).
/// Thread-safe.
[[nodiscard]] std::optional<std::string> closest(std::string_view word,
                                                 std::span<const std::string> candidates);

/// " (did you mean X?)" for closest(word, candidates), else "". Thread-safe.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       std::span<const std::string> candidates);

} // namespace uwjit
