#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace uwjit::posix {

void UniqueFd::reset(int fd) noexcept {
  if (m_fd >= 0) {
    // Not retried on EINTR: on Linux the descriptor is gone either way.
    ::close(m_fd);
  }
  m_fd = fd;
}

std::string error_text(int error) {
  char buffer[256] = {};
  // The GNU strerror_r returns the text (maybe not in buffer); the XSI one fills buffer.
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return ::strerror_r(error, buffer, sizeof buffer);
#else
  return ::strerror_r(error, buffer, sizeof buffer) == 0 ? buffer : format("errno {}", error);
#endif
}

void throw_io(std::string_view what, int error) {
  throw Error(ErrorKind::io, format("{}: {}", what, error_text(error)));
}

std::chrono::system_clock::time_point FileStatus::mtime() const noexcept {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(mtime_ns)));
}

namespace {
FileStatus from_stat(const struct stat& st) {
  FileStatus status;
  status.regular = S_ISREG(st.st_mode);
  status.directory = S_ISDIR(st.st_mode);
  status.symlink = S_ISLNK(st.st_mode);
  status.type = S_ISREG(st.st_mode)    ? "regular file"
                : S_ISDIR(st.st_mode)  ? "directory"
                : S_ISLNK(st.st_mode)  ? "symlink"
                : S_ISCHR(st.st_mode)  ? "character device"
                : S_ISBLK(st.st_mode)  ? "block device"
                : S_ISFIFO(st.st_mode) ? "FIFO"
                : S_ISSOCK(st.st_mode) ? "socket"
                                       : "special file";
  status.size = static_cast<std::uint64_t>(st.st_size);
  status.device = static_cast<std::uint64_t>(st.st_dev);
  status.inode = static_cast<std::uint64_t>(st.st_ino);
  status.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                    static_cast<std::int64_t>(st.st_mtim.tv_nsec);
  return status;
}

template <class Buffer>
ReadResult read_whole(int dir_fd, const std::string& name, std::uint64_t limit, Buffer& out) {
  ReadResult result;
  out.clear();
  result.fd.reset(open_at(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  if (!result.fd) {
    result.error = errno;
    return result;
  }
  const auto status = status_of(result.fd.get());
  if (!status) {
    result.error = errno;
    return result;
  }
  result.status = *status;
  if (!status->regular) {
    result.error = EINVAL;
    return result;
  }
  if (status->size > limit) {
    result.error = EFBIG;
    return result;
  }
  out.resize(static_cast<std::size_t>(status->size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(result.fd.get(), out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      result.error = errno;
      return result;
    }
    if (n == 0) {
      break; // shrank while we read: the caller's size check will notice
    }
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return result;
}
} // namespace

std::optional<FileStatus> status_at(int dir_fd, const std::string& name) {
  struct stat st{};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return std::nullopt;
  }
  return from_stat(st);
}

std::optional<FileStatus> status_of(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    return std::nullopt;
  }
  return from_stat(st);
}

int open_at(int dir_fd, const std::string& name, int flags, unsigned mode) {
  int fd = -1;
  do {
    fd = ::openat(dir_fd, name.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
  } while (fd < 0 && errno == EINTR);
  return fd;
}

ReadResult read_file_at(int dir_fd, const std::string& name, std::uint64_t limit,
                        std::string& out) {
  return read_whole(dir_fd, name, limit, out);
}

ReadResult read_file_at(int dir_fd, const std::string& name, std::uint64_t limit,
                        std::vector<char>& out) {
  return read_whole(dir_fd, name, limit, out);
}

namespace {
// Opened without blocking (a FIFO has no writer to wait for) and judged by fstat of what was
// opened, so that nothing can be swapped in between the check and the read.
UniqueFd open_input(const std::filesystem::path& path, std::string_view what, FileStatus& status) {
  UniqueFd fd(open_at(AT_FDCWD, path.string(), O_RDONLY | O_NONBLOCK));
  if (!fd) {
    const int error = errno;
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) { // a socket cannot be opened
      throw Error(ErrorKind::io,
                  format("{}: is a {}, not a regular file", what, from_stat(st).type));
    }
    throw_io(format("{}: cannot open", what), error);
  }
  const auto found = status_of(fd.get());
  if (!found) {
    throw_io(format("{}: cannot examine", what), errno);
  }
  if (!found->regular) {
    throw Error(ErrorKind::io, format("{}: is a {}, not a regular file", what, found->type));
  }
  status = *found;
  return fd;
}

// Reads into `out` from `at` until it holds `size` bytes or the file ends; returns the size read.
std::size_t read_into(int fd, std::string& out, std::size_t at, std::string_view what) {
  while (at < out.size()) {
    const ssize_t n = ::read(fd, out.data() + at, out.size() - at);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_io(format("{}: cannot read", what), errno);
    }
    if (n == 0) {
      break;
    }
    at += static_cast<std::size_t>(n);
  }
  return at;
}
} // namespace

std::string read_input_file(const std::filesystem::path& path, const InputRule& rule) {
  FileStatus status;
  const UniqueFd fd = open_input(path, rule.what, status);
  if (status.size > rule.limit) {
    throw Error(ErrorKind::io, format("{}: {} bytes, more than the {} accepted", rule.what,
                                      status.size, rule.limit));
  }
  std::string out(std::min<std::uint64_t>(status.size, rule.magic.size()), '\0');
  if (read_into(fd.get(), out, 0, rule.what) < rule.magic.size() ||
      std::string_view(out) != rule.magic) {
    throw Error(ErrorKind::io, format("{}: {}", rule.what, rule.not_magic));
  }
  try {
    out.resize(static_cast<std::size_t>(status.size));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::io,
                format("{}: {} bytes do not fit in this process's memory", rule.what, status.size));
  }
  out.resize(read_into(fd.get(), out, rule.magic.size(), rule.what));
  return out;
}

void check_input_file(const std::filesystem::path& path, std::string_view what) {
  FileStatus status;
  (void)open_input(path, what, status);
}

void write_at(int fd, std::uint64_t offset, std::span<const char> data, std::string_view what) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_io(what, errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

void read_at(int fd, std::uint64_t offset, std::span<char> data, std::string_view what) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pread(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_io(what, errno);
    }
    if (n == 0) {
      throw Error(ErrorKind::io, format("{}: truncated", what));
    }
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::vector<std::string>> list_names(int dir_fd, int& error) {
  // A descriptor of its own: a shared one would share the read position with other threads.
  const int fd = open_at(dir_fd, ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    error = errno;
    return std::nullopt;
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    error = errno;
    ::close(fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* item = ::readdir(dir);
    if (item == nullptr) {
      break;
    }
    const std::string_view name = item->d_name;
    if (name != "." && name != "..") {
      names.emplace_back(name);
    }
  }
  error = errno;
  ::closedir(dir);
  if (error != 0) {
    return std::nullopt;
  }
  return names;
}

void sync_directory(int dir_fd, std::string_view what) {
  if (::fsync(dir_fd) != 0 && errno != EINVAL && errno != EROFS) {
    throw_io(format("cannot sync directory {}", what), errno);
  }
}

bool remove_at(int dir_fd, const std::string& name) noexcept {
  return ::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT;
}

namespace {
// 64 bits from the kernel's random source for each name: a name another user has seen says
// nothing about the next one (a seeded generator would). random_device is the fallback for a
// kernel without getrandom.
std::uint64_t random_bits() {
  std::uint64_t bits = 0;
  if (::getrandom(&bits, sizeof bits, 0) == static_cast<ssize_t>(sizeof bits)) {
    return bits;
  }
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}
} // namespace

std::string temporary_name(std::string_view final_name) {
  const std::string random = hex_text(random_bits());
  // Bounded, so that a long final name still leaves a temporary name within NAME_MAX.
  return format("{}{}.{}.{}", k_temporary_prefix, final_name.substr(0, 64), ::getpid(), random);
}

AtomicFile::AtomicFile(int dir_fd, std::string final_name, AtomicFileOptions options)
    : m_dir_fd(dir_fd), m_final(std::move(final_name)), m_display(m_final), m_options(options) {
  create_temporary();
}

namespace {
std::string directory_of(const std::filesystem::path& path) {
  const auto parent = path.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

int open_directory(const std::filesystem::path& path) {
  if (!path.has_filename()) {
    throw Error(ErrorKind::io, format("\"{}\" names a directory, not a file", path.string()));
  }
  const int fd = open_at(AT_FDCWD, directory_of(path), O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    throw_io(format("cannot write \"{}\": cannot open its directory", path.string()), errno);
  }
  return fd;
}
} // namespace

AtomicFile::AtomicFile(const std::filesystem::path& path, AtomicFileOptions options)
    : m_owned_dir(open_directory(path)), m_dir_fd(m_owned_dir.get()),
      m_final(path.filename().string()), m_display(path.string()), m_options(options) {
  create_temporary();
}

// A rename replaces whatever has the final name: a device node (as root, /dev/null itself), a
// FIFO another program reads, a socket. Only a regular file (or a symlink, which is replaced, never
// followed) may be replaced, and with `replaces` only an empty one or one of the writer's kind.
void check_replaceable(int dir_fd, const std::string& name, std::string_view display,
                       std::string_view replaces, std::string_view kind) {
  const auto existing = status_at(dir_fd, name);
  if (!existing || existing->symlink) {
    return;
  }
  if (!existing->regular) {
    throw Error(ErrorKind::io,
                format("cannot write \"{}\": it exists and is a {}, not a regular file (uwjit "
                       "replaces regular files only)",
                       display, existing->type));
  }
  if (replaces.empty() || existing->size == 0) {
    return;
  }
  // The first bytes alone, without blocking (it was a regular file a moment ago; O_NONBLOCK in
  // case a FIFO took its place since).
  std::string head(replaces.size(), '\0');
  std::size_t got = 0;
  const UniqueFd fd(open_at(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  while (fd && got < head.size()) {
    const ssize_t n = ::read(fd.get(), head.data() + got, head.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  if (got != head.size() || head != replaces) {
    throw Error(ErrorKind::io,
                format("cannot write \"{}\": it exists ({} bytes) and is not a {} (it does not "
                       "start with \"{}\"); uwjit replaces only an earlier {} or an empty file: "
                       "move it away or choose another name",
                       display, existing->size, kind, printable(replaces), kind));
  }
}

void check_replaceable(const std::filesystem::path& path, std::string_view replaces,
                       std::string_view kind) {
  const UniqueFd dir(open_directory(path));
  check_replaceable(dir.get(), path.filename().string(), path.string(), replaces, kind);
}

void AtomicFile::refuse_special_target() const {
  check_replaceable(m_dir_fd, m_final, m_display, m_options.replaces, m_options.kind);
}

void AtomicFile::create_temporary() {
  refuse_special_target();
  // O_EXCL makes any file already under the name an error instead of ours to write, and
  // O_NOFOLLOW refuses a symlink there; a clash needs 64 equal random bits, so retries are
  // for a name planted on purpose.
  for (int attempt = 0; attempt < 8; ++attempt) {
    m_temporary = temporary_name(m_final);
    m_fd.reset(
        open_at(m_dir_fd, m_temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, m_options.mode));
    if (m_fd || errno != EEXIST) {
      break;
    }
  }
  if (!m_fd) {
    throw_io(format("cannot create a temporary for \"{}\"", m_display), errno);
  }
}

AtomicFile::~AtomicFile() {
  m_fd.reset();
  if (!m_renamed) {
    remove_at(m_dir_fd, m_temporary);
  }
}

void AtomicFile::write(std::span<const char> data) {
  UWJIT_ASSERT(m_fd, format("AtomicFile \"{}\": write after finish", m_display));
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(m_fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_io(format("cannot write \"{}\"", m_display), errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFile::write_at(std::uint64_t offset, std::span<const char> data) {
  UWJIT_ASSERT(m_fd, format("AtomicFile \"{}\": write after finish", m_display));
  posix::write_at(m_fd.get(), offset, data, format("cannot write \"{}\"", m_display));
}

void AtomicFile::resize(std::uint64_t size) {
  UWJIT_ASSERT(m_fd, format("AtomicFile \"{}\": resize after finish", m_display));
  if (::ftruncate(m_fd.get(), static_cast<off_t>(size)) != 0) {
    throw_io(format("cannot make \"{}\" {} bytes long", m_display, size), errno);
  }
}

UniqueFd AtomicFile::open_temporary(const std::filesystem::path& path,
                                    const std::string& temporary) {
  if (!temporary.starts_with(k_temporary_prefix) || temporary.find('/') != std::string::npos) {
    throw Error(ErrorKind::io, format("cannot write \"{}\": \"{}\" is not a temporary of uwjit's",
                                      path.string(), printable(temporary)));
  }
  const UniqueFd dir(open_directory(path));
  UniqueFd fd(open_at(dir.get(), temporary, O_WRONLY | O_NOFOLLOW));
  if (!fd) {
    throw_io(format("cannot open the temporary of \"{}\" that another rank made (do the ranks "
                    "share its file system?)",
                    path.string()),
             errno);
  }
  const auto status = status_of(fd.get());
  if (!status || !status->regular) {
    throw Error(ErrorKind::io,
                format("cannot write \"{}\": its temporary is not a regular file", path.string()));
  }
  return fd;
}

void AtomicFile::finish() {
  if (!m_fd) {
    return;
  }
  if (m_options.durability == Durability::synced && ::fsync(m_fd.get()) != 0) {
    throw_io(format("cannot sync \"{}\"", m_display), errno);
  }
  // close() reports delayed write errors on some filesystems (NFS): check it.
  if (::close(m_fd.release()) != 0 && errno != EINTR) {
    throw_io(format("cannot close \"{}\"", m_display), errno);
  }
}

void AtomicFile::rename_into_place() {
  finish();
  refuse_special_target(); // again: it may have appeared while the file was written
  if (::renameat(m_dir_fd, m_temporary.c_str(), m_dir_fd, m_final.c_str()) != 0) {
    throw_io(format("cannot rename a temporary over \"{}\"", m_display), errno);
  }
  m_renamed = true;
}

void AtomicFile::commit() {
  rename_into_place();
  if (m_options.durability == Durability::synced) {
    sync_directory(m_dir_fd, "of \"" + m_display + "\"");
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           AtomicFileOptions options) {
  AtomicFile file(path, options);
  file.write(bytes);
  file.commit();
}

} // namespace uwjit::posix
