// The sinks of an ensemble's members: memory, bounded, and one HDF5 file (detail::MemberFile).
#include <uwjit/runtime/member_sink.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#if UWJIT_HAVE_HDF5
#include "member_file.hpp"
#endif

#include <optional>
#include <set>

namespace uwjit::runtime {

std::string_view to_string(MemberStatus status) noexcept {
  switch (status) {
  case MemberStatus::converged:
    return "converged";
  case MemberStatus::step_cap:
    return "step_cap";
  case MemberStatus::failed:
    return "failed";
  }
  return "?";
}

MemorySink::MemorySink(std::size_t capacity) : m_capacity(capacity) {
  if (capacity == 0) {
    throw Error(ErrorKind::usage, "memory sink: a capacity of 0 members");
  }
}

std::string MemorySink::describe() const {
  return format("memory (capacity {})", m_capacity);
}

void MemorySink::put(MemberResult&& member) {
  m_members.push_back(std::move(member));
  ++m_count;
}

std::vector<MemberResult> MemorySink::take() {
  std::vector<MemberResult> out;
  out.swap(m_members);
  return out;
}

#if UWJIT_HAVE_HDF5
struct FileSink::File {
  detail::MemberFile file;
  std::set<std::int64_t> written; // appending: the ids the file held when it was opened
};
#else
struct FileSink::File {};
#endif

bool FileSink::available() noexcept {
#if UWJIT_HAVE_HDF5
  return true;
#else
  return false;
#endif
}

FileSink::FileSink(std::filesystem::path path, std::int64_t capacity, Open open)
    : m_path(std::move(path)), m_capacity(capacity), m_open(open) {
  if (!available()) {
    throw Error(ErrorKind::usage,
                format("{}: this build of uwjit has no HDF5 (built with UWJIT_HDF5=OFF): write "
                       "members to memory, or use a build with HDF5",
                       m_path.string()));
  }
  // Checked now, before any member runs: nothing is overwritten, and a run that could not
  // write its members is refused before it starts.
#if UWJIT_HAVE_HDF5
  if (m_open == Open::create) {
    detail::check_new_member_path(m_path);
  }
#endif
  if (capacity == 0) {
    throw Error(ErrorKind::usage, format("{}: a capacity of 0 members", m_path.string()));
  }
}

FileSink::~FileSink() = default;

std::string FileSink::describe() const {
  return format("file {}", m_path.string());
}

void FileSink::begin(const MemberColumns& columns,
                     const std::vector<std::pair<std::string, std::string>>& attributes) {
#if UWJIT_HAVE_HDF5
  detail::MemberColumns file_columns;
  file_columns.params = columns.params;
  file_columns.integrals = columns.integrals;
  for (const auto& f : columns.fields) {
    file_columns.fields.push_back({f.name, f.dtype, f.shape});
  }
  if (m_open == Open::append) {
    auto file = detail::MemberFile::reopen(m_path, file_columns);
    const auto ids = file.ids();
    m_file = std::make_unique<File>(File{std::move(file), {ids.begin(), ids.end()}});
    m_count = static_cast<std::int64_t>(ids.size());
  } else {
    m_file = std::make_unique<File>(
        File{detail::MemberFile(m_path, std::move(file_columns), attributes), {}});
  }
#else
  (void)columns;
  (void)attributes;
#endif
}

void FileSink::end() {
  m_file.reset();
}

void FileSink::put(MemberResult&& member) {
#if UWJIT_HAVE_HDF5
  if (!m_file) {
    throw Error(ErrorKind::usage, format("{}: a member put before the sink began or after it ended",
                                         m_path.string()));
  }
  if (m_file->written.count(member.id) != 0) {
    return; // a resumed ensemble's member that the file holds already: the same bits
  }
  detail::MemberRecord record;
  record.id = member.id;
  record.steps = member.steps;
  record.status = to_string(member.status);
  record.params = member.values;
  record.integrals = member.integrals;
  for (const auto& f : member.fields) {
    record.fields.push_back(f.data.data());
  }
  m_file->file.append(record);
#else
  (void)member;
#endif
  ++m_count;
}

} // namespace uwjit::runtime
