// Helpers of the cache's unit tests: a fresh sandbox directory per test, file tweaks, and a
// ready-made entry to publish.
#pragma once

#include "sandbox.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/cache/manifest.hpp>
#include <uwjit/cache/store.hpp>

#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
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

/// The uid and gid of user nobody, whom root's tests become to check what only an unprivileged
/// user sees (root writes into read-only directories).
inline constexpr uid_t k_nobody = 65534;

/// A directory in `sandbox` that user nobody owns (mode 0700), with the sandbox opened for
/// nobody to pass through. Root only.
inline fs::path directory_of_nobody(const Sandbox& sandbox) {
  const auto home = sandbox.root() / "nobody";
  fs::create_directory(home);
  if (::chown(home.c_str(), k_nobody, k_nobody) != 0 || ::chmod(home.c_str(), 0700) != 0 ||
      ::chmod(sandbox.root().c_str(), 0711) != 0) {
    throw std::runtime_error("cannot give " + home.string() +
                             " to uid 65534: " + std::strerror(errno));
  }
  return home;
}

/// Runs `body` in a child process that has become user nobody (uid and gid 65534, no
/// supplementary groups) and returns what it returned: "" for success, else what went wrong;
/// also what went wrong if the child could not become nobody, threw, or died. Root only.
inline std::string as_nobody(const std::function<std::string()>& body) {
  int out[2];
  if (::pipe(out) != 0) {
    return std::string("pipe: ") + std::strerror(errno);
  }
  const pid_t child = ::fork();
  if (child < 0) {
    return std::string("fork: ") + std::strerror(errno);
  }
  if (child == 0) {
    ::close(out[0]);
    std::string said;
    if (::setgroups(0, nullptr) != 0 || ::setgid(k_nobody) != 0 || ::setuid(k_nobody) != 0) {
      said = std::string("cannot become uid 65534: ") + std::strerror(errno);
    } else if (::geteuid() != k_nobody || ::setuid(0) == 0) {
      said = "still privileged after becoming uid 65534";
    } else {
      try {
        said = body();
      } catch (const std::exception& error) {
        said = std::string("threw: ") + error.what();
      }
    }
    for (std::size_t written = 0; written < said.size();) {
      const ssize_t n = ::write(out[1], said.data() + written, said.size() - written);
      if (n <= 0) {
        break;
      }
      written += static_cast<std::size_t>(n);
    }
    ::_exit(0); // no atexit handlers: the test runner's report is the parent's
  }
  ::close(out[1]);
  std::string said;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      break;
    }
    said.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    said += "; the child ended with status " + std::to_string(status);
  }
  return said;
}

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
