// The seal every checkpoint's head, or whole file, ends with: a checksum of the bytes before it,
// checked before any of them is decoded.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <string>
#include <string_view>

namespace uwjit::runtime::detail {

/// Appends the seal of `bytes`: their SHA-256 as 64 lowercase hex digits.
inline void seal(std::string& bytes) {
  bytes += cache::sha256_hex(bytes);
}

/// `file` without the seal it ends with. Throws Error(io) "WHAT: truncated or corrupt (checksum
/// mismatch)" unless the seal is that of the bytes before it: a file cut short, a changed byte or
/// another file's tail is never read as a checkpoint.
inline std::string_view sealed_body(std::string_view file, std::string_view what) {
  constexpr std::size_t k_seal = 64;
  if (file.size() < k_seal) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  const std::string_view body = file.substr(0, file.size() - k_seal);
  if (cache::sha256_hex(body) != file.substr(body.size())) {
    throw Error(ErrorKind::io, format("{}: truncated or corrupt (checksum mismatch)", what));
  }
  return body;
}

/// A checkpoint of a format that gained the seal at version `sealed`: what `file` holds after its
/// magic (`magic_size` bytes) and u32 version, without the seal for version `sealed` and as it is
/// for `sealed - 1` (the version before, still read); Error(io) naming any other version.
/// `was_sealed` says which it was (the file's parts are sealed alike).
inline std::string_view versioned_body(std::string_view file, std::size_t magic_size,
                                       std::uint32_t sealed, std::string_view what,
                                       bool& was_sealed) {
  uwjit::ByteReader head(file, std::string(what));
  (void)head.raw(magic_size);
  const std::uint32_t version = head.u32();
  if (version != sealed && version != sealed - 1) {
    head.fail(format("format version {}; this uwjit reads versions {} and {}", version, sealed - 1,
                     sealed));
  }
  was_sealed = version == sealed;
  return (was_sealed ? sealed_body(file, what) : file).substr(magic_size + 4);
}

} // namespace uwjit::runtime::detail
