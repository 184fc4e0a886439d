// Fuzzes the parsers of UWJIT_* values: sizes (UWJIT_CACHE_MAX_SIZE, --max-size), durations
// (UWJIT_LOCK_TIMEOUT, --older-than) and booleans. Each either returns a value in range or throws
// uwjit::Error(usage) naming the variable; anything else (another exception, UB, a crash) is a bug.
#include <uwjit/common/env.hpp>
#include <uwjit/common/error.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {
template <class F> void expect_value_or_usage_error(F&& parse) {
  try {
    parse();
  } catch (const uwjit::Error& error) {
    if (error.kind() != uwjit::ErrorKind::usage ||
        std::string_view(error.what()).rfind("UWJIT_FUZZ: ", 0) != 0) {
      std::abort();
    }
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  expect_value_or_usage_error([&] { (void)uwjit::env::parse_size("UWJIT_FUZZ", text); });
  expect_value_or_usage_error([&] {
    const double seconds = uwjit::env::parse_seconds("UWJIT_FUZZ", text);
    if (!(seconds >= 0 && seconds <= uwjit::env::k_max_seconds)) {
      std::abort();
    }
    // What the callers do with it must be defined behaviour.
    (void)static_cast<std::int64_t>(seconds * 1000);
  });
  expect_value_or_usage_error([&] { (void)uwjit::env::parse_bool("UWJIT_FUZZ", text); });
  return 0;
}
