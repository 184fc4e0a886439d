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
