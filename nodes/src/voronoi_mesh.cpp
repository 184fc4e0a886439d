#include "voronoi_mesh.hpp"

#include "params.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

namespace uwjit::nodes::detail {

namespace {

using Point = std::array<double, 2>;

Point circumcentre(const Point& a, const Point& b, const Point& c) {
  const double bx = b[0] - a[0], by = b[1] - a[1];
  const double cx = c[0] - a[0], cy = c[1] - a[1];
  const double d = 2.0 * (bx * cy - by * cx);
  const double b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
  return {a[0] + (cy * b2 - by * c2) / d, a[1] + (bx * c2 - cx * b2) / d};
}

double cross(const Point& o, const Point& a, const Point& b) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

template <class T> void shuffle(std::vector<T>& items, SplitMix& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[static_cast<std::size_t>(rng.next() % i)]);
  }
}

} // namespace

VoronoiMesh make_voronoi_mesh(std::int64_t n, double perturbation, std::uint64_t seed,
                              const std::function<double(double, double)>& value) {
  const double h = 1.0 / static_cast<double>(n - 1);
  const double row = h * std::sqrt(3.0) / 2.0;
  const auto rows = std::max<std::int64_t>(4, std::llround(1.0 / row) + 1);
  auto index = [n](std::int64_t a, std::int64_t b) { return b * n + a; };

  SplitMix rng(seed);
  std::vector<Point> point(static_cast<std::size_t>(n * rows));
  std::vector<bool> on_ring(point.size());
  for (std::int64_t b = 0; b < rows; ++b) {
    for (std::int64_t a = 0; a < n; ++a) {
      const auto p = static_cast<std::size_t>(index(a, b));
      point[p] = {(static_cast<double>(a) + 0.5 * static_cast<double>(b % 2)) * h,
                  static_cast<double>(b) * row};
      on_ring[p] = a == 0 || a == n - 1 || b == 0 || b == rows - 1;
      if (!on_ring[p]) {
        point[p][0] += perturbation * h * rng.symmetric();
        point[p][1] += perturbation * h * rng.symmetric();
      }
    }
  }

  // The lattice's triangles; small perturbations keep them Delaunay (checked below).
  std::vector<std::array<std::int64_t, 3>> triangles;
  for (std::int64_t b = 0; b + 1 < rows; ++b) {
    for (std::int64_t a = 0; a + 1 < n; ++a) {
      if (b % 2 == 0) {
        triangles.push_back({index(a, b), index(a + 1, b), index(a, b + 1)});
        triangles.push_back({index(a + 1, b), index(a + 1, b + 1), index(a, b + 1)});
      } else {
        triangles.push_back({index(a, b), index(a + 1, b + 1), index(a, b + 1)});
        triangles.push_back({index(a, b), index(a + 1, b), index(a + 1, b + 1)});
      }
    }
  }
  VoronoiMesh mesh;
  mesh.spacing = h;
  mesh.width = (static_cast<double>(n - 1) + 0.5) * h; // odd rows reach half a spacing further
  mesh.height = static_cast<double>(rows - 1) * row;
  std::vector<Point> centre(triangles.size());
  std::vector<std::vector<std::int64_t>> around(point.size());
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> edges;
  for (std::size_t t = 0; t < triangles.size(); ++t) {
    const auto& tri = triangles[t];
    centre[t] = circumcentre(point[static_cast<std::size_t>(tri[0])],
                             point[static_cast<std::size_t>(tri[1])],
                             point[static_cast<std::size_t>(tri[2])]);
    mesh.vertex.push_back(centre[t][0]);
    mesh.vertex.push_back(centre[t][1]);
    for (int e = 0; e < 3; ++e) {
      const std::int64_t p = tri[static_cast<std::size_t>(e)];
      const std::int64_t q = tri[static_cast<std::size_t>((e + 1) % 3)];
      around[static_cast<std::size_t>(p)].push_back(static_cast<std::int64_t>(t));
      edges[{std::min(p, q), std::max(p, q)}].push_back(static_cast<std::int64_t>(t));
    }
  }

  // Interior points become cells, numbered in a shuffled order: the kernel must not rely on
  // neighbours being near in memory.
  std::vector<std::int64_t> interior;
  for (std::size_t p = 0; p < point.size(); ++p) {
    if (!on_ring[p]) {
      interior.push_back(static_cast<std::int64_t>(p));
    }
  }
  shuffle(interior, rng);
  std::vector<std::int64_t> cell_of(point.size(), -1);
  for (std::size_t c = 0; c < interior.size(); ++c) {
    cell_of[static_cast<std::size_t>(interior[c])] = static_cast<std::int64_t>(c);
  }
  for (const std::int64_t p : interior) {
    const Point& x = point[static_cast<std::size_t>(p)];
    auto ring = around[static_cast<std::size_t>(p)];
    UWJIT_ASSERT(ring.size() == 6, "fvm mesh: an interior point without six triangles");
    std::sort(ring.begin(), ring.end(), [&](std::int64_t s, std::int64_t t) {
      const Point& cs = centre[static_cast<std::size_t>(s)];
      const Point& ct = centre[static_cast<std::size_t>(t)];
      return std::atan2(cs[1] - x[1], cs[0] - x[0]) < std::atan2(ct[1] - x[1], ct[0] - x[0]);
    });
    double area = 0;
    for (std::size_t v = 0; v < ring.size(); ++v) {
      const Point& a = centre[static_cast<std::size_t>(ring[v])];
      const Point& b = centre[static_cast<std::size_t>(ring[(v + 1) % ring.size()])];
      area += a[0] * b[1] - a[1] * b[0];
    }
    mesh.centre.push_back(x[0]);
    mesh.centre.push_back(x[1]);
    mesh.volume.push_back(area / 2);
    mesh.polygon.push_back(std::move(ring));
  }

  struct Face {
    std::int32_t owner, neighbour;
    double area;
  };
  std::vector<Face> faces;
  for (const auto& [edge, tris] : edges) {
    const auto [p, q] = edge;
    if (on_ring[static_cast<std::size_t>(p)] && on_ring[static_cast<std::size_t>(q)]) {
      continue;
    }
    UWJIT_ASSERT(tris.size() == 2, "fvm mesh: an inner edge without two triangles");
    const Point& xp = point[static_cast<std::size_t>(p)];
    const Point& xq = point[static_cast<std::size_t>(q)];
    // Orient the dual edge: from the circumcentre right of p→q to the one on its left. In a
    // Delaunay triangulation it points the way p→q turned left; otherwise the cell is invalid.
    auto third = [&](std::int64_t t) {
      for (const std::int64_t v : triangles[static_cast<std::size_t>(t)]) {
        if (v != p && v != q) {
          return point[static_cast<std::size_t>(v)];
        }
      }
      return xp;
    };
    const bool first_left = cross(xp, xq, third(tris[0])) > 0;
    const Point& left = centre[static_cast<std::size_t>(tris[first_left ? 0 : 1])];
    const Point& right = centre[static_cast<std::size_t>(tris[first_left ? 1 : 0])];
    const double along =
        (left[0] - right[0]) * -(xq[1] - xp[1]) + (left[1] - right[1]) * (xq[0] - xp[0]);
    if (!(along > 0)) {
      throw Error(ErrorKind::usage,
                  format("fvm: the perturbation {} is too large: the mesh is not Delaunay near "
                         "({}, {})",
                         perturbation, xp[0], xp[1]));
    }
    const double length = std::hypot(left[0] - right[0], left[1] - right[1]);
    const std::int64_t cp = cell_of[static_cast<std::size_t>(p)];
    const std::int64_t cq = cell_of[static_cast<std::size_t>(q)];
    if (cp >= 0 && cq >= 0) {
      faces.push_back({static_cast<std::int32_t>(std::min(cp, cq)),
                       static_cast<std::int32_t>(std::max(cp, cq)), length});
    } else {
      const Point& fixed = cp >= 0 ? xq : xp;
      mesh.boundary_owner.push_back(static_cast<std::int32_t>(cp >= 0 ? cp : cq));
      mesh.boundary_area.push_back(length);
      mesh.boundary_point.push_back(fixed[0]);
      mesh.boundary_point.push_back(fixed[1]);
      mesh.boundary_value.push_back(value(fixed[0], fixed[1]));
    }
  }
  shuffle(faces, rng);
  for (const auto& f : faces) {
    mesh.owner.push_back(f.owner);
    mesh.neighbour.push_back(f.neighbour);
    mesh.area.push_back(f.area);
  }
  return mesh;
}

} // namespace uwjit::nodes::detail
