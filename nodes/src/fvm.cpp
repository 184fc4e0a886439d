#include <uwjit/nodes/fvm.hpp>

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/vtk.hpp>

#include "params.hpp"
#include "voronoi_mesh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <span>
#include <type_traits>

namespace uwjit::nodes {

using codegen::literal;
using runtime::Params;
using runtime::StaticArray;

namespace {
constexpr std::string_view k_type = "fvm";
constexpr double k_pi = std::numbers::pi;
} // namespace

struct FvmNode::Mesh : detail::VoronoiMesh {};

std::span<const ParamDoc> FvmNode::param_docs() noexcept {
  static const ParamDoc k_docs[] = {
      {"n", "generator points per lattice row (mesh spacing h = 1/(n-1))", "points", "[4, 4096]"},
      {"perturbation", "random shift of the interior points", "lattice spacings", "[0, 0.249]"},
      {"seed", "seed of the perturbation", "", "[0, 2^63)"},
      {"kappa", "diffusivity", "length^2 per unit time", "[1e-100, 1e12]"},
      {"safety", "dt as a fraction of the explicit stability limit", "", "[1e-6, 1]"},
      {"extents", "mesh sizes compiled into the kernel, or passed at run time", "",
       "compiled, runtime"},
  };
  return k_docs;
}

Params FvmNode::defaults() {
  return Params{{"n", 32},      {"perturbation", 0.15}, {"seed", 7},
                {"kappa", 1.0}, {"safety", 0.9},        {"extents", "compiled"}};
}

double FvmNode::exact(double x, double y) {
  return std::exp(k_pi * (x - 1.0)) * std::sin(k_pi * y);
}

FvmNode::FvmNode(std::string name, Params params)
    : BuiltinNode(std::string(k_type), std::move(name), std::move(params)) {
  const Params& p = this->params();
  const auto n = detail::int_param(k_type, p, "n", 4, 4096);
  const double perturbation = detail::double_param(k_type, p, "perturbation", 0.0, 0.249, false);
  const auto seed = detail::int_param(k_type, p, "seed", 0);
  m_kappa = detail::double_param(k_type, p, "kappa", 1e-100, 1e12, false);
  m_safety = detail::double_param(k_type, p, "safety", 1e-6, 1.0, false);
  m_extents = detail::extents_param(k_type, p);
  auto mesh = std::make_shared<Mesh>();
  static_cast<detail::VoronoiMesh&>(*mesh) =
      detail::make_voronoi_mesh(n, perturbation, static_cast<std::uint64_t>(seed), exact);
  m_mesh = std::move(mesh);
  // The explicit limit of each cell: dt <= V / (kappa sum_f A_f / d_f).
  const Mesh& m = *m_mesh;
  std::vector<double> conductance(m.volume.size(), 0.0);
  auto distance = [&](std::size_t a, const double* b) {
    return std::hypot(m.centre[2 * a] - b[0], m.centre[2 * a + 1] - b[1]);
  };
  for (std::size_t f = 0; f < m.owner.size(); ++f) {
    const auto o = static_cast<std::size_t>(m.owner[f]);
    const auto nb = static_cast<std::size_t>(m.neighbour[f]);
    const double g = m.area[f] / distance(o, &m.centre[2 * nb]);
    conductance[o] += g;
    conductance[nb] += g;
  }
  for (std::size_t f = 0; f < m.boundary_owner.size(); ++f) {
    const auto o = static_cast<std::size_t>(m.boundary_owner[f]);
    conductance[o] += m.boundary_area[f] / distance(o, &m.boundary_point[2 * f]);
  }
  double limit = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < conductance.size(); ++c) {
    limit = std::min(limit, m.volume[c] / (m_kappa * conductance[c]));
  }
  m_dt = detail::checked_dt(k_type, "dt = safety x the explicit stability limit", m_safety * limit,
                            p, {"safety", "kappa", "n"});
  (void)default_steps(); // a run's length, checked here
}

FvmNode::~FvmNode() = default;

std::string FvmNode::summary() const {
  return "finite-volume diffusion on an unstructured Voronoi mesh, to a steady state";
}

std::int64_t FvmNode::steps_to_judge() const {
  return default_steps();
}

std::int64_t FvmNode::default_steps() const {
  // The slowest mode of the Dirichlet Laplacian on a W x H box decays at kappa pi^2 (1/W^2 +
  // 1/H^2); run until it is down by 1e-9, in whole hundreds.
  const double w = m_mesh->width;
  const double h = m_mesh->height;
  const double rate = m_kappa * k_pi * k_pi * (1.0 / (w * w) + 1.0 / (h * h));
  return detail::checked_steps(k_type, "the steps to a steady state, log(1e9) / (rate dt)",
                               std::log(1e9) / (rate * m_dt), params(), {"safety", "kappa", "n"});
}

runtime::NodeLayout FvmNode::layout() const {
  return {.axes = {{.cells = static_cast<std::int64_t>(m_mesh->volume.size()),
                    .extent = m_extents,
                    .name = "n_cells"}},
          .fields = {{"T", runtime::Dtype::f64}},
          .integrals = {"heat", "boundary_flux", "residual"},
          .dt = m_dt};
}

void FvmNode::initial_state(runtime::State& state) const {
  (void)state; // T = 0 everywhere: the fields start zeroed
}

namespace {

// Each cell's faces, for the GPU's kernel, which gathers a cell's fluxes (one cell per thread)
// instead of scattering each face's to its two cells: interior faces, then boundary faces, each
// in increasing face order, so that a cell adds its terms in the order the scatter does. `start`
// has a cell's first entry in `faces` (and one past the last cell's last).
struct CellFaces {
  std::vector<std::int32_t> start, faces;
};

CellFaces interior_faces_of_cells(const detail::VoronoiMesh& m) {
  CellFaces out;
  out.start.assign(m.volume.size() + 1, 0);
  for (std::size_t f = 0; f < m.owner.size(); ++f) {
    ++out.start[static_cast<std::size_t>(m.owner[f]) + 1];
    ++out.start[static_cast<std::size_t>(m.neighbour[f]) + 1];
  }
  for (std::size_t c = 0; c + 1 < out.start.size(); ++c) {
    out.start[c + 1] += out.start[c];
  }
  out.faces.resize(2 * m.owner.size());
  std::vector<std::int32_t> next(out.start.begin(), out.start.end() - 1);
  for (std::size_t f = 0; f < m.owner.size(); ++f) {
    for (const std::int32_t c : {m.owner[f], m.neighbour[f]}) {
      out.faces[static_cast<std::size_t>(next[static_cast<std::size_t>(c)]++)] =
          static_cast<std::int32_t>(f);
    }
  }
  return out;
}

CellFaces boundary_faces_of_cells(const detail::VoronoiMesh& m) {
  CellFaces out;
  out.start.assign(m.volume.size() + 1, 0);
  for (const std::int32_t o : m.boundary_owner) {
    ++out.start[static_cast<std::size_t>(o) + 1];
  }
  for (std::size_t c = 0; c + 1 < out.start.size(); ++c) {
    out.start[c + 1] += out.start[c];
  }
  out.faces.resize(m.boundary_owner.size());
  std::vector<std::int32_t> next(out.start.begin(), out.start.end() - 1);
  for (std::size_t f = 0; f < m.boundary_owner.size(); ++f) {
    const auto c = static_cast<std::size_t>(m.boundary_owner[f]);
    out.faces[static_cast<std::size_t>(next[c]++)] = static_cast<std::int32_t>(f);
  }
  return out;
}

} // namespace

runtime::StaticData FvmNode::build_static_data() const {
  // Computed from the mesh when first read (a run binds them): the kernel's key needs only their
  // shapes, so `uwjit warm` never copies the mesh into them.
  const std::shared_ptr<const Mesh> mesh = m_mesh;
  const auto cells = static_cast<std::int64_t>(mesh->volume.size());
  const auto faces = static_cast<std::int64_t>(mesh->owner.size());
  const auto boundary = static_cast<std::int64_t>(mesh->boundary_owner.size());
  runtime::StaticData data;
  const auto copy = [&](std::string key, const auto& member, std::vector<std::int64_t> shape) {
    using T = typename std::remove_cvref_t<decltype((*mesh).*member)>::value_type;
    data.add(StaticArray::computed<T>(std::move(key), std::move(shape),
                                      [mesh, member](std::span<T> out) {
                                        const auto& values = (*mesh).*member;
                                        std::copy(values.begin(), values.end(), out.begin());
                                      }));
  };
  using M = detail::VoronoiMesh;
  copy("face_owner", &M::owner, {faces});
  copy("face_neighbour", &M::neighbour, {faces});
  copy("face_area", &M::area, {faces});
  copy("cell_volume", &M::volume, {cells});
  copy("cell_centre", &M::centre, {cells, 2});
  copy("boundary_owner", &M::boundary_owner, {boundary});
  copy("boundary_area", &M::boundary_area, {boundary});
  copy("boundary_point", &M::boundary_point, {boundary, 2});
  copy("boundary_value", &M::boundary_value, {boundary});
  const auto from = [&](std::string key, CellFaces (*make)(const M&),
                        std::vector<std::int32_t> CellFaces::* part, std::int64_t count) {
    data.add(StaticArray::computed<std::int32_t>(
        std::move(key), {count}, [mesh, make, part](std::span<std::int32_t> out) {
          const auto values = make(*mesh).*part;
          std::copy(values.begin(), values.end(), out.begin());
        }));
  };
  from("cell_face_start", interior_faces_of_cells, &CellFaces::start, cells + 1);
  from("cell_faces", interior_faces_of_cells, &CellFaces::faces, 2 * faces);
  from("cell_boundary_start", boundary_faces_of_cells, &CellFaces::start, cells + 1);
  from("cell_boundary_faces", boundary_faces_of_cells, &CellFaces::faces, boundary);
  data.add("n_cells", cells);
  data.add("n_faces", faces);
  data.add("n_boundary_faces", boundary);
  data.add("dim", 2);
  return data;
}

void FvmNode::emit_update(codegen::KernelWriter& w) const {
  w.state_out("T");
  const auto faces = w.provided_shape("face_owner").value().at(0);
  const auto boundary = w.provided_shape("boundary_owner").value().at(0);
  const codegen::Extent cells = w.domain(0);
  const codegen::Extent f = w.extent("n_faces", faces, m_extents);
  const codegen::Extent b = w.extent("n_boundary_faces", boundary, m_extents);
  const codegen::Extent two = w.constant(2);
  w.static_array("face_owner", runtime::Dtype::i32, {{f}});
  w.static_array("face_neighbour", runtime::Dtype::i32, {{f}});
  w.static_array("face_area", runtime::Dtype::f64, {{f}});
  w.static_array("cell_volume", runtime::Dtype::f64, {{cells}});
  w.static_array("cell_centre", runtime::Dtype::f64, {{cells}, {two}});
  w.static_array("boundary_owner", runtime::Dtype::i32, {{b}});
  w.static_array("boundary_area", runtime::Dtype::f64, {{b}});
  w.static_array("boundary_point", runtime::Dtype::f64, {{b}, {two}});
  w.static_array("boundary_value", runtime::Dtype::f64, {{b}});
  w.integral("heat");
  w.integral("boundary_flux");
  w.integral("residual");
  // A run-time param: a sweep over kappa is one kernel.
  w.param("kappa", m_kappa);
  if (w.is_gpu()) {
    emit_gather(w, b);
    return;
  }
  // On a CPU each face's two-point flux is computed once and scattered to both its cells: twice
  // as fast as a gather, which computes it from each side (measured: 52 vs 25 MLUPS at n = 128,
  // 1 thread). The GPU's gather writes the same state bit for bit (tests/jit/gpu_form_tests.cpp).
  w.body(R"(    const double dt = args->dt;
    for (uw_i64 c = 0; c < n_cells; ++c) {
      T_out(c) = T(c);
    }
    // Two-point fluxes between generators, scattered to both cells of each face.
    for (uw_i64 f = 0; f < n_faces; ++f) {
      const uw_i64 o = face_owner(f);
      const uw_i64 nb = face_neighbour(f);
      const double dx = cell_centre(nb, 0) - cell_centre(o, 0);
      const double dy = cell_centre(nb, 1) - cell_centre(o, 1);
      const double flux = kappa * face_area(f) * (T(nb) - T(o)) / uwm::sqrt(dx * dx + dy * dy);
      T_out(o) += dt * flux / cell_volume(o);
      T_out(nb) -= dt * flux / cell_volume(nb);
    }
    for (uw_i64 f = 0; f < n_boundary_faces; ++f) {
      const uw_i64 o = boundary_owner(f);
      const double dx = boundary_point(f, 0) - cell_centre(o, 0);
      const double dy = boundary_point(f, 1) - cell_centre(o, 1);
      const double flux =
          kappa * boundary_area(f) * (boundary_value(f) - T(o)) / uwm::sqrt(dx * dx + dy * dy);
      T_out(o) += dt * flux / cell_volume(o);
      boundary_flux += flux;
    }
    for (uw_i64 c = 0; c < n_cells; ++c) {
      heat += cell_volume(c) * T_out(c);
      const double rate = (T_out(c) - T(c)) / dt;
      residual += cell_volume(c) * rate * rate;
    }
)");
}

// The GPU form: one thread per cell, each gathering the two-point fluxes of its own faces through
// the cell -> face table. The flux through a face seen from its two cells is the exact negative
// (IEEE subtraction and products are antisymmetric), and a cell adds its terms in the order the
// CPU's face-by-face scatter does (interior faces, then boundary faces, each in face order), so
// both write the same state bit for bit.
void FvmNode::emit_gather(codegen::KernelWriter& w, codegen::Extent boundary) const {
  const auto face_count = w.provided_shape("face_owner").value().at(0);
  const codegen::Extent starts =
      w.extent("n_starts", w.provided_shape("cell_face_start").value().at(0), m_extents);
  const codegen::Extent sides = w.extent("n_face_sides", 2 * face_count, m_extents);
  w.static_array("cell_face_start", runtime::Dtype::i32, {{starts}});
  w.static_array("cell_faces", runtime::Dtype::i32, {{sides}});
  w.static_array("cell_boundary_start", runtime::Dtype::i32, {{starts}});
  w.static_array("cell_boundary_faces", runtime::Dtype::i32, {{boundary}});
  w.for_each_cell({.indices = {"c"}}, R"(      const double dt = args->dt;
      const double tc = T(c);
      double next = tc;
      for (uw_i64 e = cell_face_start(c); e < cell_face_start(c + 1); ++e) {
        const uw_i64 f = cell_faces(e);
        const uw_i64 other = face_owner(f) == c ? face_neighbour(f) : face_owner(f);
        const double dx = cell_centre(other, 0) - cell_centre(c, 0);
        const double dy = cell_centre(other, 1) - cell_centre(c, 1);
        const double flux = kappa * face_area(f) * (T(other) - tc) / uwm::sqrt(dx * dx + dy * dy);
        next += dt * flux / cell_volume(c);
      }
      for (uw_i64 e = cell_boundary_start(c); e < cell_boundary_start(c + 1); ++e) {
        const uw_i64 f = cell_boundary_faces(e);
        const double dx = boundary_point(f, 0) - cell_centre(c, 0);
        const double dy = boundary_point(f, 1) - cell_centre(c, 1);
        const double flux =
            kappa * boundary_area(f) * (boundary_value(f) - tc) / uwm::sqrt(dx * dx + dy * dy);
        next += dt * flux / cell_volume(c);
        boundary_flux += flux;
      }
      T_out(c) = next;
      heat += cell_volume(c) * next;
      const double rate = (next - tc) / dt;
      residual += cell_volume(c) * rate * rate;
)");
}

double FvmNode::error(const runtime::Snapshot& simulation) const {
  const runtime::Field& t = simulation.field(name(), "T");
  const Mesh& m = *m_mesh;
  double worst = 0;
  double scale = 0;
  for (std::size_t c = 0; c < m.volume.size(); ++c) {
    const double expected = exact(m.centre[2 * c], m.centre[2 * c + 1]);
    worst = detail::worse(worst, std::abs(t.at<double>(static_cast<std::int64_t>(c)) - expected));
    scale = std::max(scale, std::abs(expected));
  }
  return worst / scale;
}

Verdict FvmNode::check(const runtime::Snapshot& simulation, const Trace& trace) const {
  Verdict verdict;
  if (const auto& slab = simulation.slab(name()); slab.extent != slab.global) {
    verdict.not_judged = "fvm's check reads the whole mesh: judge a gathered() snapshot";
    return verdict;
  }
  const auto heat = trace.series("heat");
  const auto flux = trace.series("boundary_flux");
  const auto residual = trace.series("residual");
  if (heat.size() >= 2) {
    double worst = 0;
    for (std::size_t r = 1; r < heat.size(); ++r) {
      if (trace.steps[r] != trace.steps[r - 1] + 1) {
        continue;
      }
      const double imbalance = heat[r] - heat[r - 1] - m_dt * flux[r];
      worst = detail::worse(worst, std::abs(imbalance) / std::max(std::abs(heat[r]), 1e-300));
    }
    // Each H is a kernel's sum over the cells: allow the round-off of two such sums.
    verdict.add("conservation", "max |H(t) - H(t-1) - dt F(t)| / |H(t)|", worst,
                std::max(1e-12, 2 * detail::summation_bound(
                                        static_cast<std::int64_t>(m_mesh->volume.size()))));
  } else {
    verdict.notes.push_back("conservation: not checked, fewer than two steps recorded");
  }
  double volume = 0;
  for (const double v : m_mesh->volume) {
    volume += v;
  }
  if (!residual.empty()) {
    verdict.add("steady state", "rms dT/dt at the last step", std::sqrt(residual.back() / volume),
                1e-6);
  }
  // Second order: the error is bounded by h^2 (about three times what is measured at n = 16,
  // 32 and 64, where it falls about fourfold per halving of h).
  const double h = m_mesh->spacing;
  verdict.add("analytic steady state", "max |T - T*| / max |T*| (limit h^2)", error(simulation),
              h * h);
  return verdict;
}

std::optional<runtime::VtkImage> FvmNode::vtk_image(const runtime::Snapshot& /*simulation*/) const {
  return std::nullopt;
}

std::vector<std::filesystem::path> FvmNode::write_vtk(const runtime::Snapshot& simulation,
                                                      const std::filesystem::path& directory,
                                                      std::string_view stem) const {
  std::filesystem::create_directories(directory);
  const auto path = directory / (std::string(stem) + ".vtu");
  const Mesh& m = *m_mesh;
  runtime::UnstructuredGeometry geometry;
  for (std::size_t v = 0; v < m.vertex.size() / 2; ++v) {
    geometry.points.insert(geometry.points.end(), {m.vertex[2 * v], m.vertex[2 * v + 1], 0.0});
  }
  const runtime::Field& t = simulation.field(name(), "T");
  std::vector<double> temperature, expected, error;
  for (std::size_t c = 0; c < m.polygon.size(); ++c) {
    geometry.connectivity.insert(geometry.connectivity.end(), m.polygon[c].begin(),
                                 m.polygon[c].end());
    geometry.offsets.push_back(static_cast<std::int64_t>(geometry.connectivity.size()));
    geometry.types.push_back(7); // VTK_POLYGON
    temperature.push_back(t.at<double>(static_cast<std::int64_t>(c)));
    expected.push_back(exact(m.centre[2 * c], m.centre[2 * c + 1]));
    error.push_back(temperature.back() - expected.back());
  }
  const std::vector<runtime::VtkArray> arrays = {runtime::VtkArray::of<double>("T", temperature),
                                                 runtime::VtkArray::of<double>("T_exact", expected),
                                                 runtime::VtkArray::of<double>("error", error),
                                                 runtime::VtkArray::of<double>("volume", m.volume)};
  runtime::write_unstructured_grid(path, geometry, arrays, field_data(simulation));
  return {path};
}

Figures FvmNode::figures(const runtime::Snapshot& simulation) const {
  const Mesh& m = *m_mesh;
  const runtime::Field& t = simulation.field(name(), "T");
  const auto cells = static_cast<std::int64_t>(m.volume.size());
  // A raster of the cells: each pixel shows the cell whose generator is nearest, which is the
  // Voronoi cell it lies in. Generators are bucketed by lattice spacing, so a pixel searches
  // only the buckets around it.
  double lo[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  double hi[2] = {-lo[0], -lo[1]};
  for (std::size_t v = 0; v < m.vertex.size() / 2; ++v) {
    for (int d = 0; d < 2; ++d) {
      lo[d] = std::min(lo[d], m.vertex[2 * v + static_cast<std::size_t>(d)]);
      hi[d] = std::max(hi[d], m.vertex[2 * v + static_cast<std::size_t>(d)]);
    }
  }
  const double h = m.spacing;
  const auto buckets_x = static_cast<std::int64_t>((hi[0] - lo[0]) / h) + 1;
  const auto buckets_y = static_cast<std::int64_t>((hi[1] - lo[1]) / h) + 1;
  std::vector<std::vector<std::int64_t>> buckets(static_cast<std::size_t>(buckets_x * buckets_y));
  auto bucket = [&](double value, int d, std::int64_t count) {
    return std::clamp<std::int64_t>(static_cast<std::int64_t>((value - lo[d]) / h), 0, count - 1);
  };
  for (std::int64_t c = 0; c < cells; ++c) {
    const auto bx = bucket(m.centre[2 * static_cast<std::size_t>(c)], 0, buckets_x);
    const auto by = bucket(m.centre[2 * static_cast<std::size_t>(c) + 1], 1, buckets_y);
    buckets[static_cast<std::size_t>(by * buckets_x + bx)].push_back(c);
  }
  const std::int64_t width = 400;
  const auto height = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::lround(width * (hi[1] - lo[1]) / (hi[0] - lo[0]))));
  Slice temperature{"T",   "T",  "the Voronoi cells", "x", "y", width, height, {}, lo[0], hi[0],
                    lo[1], hi[1]};
  Slice error{"error", "T - T*", "the Voronoi cells", "x", "y", width, height, {}, lo[0], hi[0],
              lo[1],   hi[1]};
  for (std::int64_t py = 0; py < height; ++py) {
    for (std::int64_t px = 0; px < width; ++px) {
      const double x = lo[0] + (hi[0] - lo[0]) * (static_cast<double>(px) + 0.5) / width;
      const double y = lo[1] + (hi[1] - lo[1]) * (static_cast<double>(py) + 0.5) / height;
      const auto bx = bucket(x, 0, buckets_x);
      const auto by = bucket(y, 1, buckets_y);
      std::int64_t best = -1;
      double best_d2 = std::numeric_limits<double>::infinity();
      for (auto j = std::max<std::int64_t>(0, by - 2); j <= std::min(buckets_y - 1, by + 2); ++j) {
        for (auto i = std::max<std::int64_t>(0, bx - 2); i <= std::min(buckets_x - 1, bx + 2);
             ++i) {
          for (const std::int64_t c : buckets[static_cast<std::size_t>(j * buckets_x + i)]) {
            const double dx = m.centre[2 * static_cast<std::size_t>(c)] - x;
            const double dy = m.centre[2 * static_cast<std::size_t>(c) + 1] - y;
            if (dx * dx + dy * dy < best_d2) {
              best_d2 = dx * dx + dy * dy;
              best = c;
            }
          }
        }
      }
      // Beyond the cells (the ring of Dirichlet points) nothing is shown.
      if (best < 0 || best_d2 > h * h) {
        temperature.values.push_back(std::numeric_limits<double>::quiet_NaN());
        error.values.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      const double value = t.at<double>(best);
      temperature.values.push_back(value);
      error.values.push_back(value - exact(m.centre[2 * static_cast<std::size_t>(best)],
                                           m.centre[2 * static_cast<std::size_t>(best) + 1]));
    }
  }
  Figures figures;
  figures.slices = {std::move(temperature), std::move(error)};
  // The checked quantity: T against the analytic steady state, along the middle of the domain.
  const double middle = 0.5 * (lo[1] + hi[1]);
  Chart chart{"steady-state",
              format("T across the middle, y = {}", std::round(middle * 1000) / 1000),
              "x",
              "T",
              {}};
  Curve measured{"uwjit (cells within h/2 of the line)", {}, {}, true};
  for (std::int64_t c = 0; c < cells; ++c) {
    const double x = m.centre[2 * static_cast<std::size_t>(c)];
    const double y = m.centre[2 * static_cast<std::size_t>(c) + 1];
    if (std::abs(y - middle) < h / 2) {
      measured.x.push_back(x);
      measured.y.push_back(t.at<double>(c));
    }
  }
  Curve analytic{"T* = exp(pi (x - 1)) sin(pi y)", {}, {}, false};
  constexpr int k_samples = 200;
  for (int s = 0; s <= k_samples; ++s) {
    const double x = lo[0] + (hi[0] - lo[0]) * s / k_samples;
    analytic.x.push_back(x);
    analytic.y.push_back(exact(x, middle));
  }
  chart.curves = {std::move(analytic), std::move(measured)};
  figures.charts.push_back(std::move(chart));
  return figures;
}

} // namespace uwjit::nodes
