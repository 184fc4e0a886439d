// A GPU entry's binary ({key}.cubin): the machine code a loader made from its PTX, kept beside
// the entry, verified by its own checksum and served only to the loader that made it.
#include "entry_names.hpp"
#include "store_impl.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <unistd.h>

#include <cstring>

namespace uwjit::cache {

namespace {

constexpr std::string_view k_magic = "uwjit binary 1\n";
/// A binary larger than this is not one of ours.
constexpr std::uint64_t k_binary_limit = std::uint64_t{1} << 30;

// The header and payload of `file`, or why it is not a binary.
struct Parsed {
  std::string loader;
  std::string_view bytes;
  std::string problem;
};

Parsed parse(const std::string& file) {
  Parsed out;
  const auto end = file.find("\n\n");
  if (!file.starts_with(k_magic) || end == std::string::npos) {
    out.problem = "not a uwjit binary (no header)";
    return out;
  }
  const std::string_view header(file.data() + k_magic.size(), end + 1 - k_magic.size());
  const auto loader_at = header.find("loader ");
  const auto sha_at = header.find("sha256 ");
  if (loader_at != 0 || sha_at == std::string_view::npos) {
    out.problem = "a damaged header";
    return out;
  }
  out.loader = std::string(header.substr(7, header.find('\n') - 7));
  const std::string_view sha = header.substr(sha_at + 7, 64);
  out.bytes = std::string_view(file).substr(end + 2);
  if (sha != sha256_hex(out.bytes)) {
    out.problem = format("its {} bytes do not have the SHA-256 of its header", out.bytes.size());
  }
  return out;
}

} // namespace

BinaryLookup Store::lookup_binary(const Key& key, std::string_view loader) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache's binaries are not looked up (a damaged "
                              "one would be removed)");
  BinaryLookup result;
  std::string file;
  const auto read = posix::read_file_at(m_impl->fd(), names::binary(key), k_binary_limit, file);
  if (read.error != 0) {
    return result; // none (or unreadable: made again)
  }
  const Parsed parsed = parse(file);
  if (!parsed.problem.empty()) {
    result.status = BinaryLookup::Status::rejected;
    result.detail = parsed.problem;
    (void)::unlinkat(m_impl->fd(), names::binary(key).c_str(), 0);
    m_impl->logger.warn("rejected the binary of key={}: {}; removed, made again from the PTX",
                        key.hex(), parsed.problem);
    return result;
  }
  if (parsed.loader != loader) {
    result.status = BinaryLookup::Status::stale;
    result.detail = parsed.loader;
    return result;
  }
  result.status = BinaryLookup::Status::hit;
  result.bytes.assign(parsed.bytes.begin(), parsed.bytes.end());
  return result;
}

PublishOutcome Store::publish_binary(const Key& key, std::string_view loader,
                                     std::span<const char> bytes) {
  UWJIT_ASSERT(!m_impl->site, "a read-only site cache is never written");
  PublishOutcome outcome;
  if (!posix::status_at(m_impl->fd(), names::manifest(key))) {
    outcome.reason = "the entry is not on disk";
    return outcome;
  }
  try {
    const std::string_view payload(bytes.data(), bytes.size());
    const std::string header = std::string(k_magic) + "loader " + std::string(loader) +
                               "\nsha256 " + sha256_hex(payload) + "\n\n";
    posix::AtomicFile file(m_impl->fd(), names::binary(key),
                           {.mode = 0644, .durability = posix::Durability::synced});
    file.write(header);
    file.write(bytes);
    file.commit();
    outcome.status = PublishStatus::published;
    m_impl->logger.info("published the binary of key={} ({}, {} bytes)", key.hex(), loader,
                        bytes.size());
  } catch (const std::exception& e) {
    outcome.reason = e.what();
  }
  return outcome;
}

std::string Store::binary_problem(const Key& key) {
  std::string file;
  const auto read = posix::read_file_at(m_impl->fd(), names::binary(key), k_binary_limit, file);
  return read.error != 0 ? std::string() : parse(file).problem;
}

} // namespace uwjit::cache
