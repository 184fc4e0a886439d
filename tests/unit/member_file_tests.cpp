// The ensembles' member file (runtime/src/ensemble/member_file.hpp): members appended are read
// back exactly through HDF5's C API, an existing path is never touched, a reopened file appends
// after its members and refuses other columns, and a process killed after append() leaves every
// member it appended readable.
#include "ensemble/member_file.hpp"
#include "expect.hpp"
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <hdf5.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using uwjit::codegen::Dtype;
using uwjit::runtime::detail::MemberColumns;
using uwjit::runtime::detail::MemberFile;
using uwjit::runtime::detail::MemberRecord;
using uwjit_test::contains;
using uwjit_test::usage_error;

namespace {

// An HDF5 handle, closed at the end of its scope.
class Handle {
public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : m_id(id), m_close(close) { REQUIRE(id >= 0); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { m_close(m_id); }
  [[nodiscard]] hid_t get() const noexcept { return m_id; }

private:
  hid_t m_id;
  herr_t (*m_close)(hid_t);
};

// 2 params, 1 integral, an f64 field of shape (4, 3) and an i32 field of shape (2).
MemberColumns sample_columns() {
  return {.params = {"alpha", "beta"},
          .integrals = {"mass"},
          .fields = {{"u", Dtype::f64, {4, 3}}, {"flag", Dtype::i32, {2}}}};
}

// Member k's values, held while its record is appended.
struct SampleMember {
  explicit SampleMember(std::int64_t k)
      : id(1000 + k), steps(10 * k + 1), status(k % 2 == 1 ? "converged" : "step cap"),
        params{0.5 * static_cast<double>(k), -1.0 / 3.0 - static_cast<double>(k)},
        integrals{1e-3 * static_cast<double>(k) + 0.1} {
    for (int i = 0; i < 12; ++i) {
      u.push_back(100.0 * static_cast<double>(k) + i + 0.25);
    }
    flag = {static_cast<std::int32_t>(7 * k - 3), static_cast<std::int32_t>(-k)};
  }
  [[nodiscard]] MemberRecord record() const {
    return {.id = id,
            .steps = steps,
            .status = status,
            .params = params,
            .integrals = integrals,
            .fields = {u.data(), flag.data()}};
  }

  std::int64_t id;
  std::int64_t steps;
  std::string status;
  std::vector<double> params;
  std::vector<double> integrals;
  std::vector<double> u;
  std::vector<std::int32_t> flag;
};

// A whole dataset read as `type`, with its dims.
template <class T>
std::vector<T> read_dataset(hid_t file, const char* name, hid_t type, std::vector<hsize_t>& dims) {
  const Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  const Handle space(H5Dget_space(dataset.get()), H5Sclose);
  dims.assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space.get())), 0);
  std::vector<hsize_t> max_dims(dims.size());
  REQUIRE(H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data()) >= 0);
  CHECK(max_dims[0] == H5S_UNLIMITED);
  const Handle properties(H5Dget_create_plist(dataset.get()), H5Pclose);
  CHECK(H5Pget_layout(properties.get()) == H5D_CHUNKED);
  std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())));
  REQUIRE(H5Dread(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  return values;
}

std::vector<std::string> read_strings(hid_t file, const char* name) {
  const Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  const Handle type(H5Dget_type(dataset.get()), H5Tclose);
  CHECK(H5Tis_variable_str(type.get()) > 0);
  CHECK(H5Tget_cset(type.get()) == H5T_CSET_UTF8);
  const Handle space(H5Dget_space(dataset.get()), H5Sclose);
  std::vector<char*> texts(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())));
  const Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  REQUIRE(H5Tset_size(memory.get(), H5T_VARIABLE) >= 0);
  REQUIRE(H5Tset_cset(memory.get(), H5T_CSET_UTF8) >= 0);
  REQUIRE(H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, texts.data()) >= 0);
  std::vector<std::string> strings;
  for (char* text : texts) {
    strings.emplace_back(text);
    H5free_memory(text);
  }
  return strings;
}

std::string read_string_attribute(hid_t file, const char* name) {
  const Handle attribute(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  const Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  REQUIRE(H5Tset_size(memory.get(), H5T_VARIABLE) >= 0);
  char* text = nullptr;
  REQUIRE(H5Aread(attribute.get(), memory.get(), &text) >= 0);
  std::string value(text);
  H5free_memory(text);
  return value;
}

// The names in a group, in creation order.
std::vector<std::string> group_names(hid_t file, const char* name) {
  const Handle group(H5Gopen2(file, name, H5P_DEFAULT), H5Gclose);
  H5G_info_t info{};
  REQUIRE(H5Gget_info(group.get(), &info) >= 0);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char text[256] = {};
    REQUIRE(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, text,
                               sizeof text, H5P_DEFAULT) > 0);
    names.emplace_back(text);
  }
  return names;
}

// Checks, through HDF5 alone, that the file at `path` holds sample members 0 to count - 1, and
// the columns' datasets in their shapes.
void check_sample_members(const std::filesystem::path& path, std::int64_t count) {
  const Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  const auto n = static_cast<hsize_t>(count);
  std::vector<hsize_t> dims;
  const auto ids = read_dataset<std::int64_t>(file.get(), "id", H5T_NATIVE_INT64, dims);
  CHECK(dims == std::vector<hsize_t>{n});
  const auto steps = read_dataset<std::int64_t>(file.get(), "steps", H5T_NATIVE_INT64, dims);
  CHECK(dims == std::vector<hsize_t>{n});
  const auto status = read_strings(file.get(), "status");
  const auto alpha = read_dataset<double>(file.get(), "params/alpha", H5T_NATIVE_DOUBLE, dims);
  CHECK(dims == std::vector<hsize_t>{n});
  const auto beta = read_dataset<double>(file.get(), "params/beta", H5T_NATIVE_DOUBLE, dims);
  const auto mass = read_dataset<double>(file.get(), "integrals/mass", H5T_NATIVE_DOUBLE, dims);
  CHECK(dims == std::vector<hsize_t>{n});
  const auto u = read_dataset<double>(file.get(), "fields/u", H5T_NATIVE_DOUBLE, dims);
  CHECK(dims == std::vector<hsize_t>{n, 4, 3});
  const auto flag = read_dataset<std::int32_t>(file.get(), "fields/flag", H5T_NATIVE_INT32, dims);
  CHECK(dims == std::vector<hsize_t>{n, 2});
  REQUIRE(ids.size() == n);
  REQUIRE(status.size() == n);
  for (std::int64_t k = 0; k < count; ++k) {
    const SampleMember member(k);
    const auto row = static_cast<std::size_t>(k);
    CHECK(ids[row] == member.id);
    CHECK(steps[row] == member.steps);
    CHECK(status[row] == member.status);
    CHECK(alpha[row] == member.params[0]);
    CHECK(beta[row] == member.params[1]);
    CHECK(mass[row] == member.integrals[0]);
    CHECK(std::vector<double>(u.begin() + 12 * k, u.begin() + 12 * (k + 1)) == member.u);
    CHECK(std::vector<std::int32_t>(flag.begin() + 2 * k, flag.begin() + 2 * (k + 1)) ==
          member.flag);
  }
  // The file's types, as written in the header's table.
  const Handle u_set(H5Dopen2(file.get(), "fields/u", H5P_DEFAULT), H5Dclose);
  const Handle u_type(H5Dget_type(u_set.get()), H5Tclose);
  CHECK(H5Tequal(u_type.get(), H5T_IEEE_F64LE) > 0);
  const Handle flag_set(H5Dopen2(file.get(), "fields/flag", H5P_DEFAULT), H5Dclose);
  const Handle flag_type(H5Dget_type(flag_set.get()), H5Tclose);
  CHECK(H5Tequal(flag_type.get(), H5T_STD_I32LE) > 0);
}

} // namespace

TEST_CASE("a member file holds every member appended, with exact values and shapes") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto path = dir.path() / "members.h5";
  {
    MemberFile file(path, sample_columns(),
                    {{"node", "heat"}, {"uwjit_version", "0.1.0"}, {"stop", "converged ±1e-6"}});
    CHECK(file.rows() == 0);
    CHECK(file.path() == path);
    for (std::int64_t k = 0; k < 5; ++k) {
      file.append(SampleMember(k).record());
    }
    CHECK(file.rows() == 5);
    // Readable while the writer still has it open: each append flushes.
    check_sample_members(path, 5);
  }
  check_sample_members(path, 5);
  const Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  CHECK(read_string_attribute(file.get(), "node") == "heat");
  CHECK(read_string_attribute(file.get(), "uwjit_version") == "0.1.0");
  CHECK(read_string_attribute(file.get(), "stop") == "converged ±1e-6");
  const Handle version(H5Aopen(file.get(), "uwjit_member_file", H5P_DEFAULT), H5Aclose);
  std::int64_t number = 0;
  REQUIRE(H5Aread(version.get(), H5T_NATIVE_INT64, &number) >= 0);
  CHECK(number == 1);
  // The columns' order is the groups' creation order.
  CHECK(group_names(file.get(), "params") == std::vector<std::string>{"alpha", "beta"});
  CHECK(group_names(file.get(), "integrals") == std::vector<std::string>{"mass"});
  CHECK(group_names(file.get(), "fields") == std::vector<std::string>{"u", "flag"});
}

TEST_CASE("a member file is only ever created new, and what is at its path stays as it was") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto existing = dir.path() / "existing.h5";
  uwjit_test::write_text(existing, "precious bytes");
  std::string message = usage_error([&] { MemberFile(existing, sample_columns(), {}); });
  CHECK(contains(message, existing.string()));
  CHECK(contains(message, "exists"));
  CHECK(uwjit_test::read_text(existing) == "precious bytes");

  message = usage_error([&] { MemberFile("/dev/null", sample_columns(), {}); });
  CHECK(contains(message, "/dev/null"));
  CHECK(contains(message, "character device"));
  CHECK(std::filesystem::is_character_file("/dev/null"));

  message = usage_error([&] { MemberFile(dir.path(), sample_columns(), {}); });
  CHECK(contains(message, "directory"));

  // A symlink is never followed: to an existing file, or dangling (its target is not created).
  const auto to_existing = dir.path() / "to-existing.h5";
  std::filesystem::create_symlink(existing, to_existing);
  message = usage_error([&] { MemberFile(to_existing, sample_columns(), {}); });
  CHECK(contains(message, "symlink"));
  CHECK(uwjit_test::read_text(existing) == "precious bytes");
  const auto dangling = dir.path() / "dangling.h5";
  std::filesystem::create_symlink(dir.path() / "target.h5", dangling);
  message = usage_error([&] { MemberFile(dangling, sample_columns(), {}); });
  CHECK(contains(message, "symlink"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "target.h5"));

  const auto nowhere = dir.path() / "missing" / "members.h5";
  message = usage_error([&] { MemberFile(nowhere, sample_columns(), {}); });
  CHECK(contains(message, (dir.path() / "missing").string()));
  CHECK(contains(message, "does not exist"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "missing"));
}

TEST_CASE("member columns, attributes and records that a member file cannot hold are refused") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto path = dir.path() / "members.h5";
  MemberColumns twice = sample_columns();
  twice.params = {"alpha", "alpha"};
  CHECK(contains(usage_error([&] { MemberFile(path, twice, {}); }), "\"alpha\" is named twice"));
  MemberColumns slash = sample_columns();
  slash.integrals = {"a/b"};
  CHECK(contains(usage_error([&] { MemberFile(path, slash, {}); }), "a/b"));
  MemberColumns empty_axis = sample_columns();
  empty_axis.fields[0].shape = {4, 0};
  CHECK(contains(usage_error([&] { MemberFile(path, empty_axis, {}); }), "(4, 0)"));
  CHECK(contains(
      usage_error([&] { MemberFile(path, sample_columns(), {{"uwjit_member_file", ""}}); }),
      "uwjit_member_file"));
  CHECK(contains(usage_error([&] { MemberFile(path, sample_columns(), {{"k", "a"}, {"k", "b"}}); }),
                 "given twice"));
  CHECK_FALSE(std::filesystem::exists(path));

  MemberFile file(path, sample_columns(), {});
  const SampleMember member(0);
  MemberRecord record = member.record();
  record.params = std::span<const double>(member.params).first(1);
  CHECK(contains(usage_error([&] { file.append(record); }), "1 params"));
  record = member.record();
  record.fields[1] = nullptr;
  CHECK(contains(usage_error([&] { file.append(record); }), "\"flag\""));
  record = member.record();
  const std::string with_nul("con\0verged", 10);
  record.status = with_nul;
  CHECK(contains(usage_error([&] { file.append(record); }), "NUL"));
  CHECK(file.rows() == 0);
  file.append(member.record());
  CHECK(file.rows() == 1);
}

TEST_CASE("a reopened member file appends after its members and refuses other columns") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto path = dir.path() / "members.h5";
  {
    MemberFile file(path, sample_columns(), {{"node", "heat"}});
    file.append(SampleMember(0).record());
    file.append(SampleMember(1).record());
  }
  {
    MemberFile file = MemberFile::reopen(path, sample_columns());
    CHECK(file.rows() == 2);
    file.append(SampleMember(2).record());
    CHECK(file.rows() == 3);
    // One writer per file.
    CHECK(contains(usage_error([&] { (void)MemberFile::reopen(path, sample_columns()); }),
                   "open already in this process"));
    // Moved, it is the same file.
    MemberFile moved = std::move(file);
    moved.append(SampleMember(3).record());
    CHECK(moved.rows() == 4);
  }
  check_sample_members(path, 4);

  MemberColumns other_params = sample_columns();
  other_params.params = {"alpha", "gamma"};
  std::string message = usage_error([&] { (void)MemberFile::reopen(path, other_params); });
  CHECK(contains(message, path.string()));
  CHECK(contains(message, "params are \"alpha\", \"beta\""));
  CHECK(contains(message, "\"gamma\""));
  MemberColumns reordered = sample_columns();
  reordered.params = {"beta", "alpha"};
  CHECK(contains(usage_error([&] { (void)MemberFile::reopen(path, reordered); }), "params"));
  MemberColumns other_dtype = sample_columns();
  other_dtype.fields[0].dtype = Dtype::f32;
  message = usage_error([&] { (void)MemberFile::reopen(path, other_dtype); });
  CHECK(contains(message, "fields/u is f64 of shape (4, 3) in the file and f32"));
  MemberColumns other_shape = sample_columns();
  other_shape.fields[1].shape = {3};
  message = usage_error([&] { (void)MemberFile::reopen(path, other_shape); });
  CHECK(contains(message, "fields/flag is i32 of shape (2) in the file and i32 of shape (3)"));
  MemberColumns fewer = sample_columns();
  fewer.integrals.clear();
  CHECK(contains(usage_error([&] { (void)MemberFile::reopen(path, fewer); }), "are none"));

  const auto text = dir.path() / "text.h5";
  uwjit_test::write_text(text, "not hdf5");
  CHECK(contains(usage_error([&] { (void)MemberFile::reopen(text, sample_columns()); }),
                 "not an HDF5 file"));
  CHECK(contains(
      usage_error([&] { (void)MemberFile::reopen(dir.path() / "none.h5", sample_columns()); }),
      "does not exist"));
  // Refused reopenings leave the file as it was.
  check_sample_members(path, 4);
}

TEST_CASE("a process killed after append() leaves a file holding every member it appended") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto path = dir.path() / "members.h5";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: no doctest machinery from here on; it is killed, or exits with a code.
    ::alarm(60);
    try {
      MemberFile file(path, sample_columns(), {{"node", "heat"}});
      for (std::int64_t k = 0; k < 3; ++k) {
        file.append(SampleMember(k).record());
      }
      std::raise(SIGKILL); // nothing is closed: no destructor, no atexit handler runs
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  check_sample_members(path, 3);
  // And a resumed ensemble appends after them.
  MemberFile file = MemberFile::reopen(path, sample_columns());
  CHECK(file.rows() == 3);
  file.append(SampleMember(3).record());
  check_sample_members(path, 4);
}

TEST_CASE("a reopened member file that a killed append() left uneven holds the rows all have") {
  const uwjit_test::TempDir dir("uwjit-members");
  const auto path = dir.path() / "members.h5";
  {
    MemberFile file(path, sample_columns(), {});
    file.append(SampleMember(0).record());
    file.append(SampleMember(1).record());
  }
  {
    // As an append() cut short would leave it: some datasets a row longer.
    const Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    for (const char* name : {"id", "status", "params/alpha"}) {
      const Handle dataset(H5Dopen2(file.get(), name, H5P_DEFAULT), H5Dclose);
      const hsize_t rows = 3;
      REQUIRE(H5Dset_extent(dataset.get(), &rows) >= 0);
    }
    const Handle u(H5Dopen2(file.get(), "fields/u", H5P_DEFAULT), H5Dclose);
    const hsize_t dims[] = {3, 4, 3};
    REQUIRE(H5Dset_extent(u.get(), dims) >= 0);
  }
  MemberFile file = MemberFile::reopen(path, sample_columns());
  CHECK(file.rows() == 2);
  check_sample_members(path, 2);
  file.append(SampleMember(2).record());
  check_sample_members(path, 3);
}
