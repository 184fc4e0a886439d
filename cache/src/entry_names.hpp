// The names of the files in a cache directory, and which of them uwjit may delete.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/common/posix_file.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace uwjit::cache::names {

inline constexpr std::string_view k_tag = "CACHEDIR.TAG";
inline constexpr std::string_view k_tag_signature = "Signature: 8a477f597d28d172789f06886806bc55";
/// uwjit's marker: CACHEDIR.TAG with this text, written only into a directory uwjit created or
/// found empty. A tag without uwjit's line was written by another program.
inline constexpr std::string_view k_tag_text =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by uwjit (compiled simulation kernels).\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";
/// The subdirectory a store moves to when the configured directory holds other files.
inline constexpr std::string_view k_subdirectory = "uwjit";
inline constexpr std::string_view k_stats = "stats.json";
inline constexpr std::string_view k_stats_lock = "stats.lock";
inline constexpr std::string_view k_evict_lock = "evict.lock";
inline constexpr std::string_view k_cleanup_stamp = "cleanup.stamp";
inline constexpr std::string_view k_temporary_prefix = posix::k_temporary_prefix;

enum class FileKind {
  object,       ///< {key}.o, or {key}.ptx for a GPU target
  binary,       ///< {key}.cubin: the GPU's machine code the driver made from {key}.ptx
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

/// Whether `text` (a CACHEDIR.TAG) is uwjit's marker: the standard signature and uwjit's line.
[[nodiscard]] bool is_uwjit_tag(std::string_view text);

enum class Ownership {
  ours,    ///< carries uwjit's marker
  empty,   ///< nothing in it but uwjit's temporaries: uwjit may mark it and use it
  foreign, ///< holds files of others: uwjit uses a subdirectory instead
};

/// Who owns the directory `dir_fd`. Never throws; a directory that cannot be listed and has no
/// marker is foreign.
[[nodiscard]] Ownership ownership_of(int dir_fd);

[[nodiscard]] std::string object(const Key& key);
/// The object file of an entry whose salt text is `salt_text`: {key}.ptx when the salt names a
/// cuda target, else {key}.o.
[[nodiscard]] std::string object(const Key& key, std::string_view salt_text);
/// Every file of an entry but its lock: manifest first, then both object forms, the binary,
/// then source.
[[nodiscard]] std::array<std::string, 5> entry_files(const Key& key);
[[nodiscard]] std::string binary(const Key& key);
[[nodiscard]] std::string manifest(const Key& key);
[[nodiscard]] std::string source(const Key& key);
[[nodiscard]] std::string lock(const Key& key);

} // namespace uwjit::cache::names
