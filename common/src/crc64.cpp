// CRC-64 (ECMA-182, reflected): eight tables of 256 entries for eight bytes a round, and
// advancing over zero bytes by multiplying with x^(8 n) modulo the polynomial.
#include <uwjit/common/crc64.hpp>

#include <array>
#include <bit>
#include <cstring>

namespace uwjit {

namespace {

constexpr std::uint64_t k_polynomial = 0xC96C5795D7870F42ull; // ECMA-182, reflected

using Tables = std::array<std::array<std::uint64_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint64_t byte = 0; byte < 256; ++byte) {
    std::uint64_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) != 0 ? (crc >> 1) ^ k_polynomial : crc >> 1;
    }
    t[0][byte] = crc;
  }
  for (std::size_t byte = 0; byte < 256; ++byte) {
    for (std::size_t k = 1; k < 8; ++k) {
      t[k][byte] = (t[k - 1][byte] >> 8) ^ t[0][t[k - 1][byte] & 0xff];
    }
  }
  return t;
}

constexpr Tables k_tables = make_tables();

// a(x) b(x) modulo the polynomial, both reflected (bit 63 is x^0).
constexpr std::uint64_t multiply(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  for (std::uint64_t m = std::uint64_t{1} << 63; m != 0; m >>= 1) {
    if ((a & m) != 0) {
      product ^= b;
    }
    b = (b & 1) != 0 ? (b >> 1) ^ k_polynomial : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial, k = 0..63.
constexpr std::array<std::uint64_t, 64> make_powers() {
  std::array<std::uint64_t, 64> powers{};
  std::uint64_t p = std::uint64_t{1} << 62; // x^1
  for (auto& power : powers) {
    power = p;
    p = multiply(p, p);
  }
  return powers;
}

constexpr std::array<std::uint64_t, 64> k_powers = make_powers();

} // namespace

std::uint64_t crc64_update(std::uint64_t crc, std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  const auto& t = k_tables;
  while (n >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, 8);
    if constexpr (std::endian::native == std::endian::big) {
      word = __builtin_bswap64(word);
    }
    word ^= crc;
    crc = t[7][word & 0xff] ^ t[6][(word >> 8) & 0xff] ^ t[5][(word >> 16) & 0xff] ^
          t[4][(word >> 24) & 0xff] ^ t[3][(word >> 32) & 0xff] ^ t[2][(word >> 40) & 0xff] ^
          t[1][(word >> 48) & 0xff] ^ t[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) {
    crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

std::uint64_t crc64_advance(std::uint64_t crc, std::uint64_t count) noexcept {
  // x^(8 count) = the product of x^(2^k) over the set bits k of 8 count.
  std::uint64_t factor = std::uint64_t{1} << 63; // x^0
  for (int k = 3; count != 0 && k < 64; ++k, count >>= 1) {
    if ((count & 1) != 0) {
      factor = multiply(k_powers[static_cast<std::size_t>(k)], factor);
    }
  }
  return multiply(factor, crc);
}

} // namespace uwjit
