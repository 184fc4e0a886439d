// One file written by every rank of a job, each its own parts at their offsets, and published
// atomically: the parallel I/O layer of checkpoints (and of other sharded writers), so that no
// rank ever holds the whole file. Serially (no comm), the same steps on one process.
#pragma once

#include <uwjit/comm/comm.hpp>
#include <uwjit/common/posix_file.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

/// Runs `body` on every rank and agrees on its outcome (comm::together), or just runs it where
/// `comm` is null.
void run_together(comm::Collectives* comm, const std::function<void()>& body);

/// The steps, every one collective:
///   1. the constructor: rank 0 creates a temporary beside `path` (sized `size` bytes; it
///      refuses a device, FIFO or directory at `path`, and what `options` does not replace, as
///      AtomicFile does) and the others open it;
///   2. write(): each rank writes its parts (write_at) and syncs them;
///   3. commit(): rank 0 writes the head at offset 0, syncs, and renames the temporary over
///      `path`, then syncs the directory.
/// Each step ends with one verdict: a failure on any rank raises the same Error on every rank,
/// and a file that is not committed is removed. A job killed at any moment leaves the old file
/// at `path` or the new one, never a torn one. The ranks must share the file system of `path`.
class CollectiveFile {
public:
  CollectiveFile(comm::Collectives* comm, const std::filesystem::path& path, std::uint64_t size,
                 posix::AtomicFileOptions options);
  CollectiveFile(const CollectiveFile&) = delete;
  CollectiveFile& operator=(const CollectiveFile&) = delete;
  ~CollectiveFile();

  /// Collective: runs `parts`, which writes this rank's parts with write_at(), then syncs them.
  void write(const std::function<void()>& parts);
  /// Writes `bytes` at `offset` (within write()'s `parts`). Throws Error(io).
  void write_at(std::uint64_t offset, std::span<const char> bytes);
  /// Collective: rank 0 writes `head` at offset 0 and publishes the file.
  void commit(std::span<const char> head);

private:
  comm::Collectives* m_comm;
  std::filesystem::path m_path;
  std::optional<posix::AtomicFile> m_file; // rank 0 (or serial)
  posix::UniqueFd m_part;                  // the other ranks
};

/// Calls fn(whole, packed, count) for each contiguous run of elements that the box of `extent`
/// cells at `offset` makes in a row-major array of `shape`: `whole` is the run's first element in
/// the array, `packed` in the box stored row-major on its own. Consecutive rows merge into one
/// run where the box spans whole rows.
void for_each_run(std::span<const std::int64_t> shape, std::span<const std::int64_t> offset,
                  std::span<const std::int64_t> extent,
                  const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& fn);

} // namespace uwjit::runtime::detail
