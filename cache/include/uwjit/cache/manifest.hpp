// The manifest of a cache entry: what was compiled, under which salt, and how to check the object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::cache {

/// One table of slot names in ABI order, e.g. {"state_in", {"u", "v"}}. A request's tables are
/// named state_in, state_out, statics, extents, integrals, params, in that order (the engine
/// converts codegen::SlotTables); an entry whose tables differ from the request's is refused.
struct SlotTable {
  std::string name;
  std::vector<std::string> slots;
  friend bool operator==(const SlotTable&, const SlotTable&) = default;
};

/// The manifest of one cache entry, stored as `{key}.json` next to `{key}.o` and `{key}.cpp`.
/// Publishing writes it last: it is the entry's commit point (no manifest, no entry).
///
/// On-disk format, version 1 (= k_entry_format in key.hpp; any other version is refused with
/// RejectReason::format_mismatch and recompiled). One UTF-8 JSON object; fields in this order;
/// unknown fields are ignored:
///
/// | field             | JSON type                   | meaning                                 |
/// |-------------------|-----------------------------|-----------------------------------------|
/// | `format`          | integer                     | entry format version: 1                 |
/// | `key`             | string, 16 lowercase hex    | the entry's key, equal to its file name |
/// | `salt`            | string                      | Salt::text(): "name=value\|name=value" |
/// | `salt_components` | array of [string, string]   | the salt's components in order; must    |
/// |                   |                             | equal the parsed `salt`                 |
/// | `entry`           | string                      | the kernel's entry symbol in the object |
/// | `slot_tables`     | array of {"name": string,   | slot names per ABI table, in order      |
/// |                   | "slots": array of string}   |                                         |
/// | `object_size`     | integer >= 0                | size of `{key}.o` (`{key}.ptx`) in bytes |
/// | `object_sha256`   | string, 64 lowercase hex    | SHA-256 of `{key}.o` (`{key}.ptx`)      |
/// | `created_utc`     | string, YYYY-MM-DDTHH:MM:SSZ | when the entry was published (UTC)     |
/// | `compile_ms`      | number >= 0                 | how long the compile took, milliseconds |
/// | `origin`          | string                      | the emitting node's name, or "source"   |
/// | `uwjit_version`   | string                      | the uwjit version that compiled it      |
/// | `warnings`        | string (optional)           | the compiler's warnings, as printed     |
/// |                   |                             | (diagnostics name kernel.cpp); absent:  |
/// |                   |                             | none. Replayed on a disk hit            |
///
/// Every field but `warnings` is required.
/// The key is always the first 16 hex digits of SHA-256(`{key}.cpp` + "\n---\n" + `salt`).
struct Manifest {
  int format = 0;
  std::string key;
  std::string salt;
  std::vector<std::pair<std::string, std::string>> salt_components;
  std::string entry;
  std::vector<SlotTable> slot_tables;
  std::uint64_t object_size = 0;
  std::string object_sha256;
  std::string created_utc;
  double compile_ms = 0;
  std::string origin;
  std::string uwjit_version;
  std::string warnings;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

/// The manifest as JSON text in the format above (two-space indented, ending in a newline).
/// A non-finite or negative compile_ms is written as 0. Never throws on any field content
/// (invalid UTF-8 is replaced). Thread-safe.
[[nodiscard]] std::string to_json(const Manifest& manifest);

/// Parses and checks a manifest: JSON syntax, every field present with its type, `key` and
/// `object_sha256` well-formed, `salt_components` equal to the parsed `salt`. The format number
/// is read but not compared with k_entry_format (the store does that). On failure returns
/// nullopt and, if `why` is not null, stores the reason in it, e.g. `field "object_size": expected
/// a non-negative integer`. Never throws on bad input. Thread-safe.
[[nodiscard]] std::optional<Manifest> parse_manifest(std::string_view json,
                                                     std::string* why = nullptr);

} // namespace uwjit::cache
