#include <uwjit/nodes/heat.hpp>

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/vtk.hpp>

#include "params.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <span>
#include <string>
#include <vector>

namespace uwjit::nodes {

using codegen::Axis;
using codegen::literal;
using runtime::Params;

namespace {
constexpr std::string_view k_type = "heat";
// The most cells for which the kernel reads each face's conductance, stored once, instead of
// computing it from kappa for each of the face's two cells (see emit_update). Stored faces trade
// six divisions per cell for 24 more bytes read (three face arrays instead of kappa); five
// arrays of 2^19 cells (u, its output, three face arrays) are 21 MB, within the 32 MB last-level
// cache of the 2-core AMD EPYC (Zen 4) this was measured on: there heat 64³ ran 2.0× faster with
// stored faces and 80³ 1.1×, but 128³, whose arrays come from memory, no faster (1 thread) and up
// to 7 % slower (2 threads). Both kernels give the same bits.
constexpr std::int64_t k_stored_faces_most_cells = std::int64_t{1} << 19;
// The tiles of the CPU kernel above that size (emit_faces_once): rows of cells whose faces below
// along x are kept from one plane to the next, 32 KB on the stack of the calling thread. On the
// 2-core Intel Xeon (Sapphire Rapids) heat 128^3 ran as fast with tiles of 16 x 256, 32 x 128
// and 128 x 128 (1.46-1.48x the cell form in a harness); 8 x 128 and 16 x 64 gained less.
constexpr std::int64_t k_tile_rows = 32;
constexpr std::int64_t k_tile_cells = 128;
} // namespace

std::span<const ParamDoc> HeatNode::param_docs() noexcept {
  static const ParamDoc k_docs[] = {
      {"nx", "grid cells along x", "cells", "[3, 16384]"},
      {"ny", "grid cells along y", "cells", "[3, 16384]"},
      {"nz", "grid cells along z", "cells", "[3, 16384]"},
      {"kappa", "background conductivity (diffusivity)", "cells^2 per unit time", "[1e-100, 1e12]"},
      {"contrast", "conductivity of the central sphere / kappa (1: uniform)", "", "[1e-12, 1e12]"},
      {"boundary",
       "the x walls: zero-gradient (insulating), periodic, or fixed u (dirichlet; y and z "
       "insulating)",
       "", "insulating, periodic, fixed"},
      {"u_low", "u on the wall x = 0 (boundary = fixed)", "u", "[-1e12, 1e12]"},
      {"u_high", "u on the wall x = nx (boundary = fixed)", "u", "[-1e12, 1e12]"},
      {"mode", "mode of the initial state along x (cosine; sine over the linear profile if fixed)",
       "", "[1, nx - 1] insulating or fixed, [1, (nx - 1) / 2] periodic"},
      {"amplitude", "amplitude of that mode around u = 1", "u", "[-1e12, 1e12]"},
      {"courant", "dt = courant / (kappa max(1, contrast)); stable below 1/6", "", "[1e-12, 1/6]"},
      {"extents", "grid extents compiled into the kernel, or passed at run time", "",
       "compiled, runtime"},
  };
  return k_docs;
}

Params HeatNode::defaults() {
  return Params{{"nx", 32},        {"ny", 32},
                {"nz", 32},        {"kappa", 1.0},
                {"contrast", 1.0}, {"boundary", "insulating"},
                {"mode", 1},       {"amplitude", 0.5},
                {"courant", 0.1},  {"extents", "compiled"},
                {"u_low", 1.0},    {"u_high", 0.0}};
}

HeatNode::HeatNode(std::string name, Params params)
    : BuiltinNode(std::string(k_type), std::move(name), std::move(params)) {
  const Params& p = this->params();
  m_n[0] = detail::int_param(k_type, p, "nx", 3, 1 << 14);
  m_n[1] = detail::int_param(k_type, p, "ny", 3, 1 << 14);
  m_n[2] = detail::int_param(k_type, p, "nz", 3, 1 << 14);
  // Conductivities whose products (the harmonic mean of two cells, 2ab / (a + b)) stay normal
  // doubles, so that no face's flux underflows to zero or becomes 0 / 0.
  m_kappa = detail::double_param(k_type, p, "kappa", 1e-100, 1e12, false);
  m_contrast = detail::double_param(k_type, p, "contrast", 1e-12, 1e12, false);
  const std::string boundary =
      detail::choice_param(k_type, p, "boundary", {"insulating", "periodic", "fixed"});
  m_periodic = boundary == "periodic";
  m_fixed = boundary == "fixed";
  // Read only for fixed walls: a checkpoint written before they existed has no u_low.
  if (m_fixed) {
    m_u_low = detail::double_param(k_type, p, "u_low", -1e12, 1e12, false);
    m_u_high = detail::double_param(k_type, p, "u_high", -1e12, 1e12, false);
  }
  m_mode = detail::int_param(k_type, p, "mode", 1, m_periodic ? (m_n[0] - 1) / 2 : m_n[0] - 1);
  m_amplitude = detail::double_param(k_type, p, "amplitude", -1e12, 1e12, false);
  m_courant = detail::double_param(k_type, p, "courant", 1e-12, 1.0 / 6.0, false);
  m_extents = detail::extents_param(k_type, p);
  (void)detail::checked_dt(k_type, "dt = courant / (kappa max(1, contrast))", dt(), p,
                           {"courant", "kappa", "contrast"});
}

std::string HeatNode::summary() const {
  return "3-D diffusion, 7-point stencil, static conductivity field";
}

std::int64_t HeatNode::default_steps() const {
  return 500;
}

runtime::NodeLayout HeatNode::layout() const {
  const auto boundary = m_periodic ? runtime::Boundary::periodic : runtime::Boundary::edge;
  auto axes = runtime::NodeLayout::grid({m_n[0], m_n[1], m_n[2]}, 1, boundary, m_extents);
  if (m_fixed) {
    axes[0].boundary = {.low = runtime::BoundaryFace::dirichlet(m_u_low),
                        .high = runtime::BoundaryFace::dirichlet(m_u_high)};
  }
  return {.axes = std::move(axes),
          .fields = {{"u", runtime::Dtype::f64}},
          .integrals = {"heat", "change"},
          .dt = m_courant / (m_kappa * std::max(1.0, m_contrast)),
          .slab_initial_state = true};
}

double HeatNode::wavenumber() const {
  return (m_periodic ? 2.0 : 1.0) * std::numbers::pi * static_cast<double>(m_mode) /
         static_cast<double>(m_n[0]);
}

double HeatNode::profile(double x) const {
  return m_fixed ? m_u_low + (m_u_high - m_u_low) * x / static_cast<double>(m_n[0]) : 1.0;
}

double HeatNode::mode_shape(double x) const {
  return m_fixed ? std::sin(wavenumber() * x) : std::cos(wavenumber() * x);
}

double HeatNode::discrete_eigenvalue() const {
  const double s = std::sin(wavenumber() / 2);
  return 4 * s * s;
}

namespace {

// The harmonic mean of two cells' conductivities, the conductance of the face between them:
// written so that it is symmetric in IEEE arithmetic (2a is exact, a product and a sum do not
// depend on their operands' order), so one value serves both cells of a face and the flux through
// it is the exact negative of the flux seen from the other side.
double face_conductance(double a, double b) {
  return 2.0 * a * b / (a + b);
}

// The conductivity field: a sphere of contrast × kappa, a quarter of the smallest extent in
// radius, in the middle of a background of kappa; `at` takes global cell indices.
struct Conductivity {
  std::array<std::int64_t, 3> n;
  double kappa;
  double contrast;

  [[nodiscard]] double at(std::int64_t i, std::int64_t j, std::int64_t k) const {
    const double radius = static_cast<double>(std::min({n[0], n[1], n[2]})) / 4;
    const double x = static_cast<double>(i) + 0.5 - static_cast<double>(n[0]) / 2;
    const double y = static_cast<double>(j) + 0.5 - static_cast<double>(n[1]) / 2;
    const double z = static_cast<double>(k) + 0.5 - static_cast<double>(n[2]) / 2;
    const bool inside = x * x + y * y + z * z < radius * radius;
    return inside ? kappa * contrast : kappa;
  }
};

// Fills a box of a per-cell array (global indices) with value(i, j, k), row-major.
template <class Value>
void fill_box(const runtime::ArrayBox& box, std::span<double> out, const Value& value) {
  std::size_t at = 0;
  for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
    for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j) {
      for (std::int64_t k = box.offset[2]; k < box.offset[2] + box.extent[2]; ++k) {
        out[at++] = value(i, j, k);
      }
    }
  }
}

} // namespace

runtime::StaticData HeatNode::build_static_data() const {
  // Computed when first read (a run binds what its kernel reads): the kernel's key needs only
  // the shapes, so `uwjit warm` never builds them, and a run too large for memory is refused
  // before it is. Box by box: a sharded run computes each rank's slab only.
  const Conductivity field{{m_n[0], m_n[1], m_n[2]}, m_kappa, m_contrast};
  const std::vector<std::int64_t> shape = {m_n[0], m_n[1], m_n[2]};
  runtime::StaticData data;
  // A static array the kernel does not read would put its extents in the key (a kernel over
  // run-time extents would no longer serve every size): either kappa or the faces.
  if (!stores_faces()) {
    data.add(runtime::StaticArray::computed_by_box<double>(
        "kappa", shape,
        [field](const runtime::ArrayBox& box, std::span<double> out) {
          fill_box(box, out, [&](std::int64_t i, std::int64_t j, std::int64_t k) {
            return field.at(i, j, k);
          });
        },
        runtime::Replication::shard, 0));
    return data;
  }
  // The conductance of each face, once. face_<axis>(i, j, k) is the face between the cell and
  // its neighbour one further along the axis. The last cell's neighbour is the one the kernel
  // that reads kappa sees in kappa's halo: the first cell on a periodic axis, the cell itself
  // (edge padding) on another, so that every face has the bits that kernel computes.
  const bool periodic = m_periodic;
  for (int axis = 0; axis < 3; ++axis) {
    data.add(runtime::StaticArray::computed_by_box<double>(
        std::string("face_") + "xyz"[axis], shape,
        [field, periodic, axis](const runtime::ArrayBox& box, std::span<double> out) {
          fill_box(box, out, [&](std::int64_t i, std::int64_t j, std::int64_t k) {
            std::array<std::int64_t, 3> next = {i, j, k};
            const auto a = static_cast<std::size_t>(axis);
            next[a] = next[a] + 1 < field.n[a] ? next[a] + 1 : (periodic ? 0 : next[a]);
            return face_conductance(field.at(i, j, k), field.at(next[0], next[1], next[2]));
          });
        },
        runtime::Replication::shard, 0));
  }
  if (m_fixed) {
    // A dirichlet wall's halo cell has the conductivity of the cell inside (kappa's edge
    // padding), so the face on the wall x = 0 is face(kappa(0), kappa(0)); face_x's halo there,
    // padded as edge too, holds face(kappa(0), kappa(1)) instead. So with fixed walls the x faces
    // below each cell are an array of their own, exact at the wall.
    data.add(runtime::StaticArray::computed_by_box<double>(
        "face_x_low", shape,
        [field](const runtime::ArrayBox& box, std::span<double> out) {
          fill_box(box, out, [&](std::int64_t i, std::int64_t j, std::int64_t k) {
            return face_conductance(field.at(i, j, k), field.at(i > 0 ? i - 1 : i, j, k));
          });
        },
        runtime::Replication::shard, 0));
  }
  return data;
}

void HeatNode::initial_state(runtime::State& state) const {
  // The slab of this rank (the whole domain serially): global cell offset + i.
  runtime::Field& u = state["u"];
  const runtime::Slab& slab = state.slab();
  for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
    const double x = static_cast<double>(slab.offset[0] + i) + 0.5;
    const double value = profile(x) + m_amplitude * mode_shape(x);
    for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
      for (std::int64_t kk = 0; kk < slab.extent[2]; ++kk) {
        u.at<double>(i, j, kk) = value;
      }
    }
  }
}

bool HeatNode::stores_faces() const {
  return m_n[0] * m_n[1] * m_n[2] <= k_stored_faces_most_cells;
}

void HeatNode::emit_update(codegen::KernelWriter& w) const {
  w.state_out("u");
  if (!stores_faces()) {
    w.static_array("kappa", runtime::Dtype::f64,
                   {{w.domain(0), 1}, {w.domain(1), 1}, {w.domain(2), 1}});
    w.integral("heat");
    w.integral("change", codegen::Reduction::max);
    w.helpers("inline double face(double a, double b) { return 2.0 * a * b / (a + b); }\n");
    if (w.is_gpu()) {
      // A thread per cell: each face's conductance computed for each of its two cells.
      w.for_each_cell({.indices = {"i", "j", "k"}}, R"(          const double uc = u(i, j, k);
          const double kc = kappa(i, j, k);
          double flux = face(kc, kappa(i - 1, j, k)) * (u(i - 1, j, k) - uc);
          flux += face(kc, kappa(i + 1, j, k)) * (u(i + 1, j, k) - uc);
          flux += face(kc, kappa(i, j - 1, k)) * (u(i, j - 1, k) - uc);
          flux += face(kc, kappa(i, j + 1, k)) * (u(i, j + 1, k) - uc);
          flux += face(kc, kappa(i, j, k - 1)) * (u(i, j, k - 1) - uc);
          flux += face(kc, kappa(i, j, k + 1)) * (u(i, j, k + 1) - uc);
          const double next = uc + args->dt * flux;
          u_out(i, j, k) = next;
          heat += next;
          change.max(uwm::fabs(next - uc));
)");
      return;
    }
    emit_faces_once(w);
    return;
  }
  // Each face's conductance read, not computed: a face array with a halo of one along its own
  // axis gives both faces of a cell along that axis (face_x(i - 1, j, k) below, face_x(i, j, k)
  // above). The terms and their order are those of the kernel above, so are the bits. (With
  // fixed walls the x faces below the cells are face_x_low's, and face_x needs no halo.)
  w.static_array("face_x", runtime::Dtype::f64,
                 {{w.domain(0), m_fixed ? 0 : 1}, {w.domain(1), 0}, {w.domain(2), 0}});
  w.static_array("face_y", runtime::Dtype::f64,
                 {{w.domain(0), 0}, {w.domain(1), 1}, {w.domain(2), 0}});
  w.static_array("face_z", runtime::Dtype::f64,
                 {{w.domain(0), 0}, {w.domain(1), 0}, {w.domain(2), 1}});
  if (m_fixed) {
    w.static_array("face_x_low", runtime::Dtype::f64,
                   {{w.domain(0), 0}, {w.domain(1), 0}, {w.domain(2), 0}});
  }
  w.integral("heat");
  w.integral("change", codegen::Reduction::max);
  const std::string below_x = m_fixed ? "face_x_low(i, j, k)" : "face_x(i - 1, j, k)";
  w.for_each_cell({.indices = {"i", "j", "k"}}, format(R"(          const double uc = u(i, j, k);
          double flux = {} * (u(i - 1, j, k) - uc);
          flux += face_x(i, j, k) * (u(i + 1, j, k) - uc);
          flux += face_y(i, j - 1, k) * (u(i, j - 1, k) - uc);
          flux += face_y(i, j, k) * (u(i, j + 1, k) - uc);
          flux += face_z(i, j, k - 1) * (u(i, j, k - 1) - uc);
          flux += face_z(i, j, k) * (u(i, j, k + 1) - uc);
          const double next = uc + args->dt * flux;
          u_out(i, j, k) = next;
          heat += next;
          change.max(uwm::fabs(next - uc));
)",
                                                       below_x));
}

// On a CPU, above k_stored_faces_most_cells: the loops written here, so that each face's
// conductance is computed once and serves both its cells, three divisions per cell where the
// cell form computes six. The box is walked in tiles of k_tile_rows rows of at most
// k_tile_cells cells, and each tile through every plane of the box: the faces below a cell
// along x are those the plane before computed above it (kept in `below_x`, the tile's), along y
// those the row before computed (`below_y`), and a row's faces along z are computed before it
// (`along_z`, its k_tile_cells + 1 faces). Only the first plane and the first row of a tile
// compute the faces below them. face() is symmetric in IEEE arithmetic, so each face has the
// bits the cell form computes from either side, the terms are added in the cell form's order,
// and every cell gets the same bits as the GPU's cell form; the integral `heat` is summed in
// another order (its last bits are the kernel's). Measured against the cell form through the
// runtime on a 2-core Intel Xeon (Sapphire Rapids, AVX-512), where the divisions pace it: 1.37x
// at 96^3 and 128^3 on one thread, 1.32-1.42x on two (docs/explanation/performance.md, "heat's
// arithmetic"). On a 2-core AMD EPYC Zen 3 (AVX2), where the divisions do not pace it, the cell
// form was the faster: 1.10-1.16x on one thread and 1.10-1.11x on two at 128^3; a choice of form
// per CPU kind is not built (the writer has no text for two loop forms in one kernel).
void HeatNode::emit_faces_once(codegen::KernelWriter& w) const {
  w.update_box();
  w.body(format(R"(    const double dt = args->dt;
    constexpr uw_i64 rows = {};
    constexpr uw_i64 cells = {};
    double below_x[rows * cells];
    double below_y[cells];
    double along_z[cells + 1];
    for (uw_i64 j0 = ny_begin; j0 < ny_end; j0 += rows) {
      const uw_i64 j1 = ny_end - j0 < rows ? ny_end : j0 + rows;
      for (uw_i64 k0 = nz_begin; k0 < nz_end; k0 += cells) {
        const uw_i64 k1 = nz_end - k0 < cells ? nz_end : k0 + cells;
        for (uw_i64 j = j0; j < j1; ++j) {
          for (uw_i64 k = k0; k < k1; ++k) {
            below_x[(j - j0) * cells + (k - k0)] =
                face(kappa(nx_begin - 1, j, k), kappa(nx_begin, j, k));
          }
        }
        for (uw_i64 i = nx_begin; i < nx_end; ++i) {
          for (uw_i64 k = k0; k < k1; ++k) {
            below_y[k - k0] = face(kappa(i, j0 - 1, k), kappa(i, j0, k));
          }
          for (uw_i64 j = j0; j < j1; ++j) {
            for (uw_i64 k = k0; k <= k1; ++k) {
              along_z[k - k0] = face(kappa(i, j, k - 1), kappa(i, j, k));
            }
            double* const below_x_row = below_x + (j - j0) * cells;
            for (uw_i64 k = k0; k < k1; ++k) {
              const uw_i64 c = k - k0;
              const double uc = u(i, j, k);
              const double kc = kappa(i, j, k);
              const double above_x = face(kc, kappa(i + 1, j, k));
              const double above_y = face(kc, kappa(i, j + 1, k));
              double flux = below_x_row[c] * (u(i - 1, j, k) - uc);
              flux += above_x * (u(i + 1, j, k) - uc);
              flux += below_y[c] * (u(i, j - 1, k) - uc);
              flux += above_y * (u(i, j + 1, k) - uc);
              flux += along_z[c] * (u(i, j, k - 1) - uc);
              flux += along_z[c + 1] * (u(i, j, k + 1) - uc);
              below_x_row[c] = above_x;
              below_y[c] = above_y;
              const double next = uc + dt * flux;
              u_out(i, j, k) = next;
              heat += next;
              change.max(uwm::fabs(next - uc));
            }
          }
        }
      }
    }
)",
                literal(k_tile_rows), literal(k_tile_cells)));
}

Verdict HeatNode::check(const runtime::Snapshot& simulation, const Trace& trace) const {
  // The snapshot's slab of u (the whole domain, or one rank's slab: sums and maxima below are
  // over the slab, then over the ranks, so that no rank needs the whole domain).
  Verdict verdict;
  const runtime::Field& u = simulation.field(name(), "u");
  const runtime::Slab& slab = simulation.slab(name());
  const auto x_of = [&](std::span<const std::int64_t> index) {
    return static_cast<double>(slab.offset[0] + index[0]) + 0.5;
  };
  const double steps = static_cast<double>(simulation.steps_taken());
  if (m_fixed) {
    verdict.notes.push_back("heat conservation: not checked, the fixed walls let heat in and out");
  } else {
    // Totals summed accurately, so that the drift measured is the scheme's, not the sum's: the
    // slab's initial heat and its change, each summed accurately, then over the ranks.
    detail::Sum initial_sum;
    detail::Sum change;
    u.for_each_interior([&](std::span<const std::int64_t> index) {
      const double x = x_of(index);
      const double initial = profile(x) + m_amplitude * mode_shape(x);
      initial_sum.add(initial);
      change.add(u.value(index));
      change.add(-initial);
    });
    double totals[2] = {initial_sum.value(), change.value()};
    simulation.sum_over_ranks(totals);
    const double initial = totals[0];
    // Round-off only: a step rounds each cell's flux sum and update.
    verdict.add("heat conservation", "|H(t) - H(0)| / |H(0)|, H summed exactly",
                std::abs(totals[1]) / std::abs(initial), std::max(1e-12, steps * 4 * 0x1.0p-52));
    const auto series = trace.series("heat");
    if (!series.empty()) {
      double drift = 0;
      for (const double heat : series) {
        drift = detail::worse(drift, std::abs(heat - initial) / std::abs(initial));
      }
      verdict.add("heat integral", "max |H_kernel(t) - H(0)| / |H(0)| (bound: cells x 2^-52)",
                  drift, detail::summation_bound(m_n[0] * m_n[1] * m_n[2]));
    }
  }

  const std::int64_t t = simulation.steps_taken();
  if (m_contrast != 1.0) {
    verdict.notes.push_back("mode decay: not checked, the conductivity is not uniform");
    return verdict;
  }
  const double growth = 1.0 - dt() * m_kappa * discrete_eigenvalue();
  const double discrete = m_amplitude * std::pow(growth, static_cast<double>(t));
  if (m_fixed) {
    // The exact discrete solution is the linear profile through the wall values (the dirichlet
    // halo 2 v - u makes it exact at the cell centres) plus the sine mode, decayed by growth^t.
    // Each step rounds each cell's update by a few ulps of the largest |u|, and the scheme is a
    // contraction in the max norm (courant <= 1/6), so the round-off stays below t such ulps.
    const double scale = std::max({std::abs(m_u_low), std::abs(m_u_high), std::abs(m_amplitude)});
    double deviation = 0;
    double remaining = 0; // the mode's largest deviation at a cell centre
    for (std::int64_t i = 0; i < m_n[0]; ++i) {
      remaining =
          std::max(remaining, std::abs(discrete * mode_shape(static_cast<double>(i) + 0.5)));
    }
    u.for_each_interior([&](std::span<const std::int64_t> index) {
      deviation = detail::worse(deviation, std::abs(u.value(index) - profile(x_of(index))));
    });
    deviation = simulation.max_over_ranks(deviation);
    verdict.add("steady linear profile",
                "max |u - (u_low + (u_high - u_low) x / nx)| (bound: the mode's max |A0 (1 - "
                "dt kappa lambda)^t sin(k x)| + t x 8 ulp)",
                deviation, remaining + std::max(1.0, steps) * 8 * 0x1.0p-52 * scale);
  }
  if (t == 0 || m_amplitude == 0.0) {
    verdict.notes.push_back("mode decay: not checked, no steps taken or no amplitude");
    return verdict;
  }
  if (std::abs(discrete) < 1e-6 * std::abs(m_amplitude)) {
    verdict.notes.push_back("mode decay: not checked, the mode has decayed below 1e-6 of A0");
    return verdict;
  }
  // u's round-off is relative to its level (1, or the wall values): a mode far below it cannot
  // be measured against the 1e-9 of the discrete check.
  const double level = m_fixed ? std::max(std::abs(m_u_low), std::abs(m_u_high)) : 1.0;
  if (std::abs(discrete) < 1e-6 * level) {
    verdict.notes.push_back(
        format("mode decay: not judged, the mode's amplitude {} is below 1e-6 of the level of u "
               "({}), where round-off hides it",
               discrete, level));
    return verdict;
  }
  // Project u onto the mode: A = sum((u - base) phi) / sum(phi^2), the base the mean (insulating,
  // periodic) or the linear profile (fixed).
  // Each sum over the slab, then over the ranks.
  double mean = 0;
  u.for_each_interior([&](std::span<const std::int64_t> index) { mean += u.value(index); });
  simulation.sum_over_ranks(std::span(&mean, 1));
  mean /= static_cast<double>(m_n[0] * m_n[1] * m_n[2]);
  double sums[2] = {0, 0}; // projection, norm
  u.for_each_interior([&](std::span<const std::int64_t> index) {
    const double x = x_of(index);
    const double phi = mode_shape(x);
    sums[0] += (u.value(index) - (m_fixed ? profile(x) : mean)) * phi;
    sums[1] += phi * phi;
  });
  simulation.sum_over_ranks(sums);
  const double amplitude = sums[0] / sums[1];
  verdict.add("mode amplitude (discrete)", "|A(t) - A0 (1 - dt kappa lambda)^t| / |A0 ...|",
              std::abs(amplitude - discrete) / std::abs(discrete), 1e-9);
  if (!trace.steps.empty() && trace.steps.back() == t) {
    // The last step moved each cell by the mode's change, (A(t-1) - A(t)) phi(x) (the base is
    // steady): the kernel's maximum is its largest over the cell centres, up to the round-off
    // of two states (a few ulp of the size of u).
    double shape = 0;
    for (std::int64_t i = 0; i < m_n[0]; ++i) {
      shape = std::max(shape, std::abs(mode_shape(static_cast<double>(i) + 0.5)));
    }
    const double expected = std::abs(discrete / growth - discrete) * shape;
    const double scale = std::max(level, std::abs(m_amplitude));
    verdict.add("largest change (discrete)",
                "|change(t) - |A(t-1) - A(t)| max |phi(x)|| / that, A the discrete mode (bound: "
                "1e-9 + 16 ulp of |u|)",
                std::abs(trace.series("change").back() - expected) / expected,
                1e-9 + 16 * 0x1.0p-52 * scale / expected);
  }
  const double k = wavenumber();
  const double analytic = m_kappa * k * k;
  // The discrete scheme decays at -log(growth) / dt: on a grid too coarse for the mode (k h not
  // small) that is itself further from the continuum rate than the check allows, and the
  // comparison would judge the grid, not the run.
  constexpr double k_tolerance = 0.01;
  if (const double inherent = continuum_deviation(m_n[0]); !(inherent <= k_tolerance)) {
    std::int64_t needed = m_n[0];
    while (needed < (1 << 14) && !(continuum_deviation(needed) <= k_tolerance)) {
      ++needed;
    }
    verdict.notes.push_back(
        format("mode decay rate (continuum): not judged, mode {} on {} cells along x decays {} % "
               "off the continuum rate in the exact discrete solution (the check allows 1 %); "
               "judged from nx = {}",
               m_mode, m_n[0], inherent * 100, needed));
    return verdict;
  }
  const double rate = -std::log(amplitude / m_amplitude) / (static_cast<double>(t) * dt());
  verdict.add("mode decay rate (continuum)", "|rate / (kappa k^2) - 1|",
              std::abs(rate / analytic - 1.0), k_tolerance);
  return verdict;
}

double HeatNode::continuum_deviation(std::int64_t nx) const {
  // As wavenumber() and discrete_eigenvalue(), for nx cells; with a uniform conductivity dt
  // kappa is the courant number.
  const double k = (m_periodic ? 2.0 : 1.0) * std::numbers::pi * static_cast<double>(m_mode) /
                   static_cast<double>(nx);
  const double s = std::sin(k / 2);
  const double discrete_rate = -std::log(1.0 - m_courant * 4 * s * s) / m_courant;
  return std::abs(discrete_rate / (k * k) - 1.0);
}

std::optional<runtime::VtkImage> HeatNode::vtk_image(const runtime::Snapshot& simulation) const {
  const runtime::Slab& slab = simulation.slab(name()); // the cells u holds
  const runtime::Field& u = simulation.field(name(), "u");
  // The conductivity of the same cells, computed for the slab alone.
  const Conductivity field{{m_n[0], m_n[1], m_n[2]}, m_kappa, m_contrast};
  std::vector<double> kappa(
      static_cast<std::size_t>(slab.extent[0] * slab.extent[1] * slab.extent[2]));
  fill_box({slab.offset, slab.extent}, kappa,
           [&](std::int64_t i, std::int64_t j, std::int64_t k) { return field.at(i, j, k); });
  runtime::Field kappa_field("kappa", runtime::Dtype::f64,
                             {slab.extent[0], slab.extent[1], slab.extent[2]}, {0, 0, 0});
  kappa_field.copy_interior_from(std::as_bytes(std::span<const double>(kappa)));
  runtime::VtkImage image;
  image.geometry.cells = {slab.extent[0], slab.extent[1], slab.extent[2]};
  image.geometry.first = {slab.offset[0], slab.offset[1], slab.offset[2]};
  image.cells = {runtime::image_cells(u, 3), runtime::image_cells(kappa_field, 3)};
  image.field_data = field_data(simulation);
  return image;
}

Figures HeatNode::figures(const runtime::Snapshot& simulation) const {
  Figures figures = BuiltinNode::figures(simulation);
  // The checked quantity: the mode along x (u averaged over y and z), with the discrete exact
  // solution where the conductivity is uniform.
  // Sums over the snapshot's slab, then over the ranks.
  const runtime::Field& u = simulation.field(name(), "u");
  const runtime::Slab& slab = simulation.slab(name());
  Chart chart{"mode", "u along x, averaged over y and z", "x (cells)", "u", {}};
  Curve measured{"uwjit", {}, {}, true};
  std::vector<double> sums(static_cast<std::size_t>(m_n[0]), 0.0);
  for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
    double sum = 0;
    for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
      for (std::int64_t k = 0; k < slab.extent[2]; ++k) {
        sum += u.at<double>(i, j, k);
      }
    }
    sums[static_cast<std::size_t>(slab.offset[0] + i)] = sum;
  }
  simulation.total_over_ranks(sums);
  for (std::int64_t i = 0; i < m_n[0]; ++i) {
    measured.x.push_back(static_cast<double>(i) + 0.5);
    measured.y.push_back(sums[static_cast<std::size_t>(i)] / static_cast<double>(m_n[1] * m_n[2]));
  }
  const auto t = static_cast<double>(simulation.steps_taken());
  const double growth = 1.0 - dt() * m_kappa * discrete_eigenvalue();
  Curve initial{"initial state", {}, {}, false};
  Curve exact{"exact (discrete) solution", {}, {}, false};
  constexpr int k_samples = 400;
  for (int s = 0; s <= k_samples; ++s) {
    const double x = static_cast<double>(m_n[0]) * s / k_samples;
    initial.x.push_back(x);
    initial.y.push_back(profile(x) + m_amplitude * mode_shape(x));
    exact.x.push_back(x);
    exact.y.push_back(profile(x) + m_amplitude * std::pow(growth, t) * mode_shape(x));
  }
  chart.curves.push_back(std::move(initial));
  if (m_contrast == 1.0) {
    chart.curves.push_back(std::move(exact));
  }
  chart.curves.push_back(std::move(measured));
  figures.charts.push_back(std::move(chart));
  return figures;
}

} // namespace uwjit::nodes
