// Fuzzes Key::parse and Salt::parse, which read keys from file names and command lines and salts
// from manifests. A key that parses is exactly 16 lowercase hex digits (safe in a file name); a
// salt that parses survives text() and parse() unchanged.
#include <uwjit/cache/key.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto key = uwjit::cache::Key::parse(text)) {
    if (key->hex() != text ||
        text.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
      std::abort();
    }
  }
  if (const auto salt = uwjit::cache::Salt::parse(text)) {
    const auto again = uwjit::cache::Salt::parse(salt->text());
    if (!again || *again != *salt || salt->text() != text) {
      std::abort();
    }
  }
  return 0;
}
