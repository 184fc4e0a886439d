#include <uwjit/common/text.hpp>

#include <sstream>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <locale>
#include <optional>

namespace uwjit {

namespace {
constexpr char k_hex[] = "0123456789abcdef";
} // namespace

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) {
      out += separator;
    }
    out += items[i];
  }
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::vector<std::string> axes;
  axes.reserve(shape.size());
  for (const std::int64_t extent : shape) {
    axes.push_back(std::to_string(extent));
  }
  return "(" + join(axes) + ")";
}

std::string_view line_of(std::string_view text, int line) noexcept {
  std::size_t begin = 0;
  for (int l = 1; l < line; ++l) {
    begin = text.find('\n', begin);
    if (begin == std::string_view::npos) {
      return {};
    }
    ++begin;
  }
  const std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string_view::npos ? text.size() - begin : end - begin);
}

bool is_identifier(std::string_view name) noexcept {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_safe_name(std::string_view name) noexcept {
  const auto allowed = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (!first && (c == '-' || c == '.'));
  };
  if (name.empty() || name.size() > 64 || !allowed(name[0], true)) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) { return allowed(c, false); });
}

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xF];
    }
  }
  if (text.size() > limit) {
    out += "...";
  }
  return out;
}

std::string terminal_safe(std::string_view text, bool one_line) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool kept = (c == '\n' || c == '\t') && !one_line;
    if ((byte < 0x20 || byte == 0x7f) && !kept) {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

std::string hex_text(std::span<const unsigned char> bytes) {
  std::string out(2 * bytes.size(), '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = k_hex[bytes[i] >> 4];
    out[2 * i + 1] = k_hex[bytes[i] & 0xF];
  }
  return out;
}

std::string hex_text(std::uint64_t value) {
  std::string out(16, '0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[out.size() - 1 - i] = k_hex[value & 0xF];
    value >>= 4;
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
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

} // namespace uwjit
