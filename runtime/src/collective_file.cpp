// CollectiveFile: rank 0 owns the AtomicFile; the other ranks write into its temporary by name.
#include "collective_file.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <unistd.h>

namespace uwjit::runtime::detail {

void run_together(comm::Collectives* comm, const std::function<void()>& body) {
  if (comm != nullptr) {
    comm::together(*comm, body);
  } else {
    body();
  }
}

namespace {
bool leads(const comm::Collectives* comm) {
  return comm == nullptr || comm->rank() == 0;
}
} // namespace

CollectiveFile::CollectiveFile(comm::Collectives* comm, const std::filesystem::path& path,
                               std::uint64_t size, posix::AtomicFileOptions options)
    : m_comm(comm), m_path(path) {
  std::string temporary;
  run_together(m_comm, [&] {
    if (leads(m_comm)) {
      m_file.emplace(path, options);
      m_file->resize(size);
      temporary = m_file->temporary();
    }
  });
  if (m_comm != nullptr && m_comm->size() > 1) {
    // With the file's name: ranks naming other files in one directory would otherwise write
    // rank 0's file and leave theirs as it was, silently.
    const std::string name = path.filename().string();
    const std::string root =
        m_comm->broadcast(leads(m_comm) ? name + '\0' + temporary : std::string(), 0);
    const auto split = root.find('\0');
    temporary = root.substr(split + 1);
    run_together(m_comm, [&] {
      if (!leads(m_comm)) {
        if (root.substr(0, split) != name) {
          throw Error(ErrorKind::usage,
                      format("rank {} names the file \"{}\" and rank 0 \"{}\": the ranks write "
                             "one file together, so name it alike on every rank",
                             m_comm->rank(), name, root.substr(0, split)));
        }
        m_part = posix::AtomicFile::open_temporary(path, temporary);
      }
    });
  }
}

CollectiveFile::~CollectiveFile() = default; // an uncommitted AtomicFile removes its temporary

void CollectiveFile::write_at(std::uint64_t offset, std::span<const char> bytes) {
  if (m_file) {
    m_file->write_at(offset, bytes);
  } else {
    posix::write_at(m_part.get(), offset, bytes, format("cannot write \"{}\"", m_path.string()));
  }
}

void CollectiveFile::write(const std::function<void()>& parts) {
  run_together(m_comm, [&] {
    parts();
    // Each rank's parts reach the disk before rank 0 renames: a crash after the rename cannot
    // leave a file with one rank's parts missing.
    if (m_part) {
      if (::fsync(m_part.get()) != 0) {
        posix::throw_io(format("cannot sync \"{}\"", m_path.string()), errno);
      }
      if (::close(m_part.release()) != 0 && errno != EINTR) {
        posix::throw_io(format("cannot close \"{}\"", m_path.string()), errno);
      }
    }
  });
}

void CollectiveFile::commit(std::span<const char> head) {
  run_together(m_comm, [&] {
    if (m_file) {
      m_file->write_at(0, head);
      m_file->commit();
    }
  });
}

void for_each_run(std::span<const std::int64_t> shape, std::span<const std::int64_t> offset,
                  std::span<const std::int64_t> extent,
                  const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& fn) {
  const std::size_t rank = shape.size();
  for (const std::int64_t e : extent) {
    if (e <= 0) {
      return;
    }
  }
  // The run: the innermost axes the box spans whole, and the first one it does not.
  std::size_t first = rank - 1;
  while (first > 0 && extent[first] == shape[first]) {
    --first;
  }
  std::int64_t length = 1;
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t d = rank; d-- > 0;) {
    stride[d] = d + 1 < rank ? stride[d + 1] * shape[d + 1] : 1;
    if (d >= first) {
      length *= extent[d];
    }
  }
  std::vector<std::int64_t> index(first, 0); // over the axes before `first`
  std::int64_t packed = 0;
  while (true) {
    std::int64_t whole = offset[first] * stride[first];
    for (std::size_t d = 0; d < first; ++d) {
      whole += (offset[d] + index[d]) * stride[d];
    }
    fn(whole, packed, length);
    packed += length;
    std::size_t d = first;
    while (d > 0 && ++index[d - 1] == extent[d - 1]) {
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) {
      return;
    }
  }
}

} // namespace uwjit::runtime::detail
