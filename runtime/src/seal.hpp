// The seal every checkpoint's head, or whole file, ends with: a checksum of the bytes before it,
// checked before any of them is decoded.
#pragma once

#include <uwjit/cache/key.hpp>
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

} // namespace uwjit::runtime::detail
