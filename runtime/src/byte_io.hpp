// Little-endian encoding of the checkpoint's integers, doubles, strings and values.
#pragma once

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/value.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace uwjit::runtime::detail {

class ByteWriter {
public:
  void u8(std::uint8_t v) { m_bytes.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void i64(std::int64_t v) { put(static_cast<std::uint64_t>(v), 8); }
  void f64(double v) { put(std::bit_cast<std::uint64_t>(v), 8); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    m_bytes.append(s);
  }
  void raw(const void* data, std::size_t size) {
    m_bytes.append(static_cast<const char*>(data), size);
  }
  void value(const Value& v) {
    const auto& variant = v.variant();
    u8(static_cast<std::uint8_t>(variant.index()));
    switch (variant.index()) {
    case 0:
      i64(std::get<0>(variant));
      break;
    case 1:
      f64(std::get<1>(variant));
      break;
    case 2:
      str(std::get<2>(variant));
      break;
    default:
      u32(static_cast<std::uint32_t>(std::get<3>(variant).size()));
      for (const auto& item : std::get<3>(variant)) {
        value(item);
      }
    }
  }
  [[nodiscard]] std::string& bytes() noexcept { return m_bytes; }

private:
  void put(std::uint64_t v, int count) {
    for (int i = 0; i < count; ++i) {
      m_bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
  }
  std::string m_bytes;
};

/// Reads what ByteWriter wrote; any read past the end throws Error(io) naming `what`.
class ByteReader {
public:
  ByteReader(std::string_view bytes, std::string what) : m_bytes(bytes), m_what(std::move(what)) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  std::int64_t i64() { return static_cast<std::int64_t>(get(8)); }
  double f64() { return std::bit_cast<double>(get(8)); }
  std::string str() {
    const std::uint32_t size = u32();
    return std::string(raw(size));
  }
  std::string_view raw(std::uint64_t size) {
    if (size > m_bytes.size() - m_at) {
      truncated();
    }
    const auto out = m_bytes.substr(m_at, static_cast<std::size_t>(size));
    m_at += static_cast<std::size_t>(size);
    return out;
  }
  Value value(int depth = 0) {
    if (depth > 16) {
      throw Error(ErrorKind::io, format("{}: values nested too deeply", m_what));
    }
    switch (u8()) {
    case 0:
      return Value(i64());
    case 1:
      return Value(f64());
    case 2:
      return Value(str());
    case 3: {
      const std::uint32_t count = u32();
      Value::Tuple items;
      for (std::uint32_t i = 0; i < count; ++i) {
        items.push_back(value(depth + 1));
      }
      return Value(std::move(items));
    }
    default:
      throw Error(ErrorKind::io, format("{}: unknown value tag", m_what));
    }
  }
  [[nodiscard]] bool at_end() const noexcept { return m_at == m_bytes.size(); }

private:
  [[noreturn]] void truncated() const {
    throw Error(ErrorKind::io, format("{}: truncated", m_what));
  }
  std::uint64_t get(int count) {
    const auto bytes = raw(static_cast<std::uint64_t>(count));
    std::uint64_t v = 0;
    for (int i = 0; i < count; ++i) {
      v |=
          static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]))
          << (8 * i);
    }
    return v;
  }
  std::string_view m_bytes;
  std::size_t m_at = 0;
  std::string m_what;
};

} // namespace uwjit::runtime::detail
