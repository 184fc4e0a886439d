// Where the disk cache lives: the one resolution rule shared by the library and the CLI.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace uwjit::cache {

/// The resolved cache directory and the rule that chose it.
struct CacheLocation {
  /// The directory, absolute; nullopt when the disk cache is off (the memory cache still works).
  std::optional<std::filesystem::path> dir;
  /// Which rule decided, for people: "UWJIT_CACHE_DIR", "XDG_CACHE_HOME",
  /// "HOME (~/.cache/uwjit)", "disabled by UWJIT_CACHE=0" (with the value as set) or
  /// "no HOME: memory only".
  std::string rule;
};

/// Resolves the cache directory from the environment; the first rule that applies wins:
///   1. UWJIT_CACHE = 0/false/no/off (any case) turns the disk cache off; unset or
///      1/true/yes/on leaves it on;
///   2. UWJIT_CACHE_DIR, made absolute against the working directory;
///   3. $XDG_CACHE_HOME/uwjit (ignored unless absolute, as the XDG specification says);
///   4. $HOME/.cache/uwjit;
///   5. none: memory only, with one warning per process.
/// Does not create the directory (Store::open does). Throws Error(usage) when UWJIT_CACHE holds
/// any other value, naming the variable and the accepted values, or when a relative path cannot
/// be made absolute (no working directory). Thread-safe as long as nobody calls setenv
/// concurrently.
[[nodiscard]] CacheLocation resolve_cache_location();

/// The site caches (Store::open_site) in the order UWJIT_CACHE_SITE_DIR lists them (separated by
/// ':'; empty items skipped), each made absolute against the working directory; empty when the
/// variable is unset or UWJIT_CACHE is off. Checks nothing on disk. Throws Error(usage) as
/// resolve_cache_location() does. Thread-safe as long as nobody calls setenv concurrently.
[[nodiscard]] std::vector<std::filesystem::path> resolve_site_locations();

/// The directory Store::open(configured) uses, found without creating or writing anything:
/// `configured` itself when it does not exist yet, is empty or carries uwjit's marker
/// (CACHEDIR.TAG written by uwjit); otherwise (it holds files of others, e.g. `.` or $HOME)
/// its subdirectory `uwjit`. Never throws.
[[nodiscard]] std::filesystem::path store_directory(const std::filesystem::path& configured);

} // namespace uwjit::cache
