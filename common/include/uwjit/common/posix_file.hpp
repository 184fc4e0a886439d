// POSIX file primitives: descriptors, whole-file reads, and the one atomic writer (AtomicFile)
// through which every file uwjit writes goes: cache entries, checkpoints, VTK files, dumps.
// Names are relative to a directory descriptor and a final name is never followed as a symlink.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace uwjit::posix {

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
  std::string_view type = "file"; ///< in words: "regular file", "directory", "FIFO", ...
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

/// What a user's input file must be before uwjit reads it whole.
struct InputRule {
  std::string_view what;            ///< for messages, e.g. "checkpoint heat.ckpt"
  std::uint64_t limit = UINT64_MAX; ///< the largest size accepted, in bytes
  std::string_view magic = {};      ///< the bytes it must start with ("": any)
  std::string_view not_magic = {};  ///< the message when it does not, e.g. "not a checkpoint"
};

/// The regular file at `path` (a symlink is followed), read whole. Throws Error(io), its message
/// starting with `rule.what`, when it cannot be opened, is not a regular file (a directory,
/// FIFO, device or socket: opened without blocking, never read), is larger than `rule.limit`, does
/// not start with `rule.magic` (checked on the first bytes, before the rest is read), or does not
/// fit in memory. Thread-safe.
[[nodiscard]] std::string read_input_file(const std::filesystem::path& path, const InputRule& rule);

/// Throws Error(io) "<what>: ..." unless `path` (a symlink followed) is a regular file this
/// process can open for reading, without blocking on a FIFO: what `read_input_file` checks first,
/// for a check before any work. Thread-safe.
void check_input_file(const std::filesystem::path& path, std::string_view what);

/// pwrite() of all of `data` at `offset` of `fd`, retried on EINTR and short writes. Throws
/// Error(io) "<what>: <strerror>".
void write_at(int fd, std::uint64_t offset, std::span<const char> data, std::string_view what);

/// pread() of all of `data` from `offset` of `fd`. Throws Error(io) "<what>: ..." on failure and
/// "<what>: truncated" when the file ends first.
void read_at(int fd, std::uint64_t offset, std::span<char> data, std::string_view what);

/// The names in a directory (without "." and ".."), or nullopt with errno in `error`.
[[nodiscard]] std::optional<std::vector<std::string>> list_names(int dir_fd, int& error);

/// fsync of a directory, so that renames in it survive a crash. Filesystems that cannot sync a
/// directory (EINVAL) are tolerated. Throws Error(io) on other failures.
void sync_directory(int dir_fd, std::string_view what);

/// unlinkat() of a file (never a directory); true when it was removed or already gone.
bool remove_at(int dir_fd, const std::string& name) noexcept;

enum class Durability {
  buffered, ///< no fsync: the file may be lost or empty after a power failure, never torn
  synced,   ///< the file is fsynced before the rename and the directory after it
};

/// How an AtomicFile creates its file.
struct AtomicFileOptions {
  unsigned mode = 0600; ///< permission bits of the new file (less the umask)
  Durability durability = Durability::synced;
  /// The bytes a regular file already at the final name must start with to be replaced (an
  /// earlier file of the same kind, e.g. a checkpoint's magic), unless it is empty; "" replaces
  /// any regular file. A checkpoint named after a user's script or results is then refused
  /// instead of taking their place.
  std::string_view replaces = {};
  std::string_view kind = "file"; ///< what those files are, for messages: "uwjit checkpoint"
};

/// Every temporary uwjit writes starts with this: a name no other program uses, so that uwjit
/// never mistakes another program's file for its own leftover.
inline constexpr std::string_view k_temporary_prefix = ".uwjit-tmp.";

/// A fresh temporary name "{k_temporary_prefix}{final_name, at most 64 bytes}.{pid}.{16 hex}"
/// whose last part comes from the kernel's random source (getrandom), so that another user
/// cannot predict it. Thread-safe.
[[nodiscard]] std::string temporary_name(std::string_view final_name);

/// The one atomic writer. The file is written under a temporary name in its final directory,
/// created with O_CREAT | O_EXCL | O_NOFOLLOW (a file or symlink already there, planted by
/// anyone, is never opened), then renamed over the final name, which replaces a symlink there
/// instead of following it. Readers see the old file or the new one, never a torn one. What it
/// replaces must be a regular file or a symlink: a device, FIFO, socket or directory at the final
/// name is refused (Error(io) naming it and what it is) when the AtomicFile is made and again
/// just before the rename, so that `/dev/null` or a user's pipe is never renamed over. An
/// With `options.replaces`, a non-empty regular file there that does not start with those bytes is
/// refused the same way (see check_replaceable). An
/// AtomicFile that is never committed unlinks its temporary on destruction. Not thread-safe
/// (one writer per object); different objects are independent.
class AtomicFile {
public:
  /// A file to become `final_name` in the directory `dir_fd` (borrowed: it must stay open as
  /// long as this object). Throws Error(io) when the temporary cannot be created.
  AtomicFile(int dir_fd, std::string final_name, AtomicFileOptions options = {});
  /// A file to become `path`; its directory (symlinks followed) is opened and kept open.
  /// Throws Error(io) when the directory cannot be opened or the temporary cannot be created.
  explicit AtomicFile(const std::filesystem::path& path, AtomicFileOptions options = {});
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends `data`. Throws Error(io) (e.g. ENOSPC, EFBIG).
  void write(std::span<const char> data);
  /// Writes `data` at `offset`, leaving the write position as it is. Throws Error(io).
  void write_at(std::uint64_t offset, std::span<const char> data);
  /// Makes the file `size` bytes long (a longer file reads as zeros where nothing was written).
  /// Throws Error(io).
  void resize(std::uint64_t size);
  /// Opens, for writing, the temporary another process's AtomicFile for `path` made (its name
  /// as temporary() gave it there): how the ranks of a job write their parts of one file that
  /// one of them commits. The name must be one temporary_name() makes and a regular file, never
  /// a symlink. Throws Error(io).
  [[nodiscard]] static UniqueFd open_temporary(const std::filesystem::path& path,
                                               const std::string& temporary);
  /// Flushes (fsync with Durability::synced) and closes; later calls do nothing. Throws
  /// Error(io).
  void finish();
  /// finish(), then renames the temporary over the final name; the directory is not synced
  /// (a caller committing several files syncs it once). Throws Error(io).
  void rename_into_place();
  /// rename_into_place(), then (Durability::synced) fsync of the directory, so that the new
  /// file survives a crash. Throws Error(io).
  void commit();

  [[nodiscard]] const std::string& temporary() const noexcept { return m_temporary; }

private:
  void create_temporary();
  void refuse_special_target() const;

  UniqueFd m_owned_dir;
  int m_dir_fd;
  std::string m_final;
  std::string m_display; ///< the final name as the caller gave it, for messages
  AtomicFileOptions m_options;
  std::string m_temporary;
  UniqueFd m_fd;
  bool m_renamed = false;
};

/// Throws Error(io) naming `display` unless an AtomicFile may put a file at `name` in `dir_fd`:
/// nothing is there, or a symlink (replaced, never followed), or a regular file that is empty or
/// starts with `replaces` (any regular file when `replaces` is ""). A device, FIFO, socket or
/// directory is refused, and so is a regular file of other contents, not a `kind`.
/// The check before any work of a job that will write there; AtomicFile makes it again.
void check_replaceable(int dir_fd, const std::string& name, std::string_view display,
                       std::string_view replaces, std::string_view kind);
/// The same for `path`, whose directory (symlinks followed) must exist.
void check_replaceable(const std::filesystem::path& path, std::string_view replaces,
                       std::string_view kind);

/// Writes `bytes` to `path` through an AtomicFile and commits it. Throws Error(io), naming
/// `path`.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           AtomicFileOptions options = {});

} // namespace uwjit::posix
