// The VTK writers: an ImageData piece carries its place in the image, and a parallel ImageData
// file lists the pieces and the arrays they hold, which joined give the image written whole.
#include "sandbox.hpp"
#include "vtk_reader.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using uwjit::runtime::ImageGeometry;
using uwjit::runtime::VtkArray;
using uwjit::runtime::VtkPiece;

namespace {

// Cell values of a 5×3×2 image, x fastest: 100 z + 10 y + x; and a vector of three per cell.
std::vector<double> scalars(std::int64_t x0, std::int64_t nx) {
  std::vector<double> values;
  for (int z = 0; z < 2; ++z) {
    for (int y = 0; y < 3; ++y) {
      for (std::int64_t x = x0; x < x0 + nx; ++x) {
        values.push_back(100.0 * z + 10.0 * y + static_cast<double>(x));
      }
    }
  }
  return values;
}

std::vector<std::int32_t> vectors(std::int64_t x0, std::int64_t nx) {
  std::vector<std::int32_t> values;
  for (const double v : scalars(x0, nx)) {
    values.insert(values.end(), {static_cast<std::int32_t>(v), -1, 7});
  }
  return values;
}

std::vector<VtkArray> arrays(std::int64_t x0, std::int64_t nx) {
  const auto s = scalars(x0, nx);
  const auto v = vectors(x0, nx);
  return {VtkArray::of<double>("u", s), VtkArray::of<std::int32_t>("v", v, 3)};
}

} // namespace

TEST_CASE("an image in two pieces with a parallel index joins to the image written whole") {
  const uwjit_test::TempDir dir("uwjit-vtk");
  ImageGeometry whole;
  whole.cells = {5, 3, 2};
  whole.spacing = {0.5, 1, 2};
  uwjit::runtime::write_image_data(dir.path() / "whole.vti", whole, arrays(0, 5));
  // Cells 0..1 and 2..4 along x.
  std::vector<VtkPiece> pieces;
  std::filesystem::create_directories(dir.path() / "p");
  for (const auto& [x0, nx] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {2, 3}}) {
    ImageGeometry piece = whole;
    piece.first = {x0, 0, 0};
    piece.cells = {nx, 3, 2};
    const std::string file = "p/p_" + std::to_string(x0) + ".vti";
    uwjit::runtime::write_image_data(dir.path() / file, piece, arrays(x0, nx));
    pieces.push_back({file, piece.first, piece.cells});
  }
  uwjit::runtime::write_parallel_image_data(dir.path() / "p.pvti", whole, arrays(0, 5), pieces);

  const std::string piece = uwjit_test::read_text(dir.path() / "p" / "p_2.vti");
  CHECK(piece.find("WholeExtent=\"2 5 0 3 0 2\"") != std::string::npos);
  CHECK(piece.find("<Piece Extent=\"2 5 0 3 0 2\">") != std::string::npos);
  const std::string index = uwjit_test::read_text(dir.path() / "p.pvti");
  CHECK(index.find("<VTKFile type=\"PImageData\"") != std::string::npos);
  CHECK(index.find("WholeExtent=\"0 5 0 3 0 2\" GhostLevel=\"0\" Origin=\"0 0 0\" "
                   "Spacing=\"0.5 1 2\"") != std::string::npos);
  CHECK(index.find("<PDataArray type=\"Float64\" Name=\"u\"/>") != std::string::npos);
  CHECK(index.find("<PDataArray type=\"Int32\" Name=\"v\" NumberOfComponents=\"3\"/>") !=
        std::string::npos);
  CHECK(index.find("<Piece Extent=\"0 2 0 3 0 2\" Source=\"p/p_0.vti\"/>") != std::string::npos);
  CHECK(uwjit_test::joined_arrays(dir.path() / "p.pvti") ==
        uwjit_test::read_vti(dir.path() / "whole.vti").arrays);
}

TEST_CASE("a parallel index refuses a piece outside the image, naming it") {
  const uwjit_test::TempDir dir("uwjit-vtk");
  ImageGeometry whole;
  whole.cells = {5, 3, 2};
  const std::vector<VtkPiece> pieces = {{"a.vti", {3, 0, 0}, {3, 3, 2}}};
  try {
    uwjit::runtime::write_parallel_image_data(dir.path() / "p.pvti", whole, arrays(0, 5), pieces);
    FAIL("no error");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    CHECK(std::string(error.what()).find("a.vti") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "p.pvti"));
}
