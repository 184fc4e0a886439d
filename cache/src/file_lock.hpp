// Exclusive locks on files in the cache directory with flock(2), bounded by a time-out.
//
// Why flock and not boost::interprocess::file_lock (or fcntl/lockf): those are POSIX record
// locks, owned by the process. Two threads of one process both "get" the lock, so it cannot make
// one thread wait for another's compile; and closing *any* descriptor of the file in the process
// (say, a later open/close of the same lock file by another Store) silently drops the lock.
// flock locks belong to the open file description: each acquisition opens the file anew, so
// threads exclude each other exactly as processes do, and other descriptors do not matter.
// (Linux's OFD fcntl locks would do too; flock is simpler and also works on macOS.)
// Caveats: a fork()ed child shares the parent's descriptor and so its lock (O_CLOEXEC keeps
// exec'd programs out); NFS emulates flock with fcntl locks on Linux, which is still correct
// between machines.
#pragma once

#include <uwjit/common/posix_file.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace uwjit::cache::detail {

enum class CreateFile { no, yes };

enum class LockState {
  acquired,    ///< held until the FileLock is destroyed
  busy,        ///< someone else (or this very thread) held it for the whole time-out
  unavailable, ///< no lock file (CreateFile::no), it cannot be opened, or flock is refused
};

class FileLock;

struct LockAttempt {
  LockState state = LockState::unavailable;
  bool waited = false;            ///< the first try found it busy
  std::string why;                ///< unavailable: for people
  std::unique_ptr<FileLock> lock; ///< acquired: the lock
};

/// One held flock. Releasing (destruction) unlocks it.
class FileLock {
public:
  /// Locks `name` in `dir_fd` (opened O_CLOEXEC | O_NOFOLLOW, created with CreateFile::yes),
  /// trying again with short, growing sleeps until `timeout` has passed (zero: one try). If the
  /// file was replaced while we waited (wipe unlinks lock files), locks the new one instead. A
  /// lock this thread already holds is reported busy at once. Never throws for I/O.
  [[nodiscard]] static LockAttempt acquire(int dir_fd, const std::string& name,
                                           std::chrono::milliseconds timeout, CreateFile create);

  /// Whether the calling thread holds the lock on `name` in `dir_fd` (through any FileLock).
  [[nodiscard]] static bool held_by_this_thread(int dir_fd, const std::string& name);

  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

private:
  FileLock(posix::UniqueFd fd, std::uint64_t device, std::uint64_t inode) noexcept;
  posix::UniqueFd m_fd;
  std::uint64_t m_device;
  std::uint64_t m_inode;
};

} // namespace uwjit::cache::detail
