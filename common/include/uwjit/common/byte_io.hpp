// Little-endian encoding of integers, doubles and strings into bytes, and reading them back: the
// checkpoint format and the collective kernel request's broadcast both use it.
#pragma once

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace uwjit {

/// Appends little-endian values to a byte string. Not thread-safe.
class ByteWriter {
public:
  void u8(std::uint8_t v) { m_bytes.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void i64(std::int64_t v) { put(static_cast<std::uint64_t>(v), 8); }
  void f64(double v) { put(std::bit_cast<std::uint64_t>(v), 8); }
  /// A u32 length, then the bytes; a string of 4 GiB or more is a bug of the caller.
  void str(std::string_view s) {
    UWJIT_ASSERT(s.size() <= std::numeric_limits<std::uint32_t>::max(),
                 "byte writer: a string of 4 GiB or more");
    u32(static_cast<std::uint32_t>(s.size()));
    m_bytes.append(s);
  }
  void raw(const void* data, std::size_t size) {
    m_bytes.append(static_cast<const char*>(data), size);
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

/// Reads what ByteWriter wrote from bytes that outlive the reader; any read past the end throws
/// Error(io) naming `what`. Not thread-safe.
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
      fail("truncated");
    }
    const auto out = m_bytes.substr(m_at, static_cast<std::size_t>(size));
    m_at += static_cast<std::size_t>(size);
    return out;
  }
  /// A u64 count of items that take at least `bytes_each` (>= 1) bytes each; Error(io)
  /// "truncated" when the bytes left cannot hold them, so that no count read allocates more
  /// than the bytes hold.
  std::uint64_t count(std::uint64_t bytes_each) {
    const std::uint64_t n = u64();
    if (n > (m_bytes.size() - m_at) / bytes_each) {
      fail("truncated");
    }
    return n;
  }
  [[nodiscard]] bool at_end() const noexcept { return m_at == m_bytes.size(); }
  /// Throws Error(io): "WHAT: PROBLEM".
  [[noreturn]] void fail(std::string_view problem) const {
    throw Error(ErrorKind::io, format("{}: {}", m_what, problem));
  }

private:
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

} // namespace uwjit
