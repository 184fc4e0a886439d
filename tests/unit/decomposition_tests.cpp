// runtime/src/decomposition: the Cartesian split as pure functions of the layout, the grid and a
// rank, over every split of 1-64 cells on 1-8 ranks, uneven and multi-axis.
#include "collective_file.hpp"
#include "decomposition.hpp"
#include "node_layout.hpp"

#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

using uwjit::runtime::Boundary;
using uwjit::runtime::detail::balanced_grid;
using uwjit::runtime::detail::Decomposition;
using uwjit::runtime::detail::Layout;

namespace {

Layout layout_of(std::vector<std::int64_t> domain, int halo, Boundary boundary) {
  Layout layout;
  layout.domain = std::move(domain);
  layout.halo.assign(layout.domain.size(), halo);
  layout.boundary.assign(layout.domain.size(), boundary);
  layout.modes.assign(layout.domain.size(), uwjit::codegen::ExtentMode::runtime);
  layout.axis_names = {"nx", "ny", "nz"};
  layout.axis_names.resize(layout.domain.size());
  return layout;
}

} // namespace

TEST_CASE("every split of 1 to 64 cells over 1 to 8 ranks tiles the axis, the first n % p ranks "
          "one cell wider") {
  for (std::int64_t n = 1; n <= 64; ++n) {
    for (int p = 1; p <= 8 && p <= n; ++p) {
      const Decomposition d{nullptr, {0}, {p}};
      const Layout layout = layout_of({n}, 1, Boundary::edge);
      std::int64_t next = 0;
      for (int r = 0; r < p; ++r) {
        const auto shard = d.shard_of(layout, r);
        INFO("n=" << n << " p=" << p << " rank " << r);
        CHECK(shard.offset[0] == next);
        CHECK(shard.extent[0] == n / p + (r < n % p ? 1 : 0));
        CHECK(shard.global[0] == n);
        CHECK(shard.coords[0] == r);
        next += shard.extent[0];
      }
      CHECK(next == n);
    }
  }
}

TEST_CASE("multi-axis splits cover every cell exactly once, on balanced grids of 1 to 8 ranks") {
  const std::vector<std::int64_t> domain{13, 7, 5};
  for (const std::vector<int>& axes : {std::vector<int>{0, 1}, std::vector<int>{0, 2},
                                       std::vector<int>{1, 2}, std::vector<int>{0, 1, 2}}) {
    for (int p = 1; p <= 8; ++p) {
      const auto grid = balanced_grid(p, axes.size());
      REQUIRE(grid.size() == axes.size());
      CHECK(std::accumulate(grid.begin(), grid.end(), 1, std::multiplies<>()) == p);
      CHECK(std::is_sorted(grid.rbegin(), grid.rend())); // larger counts first
      const Decomposition d{nullptr, axes, grid};
      const Layout layout = layout_of(domain, 1, Boundary::periodic);
      std::vector<int> covered(13 * 7 * 5, 0);
      for (int r = 0; r < p; ++r) {
        const auto s = d.shard_of(layout, r);
        CHECK(d.rank_of(d.coords_of(r)) == r);
        for (std::int64_t i = 0; i < s.extent[0]; ++i) {
          for (std::int64_t j = 0; j < s.extent[1]; ++j) {
            for (std::int64_t k = 0; k < s.extent[2]; ++k) {
              ++covered[static_cast<std::size_t>(((s.offset[0] + i) * 7 + s.offset[1] + j) * 5 +
                                                 s.offset[2] + k)];
            }
          }
        }
      }
      INFO("p=" << p);
      CHECK(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
    }
  }
}

TEST_CASE("neighbours wrap on a periodic axis, static data too (as its serial padding), and stop "
          "at an edge") {
  const Decomposition d{nullptr, {0}, {4}};
  const Layout periodic = layout_of({16}, 1, Boundary::periodic);
  const Layout edge = layout_of({16}, 1, Boundary::edge);
  for (int r = 0; r < 4; ++r) {
    const auto state = d.plans(periodic, Decomposition::For::state, r);
    CHECK(state[0].exchange);
    CHECK(state[0].low == (r + 3) % 4);
    CHECK(state[0].high == (r + 1) % 4);
    const auto statics = d.plans(periodic, Decomposition::For::statics, r);
    CHECK(statics[0].exchange);
    CHECK(statics[0].low == (r + 3) % 4);
    CHECK(statics[0].high == (r + 1) % 4);
    CHECK(statics[0].boundary == Boundary::periodic);
    const auto edge_statics = d.plans(edge, Decomposition::For::statics, r);
    CHECK(edge_statics[0].low == (r == 0 ? -1 : r - 1));
    CHECK(edge_statics[0].high == (r == 3 ? -1 : r + 1));
    CHECK(edge_statics[0].boundary == Boundary::edge);
    const auto walls = d.plans(edge, Decomposition::For::state, r);
    CHECK(walls[0].low == (r == 0 ? -1 : r - 1));
    CHECK(walls[0].high == (r == 3 ? -1 : r + 1));
  }
  // One rank along the axis: filled locally, no exchange.
  const Decomposition alone{nullptr, {0}, {1}};
  CHECK_FALSE(alone.plans(periodic, Decomposition::For::state, 0)[0].exchange);
}

TEST_CASE("a computed face is the state's: static data pads it as edge, sharded or not") {
  using uwjit::runtime::BoundaryFace;
  const Boundary walls{.low = BoundaryFace::dirichlet(1), .high = BoundaryFace::neumann(0.5)};
  const Layout layout = layout_of({16, 8}, 1, walls);
  const Decomposition d{nullptr, {0}, {4}};
  for (int r = 0; r < 4; ++r) {
    const auto state = d.plans(layout, Decomposition::For::state, r);
    CHECK(state[0].boundary == walls);
    CHECK(state[0].low == (r == 0 ? -1 : r - 1)); // the global faces are filled by their rule
    CHECK(state[1].boundary == walls);
    for (const auto& plan : d.plans(layout, Decomposition::For::statics, r)) {
      CHECK(plan.boundary == Boundary::edge);
    }
  }
}

namespace {

// A node whose only purpose is its layout.
class LayoutNode final : public uwjit::runtime::Node {
public:
  LayoutNode(Boundary boundary, uwjit::runtime::Dtype dtype)
      : Node("layout", "walls", {}), m_boundary(boundary), m_dtype(dtype) {}
  uwjit::runtime::NodeLayout layout() const override {
    auto axes = uwjit::runtime::NodeLayout::grid({8, 6}, 1);
    axes[1].boundary = m_boundary;
    return {.axes = axes, .fields = {{"u", uwjit::runtime::Dtype::f64}, {"m", m_dtype}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter&) const override {}

private:
  Boundary m_boundary;
  uwjit::runtime::Dtype m_dtype;
};

std::string layout_error(Boundary boundary,
                         uwjit::runtime::Dtype dtype = uwjit::runtime::Dtype::f32) {
  try {
    (void)uwjit::runtime::detail::read_layout(LayoutNode(boundary, dtype));
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    return error.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("a layout with periodic on one face, a value that is not finite, or a computed face "
          "on an integer field is a usage error naming the node and the axis") {
  using uwjit::runtime::BoundaryFace;
  CHECK(layout_error({.low = BoundaryFace::edge(), .high = BoundaryFace::periodic()}) ==
        "node \"walls\": axis 1 (ny): periodic on the high face only (periodic needs both faces)");
  CHECK(layout_error({.low = {BoundaryFace::Kind::dirichlet, std::nan("")},
                      .high = BoundaryFace::dirichlet(0)}) ==
        "node \"walls\": axis 1 (ny): the low face's dirichlet value is nan (need a finite "
        "number)");
  CHECK(
      layout_error({.low = BoundaryFace::edge(), .high = {BoundaryFace::Kind::neumann, -1e301}}) ==
      "node \"walls\": axis 1 (ny): the high face's neumann gradient -1e+301 is not a finite "
      "number within [-1e300, 1e300] (the halo holds mirror + gradient (2k - 1), which must not "
      "overflow)");
  CHECK(layout_error(Boundary::both(BoundaryFace::dirichlet(1e38)), uwjit::runtime::Dtype::f32) ==
        "node \"walls\": axis 1 (ny), field \"m\": the low face's dirichlet 1e+38 is out of "
        "range [-1e37, 1e37] for an f32 field");
  CHECK(layout_error(Boundary::both(BoundaryFace::neumann(1)), uwjit::runtime::Dtype::i32) ==
        "node \"walls\": axis 1 (ny): a neumann 1 boundary needs floating-point state fields, but "
        "\"m\" is i32");
  CHECK(layout_error({.low = BoundaryFace::dirichlet(2), .high = BoundaryFace::neumann(-1)}) ==
        "(no error)");
}

TEST_CASE("a slab's runs in the whole array are its cells, in the order of both, merged where rows "
          "are whole") {
  using uwjit::runtime::detail::for_each_run;
  const std::vector<std::int64_t> shape{3, 5, 4, 6};
  // Every box of a few offsets and extents on each axis, against the cells one by one.
  for (const auto& [offset, extent] :
       std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>{
           {{0, 0, 0, 0}, {3, 5, 4, 6}},
           {{0, 2, 0, 0}, {3, 2, 4, 6}},
           {{1, 0, 1, 0}, {2, 5, 2, 6}},
           {{0, 1, 2, 3}, {3, 3, 1, 2}},
           {{2, 4, 3, 5}, {1, 1, 1, 1}}}) {
    CAPTURE(offset[1]);
    std::vector<std::int64_t> expected; // the whole array's index of each box cell, row-major
    for (std::int64_t a = 0; a < extent[0]; ++a) {
      for (std::int64_t b = 0; b < extent[1]; ++b) {
        for (std::int64_t c = 0; c < extent[2]; ++c) {
          for (std::int64_t d = 0; d < extent[3]; ++d) {
            expected.push_back((((offset[0] + a) * 5 + offset[1] + b) * 4 + offset[2] + c) * 6 +
                               offset[3] + d);
          }
        }
      }
    }
    std::vector<std::int64_t> got;
    std::int64_t runs = 0;
    for_each_run(shape, offset, extent,
                 [&](std::int64_t whole, std::int64_t packed, std::int64_t count) {
                   CHECK(packed == static_cast<std::int64_t>(got.size()));
                   for (std::int64_t i = 0; i < count; ++i) {
                     got.push_back(whole + i);
                   }
                   ++runs;
                 });
    CHECK(got == expected);
    if (extent == shape) {
      CHECK(runs == 1); // the whole array is one run
    } else if (extent[3] == 6 && extent[2] == 4) {
      CHECK(runs == extent[0]); // the whole (z, w) planes of each row merge into one run
    }
  }
  std::int64_t calls = 0;
  for_each_run(shape, std::vector<std::int64_t>{0, 0, 0, 0}, std::vector<std::int64_t>{3, 0, 4, 6},
               [&](std::int64_t, std::int64_t, std::int64_t) { ++calls; });
  CHECK(calls == 0); // an empty box has no runs
}
