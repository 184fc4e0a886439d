// Helpers of the cache's unit tests: a fresh sandbox directory per test, file tweaks, and a
// ready-made entry to publish.
#pragma once

#include "sandbox.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/cache/manifest.hpp>
#include <uwjit/cache/store.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace uwjit::cache::testing {

namespace fs = std::filesystem;

/// A fresh directory under the system temp directory, removed (with everything in it) at the end.
class Sandbox {
public:
  [[nodiscard]] const fs::path& root() const noexcept { return m_dir.path(); }
  /// The cache directory of the test (not created: Store::open does that).
  [[nodiscard]] fs::path cache() const { return root() / "cache"; }

private:
  uwjit_test::TempDir m_dir{"uwjit-cache-test"};
};

using uwjit_test::read_text;
using uwjit_test::ScopedEnv;
using uwjit_test::write_text;

/// Sets a file's mtime (not following symlinks): tests age files instead of sleeping.
inline void set_mtime(const fs::path& path, std::chrono::system_clock::time_point when) {
  const auto since_epoch = when.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds);
  const timespec times[2] = {
      {static_cast<time_t>(seconds.count()), static_cast<long>(nanos.count())},
      {static_cast<time_t>(seconds.count()), static_cast<long>(nanos.count())}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    throw std::runtime_error("utimensat failed on " + path.string());
  }
}

inline std::chrono::system_clock::time_point mtime_of(const fs::path& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    throw std::runtime_error("lstat failed on " + path.string());
  }
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

/// Everything publish needs for one kernel, consistent with itself.
struct SampleEntry {
  Salt salt;
  std::string source;
  Key key;
  std::vector<char> object;
  std::vector<SlotTable> slots;
  Manifest manifest;

  [[nodiscard]] fs::path object_path(const fs::path& dir) const { return dir / (key.hex() + ".o"); }
  [[nodiscard]] fs::path manifest_path(const fs::path& dir) const {
    return dir / (key.hex() + ".json");
  }
  [[nodiscard]] fs::path source_path(const fs::path& dir) const {
    return dir / (key.hex() + ".cpp");
  }
  [[nodiscard]] fs::path lock_path(const fs::path& dir) const {
    return dir / (key.hex() + ".lock");
  }
};

inline Salt sample_salt(std::string_view cpu = "testcpu") {
  Salt salt;
  salt.add("uwjit", "0.1.0")
      .add("format", std::to_string(k_entry_format))
      .add("cpu", std::string(cpu));
  return salt;
}

inline std::vector<SlotTable> sample_slots() {
  return {{"state_in", {"u"}},
          {"state_out", {"u_next"}},
          {"statics", {"kappa"}},
          {"extents", {"nx", "ny"}},
          {"integrals", {}}};
}

/// A sample entry whose source (and so key) depends on `name`, with an object of `object_size`
/// bytes of a pattern that also depends on it.
inline SampleEntry sample_entry(std::string_view name = "diffusion",
                                std::size_t object_size = 4096) {
  Salt salt = sample_salt();
  std::string source = "extern \"C\" int __UWJIT_ENTRY__(const void*) { return 0; } // ";
  source += name;
  source += '\n';
  Key key = Key::of(source, salt);
  std::vector<char> object(object_size);
  for (std::size_t i = 0; i < object.size(); ++i) {
    object[i] =
        static_cast<char>((i * 31 + name.size() * 7 + static_cast<unsigned char>(name[0])) & 0xFF);
  }
  Manifest manifest;
  manifest.salt = salt.text();
  manifest.entry = "uwjit_" + key.hex();
  manifest.slot_tables = sample_slots();
  manifest.compile_ms = 12.5;
  manifest.origin = std::string(name);
  return SampleEntry{std::move(salt),   std::move(source), std::move(key),
                     std::move(object), sample_slots(),    std::move(manifest)};
}

/// Publishes `entry` into `store`; throws when that fails (a test's set-up).
inline void publish_or_throw(Store& store, const SampleEntry& entry) {
  const auto outcome = store.publish(entry.key, entry.object, entry.manifest, entry.source);
  if (!outcome.published()) {
    throw std::runtime_error("publish failed: " + outcome.reason);
  }
}

/// The names of the files in `dir`, sorted.
inline std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(dir)) {
    names.push_back(item.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The names in `dir` that are temporaries.
inline std::vector<std::string> temporaries_in(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& name : names_in(dir)) {
    if (name.starts_with(".uwjit-tmp.")) {
      found.push_back(name);
    }
  }
  return found;
}

} // namespace uwjit::cache::testing
