// POSIX file primitives of the store: descriptors, whole-file reads, temporaries committed by
// rename. Everything is relative to a directory descriptor and never follows a symlink.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace uwjit::cache::posix {

/// An owned file descriptor, closed on destruction.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : m_fd(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.m_fd, -1));
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const noexcept { return m_fd; }
  [[nodiscard]] explicit operator bool() const noexcept { return m_fd >= 0; }
  /// Closes the descriptor held (if any) and takes `fd`.
  void reset(int fd = -1) noexcept;
  /// Gives up ownership without closing.
  [[nodiscard]] int release() noexcept { return std::exchange(m_fd, -1); }

private:
  int m_fd = -1;
};

/// strerror(error) without the thread-safety trap of strerror.
[[nodiscard]] std::string error_text(int error);

/// Throws Error(io) "<what>: <strerror(error)>".
[[noreturn]] void throw_io(std::string_view what, int error);

/// What lstat says about one name in a directory.
struct FileStatus {
  bool regular = false;
  bool directory = false;
  bool symlink = false;
  std::uint64_t size = 0;
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t mtime_ns = 0; ///< since the epoch
  [[nodiscard]] std::chrono::system_clock::time_point mtime() const noexcept;
  /// Identifies this version of the file: a rename or rewrite gives another identity.
  [[nodiscard]] auto identity() const noexcept { return std::tuple{device, inode, mtime_ns, size}; }
};

/// lstat of `name` in `dir_fd`; nullopt when it does not exist or cannot be examined.
[[nodiscard]] std::optional<FileStatus> status_at(int dir_fd, const std::string& name);

/// fstat of an open descriptor; nullopt on failure.
[[nodiscard]] std::optional<FileStatus> status_of(int fd);

/// openat() retried on EINTR; returns the descriptor, or -1 with errno set. Always adds
/// O_CLOEXEC.
[[nodiscard]] int open_at(int dir_fd, const std::string& name, int flags, unsigned mode = 0);

/// A regular file read whole. `error` is 0 on success, ENOENT when missing, ELOOP when a
/// symlink, EINVAL when not a regular file, EFBIG when larger than the limit, or the errno of
/// the failed call. `fd` stays open (e.g. to touch the file afterwards).
struct ReadResult {
  int error = 0;
  UniqueFd fd;
  FileStatus status;
};

/// Reads `name` in `dir_fd` whole into `out` (O_NOFOLLOW, O_NONBLOCK so that a FIFO planted
/// under an entry's name cannot block us). Never throws for I/O.
ReadResult read_file_at(int dir_fd, const std::string& name, std::uint64_t limit, std::string& out);
ReadResult read_file_at(int dir_fd, const std::string& name, std::uint64_t limit,
                        std::vector<char>& out);

/// The names in a directory (without "." and ".."), or nullopt with errno in `error`.
[[nodiscard]] std::optional<std::vector<std::string>> list_names(int dir_fd, int& error);

/// fsync of a directory, so that renames in it survive a crash. Filesystems that cannot sync a
/// directory (EINVAL) are tolerated. Throws Error(io) on other failures.
void sync_directory(int dir_fd, std::string_view what);

/// unlinkat() of a file (never a directory); true when it was removed or already gone.
bool remove_at(int dir_fd, const std::string& name) noexcept;

enum class Durability { buffered, synced };

/// A file written under a unique temporary name (`.tmp.{stem}.{pid}.{random}.{ext}`) in the
/// directory, then renamed into place by commit(). Until then nobody sees it under its final
/// name; if it is never committed it is unlinked on destruction.
class TempFile {
public:
  /// Creates the temporary (O_EXCL, O_NOFOLLOW, mode 0644 less umask). Throws Error(io).
  TempFile(int dir_fd, std::string_view stem, std::string_view ext);
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();

  /// Appends `data`. Throws Error(io) (e.g. ENOSPC, EFBIG).
  void write(std::span<const char> data);
  /// Flushes (fsync with Durability::synced) and closes. Throws Error(io).
  void finish(Durability durability);
  /// Renames the finished file to `final_name`, replacing any file there. Throws Error(io).
  void commit(const std::string& final_name);

  [[nodiscard]] const std::string& name() const noexcept { return m_name; }

private:
  int m_dir_fd;
  std::string m_name;
  UniqueFd m_fd;
  bool m_committed = false;
};

} // namespace uwjit::cache::posix
