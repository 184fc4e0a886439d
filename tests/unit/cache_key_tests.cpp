// Cache keys and salts: golden values pin the key formula.
#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

using uwjit::cache::Key;
using uwjit::cache::Salt;

TEST_CASE("SHA-256 matches the standard test vectors") {
  CHECK(uwjit::cache::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(uwjit::cache::sha256_hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(uwjit::cache::sha256_hex({"a", "bc"}) == uwjit::cache::sha256_hex("abc"));
}

TEST_CASE("a key is the first 16 hex digits of SHA-256 of source, separator and salt") {
  Salt salt;
  salt.add("uwjit", "0.1.0").add("opt", "3");
  CHECK(salt.text() == "uwjit=0.1.0|opt=3");
  const Key key = Key::of("int x;\n", salt);
  CHECK(key.hex() == uwjit::cache::sha256_hex("int x;\n\n---\nuwjit=0.1.0|opt=3").substr(0, 16));
  // Golden (computed independently with Python's hashlib): catches a change of the formula.
  CHECK(key.hex() == "c526a8a48baafea0");
}

TEST_CASE("any change of source or salt changes the key") {
  Salt a;
  a.add("cpu", "skylake");
  Salt b;
  b.add("cpu", "znver3");
  CHECK(Key::of("s", a) != Key::of("s", b));
  CHECK(Key::of("s", a) != Key::of("t", a));
  CHECK(Key::of("s", a) == Key::of("s", a));
}

TEST_CASE("only 16 lowercase hex digits parse as a key") {
  CHECK(Key::parse("0123456789abcdef").has_value());
  CHECK_FALSE(Key::parse("0123456789ABCDEF").has_value());
  CHECK_FALSE(Key::parse("0123456789abcde").has_value());
  CHECK_FALSE(Key::parse("../../etc/passwd").has_value());
  CHECK_FALSE(Key::parse("0123456789abcdeg").has_value());
}

TEST_CASE("a salt round-trips through its text and refuses separators in values") {
  Salt salt;
  salt.add("flags", "-O3 -std=c++20").add("features", "+avx,-sse4a");
  const auto back = Salt::parse(salt.text());
  REQUIRE(back.has_value());
  CHECK(*back == salt);
  CHECK(back->get("flags") == "-O3 -std=c++20");
  CHECK_FALSE(Salt::parse("novalue").has_value());
  CHECK_THROWS_AS(Salt().add("a|b", "x"), uwjit::Error);
  CHECK_THROWS_AS(Salt().add("a", "x|y"), uwjit::Error);
}

TEST_CASE("salt differences name each component that differs, is missing or is extra") {
  using uwjit::cache::Salt;
  Salt here;
  here.add("uwjit", "1").add("opt", "3").add("cpu", "znver4");
  Salt there;
  there.add("uwjit", "1").add("opt", "2").add("flags", "-g");
  const auto found = uwjit::cache::differences(here, there);
  REQUIRE(found.size() == 3);
  CHECK(found[0].name == "opt");
  CHECK(found[0].left == "3");
  CHECK(found[0].right == "2");
  CHECK(found[1].name == "cpu");
  CHECK(found[1].left == "znver4");
  CHECK_FALSE(found[1].right);
  CHECK(found[2].name == "flags");
  CHECK_FALSE(found[2].left);
  CHECK(found[2].right == "-g");
  CHECK(uwjit::cache::differences(here, here).empty());
}
