#include "text.hpp"

#include <uwjit/common/text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

namespace uwjit::tools {

std::string human_size(std::uint64_t bytes) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::fixed << std::setprecision(1);
  constexpr const char* k_units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    out << bytes << " B";
    return std::move(out).str();
  }
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  out << value << " " << k_units[unit];
  return std::move(out).str();
}

std::string milliseconds(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::fixed << std::setprecision(value < 10 ? 2 : 1) << value << " ms";
  return std::move(out).str();
}

std::string utc_text(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string clock_text(double seconds) {
  const auto total = static_cast<long long>(std::max(0.0, std::round(seconds)));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  }
  return text;
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring characters each cost 1.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) {
    d[i][0] = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    d[0][j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string> closest(std::string_view word, std::span<const std::string> candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string> candidates) {
  const auto match = closest(word, candidates);
  return match ? " (did you mean " + *match + "?)" : "";
}

Table::Table(std::vector<std::string> header) {
  m_rows.push_back(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  m_rows.push_back(std::move(row));
}

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const auto& row : m_rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : m_rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      std::string cell = row[i];
      if (i + 1 < row.size()) {
        cell.resize(widths[i] + 2, ' ');
      }
      line += cell;
    }
    out += line + "\n";
  }
  return out;
}

namespace {

std::set<std::string> split_set(const std::string& text, char separator) {
  std::set<std::string> parts;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) {
    if (!part.empty()) {
      parts.insert(part);
    }
  }
  return parts;
}

// "  NAME differ: A:x B:y" for list-valued components (features, flags), naming only the items
// that differ; "" when both hold the same items (e.g. reordered): then the values are shown whole.
std::string item_difference(const std::string& name, const std::string& value_a,
                            const std::string& value_b, char separator) {
  const auto items_a = split_set(value_a, separator);
  const auto items_b = split_set(value_b, separator);
  std::string out;
  for (const auto& item : items_a) {
    if (items_b.count(item) == 0) {
      out += " A:" + item;
    }
  }
  for (const auto& item : items_b) {
    if (items_a.count(item) == 0) {
      out += " B:" + item;
    }
  }
  return out.empty() ? out : "  " + name + " differ:" + out + "\n";
}

// A line diff by longest common subsequence: fine for kernel sources (hundreds of lines).
std::string line_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<std::vector<std::uint32_t>> common(n + 1, std::vector<std::uint32_t>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      common[i][j] =
          a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  std::ostringstream out;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ++i;
      ++j;
    } else if (i < n && (j == m || common[i + 1][j] >= common[i][j + 1])) {
      out << "  - A line " << i + 1 << ": " << a[i] << "\n";
      ++i;
    } else {
      out << "  + B line " << j + 1 << ": " << b[j] << "\n";
      ++j;
    }
  }
  return std::move(out).str();
}

} // namespace

std::string explain_difference(const std::string& key_a, const cache::Manifest& a,
                               const std::string& source_a, const std::string& key_b,
                               const cache::Manifest& b, const std::string& source_b) {
  std::ostringstream out;
  out << "A = " << key_a << " (" << a.origin << ")\nB = " << key_b << " (" << b.origin << ")\n\n";
  std::map<std::string, std::string> values_b(b.salt_components.begin(), b.salt_components.end());
  std::set<std::string> seen;
  std::ostringstream salt;
  for (const auto& [name, value_a] : a.salt_components) {
    seen.insert(name);
    const auto other = values_b.find(name);
    if (other == values_b.end()) {
      salt << "  " << name << ": only in A (" << value_a << ")\n";
    } else if (other->second != value_a) {
      std::string items;
      if (name == "features" || name == "flags") {
        items = item_difference(name, value_a, other->second, name == "features" ? ',' : ' ');
      }
      if (!items.empty()) {
        salt << items;
      } else {
        salt << "  " << name << ": A=" << value_a << "  B=" << other->second << "\n";
      }
    }
  }
  for (const auto& [name, value_b] : b.salt_components) {
    if (seen.count(name) == 0) {
      salt << "  " << name << ": only in B (" << value_b << ")\n";
    }
  }
  const std::string salt_text = salt.str();
  out << (salt_text.empty() ? "salt: identical\n" : "salt components that differ:\n" + salt_text);
  if (source_a == source_b) {
    out << "source: identical\n";
  } else {
    out << "source lines that differ:\n" << line_diff(split_lines(source_a), split_lines(source_b));
  }
  return std::move(out).str();
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(digits);
  out << std::fixed << value;
  return std::move(out).str();
}

std::string general(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(10);
  out << value;
  return std::move(out).str();
}

} // namespace uwjit::tools
