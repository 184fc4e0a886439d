// The tests' sandboxes: fresh temporary directories, removed with everything in them (also what a
// test made read-only), files read and written whole, and environment variables set for one
// scope.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

namespace uwjit_test {

/// Makes a fresh directory "PREFIX.XXXXXX" under the system's temp directory; throws
/// std::runtime_error when it cannot.
inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot make a temporary directory " + pattern);
  }
  return pattern;
}

/// Removes `root` and everything in it, giving write access back to directories that tests made
/// read-only. Never throws.
inline void remove_tree(const std::filesystem::path& root) noexcept {
  namespace fs = std::filesystem;
  std::error_code ignored;
  for (auto it = fs::recursive_directory_iterator(root, ignored);
       it != fs::recursive_directory_iterator(); it.increment(ignored)) {
    if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
  }
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(root, ignored);
}

/// A fresh temporary directory, removed with everything in it when the object goes.
class TempDir {
public:
  explicit TempDir(const std::string& prefix = "uwjit-test") : m_path(make_temp_dir(prefix)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { remove_tree(m_path); }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }

private:
  std::filesystem::path m_path;
};

/// The whole file, or "" when it cannot be read.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `text` as the whole file (created or truncated; not atomic, on purpose: tests use it
/// to damage files).
inline void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

/// Sets (or, with nullopt, unsets) an environment variable for the scope of the object, and puts
/// the previous value back.
class ScopedEnv {
public:
  ScopedEnv(std::string name, std::optional<std::string> value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) {
      m_old = old;
    }
    apply(value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { apply(m_old); }

private:
  void apply(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(m_name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(m_name.c_str());
    }
  }
  std::string m_name;
  std::optional<std::string> m_old;
};

/// Sends what this process writes to stderr (file descriptor 2) into a temporary file for the
/// scope of the object; text() returns what was written so far. Not thread-safe.
class CapturedStderr {
public:
  CapturedStderr() : m_dir("uwjit-stderr"), m_file(m_dir.path() / "stderr") {
    std::fflush(stderr);
    m_saved = ::dup(2);
    FILE* sink = std::fopen(m_file.c_str(), "w");
    if (m_saved < 0 || sink == nullptr) {
      throw std::runtime_error("cannot capture stderr");
    }
    ::dup2(::fileno(sink), 2);
    std::fclose(sink);
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;
  ~CapturedStderr() {
    std::fflush(stderr);
    ::dup2(m_saved, 2);
    ::close(m_saved);
  }
  [[nodiscard]] std::string text() const {
    std::fflush(stderr);
    return read_text(m_file);
  }

private:
  TempDir m_dir;
  std::filesystem::path m_file;
  int m_saved = -1;
};

} // namespace uwjit_test
