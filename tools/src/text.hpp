// Text helpers shared by the uwjit subcommands: sizes, times, tables, diffs (and, through
// <uwjit/common/text.hpp>, numbers, durations and "did you mean").
#pragma once

#include <uwjit/cache/manifest.hpp>
#include <uwjit/common/text.hpp> // fixed, general, clock_text, did_you_mean

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::tools {

/// "812 B", "4.2 KiB", "1.5 MiB", "2.0 GiB".
[[nodiscard]] std::string human_size(std::uint64_t bytes);

/// "3.27 ms" below 10 ms, "48.6 ms" above.
[[nodiscard]] std::string milliseconds(double value);

/// "2026-11-21T16:41:28Z".
[[nodiscard]] std::string utc_text(std::chrono::system_clock::time_point when);

/// Left-aligned columns separated by two spaces; each cell terminal_safe(cell, true).
class Table {
public:
  explicit Table(std::vector<std::string> header);
  void add(std::vector<std::string> row);
  [[nodiscard]] std::string render() const;

private:
  std::vector<std::vector<std::string>> m_rows;
};

/// Why two entries have different keys: the salt components whose values differ (for the CPU
/// features and the compile flags, which ones), then the source lines that differ, as a line
/// diff.
[[nodiscard]] std::string explain_difference(const std::string& key_a, const cache::Manifest& a,
                                             const std::string& source_a, const std::string& key_b,
                                             const cache::Manifest& b, const std::string& source_b);

} // namespace uwjit::tools
