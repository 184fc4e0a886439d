// The cache subcommands' access to the store: its directory, opened only if it exists, and
// entries found by key prefix.
#include "cache_access.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <iostream>

namespace uwjit::tools {

namespace fs = std::filesystem;

fs::path cache_dir_or_throw() {
  const cache::CacheLocation location = cache::resolve_cache_location();
  if (!location.dir) {
    throw Error(ErrorKind::usage, "there is no cache directory: " + location.rule);
  }
  return *location.dir;
}

std::optional<cache::Store> open_existing() {
  const fs::path dir = cache_dir_or_throw();
  const fs::path used = cache::store_directory(dir);
  std::error_code ignored;
  const fs::file_status status = fs::status(used, ignored);
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw Error(ErrorKind::io,
                format("the cache directory {} is not a directory (a {} is there)", used.string(),
                       fs::is_regular_file(status) ? "file" : "non-directory"));
  }
  if (!fs::is_directory(status)) {
    std::cerr << "uwjit: no cache directory yet at " << used.string() << "\n";
    return std::nullopt;
  }
  return cache::Store::open(dir);
}

void check_prefix(const ArgSpec& spec, const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 16 ||
      prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    spec.fail(format("key prefix \"{}\": expected 1 to 16 lowercase hex digits", prefix));
  }
}

cache::Key resolve_prefix(cache::Store& store, const std::string& prefix) {
  std::vector<cache::Key> matches;
  for (const auto& entry : store.list()) {
    if (entry.key.hex().rfind(prefix, 0) == 0) {
      matches.push_back(entry.key);
    }
  }
  if (matches.empty()) {
    throw Error(ErrorKind::usage, format("no cache entry has a key starting with \"{}\"", prefix));
  }
  if (matches.size() > 1) {
    std::string keys;
    for (const auto& key : matches) {
      keys += " " + key.hex();
    }
    throw Error(ErrorKind::usage, format("key prefix \"{}\" is ambiguous:{}", prefix, keys));
  }
  return matches.front();
}

} // namespace uwjit::tools
