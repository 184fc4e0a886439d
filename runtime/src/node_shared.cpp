#include "node_shared.hpp"
#include "runtime_log.hpp"

#include "static_placement.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/common/text.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uwjit::runtime::detail {

// A name no other live object has: this process, the time and a counter (O_EXCL guards the rest).
std::string segment_name() {
  static std::atomic<unsigned> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return format("/uwjit-{}-{}-{}", ::getpid(),
                std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), counter++);
}

namespace {

// `bytes` of shared memory mapped with `protection`, unmapped with the last owner; nullptr (and
// `why`) if it cannot be mapped.
std::shared_ptr<void> map_segment(int fd, std::size_t bytes, int protection, std::string& why) {
  void* address = ::mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) {
    why = format("mmap of {} bytes: {}", bytes, std::strerror(errno));
    return nullptr;
  }
  return {address, [bytes](void* p) { ::munmap(p, bytes); }};
}

struct Segment {
  std::string name;
  std::shared_ptr<void> mapping;
};

// The node's first rank: makes a segment per array; false (and `why`) if one cannot be made.
bool make_segments(const std::vector<SharedCandidate>& candidates, std::vector<Segment>& out,
                   std::string& why) {
  for (const auto& candidate : candidates) {
    const std::size_t bytes = candidate.array->size_bytes();
    Segment segment{segment_name(), nullptr};
    const int fd = ::shm_open(segment.name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      why = format("shm_open {}: {}", segment.name, std::strerror(errno));
      return false;
    }
    out.push_back(segment); // named now: unlinked by the caller whatever happens next
    // Reserve the pages now: touching a page of a full tmpfs later would be a SIGBUS.
    if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
      why = format("no room for {} bytes in shared memory: {}", bytes, std::strerror(rc));
      ::close(fd);
      return false;
    }
    out.back().mapping = map_segment(fd, bytes, PROT_READ | PROT_WRITE, why);
    ::close(fd);
    if (out.back().mapping == nullptr) {
      return false;
    }
  }
  return true;
}

// The node's first rank: computes every array into its segment and makes it read-only. Returns
// "ok" and the segment names, one per line; throws an Error naming this rank, the node and the
// array if a fill throws anything.
std::string compute_into(const std::vector<SharedCandidate>& candidates,
                         const std::vector<Segment>& segments, int job_rank) {
  std::string names;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const StaticArray& array = *candidates[i].array;
    const std::size_t bytes = array.size_bytes();
    auto* address = static_cast<std::byte*>(segments[i].mapping.get());
    const auto failed = [&](ErrorKind kind, std::string_view what) {
      return Error(kind, format("rank {}: node \"{}\": computing static array \"{}\": {}", job_rank,
                                candidates[i].node, array.key(), what));
    };
    try {
      StaticPlacement::place(array, {address, bytes}, segments[i].mapping);
    } catch (const Error& error) {
      throw failed(error.kind(), error.what());
    } catch (const std::exception& error) {
      throw failed(ErrorKind::usage, error.what());
    } catch (...) { // anything: the node's other ranks wait for this rank's word
      throw failed(ErrorKind::usage, "an exception that is not a std::exception");
    }
    ::mprotect(address, bytes, PROT_READ);
    names += "\n" + segments[i].name;
  }
  return "ok" + names;
}

// The node's other ranks: maps the segments read-only and adopts them; an array whose segment
// cannot be mapped stays private (outcome.kept_private says why).
void adopt_segments(const std::vector<SharedCandidate>& candidates,
                    const std::vector<std::string>& names, NodeShared& outcome) {
  std::string& why = outcome.kept_private;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const StaticArray& array = *candidates[i].array;
    const int fd = ::shm_open(names[i].c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
      why = format("shm_open {}: {}", names[i], std::strerror(errno));
      continue;
    }
    struct stat status{};
    std::shared_ptr<void> mapping;
    if (::fstat(fd, &status) != 0 ||
        static_cast<std::size_t>(status.st_size) != array.size_bytes()) {
      why = format("shared memory {} does not hold the {} bytes of \"{}\"", names[i],
                   array.size_bytes(), array.key());
    } else {
      mapping = map_segment(fd, array.size_bytes(), PROT_READ, why);
    }
    ::close(fd);
    if (mapping != nullptr && StaticPlacement::adopt(array, std::move(mapping))) {
      outcome.arrays += 1;
      outcome.bytes += static_cast<std::int64_t>(array.size_bytes());
    }
  }
}

} // namespace

NodeShared share_on_node(const std::vector<SharedCandidate>& candidates, comm::Comm& job) {
  NodeShared outcome;
  std::string listing;
  for (const auto& candidate : candidates) {
    listing +=
        format("{}/{} {}\n", candidate.node, candidate.array->key(), candidate.array->size_bytes());
  }
  const auto listings = job.all_gather(listing);
  for (std::size_t r = 1; r < listings.size(); ++r) {
    if (listings[r] != listings[0]) {
      outcome.kept_private = format("ranks 0 and {} list different computed replicate arrays", r);
      logger().warn("node-shared static arrays: {}; each rank keeps its own copies",
                    outcome.kept_private);
      return outcome;
    }
  }
  if (candidates.empty()) {
    return outcome;
  }
  const auto node = job.split_node();
  std::string message;
  std::vector<Segment> segments;
  std::exception_ptr failure; // a fill that threw, on a node's first rank
  if (node->rank() == 0) {
    std::string why;
    if (!make_segments(candidates, segments, why)) {
      message = "private\n" + why;
    } else {
      try {
        message = compute_into(candidates, segments, job.rank());
      } catch (...) {
        failure = std::current_exception();
        message = "failed";
      }
    }
  }
  message = node->broadcast(std::move(message), 0);
  const auto lines = split_lines(message);
  if (lines.front() == "ok") {
    if (node->rank() == 0) {
      for (const auto& candidate : candidates) {
        outcome.arrays += 1;
        outcome.bytes += static_cast<std::int64_t>(candidate.array->size_bytes());
      }
    } else {
      adopt_segments(candidates, {lines.begin() + 1, lines.end()}, outcome);
    }
  } else if (lines.front() == "private") {
    outcome.kept_private = lines.size() > 1 ? lines[1] : "no shared memory";
  }
  node->barrier(); // every rank has mapped what it could: the names can go
  for (const auto& segment : segments) {
    ::shm_unlink(segment.name.c_str());
  }
  comm::agree(job, failure);
  if (!outcome.kept_private.empty()) {
    logger().warn("node-shared static arrays: {}; each rank computes its own copy",
                  outcome.kept_private);
  }
  return outcome;
}

} // namespace uwjit::runtime::detail
