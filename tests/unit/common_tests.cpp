// common/: errors, asserts, environment variables, formatting, loggers.
#include "sandbox.hpp"

#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/crc64.hpp>
#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/common/text.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using uwjit_test::ScopedEnv;

std::string message_of(auto&& call) {
  try {
    call();
  } catch (const uwjit::Error& error) {
    return error.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("an unrecognised boolean value names the variable and the accepted values") {
  ScopedEnv env("UWJIT_TEST_SWITCH", "maybe");
  CHECK_THROWS_AS((void)uwjit::env::get_bool("UWJIT_TEST_SWITCH", true), uwjit::Error);
  CHECK(message_of([] { (void)uwjit::env::get_bool("UWJIT_TEST_SWITCH", true); }) ==
        "UWJIT_TEST_SWITCH: unrecognised value \"maybe\" (accepted: 0, false, no, off, 1, true, "
        "yes, on)");
  try {
    (void)uwjit::env::get_bool("UWJIT_TEST_SWITCH", true);
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
  }
}

TEST_CASE("boolean variables accept every documented spelling in any case") {
  for (const char* yes : {"1", "true", "YES", "On"}) {
    ScopedEnv env("UWJIT_TEST_SWITCH", yes);
    CHECK(uwjit::env::get_bool("UWJIT_TEST_SWITCH", false));
  }
  for (const char* no : {"0", "False", "no", "OFF"}) {
    ScopedEnv env("UWJIT_TEST_SWITCH", no);
    CHECK_FALSE(uwjit::env::get_bool("UWJIT_TEST_SWITCH", true));
  }
  ScopedEnv unset("UWJIT_TEST_SWITCH", std::nullopt);
  CHECK(uwjit::env::get_bool("UWJIT_TEST_SWITCH", true));
  CHECK_FALSE(uwjit::env::get_bool("UWJIT_TEST_SWITCH", false));
}

TEST_CASE("a choice variable lists the accepted names when the value is unknown") {
  enum class Colour { red, blue };
  ScopedEnv env("UWJIT_TEST_COLOUR", "green");
  const auto message = message_of([] {
    (void)uwjit::env::get_choice<Colour>(
        "UWJIT_TEST_COLOUR", {{"red", Colour::red}, {"blue", Colour::blue}}, Colour::red);
  });
  CHECK(message == "UWJIT_TEST_COLOUR: unrecognised value \"green\" (accepted: red, blue)");
}

TEST_CASE("sizes parse with binary suffixes and reject anything else") {
  CHECK(uwjit::env::parse_size("S", "4096") == 4096);
  CHECK(uwjit::env::parse_size("S", "500M") == 500ULL * 1024 * 1024);
  CHECK(uwjit::env::parse_size("S", "2G") == 2ULL * 1024 * 1024 * 1024);
  CHECK(uwjit::env::parse_size("S", "1.5k") == 1536);
  CHECK(uwjit::env::parse_size("S", "3GiB") == 3ULL * 1024 * 1024 * 1024);
  CHECK(uwjit::env::parse_size("S", "10MB") == 10ULL * 1024 * 1024);
  for (const char* bad : {"", "G", "-5M", "5X", "5MM", "lots", "1e3"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)uwjit::env::parse_size("UWJIT_CACHE_MAX_SIZE", bad), uwjit::Error);
  }
  CHECK(message_of([] {
          (void)uwjit::env::parse_size("UWJIT_CACHE_MAX_SIZE", "big");
        }).rfind("UWJIT_CACHE_MAX_SIZE: unrecognised value \"big\"", 0) == 0);
}

TEST_CASE("durations parse in seconds, minutes, hours and days") {
  CHECK(uwjit::env::parse_seconds("T", "30") == 30);
  CHECK(uwjit::env::parse_seconds("T", "1.5") == 1.5);
  CHECK(uwjit::env::parse_seconds("T", "10m") == 600);
  CHECK(uwjit::env::parse_seconds("T", "2h") == 7200);
  CHECK(uwjit::env::parse_seconds("T", "7d") == 7 * 86400);
  for (const char* bad : {"", "-1", "5w", "soon", "1 m"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)uwjit::env::parse_seconds("UWJIT_LOCK_TIMEOUT", bad), uwjit::Error);
  }
}

TEST_CASE("durations beyond 1e9 seconds are refused rather than overflow a clock") {
  CHECK(uwjit::env::parse_seconds("T", "1000000000") == 1e9);
  CHECK(uwjit::env::parse_seconds("T", "11574d") == 11574.0 * 86400);
  for (const char* bad : {"1000000001", "11575d", "99999999999999999999999", "1e9"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)uwjit::env::parse_seconds("UWJIT_LOCK_TIMEOUT", bad), uwjit::Error);
  }
  CHECK(message_of([] { (void)uwjit::env::parse_seconds("UWJIT_LOCK_TIMEOUT", "9e99d"); }) ==
        "UWJIT_LOCK_TIMEOUT: unrecognised value \"9e99d\" (accepted: a non-negative number with "
        "an optional unit s, m, h or d, e.g. 30, 1.5, 10m, 7d, at most 1000000000 s)");
}

TEST_CASE("every numeric variable accepts the edges its message states and refuses just beyond") {
  // UWJIT_LOCK_TIMEOUT: "a non-negative number ..., at most 1000000000 s".
  CHECK(uwjit::env::parse_seconds("T", "0") == 0);
  CHECK(uwjit::env::parse_seconds("T", "1000000000") == 1e9);
  CHECK(uwjit::env::parse_seconds("T", "1000000000s") == 1e9);
  CHECK(uwjit::env::parse_seconds("T", "11574.074074d") <= 1e9);
  for (const char* beyond : {"-0.001", "1000000000.001", "16666666.67m", "11574.075d"}) {
    CAPTURE(beyond);
    CHECK_THROWS_AS((void)uwjit::env::parse_seconds("T", beyond), uwjit::Error);
  }
  // UWJIT_CACHE_MAX_SIZE: "a whole number of bytes ..., at most 18446744073709551615", read
  // exactly (through a double, the largest counts were refused or rounded).
  CHECK(uwjit::env::parse_size("S", "0") == 0);
  CHECK(uwjit::env::parse_size("S", "18446744073709551615") == 18446744073709551615ULL);
  CHECK(uwjit::env::parse_size("S", "18446744073709550000") == 18446744073709550000ULL);
  CHECK(uwjit::env::parse_size("S", "16777215T") == 16777215ULL << 40);
  for (const char* beyond :
       {"-1", "18446744073709551616", "16777216T", "16777216TiB", "0.5", "0.3K"}) {
    CAPTURE(beyond);
    CHECK_THROWS_AS((void)uwjit::env::parse_size("S", beyond), uwjit::Error);
  }
  // Every numeric row of the table is one of these two kinds, with these messages.
  for (const auto* variable : uwjit::env::vars::k_all) {
    CAPTURE(variable->name);
    if (variable->kind == uwjit::env::Kind::size) {
      CHECK(variable->accepted == uwjit::env::k_size_accepted);
    }
    if (variable->kind == uwjit::env::Kind::duration) {
      CHECK(variable->accepted == uwjit::env::k_duration_accepted);
    }
  }
}

TEST_CASE("format replaces placeholders in order and ignores the locale") {
  CHECK(uwjit::format("{} + {} = {}", 1, 2.5, "three") == "1 + 2.5 = three");
  CHECK(uwjit::format("no placeholders") == "no placeholders");
  CHECK(uwjit::format("{ braces } {}", 7) == "{ braces } 7");
  CHECK(uwjit::format("{}{}", "a", 'b') == "ab");
  // A pattern whose "{}" count differs from the arguments does not compile: format_check.
}

namespace {

// Streams the length of its value's text in angle brackets, formatted by a format() inside a
// format()'s argument: "<5>" for 12345, whatever the outer format has written so far.
struct Nested {
  int value;
  friend std::ostream& operator<<(std::ostream& out, const Nested& n) {
    return out << "<" << uwjit::format("{}", n.value).size() << ">";
  }
};

// Leaves the stream in hexadecimal with a precision of 2, as a careless operator<< may.
struct Careless {
  friend std::ostream& operator<<(std::ostream& out, const Careless&) {
    return out << std::hex << std::setprecision(2) << std::setfill('*') << 255;
  }
};

struct Throws {
  friend std::ostream& operator<<(std::ostream&, const Throws&) {
    throw std::runtime_error("no text");
  }
};

} // namespace

TEST_CASE("format is the same whatever an earlier format did: nested, careless, thrown, threaded") {
  CHECK(uwjit::format("a {} and {}", Nested{12345}, Nested{7}) == "a <5> and <1>");
  CHECK(uwjit::format("{}", Careless{}) == "ff");
  // Decimal, precision 6, no fill: nothing of the careless argument's state is left.
  CHECK(uwjit::format("{} {} {}", 255, 3.14159265, 10) == "255 3.14159 10");
  CHECK_THROWS_AS((void)uwjit::format("{}", Throws{}), std::runtime_error);
  CHECK(uwjit::format("after {}", 1) == "after 1");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 2000; ++i) {
        if (uwjit::format("{}:{}", t, i) != std::to_string(t) + ":" + std::to_string(i)) {
          ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(wrong.load() == 0);
}

TEST_CASE("a failed assertion is an internal error naming the condition") {
  const auto message = message_of([] { UWJIT_ASSERT(1 + 1 == 3, "arithmetic"); });
  CHECK(message.find("1 + 1 == 3") != std::string::npos);
  CHECK(message.find("arithmetic") != std::string::npos);
  try {
    UWJIT_ASSERT(false, "");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::internal);
  }
}

TEST_CASE("error kinds have stable names") {
  using uwjit::ErrorKind;
  CHECK(uwjit::to_string(ErrorKind::usage) == "usage");
  CHECK(uwjit::to_string(ErrorKind::io) == "io");
  CHECK(uwjit::to_string(ErrorKind::compile) == "compile");
  CHECK(uwjit::to_string(ErrorKind::jit) == "jit");
  CHECK(uwjit::to_string(ErrorKind::collective) == "collective");
  CHECK(uwjit::to_string(ErrorKind::internal) == "internal");
}

TEST_CASE("loggers are shared by name and follow the level set for all") {
  auto a = uwjit::log::get("uwjit.test");
  auto b = uwjit::log::get("uwjit.test");
  uwjit::log::set_level(uwjit::log::Level::error);
  CHECK_FALSE(a.enabled(uwjit::log::Level::warn));
  CHECK(b.enabled(uwjit::log::Level::error));
  uwjit::log::set_level(uwjit::log::Level::debug);
  CHECK(a.enabled(uwjit::log::Level::debug));
  CHECK_FALSE(b.enabled(uwjit::log::Level::trace));
  uwjit::log::set_level(uwjit::log::Level::warn);
}

TEST_CASE("every row of the table of variables has a unique name and a default its kind accepts") {
  std::set<std::string_view> names;
  for (const uwjit::env::Variable* variable : uwjit::env::vars::k_all) {
    CAPTURE(variable->name);
    CHECK(names.insert(variable->name).second);
    CHECK_FALSE(variable->effect.empty());
    const ScopedEnv unset(std::string(variable->name), std::nullopt);
    CHECK_NOTHROW(uwjit::env::check(*variable));
    switch (variable->kind) {
    case uwjit::env::Kind::boolean:
      CHECK(variable->accepted == uwjit::env::k_boolean_accepted);
      CHECK(uwjit::env::get_bool(*variable) ==
            uwjit::env::parse_bool(variable->name, variable->fallback));
      break;
    case uwjit::env::Kind::size:
      CHECK(variable->accepted == uwjit::env::k_size_accepted);
      CHECK(uwjit::env::get_size(*variable) ==
            uwjit::env::parse_size(variable->name, variable->fallback));
      break;
    case uwjit::env::Kind::duration:
      CHECK(variable->accepted == uwjit::env::k_duration_accepted);
      CHECK(uwjit::env::get_seconds(*variable) ==
            uwjit::env::parse_seconds(variable->name, variable->fallback));
      break;
    case uwjit::env::Kind::choice:
      CHECK(uwjit::env::get_choice_name(*variable) == variable->fallback);
      break;
    case uwjit::env::Kind::path:
      CHECK_FALSE(uwjit::env::get_path(*variable).has_value());
      break;
    }
  }
  CHECK(uwjit::env::get_bool(uwjit::env::vars::cache));
  CHECK(uwjit::env::get_size(uwjit::env::vars::cache_max_size) == 2ULL << 30);
  CHECK(uwjit::env::get_seconds(uwjit::env::vars::lock_timeout) == 60);
}

TEST_CASE("a choice variable is read by the names of its row, in any case") {
  const auto& level = uwjit::env::vars::log_level;
  {
    const ScopedEnv set("UWJIT_LOG_LEVEL", "DeBuG");
    CHECK(uwjit::env::get_choice_name(level) == "debug");
    CHECK(uwjit::env::get_choice<int>(
              level,
              {{"trace", 0}, {"debug", 1}, {"info", 2}, {"warn", 3}, {"error", 4}, {"off", 5}}) ==
          1);
  }
  const ScopedEnv set("UWJIT_LOG_LEVEL", "loud");
  CHECK(message_of([&] { uwjit::env::check(level); }) ==
        "UWJIT_LOG_LEVEL: unrecognised value \"loud\" (accepted: trace, debug, info, warn, error, "
        "off)");
}

TEST_CASE("reading a variable as a kind its row does not give is a bug, not a usage error") {
  try {
    (void)uwjit::env::get_size(uwjit::env::vars::perf);
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::internal);
  }
}

TEST_CASE("an empty value is unset for every kind of variable") {
  for (const uwjit::env::Variable* variable : uwjit::env::vars::k_all) {
    CAPTURE(variable->name);
    const ScopedEnv empty(std::string(variable->name), "");
    CHECK_NOTHROW(uwjit::env::check(*variable));
    CHECK_FALSE(uwjit::env::get(*variable).has_value());
  }
}

TEST_CASE("join puts the separator between items only") {
  CHECK(uwjit::join({}) == "");
  CHECK(uwjit::join({"a"}) == "a");
  CHECK(uwjit::join({"a", "b", "c"}) == "a, b, c");
  CHECK(uwjit::join({"x", "", "y"}, ",") == "x,,y");
}

TEST_CASE("text shown on a terminal keeps lines, tabs and UTF-8 and escapes every control byte") {
  CHECK(uwjit::terminal_safe("a\tb\nc \xc3\xa9 \\n") == "a\tb\nc \xc3\xa9 \\n");
  CHECK(uwjit::terminal_safe("x\x1b]0;title\x07\r\x7f") == "x\\x1b]0;title\\x07\\x0d\\x7f");
  CHECK(uwjit::terminal_safe("a\tb\nc", true) == "a\\x09b\\x0ac");
  CHECK(uwjit::terminal_safe(std::string_view("\0z", 2)) == "\\x00z");
}

TEST_CASE("shapes, identifiers and hex digits are written as messages and keys expect") {
  CHECK(uwjit::shape_text({2, 3, 4}) == "(2, 3, 4)");
  CHECK(uwjit::shape_text({}) == "()");
  CHECK(uwjit::is_identifier("u_next2"));
  CHECK(uwjit::is_identifier("_x"));
  CHECK_FALSE(uwjit::is_identifier(""));
  CHECK_FALSE(uwjit::is_identifier("2u"));
  CHECK_FALSE(uwjit::is_identifier("a-b"));
  CHECK(uwjit::hex_text(std::uint64_t{0x0123456789abcdefULL}) == "0123456789abcdef");
  CHECK(uwjit::hex_text(std::uint64_t{0}) == "0000000000000000");
  const unsigned char bytes[] = {0x00, 0x7f, 0xff};
  CHECK(uwjit::hex_text(std::span<const unsigned char>(bytes)) == "007fff");
}

TEST_CASE("the byte encoder reads back what it wrote, little-endian, and refuses to overrun") {
  uwjit::ByteWriter writer;
  writer.u8(7);
  writer.u32(0x01020304);
  writer.i64(-2);
  writer.f64(0.5);
  writer.str("heat");
  CHECK(writer.bytes().substr(1, 4) == std::string("\x04\x03\x02\x01", 4));
  const std::string bytes = writer.bytes();
  uwjit::ByteReader reader(bytes, "sample");
  CHECK(reader.u8() == 7);
  CHECK(reader.u32() == 0x01020304);
  CHECK(reader.i64() == -2);
  CHECK(reader.f64() == 0.5);
  CHECK(reader.str() == "heat");
  CHECK(reader.at_end());
  const std::string cut = bytes.substr(0, bytes.size() - 1);
  uwjit::ByteReader short_reader(cut, "sample");
  (void)short_reader.u8();
  (void)short_reader.u32();
  (void)short_reader.i64();
  (void)short_reader.f64();
  CHECK(message_of([&] { (void)short_reader.str(); }) == "sample: truncated");
}

TEST_CASE("CRC-64: the ECMA-182 check value, and parts that combine into the whole's") {
  const std::string text = "123456789";
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  // CRC-64/XZ is this CRC from all ones with a final xor of all ones.
  CHECK((uwjit::crc64_update(~std::uint64_t{0}, bytes) ^ ~std::uint64_t{0}) ==
        0x995DC9BBDF1939FAull);
  std::vector<std::byte> data(10007);
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  }
  const std::span<const std::byte> all(data);
  const std::uint64_t whole = uwjit::crc64_update(0, all);
  for (const std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8},
                                std::size_t{5000}, data.size()}) {
    CAPTURE(cut);
    CHECK(uwjit::crc64_combine(uwjit::crc64_update(0, all.first(cut)),
                               uwjit::crc64_update(0, all.subspan(cut)),
                               data.size() - cut) == whole);
  }
  // Three parts, each advanced over what follows it, XOR to the whole's in any order.
  const std::uint64_t a = uwjit::crc64_advance(uwjit::crc64_update(0, all.first(10)), 9997);
  const std::uint64_t b = uwjit::crc64_advance(uwjit::crc64_update(0, all.subspan(10, 9000)), 997);
  const std::uint64_t c = uwjit::crc64_update(0, all.subspan(9010));
  CHECK((c ^ a ^ b) == whole);
  std::vector<std::byte> flipped = data;
  flipped[4321] ^= std::byte{4};
  CHECK(uwjit::crc64_update(0, flipped) != whole);
}
