#include <uwjit/common/text.hpp>

#include <sstream>

#include <algorithm>
#include <cctype>

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

} // namespace uwjit
