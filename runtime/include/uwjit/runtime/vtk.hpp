// VTK XML output: ImageData (.vti) for grid nodes, UnstructuredGrid (.vtu) for meshes; both
// open in ParaView.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/snapshot.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace uwjit::runtime {

/// One data array in VTK order, with `components` values per cell (1 for scalars, 3 for vectors).
struct VtkArray {
  std::string name;
  Dtype dtype = Dtype::f64;
  int components = 1;
  std::vector<std::byte> bytes;

  /// An array of `values` (already in VTK order: cell by cell, components interleaved).
  template <class T>
  [[nodiscard]] static VtkArray of(std::string name, std::span<const T> values,
                                   int components = 1) {
    VtkArray array{std::move(name), codegen::dtype_of<T>, components, {}};
    array.bytes.resize(values.size_bytes());
    if (!values.empty()) {
      std::memcpy(array.bytes.data(), values.data(), values.size_bytes());
    }
    return array;
  }
};

/// One value of a file's FieldData (data about the whole dataset, not per cell): an integer
/// (Int64), a double (Float64) or a string (a VTK String array), one tuple each.
struct VtkFieldValue {
  std::string name;
  std::variant<std::int64_t, double, std::string> value;
};

/// What a node's VTK file records about its dataset (its FieldData): "step", "time" (step × dt),
/// "dt", "node_type", "node_name", "kernel_key" (its first kernel's key) and each of the node's
/// params as "param_NAME" (an integer, a number or a string; a tuple as its text). What
/// Node::write_vtk and the built-in nodes' files carry. Thread-safe.
[[nodiscard]] std::vector<VtkFieldValue> vtk_field_data(const Node& node, const Snapshot& snapshot);

/// The interior of `field` as ImageData cell data: the last `domain_axes` axes are x, y, z
/// (VTK's x varies fastest); the leading axes, if any, become the components (their product,
/// 1 to 9 values per cell). Throws Error(usage) otherwise.
[[nodiscard]] VtkArray image_cells(const Field& field, int domain_axes);

/// The geometry of an ImageData: cells per axis (1 for the axes a domain lacks), the origin of
/// the first cell's corner and the cell size.
struct ImageGeometry {
  std::array<std::int64_t, 3> cells = {1, 1, 1};
  std::array<double, 3> origin = {0, 0, 0};
  std::array<double, 3> spacing = {1, 1, 1};
};

/// Writes a VTK XML ImageData file (.vti, version 1.0, little-endian, inline base64 binary with
/// UInt64 headers) with the arrays as cell data and `field_data` as the dataset's FieldData
/// (ASCII; a string as its character codes, each string ended by 0, as VTK writes it). Each array
/// must hold one value (times its components) per cell. Throws Error(usage) for a mismatch,
/// Error(io) if the file cannot be written (it is written to a temporary name and renamed).
void write_image_data(const std::filesystem::path& path, const ImageGeometry& geometry,
                      std::span<const VtkArray> cell_data,
                      std::span<const VtkFieldValue> field_data = {});

/// An unstructured grid: points (x, y, z each), cells as VTK connectivity, offsets (the end of
/// each cell in connectivity) and cell types (5 triangle, 7 polygon, 9 quad, 12 hexahedron, ...).
struct UnstructuredGeometry {
  std::vector<double> points;
  std::vector<std::int64_t> connectivity;
  std::vector<std::int64_t> offsets;
  std::vector<std::uint8_t> types;
};

/// Writes a VTK XML UnstructuredGrid file (.vtu), as write_image_data does.
void write_unstructured_grid(const std::filesystem::path& path,
                             const UnstructuredGeometry& geometry,
                             std::span<const VtkArray> cell_data,
                             std::span<const VtkFieldValue> field_data = {});

/// One dataset of a time series: its file (relative to the collection file) and its time.
struct VtkSeriesEntry {
  std::filesystem::path file;
  double time = 0;
};

/// Writes a ParaView collection file (.pvd, VTKFile type "Collection", version 0.1) listing
/// `entries` in order, so that ParaView opens them as one time series. Throws Error(io) as
/// write_image_data does.
void write_collection(const std::filesystem::path& path, std::span<const VtkSeriesEntry> entries);

} // namespace uwjit::runtime
