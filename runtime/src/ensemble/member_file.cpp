// The HDF5 file of an ensemble's finished members (member_file.hpp), through HDF5's C API: the
// file and its datasets created or checked, grown by one row per member and flushed, every
// handle owned. One idea, but over 700 lines: the C API needs a checked call, an owned handle and
// a type mapping for every dataset, and a reopened file is checked column by column.
#include "ensemble/member_file.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <hdf5.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

namespace uwjit::runtime::detail {

namespace {

namespace fs = std::filesystem;
using codegen::Dtype;

// A chunk holds at most this many bytes and rows: a few members of a large field per chunk, and
// the flush after an append() rewrites, besides the member's own bytes, at most the rest of one
// partly filled chunk per dataset.
constexpr hsize_t k_chunk_bytes = hsize_t{1} << 20;
constexpr hsize_t k_chunk_rows = 256;
// Far beyond any member, and small enough that a row's byte count never overflows.
constexpr std::int64_t k_row_bytes_limit = std::int64_t{1} << 50;

// An HDF5 identifier and the function that closes it, closed once.
class Hid {
public:
  using Close = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Close close) noexcept : m_id(id), m_close(close) {}
  Hid(Hid&& other) noexcept
      : m_id(std::exchange(other.m_id, H5I_INVALID_HID)), m_close(other.m_close) {}
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      reset();
      m_id = std::exchange(other.m_id, H5I_INVALID_HID);
      m_close = other.m_close;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() { reset(); }

  [[nodiscard]] hid_t get() const noexcept { return m_id; }
  void reset() noexcept {
    if (m_id >= 0) {
      m_close(m_id);
    }
    m_id = H5I_INVALID_HID;
  }

private:
  hid_t m_id = H5I_INVALID_HID;
  Close m_close = nullptr;
};

// HDF5 prints its error stack to stderr by default. For the scope of one call it prints nothing
// (its failures become Errors); the caller's setting, e.g. h5py's in the same process, comes
// back afterwards.
class QuietErrors {
public:
  QuietErrors() noexcept {
    m_saved = H5Eget_auto2(H5E_DEFAULT, &m_function, &m_data) >= 0;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;
  ~QuietErrors() {
    if (m_saved) {
      H5Eset_auto2(H5E_DEFAULT, m_function, m_data);
    }
  }

private:
  bool m_saved = false;
  H5E_auto2_t m_function = nullptr;
  void* m_data = nullptr;
};

// HDF5's reason for the failure just seen: "H5Dwrite: <innermost description>", from its error
// stack, which is then cleared.
std::string hdf5_reason() {
  struct Ends {
    std::string outer_function;
    std::string inner_description;
  } ends;
  const H5E_walk2_t walk = [](unsigned n, const H5E_error2_t* entry, void* data) -> herr_t {
    auto& found = *static_cast<Ends*>(data);
    if (n == 0 && entry->desc != nullptr) {
      found.inner_description = entry->desc;
    }
    if (entry->func_name != nullptr) {
      found.outer_function = entry->func_name;
    }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &ends);
  H5Eclear2(H5E_DEFAULT);
  if (ends.outer_function.empty() && ends.inner_description.empty()) {
    return "HDF5 gave no reason";
  }
  return ends.outer_function + ": " + ends.inner_description;
}

[[noreturn]] void fail(const std::string& what, std::string_view action) {
  throw Error(ErrorKind::io, format("{}: {} ({})", what, action, hdf5_reason()));
}

[[noreturn]] void refuse(const std::string& what, std::string_view why) {
  throw Error(ErrorKind::usage, format("{}: {}", what, why));
}

Hid own(hid_t id, Hid::Close close, const std::string& what, std::string_view action) {
  if (id < 0) {
    fail(what, action);
  }
  return {id, close};
}

void check(herr_t status, const std::string& what, std::string_view action) {
  if (status < 0) {
    fail(what, action);
  }
}

hid_t file_type(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return H5T_IEEE_F32LE;
  case Dtype::f64:
    return H5T_IEEE_F64LE;
  case Dtype::i8:
    return H5T_STD_I8LE;
  case Dtype::u8:
    return H5T_STD_U8LE;
  case Dtype::i32:
    return H5T_STD_I32LE;
  case Dtype::i64:
    return H5T_STD_I64LE;
  }
  UWJIT_ASSERT(false, "a member field of an unsupported dtype");
}

hid_t memory_type(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return H5T_NATIVE_FLOAT;
  case Dtype::f64:
    return H5T_NATIVE_DOUBLE;
  case Dtype::i8:
    return H5T_NATIVE_INT8;
  case Dtype::u8:
    return H5T_NATIVE_UINT8;
  case Dtype::i32:
    return H5T_NATIVE_INT32;
  case Dtype::i64:
    return H5T_NATIVE_INT64;
  }
  UWJIT_ASSERT(false, "a member field of an unsupported dtype");
}

// The dtype whose file type `type` is, or nullopt.
std::optional<Dtype> dtype_in_file(hid_t type) {
  for (const Dtype dtype : codegen::k_all_dtypes) {
    if (H5Tequal(type, file_type(dtype)) > 0) {
      return dtype;
    }
  }
  return std::nullopt;
}

bool is_utf8(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xe0) == 0xc0) {
      length = 2;
      code = lead & 0x1fu;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3;
      code = lead & 0x0fu;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4;
      code = lead & 0x07u;
    } else {
      return false;
    }
    if (i + length > text.size()) {
      return false;
    }
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) {
        return false;
      }
      code = (code << 6) | (next & 0x3fu);
    }
    constexpr std::uint32_t k_least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < k_least[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

// A text for HDF5: valid UTF-8 without NUL (HDF5's strings end at the first NUL).
void check_text(std::string_view text, const std::string& what, std::string_view whose) {
  if (text.find('\0') != std::string_view::npos) {
    refuse(what, format("{} \"{}\" holds a NUL byte", whose, printable(text)));
  }
  if (!is_utf8(text)) {
    refuse(what, format("{} \"{}\" is not UTF-8", whose, printable(text)));
  }
}

void check_names(const std::vector<std::string>& names, const std::string& what,
                 std::string_view kind) {
  std::set<std::string_view> seen;
  for (const std::string& name : names) {
    if (name.empty() || name.size() > 255 || name == "." || name.find('/') != std::string::npos) {
      refuse(what, format("{} name \"{}\" cannot name an HDF5 dataset (1 to 255 bytes, no '/', "
                          "not \".\")",
                          kind, printable(name)));
    }
    check_text(name, what, format("{} name", kind));
    if (!seen.insert(name).second) {
      refuse(what, format("{} \"{}\" is named twice", kind, printable(name)));
    }
  }
}

void check_columns(const MemberColumns& columns, const std::string& what) {
  check_names(columns.params, what, "param");
  check_names(columns.integrals, what, "integral");
  std::vector<std::string> field_names;
  for (const MemberFieldColumn& field : columns.fields) {
    field_names.push_back(field.name);
    if (!codegen::is_supported(field.dtype)) {
      refuse(what, format("field \"{}\" has an unsupported dtype", printable(field.name)));
    }
    if (field.shape.size() + 1 > H5S_MAX_RANK) {
      refuse(what, format("field \"{}\" has {} axes (HDF5 holds {} with the member axis)",
                          printable(field.name), field.shape.size(), H5S_MAX_RANK));
    }
    auto bytes = static_cast<std::int64_t>(codegen::size_of(field.dtype));
    for (const std::int64_t extent : field.shape) {
      if (extent < 1 || extent > k_row_bytes_limit / bytes) {
        refuse(what, format("field \"{}\" has shape {} (every extent at least 1, a member at "
                            "most 2^50 bytes)",
                            printable(field.name), shape_text(field.shape)));
      }
      bytes *= extent;
    }
  }
  check_names(field_names, what, "field");
}

void check_attributes(const std::vector<std::pair<std::string, std::string>>& attributes,
                      const std::string& what) {
  std::set<std::string_view> seen;
  for (const auto& [key, value] : attributes) {
    if (key.empty()) {
      refuse(what, "an attribute has an empty key");
    }
    check_text(key, what, "attribute key");
    check_text(value, what, format("attribute \"{}\"'s value", printable(key)));
    if (key == k_member_file_version_attribute) {
      refuse(what, format("attribute \"{}\" is the file's own (its format version)", key));
    }
    if (!seen.insert(key).second) {
      refuse(what, format("attribute \"{}\" is given twice", printable(key)));
    }
  }
}

std::string_view type_text(fs::file_type type) {
  switch (type) {
  case fs::file_type::regular:
    return "regular file";
  case fs::file_type::directory:
    return "directory";
  case fs::file_type::symlink:
    return "symlink";
  case fs::file_type::block:
    return "block device";
  case fs::file_type::character:
    return "character device";
  case fs::file_type::fifo:
    return "FIFO";
  case fs::file_type::socket:
    return "socket";
  default:
    return "file";
  }
}

// A new member file's path: nothing there (a dangling symlink is something), in a directory
// that exists.
void check_new_path(const fs::path& path, const std::string& what) {
  if (path.empty() || path.filename().empty()) {
    refuse(what, "the path names no file");
  }
  std::error_code error;
  const fs::file_status status = fs::symlink_status(path, error);
  if (status.type() != fs::file_type::not_found) {
    if (error) {
      throw Error(ErrorKind::io, format("{}: cannot examine the path: {}", what, error.message()));
    }
    refuse(what, format("the path exists (a {}); a member file is only ever created new, and "
                        "nothing there is replaced",
                        type_text(status.type())));
  }
  const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::file_type type = fs::status(directory, error).type();
  if (type == fs::file_type::not_found) {
    refuse(what, format("directory {} does not exist", directory.string()));
  }
  if (type != fs::file_type::directory) {
    refuse(what, format("{} is not a directory", directory.string()));
  }
}

// The shape of a chunk of a dataset whose rows have `row`'s shape and `element` bytes per
// element: the last axes whole as long as they fit in k_chunk_bytes, then as many rows as fit
// (at least one, at most k_chunk_rows).
std::vector<hsize_t> chunk_shape(const std::vector<hsize_t>& row, hsize_t element) {
  std::vector<hsize_t> chunk(row.size() + 1, 1);
  hsize_t bytes = element;
  for (std::size_t axis = row.size(); axis-- > 0;) {
    const hsize_t fit = std::max<hsize_t>(1, k_chunk_bytes / bytes);
    chunk[axis + 1] = std::min(row[axis], fit);
    bytes *= chunk[axis + 1];
    if (chunk[axis + 1] < row[axis]) {
      break;
    }
  }
  chunk[0] = std::clamp<hsize_t>(k_chunk_bytes / bytes, 1, k_chunk_rows);
  return chunk;
}

std::vector<hsize_t> row_shape(const std::vector<std::int64_t>& shape) {
  return {shape.begin(), shape.end()};
}

// The file access properties of every member file: formats of HDF5 1.8 at most, so that the
// superblock is never version 3, whose "open for writing" flag outlives a killed writer.
Hid file_access(const std::string& what) {
  Hid access = own(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, what, "cannot make file properties");
  check(H5Pset_libver_bounds(access.get(), H5F_LIBVER_EARLIEST, H5F_LIBVER_V18), what,
        "cannot set the file format bounds");
  return access;
}

void write_string_attribute(hid_t object, hid_t string_type, const std::string& key,
                            const std::string& value, const std::string& what) {
  const Hid space = own(H5Screate(H5S_SCALAR), H5Sclose, what, "cannot make a scalar space");
  const std::string action = format("cannot write attribute \"{}\"", printable(key));
  const Hid attribute =
      own(H5Acreate2(object, key.c_str(), string_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
          H5Aclose, what, action);
  const char* text = value.c_str();
  check(H5Awrite(attribute.get(), string_type, &text), what, action);
}

Hid make_string_type(const std::string& what) {
  Hid type = own(H5Tcopy(H5T_C_S1), H5Tclose, what, "cannot make the string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), what, "cannot make the string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), what, "cannot make the string type");
  return type;
}

// One dataset of the file: where a row goes and how it is read from memory.
struct MemberDataset {
  Hid dataset;
  hid_t memory_type = H5I_INVALID_HID; // HDF5's predefined type or the file's string type
  std::vector<hsize_t> row;            // one row's shape
  std::string name;                    // "params/alpha", for messages
};

} // namespace

struct MemberFileHandles {
  Hid file;
  Hid string_type;
  std::vector<MemberDataset> datasets; // id, steps, status, params, integrals, fields
  hsize_t rows = 0;                    // what every dataset holds whole
  bool torn = false;                   // an append() failed after it grew some datasets

  MemberFileHandles() = default;
  MemberFileHandles(const MemberFileHandles&) = delete;
  MemberFileHandles& operator=(const MemberFileHandles&) = delete;
  ~MemberFileHandles() {
    const QuietErrors quiet;
    if (torn) {
      // A failed append() may have grown some datasets: back to the rows every one holds.
      for (const MemberDataset& column : datasets) {
        std::vector<hsize_t> dims{rows};
        dims.insert(dims.end(), column.row.begin(), column.row.end());
        H5Dset_extent(column.dataset.get(), dims.data());
      }
    }
    datasets.clear();
    string_type.reset();
    file.reset();
    H5Eclear2(H5E_DEFAULT);
  }
};

namespace {

MemberDataset create_dataset(hid_t parent, const std::string& group, const std::string& name,
                             hid_t type_in_file, hid_t type_in_memory, std::vector<hsize_t> row,
                             hsize_t element, const std::string& what) {
  MemberDataset column{.memory_type = type_in_memory,
                       .row = std::move(row),
                       .name = group.empty() ? name : group + "/" + name};
  const std::string action = format("cannot create dataset {}", printable(column.name));
  std::vector<hsize_t> dims{0};
  dims.insert(dims.end(), column.row.begin(), column.row.end());
  std::vector<hsize_t> max_dims = dims;
  max_dims[0] = H5S_UNLIMITED;
  const auto rank = static_cast<int>(dims.size());
  const Hid space =
      own(H5Screate_simple(rank, dims.data(), max_dims.data()), H5Sclose, what, action);
  const Hid properties = own(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, what, action);
  check(H5Pset_chunk(properties.get(), rank, chunk_shape(column.row, element).data()), what,
        action);
  column.dataset = own(H5Dcreate2(parent, name.c_str(), type_in_file, space.get(), H5P_DEFAULT,
                                  properties.get(), H5P_DEFAULT),
                       H5Dclose, what, action);
  return column;
}

Hid create_group(hid_t file, const char* name, const std::string& what) {
  const std::string action = format("cannot create group {}", name);
  const Hid properties = own(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, what, action);
  // Creation order is the columns' order, which reopen() compares and h5py lists.
  check(H5Pset_link_creation_order(properties.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
        what, action);
  return own(H5Gcreate2(file, name, H5P_DEFAULT, properties.get(), H5P_DEFAULT), H5Gclose, what,
             action);
}

void create_layout(MemberFileHandles& open, const MemberColumns& columns,
                   const std::vector<std::pair<std::string, std::string>>& attributes,
                   const std::string& what) {
  const hid_t file = open.file.get();
  {
    const Hid space = own(H5Screate(H5S_SCALAR), H5Sclose, what, "cannot make a scalar space");
    const std::string action = "cannot write the format version";
    const Hid version = own(H5Acreate2(file, std::string(k_member_file_version_attribute).c_str(),
                                       H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                            H5Aclose, what, action);
    check(H5Awrite(version.get(), H5T_NATIVE_INT64, &k_member_file_version), what, action);
  }
  for (const auto& [key, value] : attributes) {
    write_string_attribute(file, open.string_type.get(), key, value, what);
  }
  auto& datasets = open.datasets;
  datasets.push_back(create_dataset(file, "", "id", H5T_STD_I64LE, H5T_NATIVE_INT64, {}, 8, what));
  datasets.push_back(
      create_dataset(file, "", "steps", H5T_STD_I64LE, H5T_NATIVE_INT64, {}, 8, what));
  datasets.push_back(create_dataset(file, "", "status", open.string_type.get(),
                                    open.string_type.get(), {}, sizeof(hvl_t), what));
  const Hid params = create_group(file, "params", what);
  for (const std::string& name : columns.params) {
    datasets.push_back(create_dataset(params.get(), "params", name, H5T_IEEE_F64LE,
                                      H5T_NATIVE_DOUBLE, {}, 8, what));
  }
  const Hid integrals = create_group(file, "integrals", what);
  for (const std::string& name : columns.integrals) {
    datasets.push_back(create_dataset(integrals.get(), "integrals", name, H5T_IEEE_F64LE,
                                      H5T_NATIVE_DOUBLE, {}, 8, what));
  }
  const Hid fields = create_group(file, "fields", what);
  for (const MemberFieldColumn& field : columns.fields) {
    datasets.push_back(create_dataset(fields.get(), "fields", field.name, file_type(field.dtype),
                                      memory_type(field.dtype), row_shape(field.shape),
                                      codegen::size_of(field.dtype), what));
  }
  check(H5Fflush(file, H5F_SCOPE_LOCAL), what, "cannot flush");
}

// The names of a group's links in creation order.
std::vector<std::string> link_names(hid_t file, const char* group_name, const std::string& what) {
  const std::string action = format("cannot list group {}", group_name);
  const Hid group = own(H5Gopen2(file, group_name, H5P_DEFAULT), H5Gclose, what, action);
  H5G_info_t info{};
  check(H5Gget_info(group.get(), &info), what, action);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(group.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i,
                                            nullptr, 0, H5P_DEFAULT);
    if (size < 0) {
      fail(what, action);
    }
    std::vector<char> name(static_cast<std::size_t>(size) + 1);
    if (H5Lget_name_by_idx(group.get(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name.data(),
                           name.size(), H5P_DEFAULT) < 0) {
      fail(what, action);
    }
    names.emplace_back(name.data(), static_cast<std::size_t>(size));
  }
  return names;
}

std::string names_text(const std::vector<std::string>& names) {
  if (names.empty()) {
    return "none";
  }
  std::vector<std::string> quoted;
  for (const std::string& name : names) {
    quoted.push_back("\"" + printable(name) + "\"");
  }
  return join(quoted);
}

void compare_names(const std::vector<std::string>& in_file, const std::vector<std::string>& here,
                   std::string_view kind, const std::string& what) {
  if (in_file != here) {
    refuse(what, format("its {} are {}, and the ensemble's are {}", kind, names_text(in_file),
                        names_text(here)));
  }
}

// An existing dataset of the file, checked to be what the columns say (type and row shape);
// `length` is how many rows it has.
MemberDataset open_dataset(hid_t file, const std::string& name, hid_t type_in_memory,
                           std::optional<Dtype> dtype, std::vector<hsize_t> row, hsize_t& length,
                           const std::string& what) {
  MemberDataset column{.memory_type = type_in_memory, .row = std::move(row), .name = name};
  const std::string action = format("cannot open dataset {}", printable(name));
  column.dataset = own(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose, what, action);
  const Hid type = own(H5Dget_type(column.dataset.get()), H5Tclose, what, action);
  const Hid space = own(H5Dget_space(column.dataset.get()), H5Sclose, what, action);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > H5S_MAX_RANK) {
    throw Error(ErrorKind::io, format("{}: dataset {} has {} axes", what, printable(name), rank));
  }
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  std::vector<hsize_t> max_dims(dims.size());
  check(H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data()), what, action);
  const std::vector<hsize_t> file_row(dims.begin() + 1, dims.end());
  if (dtype) {
    // A field: its dtype and shape are the columns' business (usage); anything else is damage.
    const std::optional<Dtype> in_file = dtype_in_file(type.get());
    if (in_file != dtype || file_row != column.row) {
      const std::vector<std::int64_t> file_shape(file_row.begin(), file_row.end());
      const std::vector<std::int64_t> shape(column.row.begin(), column.row.end());
      refuse(what, format("{} is {} of shape {} in the file and {} of shape {} in the ensemble",
                          printable(name), in_file ? to_string(*in_file) : "another type",
                          shape_text(file_shape), to_string(*dtype), shape_text(shape)));
    }
  } else {
    const bool expected =
        type_in_memory == H5T_NATIVE_INT64    ? H5Tequal(type.get(), H5T_STD_I64LE) > 0
        : type_in_memory == H5T_NATIVE_DOUBLE ? H5Tequal(type.get(), H5T_IEEE_F64LE) > 0
                                              : H5Tis_variable_str(type.get()) > 0;
    if (!expected || !file_row.empty()) {
      throw Error(ErrorKind::io, format("{}: dataset {} is not of the type and shape a member "
                                        "file has",
                                        what, printable(name)));
    }
  }
  if (max_dims[0] != H5S_UNLIMITED) {
    throw Error(ErrorKind::io,
                format("{}: dataset {} cannot grow (its first axis is not unlimited)", what,
                       printable(name)));
  }
  length = dims[0];
  return column;
}

} // namespace

void check_new_member_path(const std::filesystem::path& path) {
  check_new_path(path, "member file " + path.string());
}

MemberFile::MemberFile(std::filesystem::path path, MemberColumns columns,
                       std::vector<std::pair<std::string, std::string>> attributes)
    : m_path(std::move(path)), m_columns(std::move(columns)) {
  const std::string what = "member file " + m_path.string();
  check_columns(m_columns, what);
  check_attributes(attributes, what);
  check_new_path(m_path, what);
  const QuietErrors quiet;
  auto open = std::make_unique<MemberFileHandles>();
  const Hid access = file_access(what);
  // H5F_ACC_EXCL creates with O_CREAT | O_EXCL: nothing that appeared at the path since the
  // check above (a symlink either) is followed or truncated.
  const hid_t file = H5Fcreate(m_path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, access.get());
  if (file < 0) {
    std::error_code error;
    if (fs::symlink_status(m_path, error).type() != fs::file_type::not_found) {
      hdf5_reason();
      refuse(what, "the path exists (it appeared while the file was being created); a member "
                   "file is only ever created new, and nothing there is replaced");
    }
    fail(what, "cannot create");
  }
  open->file = Hid(file, H5Fclose);
  struct stat created{};
  const bool known = ::lstat(m_path.c_str(), &created) == 0;
  try {
    open->string_type = make_string_type(what);
    create_layout(*open, m_columns, attributes, what);
  } catch (...) {
    open.reset();
    // Remove what this object created, and only that.
    struct stat now{};
    if (known && ::lstat(m_path.c_str(), &now) == 0 && now.st_dev == created.st_dev &&
        now.st_ino == created.st_ino) {
      ::unlink(m_path.c_str());
    }
    throw;
  }
  m_open = std::move(open);
}

MemberFile::MemberFile(std::filesystem::path path, MemberColumns columns,
                       std::unique_ptr<MemberFileHandles> open, std::int64_t rows)
    : m_path(std::move(path)), m_columns(std::move(columns)), m_open(std::move(open)),
      m_rows(rows) {}

MemberFile MemberFile::reopen(std::filesystem::path path, const MemberColumns& columns) {
  const std::string what = "member file " + path.string();
  check_columns(columns, what);
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) {
    refuse(what, "it does not exist");
  }
  if (status.type() != fs::file_type::regular) {
    refuse(what, format("it is not a regular file (a {})", type_text(status.type())));
  }
  const QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    hdf5_reason();
    refuse(what, "it is not a member file (not an HDF5 file)");
  }
  auto open = std::make_unique<MemberFileHandles>();
  const Hid access = file_access(what);
  open->file = own(H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get()), H5Fclose, what,
                   "cannot open for appending");
  const hid_t file = open->file.get();
  // HDF5 shares a file that this process has open already (its lock keeps other processes out):
  // two writers of one file would write the same rows.
  if (H5Fget_obj_count(file, H5F_OBJ_FILE) > 1) {
    refuse(what, "it is open already in this process (another MemberFile, or an HDF5 handle)");
  }
  const char* version_name = k_member_file_version_attribute.data();
  if (H5Aexists(file, version_name) <= 0) {
    hdf5_reason();
    refuse(what, format("it is not a member file (no attribute {})", version_name));
  }
  {
    const std::string action = "cannot read the format version";
    const Hid attribute = own(H5Aopen(file, version_name, H5P_DEFAULT), H5Aclose, what, action);
    const Hid space = own(H5Aget_space(attribute.get()), H5Sclose, what, action);
    std::int64_t version = 0;
    if (H5Sget_simple_extent_npoints(space.get()) != 1 ||
        H5Aread(attribute.get(), H5T_NATIVE_INT64, &version) < 0) {
      fail(what, action);
    }
    if (version != k_member_file_version) {
      refuse(what, format("its format version is {} (this uwjit writes version {})", version,
                          k_member_file_version));
    }
  }
  compare_names(link_names(file, "params", what), columns.params, "params", what);
  compare_names(link_names(file, "integrals", what), columns.integrals, "integrals", what);
  std::vector<std::string> field_names;
  for (const MemberFieldColumn& field : columns.fields) {
    field_names.push_back(field.name);
  }
  compare_names(link_names(file, "fields", what), field_names, "fields", what);

  open->string_type = make_string_type(what);
  std::vector<hsize_t> lengths;
  auto add = [&](const std::string& name, hid_t type_in_memory, std::optional<Dtype> dtype,
                 std::vector<hsize_t> row) {
    hsize_t length = 0;
    open->datasets.push_back(
        open_dataset(file, name, type_in_memory, dtype, std::move(row), length, what));
    lengths.push_back(length);
  };
  add("id", H5T_NATIVE_INT64, std::nullopt, {});
  add("steps", H5T_NATIVE_INT64, std::nullopt, {});
  add("status", open->string_type.get(), std::nullopt, {});
  for (const std::string& name : columns.params) {
    add("params/" + name, H5T_NATIVE_DOUBLE, std::nullopt, {});
  }
  for (const std::string& name : columns.integrals) {
    add("integrals/" + name, H5T_NATIVE_DOUBLE, std::nullopt, {});
  }
  for (const MemberFieldColumn& field : columns.fields) {
    add("fields/" + field.name, memory_type(field.dtype), field.dtype, row_shape(field.shape));
  }
  // A process killed during an append() may have left some datasets a row longer: the members
  // are the rows every dataset holds, and the longer datasets are trimmed to them.
  open->rows = *std::min_element(lengths.begin(), lengths.end());
  if (open->rows > static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max())) {
    throw Error(ErrorKind::io, format("{}: {} rows", what, open->rows));
  }
  if (*std::max_element(lengths.begin(), lengths.end()) != open->rows) {
    for (const MemberDataset& column : open->datasets) {
      std::vector<hsize_t> dims{open->rows};
      dims.insert(dims.end(), column.row.begin(), column.row.end());
      check(H5Dset_extent(column.dataset.get(), dims.data()), what,
            format("cannot trim {} to the {} rows every dataset holds", printable(column.name),
                   open->rows));
    }
    check(H5Fflush(file, H5F_SCOPE_LOCAL), what, "cannot flush");
  }
  const auto rows = static_cast<std::int64_t>(open->rows);
  return MemberFile(std::move(path), columns, std::move(open), rows);
}

MemberFile::MemberFile(MemberFile&& other) noexcept = default;
MemberFile& MemberFile::operator=(MemberFile&& other) noexcept = default;
MemberFile::~MemberFile() = default;

namespace {

void write_row(const MemberDataset& column, hsize_t row, const void* data,
               const std::string& what) {
  std::vector<hsize_t> dims{row + 1};
  dims.insert(dims.end(), column.row.begin(), column.row.end());
  const std::string action = format("cannot write row {} of {}", row, printable(column.name));
  // Set, not extended by one: a row a failed append() left is written again.
  check(H5Dset_extent(column.dataset.get(), dims.data()), what, action);
  const Hid file_space = own(H5Dget_space(column.dataset.get()), H5Sclose, what, action);
  std::vector<hsize_t> start(dims.size(), 0);
  start[0] = row;
  std::vector<hsize_t> count = dims;
  count[0] = 1;
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr),
        what, action);
  const Hid memory_space =
      own(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose, what,
          action);
  check(H5Dwrite(column.dataset.get(), column.memory_type, memory_space.get(), file_space.get(),
                 H5P_DEFAULT, data),
        what, action);
}

void check_record(const MemberRecord& member, const MemberColumns& columns,
                  const std::string& what) {
  const auto counts = [&](std::size_t given, std::size_t expected, std::string_view kind) {
    if (given != expected) {
      refuse(what, format("member {} has {} {} and the file's columns {}", member.id, given, kind,
                          expected));
    }
  };
  counts(member.params.size(), columns.params.size(), "params");
  counts(member.integrals.size(), columns.integrals.size(), "integrals");
  counts(member.fields.size(), columns.fields.size(), "fields");
  for (std::size_t i = 0; i < member.fields.size(); ++i) {
    if (member.fields[i] == nullptr) {
      refuse(what, format("member {} has no values for field \"{}\"", member.id,
                          printable(columns.fields[i].name)));
    }
  }
  check_text(member.status, what, format("member {}'s status", member.id));
}

} // namespace

std::vector<std::int64_t> MemberFile::ids() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(m_rows));
  if (m_rows == 0) {
    return out;
  }
  const std::string what = "member file " + m_path.string();
  const std::string action = "cannot read the ids";
  const QuietErrors quiet;
  const MemberDataset& column = m_open->datasets.front(); // id
  const Hid stored = own(H5Dget_space(column.dataset.get()), H5Sclose, what, action);
  const hsize_t start = 0;
  const auto count = static_cast<hsize_t>(m_rows);
  check(H5Sselect_hyperslab(stored.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr), what,
        action);
  const Hid memory = own(H5Screate_simple(1, &count, nullptr), H5Sclose, what, action);
  check(H5Dread(column.dataset.get(), H5T_NATIVE_INT64, memory.get(), stored.get(), H5P_DEFAULT,
                out.data()),
        what, action);
  return out;
}

void MemberFile::append(const MemberRecord& member) {
  UWJIT_ASSERT(m_open != nullptr, "append() on a MemberFile moved from");
  const std::string what = "member file " + m_path.string();
  check_record(member, m_columns, what);
  const QuietErrors quiet;
  MemberFileHandles& open = *m_open;
  open.torn = true;
  const hsize_t row = open.rows;
  auto column = open.datasets.begin();
  write_row(*column++, row, &member.id, what);
  write_row(*column++, row, &member.steps, what);
  const std::string status(member.status);
  const char* status_text = status.c_str();
  write_row(*column++, row, &status_text, what);
  for (const double& value : member.params) {
    write_row(*column++, row, &value, what);
  }
  for (const double& value : member.integrals) {
    write_row(*column++, row, &value, what);
  }
  for (const void* values : member.fields) {
    write_row(*column++, row, values, what);
  }
  check(H5Fflush(open.file.get(), H5F_SCOPE_LOCAL), what, "cannot flush");
  open.rows = row + 1;
  open.torn = false;
  m_rows = static_cast<std::int64_t>(open.rows);
}

} // namespace uwjit::runtime::detail
