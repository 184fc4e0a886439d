// The HDF5 file of an ensemble's finished members: one row per member in datasets that grow by
// one row per append, flushed after each, so that a process killed between appends leaves every
// member appended so far readable. The low-level writer under the ensemble's file sink.
#pragma once

#include <uwjit/codegen/dtype.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::runtime::detail {

/// One field column: a state field as each member holds it.
struct MemberFieldColumn {
  std::string name;
  codegen::Dtype dtype = codegen::Dtype::f64;
  /// One member's interior shape: component axes, then domain axes; every extent at least 1. No
  /// axes (a scalar per member) is allowed.
  std::vector<std::int64_t> shape;

  friend bool operator==(const MemberFieldColumn&, const MemberFieldColumn&) = default;
};

/// What a member file holds per member besides its id, step count and status. A name is one
/// HDF5 link name: 1 to 255 bytes, no '/', no NUL, not "."; unique among its kind.
struct MemberColumns {
  std::vector<std::string> params;    ///< the per-member run-time params, one double each
  std::vector<std::string> integrals; ///< the per-member integrals, one double each
  std::vector<MemberFieldColumn> fields;

  friend bool operator==(const MemberColumns&, const MemberColumns&) = default;
};

/// One finished member, as append() takes it; everything it points at must stay valid during
/// the call only.
struct MemberRecord {
  std::int64_t id = 0;
  std::int64_t steps = 0;
  /// Why the member finished, e.g. "converged", "step cap": UTF-8 without NUL.
  std::string_view status;
  std::span<const double> params;    ///< one per MemberColumns::params, in their order
  std::span<const double> integrals; ///< one per MemberColumns::integrals, in their order
  /// Per field column, in their order: the member's interior values, C order, contiguous, of the
  /// column's dtype and shape.
  std::vector<const void*> fields;
};

/// A member file's HDF5 handles (defined in member_file.cpp, which alone includes HDF5).
struct MemberFileHandles;

/// The root attribute that marks a member file and gives its format's version (int64).
inline constexpr std::string_view k_member_file_version_attribute = "uwjit_member_file";
/// The version of the format below.
inline constexpr std::int64_t k_member_file_version = 1;

/// Throws Error(usage) "member file PATH: ..." unless `path` can be a new member file: nothing
/// there (no file of any kind, no symlink, dangling or not) and its directory exists. What
/// MemberFile's constructor checks first, for a sink that checks before any member runs.
void check_new_member_path(const std::filesystem::path& path);

/// A member file, format version 1 (HDF5, readable by h5py; N = rows()):
///
/// | object                        | type                         | shape       |
/// |-------------------------------|------------------------------|-------------|
/// | attribute `uwjit_member_file` | int64: the format version, 1 | scalar      |
/// | attribute KEY (the caller's)  | variable-length UTF-8 string | scalar      |
/// | `id`                          | int64                        | [N]         |
/// | `steps`                       | int64                        | [N]         |
/// | `status`                      | variable-length UTF-8 string | [N]         |
/// | `params/NAME`                 | float64                      | [N]         |
/// | `integrals/NAME`              | float64                      | [N]         |
/// | `fields/NAME`                 | the field's dtype            | [N, *shape] |
///
/// Attributes are on the root group. Numbers are little-endian: f32 and f64 as IEEE float32 and
/// float64, i8, u8, i32 and i64 as integers of their size and sign.
///
/// Every dataset has the member as its leading axis, unlimited and chunked (no compression), rows
/// in append order; row i of every dataset is the i-th member appended. The groups `params`,
/// `integrals` and `fields` always exist and track their links' creation order, which is the
/// columns' order (h5py lists them so). A chunk holds at most 1 MiB: whole rows, up to 256 of
/// them, or for a member larger than that, a part of one row (its last axes whole).
///
/// Crash safety: append() writes the member's row into every dataset and then H5Fflush()es, which
/// writes HDF5's metadata cache and the raw-data chunk caches to the file and sets its size to
/// what the superblock records: a process killed (SIGKILL) after append() returned leaves a file
/// that HDF5 and h5py open and read, with that member in it (the unit test kills a child to
/// check). The file is written in the formats of HDF5 1.8 at most (libver bounds earliest, v18):
/// 1.10's superblock version 3 (libver latest, which SWMR needs) records that a writer has the
/// file open, and after a kill HDF5 refuses to open the file until `h5clear -s` clears that. A
/// kill during an append() may leave the file unreadable (HDF5 1.10 orders no metadata writes
/// outside SWMR); reopen() after a kill that left some datasets a row longer than others trims
/// them to the rows every dataset has. No fsync: what the kernel has is safe from a killed
/// process, not from a power failure.
///
/// Other processes: while a MemberFile has the file open, HDF5's file lock (flock) keeps every
/// other process from opening it, a second writer too (reopen() there is Error(io), "unable to
/// lock file"). A reader that looks at a file in progress opens it without the lock (h5py:
/// `h5py.File(path, "r", locking=False)`; HDF5_USE_FILE_LOCKING=FALSE), at its own risk during a
/// flush. A kill releases the lock.
///
/// Threads: serial HDF5 is not thread-safe, so one thread uses a MemberFile (the ensemble's own
/// thread), and no other thread may call HDF5 at the same time. HDF5's error printing is off
/// during each call (and put back as it was afterwards); its failures become Error(io) naming the
/// file and HDF5's innermost reason. Movable, not copyable; a moved-from object may only be
/// destroyed or assigned to.
class MemberFile {
public:
  /// Creates `path` new with the datasets above, no rows, and `attributes` as root attributes.
  /// Throws Error(usage), naming the path, when `path` exists in any form (a file, a directory,
  /// a device such as /dev/null, a symlink, dangling or not: nothing is followed, truncated or
  /// written), when its directory does not exist, or when `columns` or `attributes` are not
  /// valid (a name as MemberColumns says, a field shape, a duplicate, an attribute key that is
  /// empty, repeated or `uwjit_member_file`); Error(io) when HDF5 cannot create it, and then
  /// removes what it had created.
  MemberFile(std::filesystem::path path, MemberColumns columns,
             std::vector<std::pair<std::string, std::string>> attributes);

  /// Opens `path`, a file a MemberFile wrote, to append more members (a resumed ensemble); rows()
  /// is what it holds (datasets that a killed append() left a row longer are trimmed to it).
  /// Throws Error(usage) when `path` is not a regular file or not a member file of this version,
  /// when this process has it open already, or when its columns differ from `columns` (the
  /// message names what differs: the names of a kind of column, or a field's dtype or shape);
  /// Error(io) when HDF5 cannot open it (another process has it open) or finds it damaged.
  [[nodiscard]] static MemberFile reopen(std::filesystem::path path, const MemberColumns& columns);

  MemberFile(MemberFile&& other) noexcept;
  MemberFile& operator=(MemberFile&& other) noexcept;
  MemberFile(const MemberFile&) = delete;
  MemberFile& operator=(const MemberFile&) = delete;
  /// Closes the file. A failed append() that left some datasets a row longer is trimmed first.
  /// Never throws.
  ~MemberFile();

  /// Appends `member` as one row of every dataset, then flushes the file (see crash safety
  /// above). Throws Error(usage) when `member` does not match the columns (counts of params,
  /// integrals or fields, a null field, a status with a NUL or not UTF-8), before anything is
  /// written; Error(io) when HDF5 fails, after which rows() is unchanged and a later append()
  /// writes that row again.
  void append(const MemberRecord& member);

  /// The members the file holds.
  [[nodiscard]] std::int64_t rows() const noexcept { return m_rows; }
  /// The ids of the members the file holds, in row order. Error(io) when HDF5 cannot read them.
  [[nodiscard]] std::vector<std::int64_t> ids() const;
  /// The file's path, as given.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }
  /// The columns the file holds.
  [[nodiscard]] const MemberColumns& columns() const noexcept { return m_columns; }

private:
  MemberFile(std::filesystem::path path, MemberColumns columns,
             std::unique_ptr<MemberFileHandles> open, std::int64_t rows);

  std::filesystem::path m_path;
  MemberColumns m_columns;
  std::unique_ptr<MemberFileHandles> m_open;
  std::int64_t m_rows = 0;
};

} // namespace uwjit::runtime::detail
