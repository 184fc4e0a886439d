#include <uwjit/runtime/vtk.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>

#include <array>
#include <charconv>

namespace uwjit::runtime {

namespace {

// What a VTK file uwjit writes is, and the only file at its name it replaces (besides an empty
// one): a VTK XML file, an earlier output. A file of the user's named like an output is refused.
constexpr posix::AtomicFileOptions k_vtk_file = {
    .mode = 0644, .replaces = k_vtk_magic, .kind = k_vtk_kind};

std::string_view vtk_type(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return "Float32";
  case Dtype::f64:
    return "Float64";
  case Dtype::i8:
    return "Int8";
  case Dtype::u8:
    return "UInt8";
  case Dtype::i32:
    return "Int32";
  case Dtype::i64:
    return "Int64";
  }
  throw Error(ErrorKind::usage, "vtk: unsupported dtype");
}

std::string xml_escaped(std::string_view text);

void base64(std::string& out, const unsigned char* data, std::size_t size) {
  static constexpr char k_alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t i = 0;
  for (; i + 2 < size; i += 3) {
    const unsigned v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += k_alphabet[(v >> 6) & 63];
    out += k_alphabet[v & 63];
  }
  if (i < size) {
    const unsigned v = (data[i] << 16) | (i + 1 < size ? data[i + 1] << 8 : 0);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += i + 1 < size ? k_alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

// One <DataArray> in VTK's inline binary form: base64 of a UInt64 byte count followed by the
// data, encoded as one stream (as VTK's own writer does for uncompressed data).
void data_array(std::string& out, std::string_view name, Dtype dtype, int components,
                std::span<const std::byte> bytes) {
  out += format("        <DataArray type=\"{}\" Name=\"{}\"", vtk_type(dtype), xml_escaped(name));
  if (components > 1) {
    out += format(" NumberOfComponents=\"{}\"", components);
  }
  out += " format=\"binary\">\n          ";
  std::vector<unsigned char> block(8 + bytes.size());
  const std::uint64_t count = bytes.size();
  for (int i = 0; i < 8; ++i) {
    block[static_cast<std::size_t>(i)] = static_cast<unsigned char>((count >> (8 * i)) & 0xFF);
  }
  if (!bytes.empty()) {
    std::memcpy(block.data() + 8, bytes.data(), bytes.size());
  }
  base64(out, block.data(), block.size());
  out += "\n        </DataArray>\n";
}

void cell_arrays(std::string& out, std::span<const VtkArray> arrays, std::int64_t cells) {
  out += "      <CellData>\n";
  for (const auto& a : arrays) {
    const auto expected = static_cast<std::size_t>(cells) * static_cast<std::size_t>(a.components) *
                          codegen::size_of(a.dtype);
    if (a.components < 1 || a.bytes.size() != expected) {
      throw Error(ErrorKind::usage,
                  format("vtk: array \"{}\" holds {} bytes, expected {} ({} cells x {} "
                         "components of {})",
                         a.name, a.bytes.size(), expected, cells, a.components,
                         codegen::to_string(a.dtype)));
    }
    data_array(out, a.name, a.dtype, a.components, a.bytes);
  }
  out += "      </CellData>\n";
}

// An image's extent in VTK's form: the first and last point index of each axis.
std::string extent_text(const std::array<std::int64_t, 3>& first,
                        const std::array<std::int64_t, 3>& cells) {
  return format("{} {} {} {} {} {}", first[0], first[0] + cells[0], first[1], first[1] + cells[1],
                first[2], first[2] + cells[2]);
}

std::string number(double value) {
  std::array<char, 32> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), end);
}

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// Integers and doubles as one ASCII tuple; a string as its character codes, ended by 0 (VTK's
// ASCII form of a String array).
void field_arrays(std::string& out, std::span<const VtkFieldValue> values) {
  if (values.empty()) {
    return;
  }
  out += "    <FieldData>\n";
  for (const auto& v : values) {
    std::string text;
    std::string_view type;
    if (const auto* i = std::get_if<std::int64_t>(&v.value)) {
      type = "Int64";
      text = std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&v.value)) {
      type = "Float64";
      text = number(*d);
    } else {
      type = "String";
      for (const char c : std::get<std::string>(v.value)) {
        text += std::to_string(static_cast<unsigned char>(c)) + " ";
      }
      text += "0";
    }
    out += format("      <DataArray type=\"{}\" Name=\"{}\" NumberOfTuples=\"1\" "
                  "format=\"ascii\">\n        {}\n      </DataArray>\n",
                  type, xml_escaped(v.name), text);
  }
  out += "    </FieldData>\n";
}

} // namespace

VtkArray image_cells(const Field& field, int domain_axes) {
  const int rank = field.rank();
  if (domain_axes < 1 || domain_axes > 3 || domain_axes > rank) {
    throw Error(ErrorKind::usage, format("vtk: field \"{}\" of rank {} with {} domain axes",
                                         field.name(), rank, domain_axes));
  }
  const auto& shape = field.shape();
  std::int64_t components = 1;
  for (int d = 0; d < rank - domain_axes; ++d) {
    components *= shape[static_cast<std::size_t>(d)];
  }
  if (components > 9) {
    throw Error(ErrorKind::usage, format("vtk: field \"{}\" has {} components per cell (at "
                                         "most 9 go into one VTK array)",
                                         field.name(), components));
  }
  std::array<std::int64_t, 3> n = {1, 1, 1};
  for (int a = 0; a < domain_axes; ++a) {
    n[static_cast<std::size_t>(a)] = shape[static_cast<std::size_t>(rank - domain_axes + a)];
  }
  const std::size_t element = codegen::size_of(field.dtype());
  VtkArray array{field.name(), field.dtype(), static_cast<int>(components), {}};
  array.bytes.resize(static_cast<std::size_t>(field.interior_count()) * element);
  const auto* base = static_cast<const std::byte*>(field.data());
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  std::size_t at = 0;
  for (std::int64_t z = 0; z < n[2]; ++z) {
    for (std::int64_t y = 0; y < n[1]; ++y) {
      for (std::int64_t x = 0; x < n[0]; ++x) {
        const std::int64_t xyz[3] = {x, y, z};
        for (int a = 0; a < domain_axes; ++a) {
          index[static_cast<std::size_t>(rank - domain_axes + a)] = xyz[a];
        }
        for (std::int64_t c = 0; c < components; ++c) {
          // The component index, row-major over the leading axes.
          std::int64_t rest = c;
          for (int d = rank - domain_axes; d-- > 0;) {
            index[static_cast<std::size_t>(d)] = rest % shape[static_cast<std::size_t>(d)];
            rest /= shape[static_cast<std::size_t>(d)];
          }
          std::memcpy(array.bytes.data() + at,
                      base + static_cast<std::size_t>(field.offset(index)) * element, element);
          at += element;
        }
      }
    }
  }
  return array;
}

void write_image_data(const std::filesystem::path& path, const ImageGeometry& g,
                      std::span<const VtkArray> cell_data,
                      std::span<const VtkFieldValue> field_data) {
  for (const std::int64_t n : g.cells) {
    if (n < 1) {
      throw Error(ErrorKind::usage, format("vtk: {}: cells per axis must be >= 1", path.string()));
    }
  }
  const std::string extent = extent_text(g.first, g.cells);
  std::string out = "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" "
                    "header_type=\"UInt64\">\n";
  out += format("  <ImageData WholeExtent=\"{}\" Origin=\"{} {} {}\" Spacing=\"{} {} {}\">\n",
                extent, number(g.origin[0]), number(g.origin[1]), number(g.origin[2]),
                number(g.spacing[0]), number(g.spacing[1]), number(g.spacing[2]));
  field_arrays(out, field_data);
  out += format("    <Piece Extent=\"{}\">\n", extent);
  cell_arrays(out, cell_data, g.cells[0] * g.cells[1] * g.cells[2]);
  out += "    </Piece>\n  </ImageData>\n</VTKFile>\n";
  posix::write_file_atomically(path, out, k_vtk_file);
}

void write_image_data(const std::filesystem::path& path, const VtkImage& image) {
  write_image_data(path, image.geometry, image.cells, image.field_data);
}

void write_parallel_image_data(const std::filesystem::path& path, const ImageGeometry& whole,
                               std::span<const VtkArray> arrays, std::span<const VtkPiece> pieces) {
  for (std::size_t a = 0; a < 3; ++a) {
    if (whole.cells[a] < 1 || whole.first[a] != 0) {
      throw Error(ErrorKind::usage, format("vtk: {}: the whole image's cells per axis must be >= "
                                           "1 and its first cell 0",
                                           path.string()));
    }
    for (const auto& piece : pieces) {
      if (piece.cells[a] < 1 || piece.first[a] < 0 ||
          piece.first[a] + piece.cells[a] > whole.cells[a]) {
        throw Error(ErrorKind::usage,
                    format("vtk: {}: piece {} (cells {} from {} on axis {}) is not within the "
                           "image's {} cells",
                           path.string(), piece.file.generic_string(), piece.cells[a],
                           piece.first[a], a, whole.cells[a]));
      }
    }
  }
  std::string out = "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" "
                    "header_type=\"UInt64\">\n";
  out += format("  <PImageData WholeExtent=\"{}\" GhostLevel=\"0\" Origin=\"{} {} {}\" "
                "Spacing=\"{} {} {}\">\n",
                extent_text(whole.first, whole.cells), number(whole.origin[0]),
                number(whole.origin[1]), number(whole.origin[2]), number(whole.spacing[0]),
                number(whole.spacing[1]), number(whole.spacing[2]));
  out += "    <PCellData>\n";
  for (const auto& a : arrays) {
    out +=
        format("      <PDataArray type=\"{}\" Name=\"{}\"", vtk_type(a.dtype), xml_escaped(a.name));
    if (a.components > 1) {
      out += format(" NumberOfComponents=\"{}\"", a.components);
    }
    out += "/>\n";
  }
  out += "    </PCellData>\n";
  for (const auto& piece : pieces) {
    out += format("    <Piece Extent=\"{}\" Source=\"{}\"/>\n",
                  extent_text(piece.first, piece.cells), xml_escaped(piece.file.generic_string()));
  }
  out += "  </PImageData>\n</VTKFile>\n";
  posix::write_file_atomically(path, out, k_vtk_file);
}

void write_unstructured_grid(const std::filesystem::path& path, const UnstructuredGeometry& g,
                             std::span<const VtkArray> cell_data,
                             std::span<const VtkFieldValue> field_data) {
  const std::size_t points = g.points.size() / 3;
  const std::size_t cells = g.types.size();
  if (g.points.size() % 3 != 0 || g.offsets.size() != cells ||
      (cells > 0 && g.offsets.back() != static_cast<std::int64_t>(g.connectivity.size()))) {
    throw Error(ErrorKind::usage,
                format("vtk: {}: inconsistent geometry ({} coordinates, {} types, {} offsets, "
                       "{} connectivity entries)",
                       path.string(), g.points.size(), cells, g.offsets.size(),
                       g.connectivity.size()));
  }
  for (const std::int64_t p : g.connectivity) {
    if (p < 0 || p >= static_cast<std::int64_t>(points)) {
      throw Error(ErrorKind::usage,
                  format("vtk: {}: connectivity names point {} of {}", path.string(), p, points));
    }
  }
  std::string out = "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" "
                    "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
                    "  <UnstructuredGrid>\n";
  field_arrays(out, field_data);
  out += format("    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">\n", points, cells);
  out += "      <Points>\n";
  data_array(out, "Points", Dtype::f64, 3, std::as_bytes(std::span(g.points)));
  out += "      </Points>\n      <Cells>\n";
  data_array(out, "connectivity", Dtype::i64, 1, std::as_bytes(std::span(g.connectivity)));
  data_array(out, "offsets", Dtype::i64, 1, std::as_bytes(std::span(g.offsets)));
  data_array(out, "types", Dtype::u8, 1, std::as_bytes(std::span(g.types)));
  out += "      </Cells>\n";
  cell_arrays(out, cell_data, static_cast<std::int64_t>(cells));
  out += "    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n";
  posix::write_file_atomically(path, out, k_vtk_file);
}

void write_collection(const std::filesystem::path& path, std::span<const VtkSeriesEntry> entries) {
  std::string out = "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
                    "  <Collection>\n";
  for (const auto& entry : entries) {
    out += format("    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}\"/>\n",
                  number(entry.time), xml_escaped(entry.file.generic_string()));
  }
  out += "  </Collection>\n</VTKFile>\n";
  posix::write_file_atomically(path, out, k_vtk_file);
}

} // namespace uwjit::runtime
