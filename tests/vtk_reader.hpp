// The tests' reader of the VTK XML files uwjit writes: an ImageData file's extent and cell arrays
// (inline base64 with a UInt64 byte count), a parallel ImageData file's pieces and array
// declarations, and the cell arrays of the image its pieces make together.
#pragma once

#include "sandbox.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit_test {

/// One ImageData file: its piece's extent (first and last point index per axis) and its binary
/// cell arrays by name (their bytes, and values per cell).
struct VtiFile {
  std::array<std::int64_t, 6> extent{};
  std::map<std::string, std::string> arrays;
  std::map<std::string, int> components;

  [[nodiscard]] std::int64_t cells(int axis) const {
    return extent[2 * axis + 1] - extent[2 * axis];
  }
};

/// One parallel ImageData file: the whole extent, the arrays it declares (name: type) and its
/// pieces (extent, file relative to it).
struct PvtiFile {
  std::array<std::int64_t, 6> whole{};
  std::map<std::string, std::string> arrays;
  std::vector<std::pair<std::array<std::int64_t, 6>, std::string>> pieces;
};

namespace vtk_detail {

/// The value of attribute `name` in the tag that starts at `at`; throws when it has none.
inline std::string attribute(std::string_view text, std::size_t at, std::string_view name) {
  const std::size_t end = text.find('>', at);
  const std::string key = " " + std::string(name) + "=\"";
  const std::size_t found = text.find(key, at);
  if (found == std::string_view::npos || found > end) {
    return {};
  }
  const std::size_t begin = found + key.size();
  return std::string(text.substr(begin, text.find('"', begin) - begin));
}

inline std::array<std::int64_t, 6> extent_of(const std::string& text) {
  std::array<std::int64_t, 6> extent{};
  std::size_t at = 0;
  for (auto& value : extent) {
    std::size_t used = 0;
    value = std::stoll(text.substr(at), &used);
    at += used;
  }
  return extent;
}

inline std::string from_base64(std::string_view text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else {
      continue; // '=' and white space
    }
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

} // namespace vtk_detail

/// Reads an ImageData file uwjit wrote; throws std::runtime_error for one it cannot read.
inline VtiFile read_vti(const std::filesystem::path& path) {
  using namespace vtk_detail;
  const std::string text = read_text(path);
  VtiFile file;
  const std::size_t piece = text.find("<Piece ");
  if (text.find("<VTKFile type=\"ImageData\"") == std::string::npos || piece == std::string::npos) {
    throw std::runtime_error(path.string() + " is not an ImageData file");
  }
  file.extent = extent_of(attribute(text, piece, "Extent"));
  for (std::size_t at = text.find("<DataArray ", piece); at != std::string::npos;
       at = text.find("<DataArray ", at + 1)) {
    if (attribute(text, at, "format") != "binary") {
      continue;
    }
    const std::string name = attribute(text, at, "Name");
    const std::string count = attribute(text, at, "NumberOfComponents");
    const std::size_t begin = text.find('>', at) + 1;
    std::string bytes =
        from_base64(std::string_view(text).substr(begin, text.find('<', begin) - begin));
    std::uint64_t size = 0;
    std::memcpy(&size, bytes.data(), sizeof size);
    if (bytes.size() < 8 || size != bytes.size() - 8) {
      throw std::runtime_error(path.string() + ": array " + name + " holds other than it says");
    }
    file.arrays[name] = bytes.substr(8);
    file.components[name] = count.empty() ? 1 : std::stoi(count);
  }
  return file;
}

/// Reads a parallel ImageData file uwjit wrote; throws std::runtime_error for one it cannot read.
inline PvtiFile read_pvti(const std::filesystem::path& path) {
  using namespace vtk_detail;
  const std::string text = read_text(path);
  const std::size_t image = text.find("<PImageData ");
  if (text.find("<VTKFile type=\"PImageData\"") == std::string::npos ||
      image == std::string::npos) {
    throw std::runtime_error(path.string() + " is not a PImageData file");
  }
  PvtiFile file;
  file.whole = extent_of(attribute(text, image, "WholeExtent"));
  for (std::size_t at = text.find("<PDataArray "); at != std::string::npos;
       at = text.find("<PDataArray ", at + 1)) {
    file.arrays[attribute(text, at, "Name")] = attribute(text, at, "type");
  }
  for (std::size_t at = text.find("<Piece "); at != std::string::npos;
       at = text.find("<Piece ", at + 1)) {
    file.pieces.emplace_back(extent_of(attribute(text, at, "Extent")),
                             attribute(text, at, "Source"));
  }
  return file;
}

/// The cell arrays of the whole image a parallel ImageData file's pieces make (each array's
/// values in VTK order, x fastest), as read_vti gives a whole file's. Throws std::runtime_error
/// if a piece is missing or lies outside the image.
inline std::map<std::string, std::string> joined_arrays(const std::filesystem::path& pvti) {
  const PvtiFile index = read_pvti(pvti);
  std::array<std::int64_t, 3> n{};
  for (int a = 0; a < 3; ++a) {
    n[static_cast<std::size_t>(a)] = index.whole[2 * a + 1] - index.whole[2 * a];
  }
  std::map<std::string, std::string> whole;
  for (const auto& [extent, source] : index.pieces) {
    const VtiFile piece = read_vti(pvti.parent_path() / source);
    if (piece.extent != extent) {
      throw std::runtime_error(source + ": its extent is not the index's");
    }
    for (const auto& [name, bytes] : piece.arrays) {
      const auto cells = static_cast<std::size_t>(piece.cells(0) * piece.cells(1) * piece.cells(2));
      const std::size_t value = cells == 0 ? 0 : bytes.size() / cells; // bytes per cell
      std::string& out = whole[name];
      out.resize(value * static_cast<std::size_t>(n[0] * n[1] * n[2]));
      std::size_t at = 0;
      for (std::int64_t z = extent[4]; z < extent[5]; ++z) {
        for (std::int64_t y = extent[2]; y < extent[3]; ++y) {
          for (std::int64_t x = extent[0]; x < extent[1]; ++x, at += value) {
            if (x >= n[0] || y >= n[1] || z >= n[2] || at + value > bytes.size()) {
              throw std::runtime_error(source + ": a cell outside the image");
            }
            const auto cell = static_cast<std::size_t>((z * n[1] + y) * n[0] + x);
            std::memcpy(out.data() + cell * value, bytes.data() + at, value);
          }
        }
      }
    }
  }
  return whole;
}

} // namespace uwjit_test
