#include "file_lock.hpp"

#include <uwjit/common/format.hpp>

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

namespace uwjit::cache::detail {

namespace {

using FileId = std::pair<std::uint64_t, std::uint64_t>; // device, inode

// Which thread holds which lock file in this process. flock itself would make a thread that
// asks again for its own lock wait out the whole time-out; the registry lets callers that may
// run under a lock (lookup's clean-up, eviction) see that they already hold it.
struct Holders {
  std::mutex mutex;
  std::map<FileId, std::thread::id> by_file;
};

Holders& holders() {
  static Holders instance;
  return instance;
}

bool held_here(const FileId& id) {
  auto& registry = holders();
  std::lock_guard guard(registry.mutex);
  const auto found = registry.by_file.find(id);
  return found != registry.by_file.end() && found->second == std::this_thread::get_id();
}

posix::UniqueFd open_lock_file(int dir_fd, const std::string& name, CreateFile create) {
  const int create_flag = create == CreateFile::yes ? O_CREAT : 0;
  // O_NONBLOCK: a FIFO planted under the lock's name must not block the open.
  posix::UniqueFd fd(
      posix::open_at(dir_fd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | create_flag, 0644));
  if (!fd && (errno == EACCES || errno == EROFS || errno == EPERM)) {
    // A read-only directory or someone else's lock file: flock needs no write access.
    fd.reset(posix::open_at(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  }
  return fd;
}

} // namespace

FileLock::FileLock(posix::UniqueFd fd, std::uint64_t device, std::uint64_t inode) noexcept
    : m_fd(std::move(fd)), m_device(device), m_inode(inode) {
  auto& registry = holders();
  std::lock_guard guard(registry.mutex);
  registry.by_file[{m_device, m_inode}] = std::this_thread::get_id();
}

FileLock::~FileLock() {
  {
    // Forget the holder before unlocking: once unlocked, another thread may lock and register.
    auto& registry = holders();
    std::lock_guard guard(registry.mutex);
    registry.by_file.erase({m_device, m_inode});
  }
  m_fd.reset();
}

bool FileLock::held_by_this_thread(int dir_fd, const std::string& name) {
  const auto status = posix::status_at(dir_fd, name);
  return status && held_here({status->device, status->inode});
}

LockAttempt FileLock::acquire(int dir_fd, const std::string& name,
                              std::chrono::milliseconds timeout, CreateFile create) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  LockAttempt attempt;
  posix::UniqueFd fd;
  for (;;) {
    if (!fd) {
      fd = open_lock_file(dir_fd, name, create);
      if (!fd) {
        attempt.why = format("cannot open lock file \"{}\": {}", name, posix::error_text(errno));
        return attempt;
      }
    }
    const auto opened = posix::status_of(fd.get());
    if (!opened) {
      attempt.why = format("cannot examine lock file \"{}\": {}", name, posix::error_text(errno));
      return attempt;
    }
    if (held_here({opened->device, opened->inode})) {
      attempt.state = LockState::busy;
      return attempt;
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // The name may now denote another file (wipe unlinked ours and someone made a new one):
      // a lock on the old one would exclude nobody. Lock the file the name denotes.
      const auto current = posix::status_at(dir_fd, name);
      if (current && current->device == opened->device && current->inode == opened->inode) {
        attempt.state = LockState::acquired;
        attempt.lock.reset(new FileLock(std::move(fd), opened->device, opened->inode));
        return attempt;
      }
      fd.reset();
      if (!current && create == CreateFile::no) {
        attempt.why = format("lock file \"{}\" was removed", name);
        return attempt;
      }
      continue;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EWOULDBLOCK) {
      // ENOLCK, EOPNOTSUPP, EINVAL: this filesystem does not do flock.
      attempt.why = format("cannot lock \"{}\": {}", name, posix::error_text(errno));
      return attempt;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      attempt.state = LockState::busy;
      return attempt;
    }
    attempt.waited = true;
    // Polling, not a blocking flock: a blocking call cannot be bounded without signals, and a
    // holder killed with SIGKILL releases its lock at once (the kernel closes its descriptors),
    // so nothing ever waits for a dead holder; only for a slow live one, up to the time-out.
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

} // namespace uwjit::cache::detail
