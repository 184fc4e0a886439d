// What a VTK ImageData file holds, as values: the data arrays, the dataset's FieldData and the
// image's geometry, which a node makes (Node::vtk_image) and the VTK writers write (vtk.hpp).
#pragma once

#include <uwjit/codegen/dtype.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace uwjit::runtime {

using codegen::Dtype;

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

/// The geometry of an ImageData: cells per axis (1 for the axes a domain lacks), the origin of
/// the image's corner and the cell size, and the index of the file's first cell in the image:
/// {0, 0, 0} for a whole image; a slab's offset for one piece of an image written in pieces
/// (Simulation::write_vtk, sharded), whose pieces share the image's origin.
struct ImageGeometry {
  std::array<std::int64_t, 3> cells = {1, 1, 1};
  std::array<std::int64_t, 3> first = {0, 0, 0};
  std::array<double, 3> origin = {0, 0, 0};
  std::array<double, 3> spacing = {1, 1, 1};
};

/// An ImageData as a node makes it: its geometry, its cell data and its FieldData.
struct VtkImage {
  ImageGeometry geometry;
  std::vector<VtkArray> cells;
  std::vector<VtkFieldValue> field_data;
};

} // namespace uwjit::runtime
