// The names of the files in a cache directory, and which of them uwjit may delete.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/common/posix_file.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace uwjit::cache::names {

inline constexpr std::string_view k_tag = "CACHEDIR.TAG";
inline constexpr std::string_view k_tag_signature = "Signature: 8a477f597d28d172789f06886806bc55";
inline constexpr std::string_view k_stats = "stats.json";
inline constexpr std::string_view k_stats_lock = "stats.lock";
inline constexpr std::string_view k_evict_lock = "evict.lock";
inline constexpr std::string_view k_cleanup_stamp = "cleanup.stamp";
inline constexpr std::string_view k_temporary_prefix = posix::k_temporary_prefix;

enum class FileKind {
  object,       ///< {key}.o
  manifest,     ///< {key}.json
  source,       ///< {key}.cpp
  lock,         ///< {key}.lock
  temporary,    ///< .uwjit-tmp.* (posix::temporary_name)
  tag,          ///< CACHEDIR.TAG
  housekeeping, ///< stats.json, stats.lock, evict.lock, cleanup.stamp
  other,        ///< anything else: never touched
};

struct Classified {
  FileKind kind = FileKind::other;
  std::optional<Key> key; ///< for object, manifest, source and lock
};

/// What the file called `name` is. Only exact patterns count: "0123456789abcdef.o" is an object,
/// "0123456789ABCDEF.o" or "0123456789abcdef.o.bak" are other files.
[[nodiscard]] Classified classify(std::string_view name);

[[nodiscard]] std::string object(const Key& key);
[[nodiscard]] std::string manifest(const Key& key);
[[nodiscard]] std::string source(const Key& key);
[[nodiscard]] std::string lock(const Key& key);

} // namespace uwjit::cache::names
