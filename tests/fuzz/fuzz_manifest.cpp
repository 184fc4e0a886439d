// Fuzzes the manifest reader: any bytes may sit in {key}.json. parse_manifest and
// manifest_format must never throw or crash, and a manifest that parses must survive
// to_json and parse_manifest unchanged (publish relies on that: it refuses an entry whose
// manifest would not read back).
#include <uwjit/cache/manifest.hpp>

#include "manifest_json.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)uwjit::cache::manifest_format(text);
  std::string why;
  const auto manifest = uwjit::cache::parse_manifest(text, &why);
  if (!manifest) {
    if (why.empty()) {
      std::abort(); // a refusal always says why
    }
    return 0;
  }
  if (manifest->compile_ms < 0) {
    return 0; // written as 0 by design: no round trip expected
  }
  const auto again = uwjit::cache::parse_manifest(uwjit::cache::to_json(*manifest));
  if (!again || *again != *manifest) {
    std::abort();
  }
  return 0;
}
