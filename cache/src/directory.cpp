#include <uwjit/cache/directory.hpp>

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>

#include "entry_names.hpp"

#include <uwjit/common/posix_file.hpp>

#include <fcntl.h>

#include <algorithm>
#include <atomic>

namespace uwjit::cache {

namespace {
// `path` made absolute against the working directory, without a trailing separator. Throws
// Error(usage) naming `variable` when the working directory is gone.
std::filesystem::path absolute_from(const char* variable, const std::filesystem::path& path) {
  std::error_code error;
  auto absolute = std::filesystem::absolute(path, error);
  if (error) {
    throw Error(ErrorKind::usage,
                format("{}: \"{}\" is relative and the working directory is unknown ({})", variable,
                       path.string(), error.message()));
  }
  absolute = absolute.lexically_normal();
  return absolute.has_filename() ? absolute : absolute.parent_path();
}
} // namespace

CacheLocation resolve_cache_location() {
  // get_bool throws Error(usage) naming UWJIT_CACHE and the accepted values.
  if (!env::get_bool(env::vars::cache)) {
    return {std::nullopt, format("disabled by UWJIT_CACHE={}", env::get(env::vars::cache).value())};
  }
  if (const auto dir = env::get_path(env::vars::cache_dir)) {
    // Absolute, so that `uwjit cache dir` shows the directory the library really uses.
    return {absolute_from("UWJIT_CACHE_DIR", *dir), "UWJIT_CACHE_DIR"};
  }
  if (const auto xdg = env::get_path(env::vars::xdg_cache_home)) {
    // The XDG specification says to ignore a relative XDG_CACHE_HOME.
    if (std::filesystem::path(*xdg).is_absolute()) {
      return {(std::filesystem::path(*xdg) / "uwjit").lexically_normal(), "XDG_CACHE_HOME"};
    }
  }
  if (const auto home = env::get("HOME")) {
    return {absolute_from("HOME", std::filesystem::path(*home) / ".cache" / "uwjit"),
            "HOME (~/.cache/uwjit)"};
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log::get("uwjit.cache")
        .warn("no cache directory: UWJIT_CACHE_DIR, XDG_CACHE_HOME and HOME are unset; "
              "compiled kernels are kept in memory only");
  }
  return {std::nullopt, "no HOME: memory only"};
}

std::vector<std::filesystem::path> resolve_site_locations() {
  std::vector<std::filesystem::path> dirs;
  if (!env::get_bool(env::vars::cache)) {
    return dirs;
  }
  const auto list = env::get_path(env::vars::cache_site_dir);
  if (!list) {
    return dirs;
  }
  std::size_t begin = 0;
  while (begin <= list->size()) {
    const std::size_t end = std::min(list->find(':', begin), list->size());
    if (end > begin) {
      dirs.push_back(absolute_from("UWJIT_CACHE_SITE_DIR", list->substr(begin, end - begin)));
    }
    begin = end + 1;
  }
  return dirs;
}

std::filesystem::path store_directory(const std::filesystem::path& configured) {
  const posix::UniqueFd fd(posix::open_at(AT_FDCWD, configured.string(), O_RDONLY | O_DIRECTORY));
  if (!fd || names::ownership_of(fd.get()) != names::Ownership::foreign) {
    return configured;
  }
  return configured / names::k_subdirectory;
}

} // namespace uwjit::cache
