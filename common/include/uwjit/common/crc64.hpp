// CRC-64 whose parts combine: the checksum of a file that many ranks write, each its own runs of
// bytes, without any rank holding the whole.
#pragma once

#include <cstdint>
#include <span>

namespace uwjit {

/// CRC-64 with the ECMA-182 polynomial, bits reflected (as CRC-64/XZ), from a zero value and
/// with no final xor, so that it is linear: the checksum of a run of bytes is the XOR of its
/// parts' checksums, each advanced over the bytes that follow the part (crc64_advance). Its
/// zero value leaves leading zero bytes unseen: use it where the length is known and fixed.
/// `crc` is the value so far (0 to start). Thread-safe.
[[nodiscard]] std::uint64_t crc64_update(std::uint64_t crc,
                                         std::span<const std::byte> bytes) noexcept;

/// The value `crc` becomes when `count` zero bytes follow: for a part followed by `count` more
/// bytes of the whole, its contribution to the whole's checksum. O(log count). Thread-safe.
[[nodiscard]] std::uint64_t crc64_advance(std::uint64_t crc, std::uint64_t count) noexcept;

/// The checksum of A then B from those of A and B and B's length.
[[nodiscard]] inline std::uint64_t crc64_combine(std::uint64_t crc_a, std::uint64_t crc_b,
                                                 std::uint64_t length_b) noexcept {
  return crc64_advance(crc_a, length_b) ^ crc_b;
}

} // namespace uwjit
