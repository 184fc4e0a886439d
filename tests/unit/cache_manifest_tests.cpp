// The manifest's JSON form: round trip, documented field order, and refusal of bad input.
#include "cache_sandbox.hpp"

#include <uwjit/cache/manifest.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace uwjit::cache;

namespace {
Manifest full_manifest() {
  Salt salt;
  salt.add("uwjit", "0.1.0").add("format", "1").add("cpu", "znver3").add("flags", "-O3 -x=y");
  Manifest m;
  m.format = k_entry_format;
  m.key = "0123456789abcdef";
  m.salt = salt.text();
  m.salt_components = salt.components();
  m.entry = "uwjit_0123456789abcdef";
  m.slot_tables = {{"state_in", {"u", "v"}},
                   {"state_out", {"u_next"}},
                   {"statics", {}},
                   {"extents", {"nx"}},
                   {"integrals", {"mass"}}};
  m.object_size = 123456;
  m.object_sha256 = std::string(64, 'a');
  m.created_utc = "2026-11-21T16:24:19Z";
  m.compile_ms = 85.125;
  m.origin = "diffusion";
  m.uwjit_version = "0.1.0";
  return m;
}

// The manifest as JSON with one field's text replaced by `replacement` (or removed when empty).
std::string with_field(const std::string& json, std::string_view field,
                       std::string_view replacement) {
  const std::string marker = "\"" + std::string(field) + "\": ";
  const auto start = json.find(marker);
  REQUIRE(start != std::string::npos);
  // Fields are one per line, except the arrays, which end at the line holding "]" alone.
  auto end = json.find('\n', start);
  if (json[start + marker.size()] == '[') {
    end = json.find("\n  ]", start) + 5; // past "]," to the newline
  }
  std::string out = json;
  if (replacement.empty()) {
    out.erase(start, end - start + 1); // the line and its newline; never the last field
    return out;
  }
  out.replace(start, end - start, marker + std::string(replacement) + ",");
  return out;
}
} // namespace

TEST_CASE("a manifest survives to_json and parse_manifest unchanged") {
  const Manifest m = full_manifest();
  std::string why;
  const auto parsed = parse_manifest(to_json(m), &why);
  REQUIRE_MESSAGE(parsed, why);
  CHECK(*parsed == m);
}

TEST_CASE("manifest fields are written in the documented order") {
  const std::string json = to_json(full_manifest());
  const char* order[] = {"format",      "key",         "salt",        "salt_components",
                         "entry",       "slot_tables", "object_size", "object_sha256",
                         "created_utc", "compile_ms",  "origin",      "uwjit_version"};
  std::size_t last = 0;
  for (const char* field : order) {
    CAPTURE(field);
    const auto at = json.find("\"" + std::string(field) + "\":");
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
  CHECK(json.back() == '\n');
}

TEST_CASE("unknown manifest fields are ignored") {
  std::string json = to_json(full_manifest());
  json.insert(json.find('{') + 1, "\n  \"comment\": \"added by a newer uwjit\",");
  const auto parsed = parse_manifest(json);
  REQUIRE(parsed);
  CHECK(*parsed == full_manifest());
}

TEST_CASE("a non-finite or negative compile time is written as 0") {
  Manifest m = full_manifest();
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), -1.0}) {
    m.compile_ms = bad;
    const auto parsed = parse_manifest(to_json(m));
    REQUIRE(parsed);
    CHECK(parsed->compile_ms == 0);
  }
}

TEST_CASE("malformed manifests are refused with a reason, never an exception") {
  const std::string good = to_json(full_manifest());
  struct Case {
    const char* what;
    std::string json;
    const char* reason_holds;
  };
  const Case cases[] = {
      {"empty text", "", "not valid JSON"},
      {"truncated JSON", good.substr(0, good.size() / 2), "not valid JSON"},
      {"garbage bytes", std::string("\x00\xff\x13garbage", 10), "not valid JSON"},
      {"an array", "[1, 2, 3]", "not a JSON object"},
      {"no key", with_field(good, "key", ""), "\"key\" is missing"},
      {"format as text", with_field(good, "format", "\"1\""), "\"format\""},
      {"a key that is not hex", with_field(good, "key", "\"0123456789ABCDEF\""), "\"key\""},
      {"a short checksum", with_field(good, "object_sha256", "\"abc\""), "\"object_sha256\""},
      {"a negative size", with_field(good, "object_size", "-5"), "\"object_size\""},
      {"a fractional size", with_field(good, "object_size", "1.5"), "\"object_size\""},
      {"compile time as text", with_field(good, "compile_ms", "\"fast\""), "\"compile_ms\""},
      {"slot tables as an object", with_field(good, "slot_tables", "{}"), "\"slot_tables\""},
      {"a slot that is a number",
       with_field(good, "slot_tables", R"([{"name": "state_in", "slots": [1]}])"), "slot_tables"},
      {"salt components that disagree with the salt",
       with_field(good, "salt_components", R"([["uwjit", "9.9.9"]])"), "salt_components"},
      {"a huge format number", with_field(good, "format", "99999999999999"), "\"format\""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    std::string why;
    std::optional<Manifest> parsed;
    CHECK_NOTHROW(parsed = parse_manifest(c.json, &why));
    CHECK_FALSE(parsed);
    CHECK_MESSAGE(why.find(c.reason_holds) != std::string::npos, why);
  }
}

TEST_CASE("parse_manifest reads but does not judge the format version") {
  Manifest m = full_manifest();
  m.format = 7;
  const auto parsed = parse_manifest(to_json(m));
  REQUIRE(parsed);
  CHECK(parsed->format == 7);
}

TEST_CASE("warnings are an optional manifest field: stored when there are any, absent is none") {
  Manifest m = full_manifest();
  CHECK(to_json(m).find("\"warnings\"") == std::string::npos);
  REQUIRE(parse_manifest(to_json(m)));
  CHECK(parse_manifest(to_json(m))->warnings.empty());
  m.warnings = "kernel.cpp:2:11: warning: implicit conversion\n";
  const auto parsed = parse_manifest(to_json(m));
  REQUIRE(parsed);
  CHECK(*parsed == m);
  std::string json = to_json(m);
  const auto at = json.find("\"kernel.cpp");
  REQUIRE(at != std::string::npos);
  json.replace(at, json.find('\n', at) - at, "42");
  std::string why;
  CHECK_FALSE(parse_manifest(json, &why));
  CHECK(why == "field \"warnings\": expected a string");
}
