// A 2-D Voronoi mesh for the fvm node: cells around the perturbed points of a triangular
// lattice, with Dirichlet points on the outer ring.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace uwjit::nodes::detail {

struct VoronoiMesh {
  // Cells (the Voronoi cells of the interior points), in a shuffled order.
  std::vector<double> centre;                     ///< 2 per cell: the generator point
  std::vector<double> volume;                     ///< cell areas
  std::vector<std::vector<std::int64_t>> polygon; ///< per cell: vertex indices, counter-clockwise
  // Faces between two cells.
  std::vector<std::int32_t> owner, neighbour;
  std::vector<double> area; ///< face lengths (areas per unit depth)
  // Faces between a cell and a Dirichlet point of the outer ring.
  std::vector<std::int32_t> boundary_owner;
  std::vector<double> boundary_area;
  std::vector<double> boundary_point; ///< 2 per face
  std::vector<double> boundary_value; ///< the Dirichlet value at that point
  // Polygon vertices (triangle circumcentres), 2 per vertex.
  std::vector<double> vertex;
  double width = 0, height = 0, spacing = 0;
};

/// Points per row `n` (>= 4), rows chosen for a near-square domain of width 1; interior points
/// moved by up to `perturbation` × spacing (< 0.25) in x and y by a generator seeded with `seed`.
/// Throws Error(usage) if the perturbed triangulation is not Delaunay (perturbation too large).
[[nodiscard]] VoronoiMesh make_voronoi_mesh(std::int64_t n, double perturbation, std::uint64_t seed,
                                            const std::function<double(double, double)>& value);

} // namespace uwjit::nodes::detail
