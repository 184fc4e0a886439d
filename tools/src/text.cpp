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

Table::Table(std::vector<std::string> header) {
  m_rows.push_back(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  for (auto& cell : row) {
    cell = terminal_safe(cell, true);
  }
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

} // namespace uwjit::tools
