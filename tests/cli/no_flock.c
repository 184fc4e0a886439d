/* A stand-in for flock(2) where a shared file system refuses locks, as Linux's NFS client does
 * without a lock manager (ENOLCK) and some FUSE and network file systems do (EINVAL, EOPNOTSUPP):
 * loaded with LD_PRELOAD by tests/cli/no_locks.sh, every flock fails with the errno named by
 * UWJIT_TEST_FLOCK_ERRNO (default ENOLCK). A test double for the system call only. */
#include <errno.h>
#include <stdlib.h>
#include <sys/file.h>

int flock(int fd, int operation) {
  (void)fd;
  (void)operation;
  const char* code = getenv("UWJIT_TEST_FLOCK_ERRNO");
  errno = code != NULL ? atoi(code) : ENOLCK;
  return -1;
}
