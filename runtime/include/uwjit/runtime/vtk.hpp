// VTK XML output: ImageData (.vti) for grid nodes, in pieces with a parallel index (.pvti) when
// each rank writes its own slab, UnstructuredGrid (.vtu) for meshes; all open in ParaView.
#pragma once

#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/snapshot.hpp>
#include <uwjit/runtime/vtk_image.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

/// The first bytes of every VTK file uwjit writes: a file at an output's name that is not empty
/// and does not start with them is never replaced (Error(io) instead).
inline constexpr std::string_view k_vtk_magic = "<?xml version=\"1.0\"?>\n<VTKFile";
/// What those files are, in messages.
inline constexpr std::string_view k_vtk_kind = "VTK XML file";

/// What a node's VTK file records about its dataset (its FieldData): "step", "time" (step × dt),
/// "dt", "node_type", "node_name", "kernel_key" (its first kernel's key) and each of the node's
/// params as "param_NAME" (an integer, a number or a string; a tuple as its text). What
/// Node::write_vtk and the built-in nodes' files carry. Thread-safe.
[[nodiscard]] std::vector<VtkFieldValue> vtk_field_data(const Node& node, const Snapshot& snapshot);

/// The interior of `field` as ImageData cell data: the last `domain_axes` axes are x, y, z
/// (VTK's x varies fastest); the leading axes, if any, become the components (their product,
/// 1 to 9 values per cell). Throws Error(usage) otherwise.
[[nodiscard]] VtkArray image_cells(const Field& field, int domain_axes);

/// Writes a VTK XML ImageData file (.vti, version 1.0, little-endian, inline base64 binary with
/// UInt64 headers) with the arrays as cell data and `field_data` as the dataset's FieldData
/// (ASCII; a string as its character codes, each string ended by 0, as VTK writes it). Each array
/// must hold one value (times its components) per cell. Its extent runs from geometry.first to
/// geometry.first + geometry.cells (a piece of a larger image when first is not 0). Throws
/// Error(usage) for a mismatch, Error(io) if the file cannot be written (it is written to a
/// temporary name and renamed).
void write_image_data(const std::filesystem::path& path, const ImageGeometry& geometry,
                      std::span<const VtkArray> cell_data,
                      std::span<const VtkFieldValue> field_data = {});

/// write_image_data of an image.
void write_image_data(const std::filesystem::path& path, const VtkImage& image);

/// One piece of an image written in pieces: its file (relative to the parallel file) and its
/// cells (ImageGeometry::first and ::cells).
struct VtkPiece {
  std::filesystem::path file;
  std::array<std::int64_t, 3> first = {0, 0, 0};
  std::array<std::int64_t, 3> cells = {1, 1, 1};
};

/// Writes a VTK XML parallel ImageData file (.pvti, PImageData version 1.0): the whole image's
/// geometry (`whole`, whose first must be 0), the cell arrays every piece holds (the names,
/// dtypes and components of `arrays`; their bytes are not read) and the pieces, which ParaView
/// reads and joins as one dataset. Each piece's FieldData is its own file's. Throws
/// Error(usage) if a piece lies outside the image, Error(io) as write_image_data does.
void write_parallel_image_data(const std::filesystem::path& path, const ImageGeometry& whole,
                               std::span<const VtkArray> arrays, std::span<const VtkPiece> pieces);

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
