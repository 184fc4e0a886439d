#include <uwjit/nodes/pipe_flow.hpp>

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/vtk.hpp>

#include "params.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace uwjit::nodes {

using codegen::literal;
using runtime::Params;

namespace {

constexpr std::string_view k_type = "pipe-flow";
constexpr int k_q = 19;

// D3Q19: rest, the six faces, the twelve edges; opposite directions are neighbours (1/2, ...).
constexpr std::array<std::array<int, 3>, k_q> k_c = {{{0, 0, 0},
                                                      {1, 0, 0},
                                                      {-1, 0, 0},
                                                      {0, 1, 0},
                                                      {0, -1, 0},
                                                      {0, 0, 1},
                                                      {0, 0, -1},
                                                      {1, 1, 0},
                                                      {-1, -1, 0},
                                                      {1, -1, 0},
                                                      {-1, 1, 0},
                                                      {1, 0, 1},
                                                      {-1, 0, -1},
                                                      {1, 0, -1},
                                                      {-1, 0, 1},
                                                      {0, 1, 1},
                                                      {0, -1, -1},
                                                      {0, 1, -1},
                                                      {0, -1, 1}}};

constexpr int opposite(int q) {
  return q == 0 ? 0 : (q % 2 == 1 ? q + 1 : q - 1);
}

constexpr double weight(int q) {
  return q == 0 ? 1.0 / 3.0 : (q <= 6 ? 1.0 / 18.0 : 1.0 / 36.0);
}

// "i - 1", "j", "k + 1": the index a population of velocity c comes from.
std::string upstream(std::string_view index, int c) {
  if (c == 0) {
    return std::string(index);
  }
  return format("{} {} 1", index, c > 0 ? "-" : "+");
}

// c · (ux, uy, uz) as text without zero terms, e.g. "(ux - uy)", "uz", "0.0".
std::string dot_u(const std::array<int, 3>& c) {
  static constexpr std::string_view k_u[3] = {"ux", "uy", "uz"};
  std::string out;
  for (int d = 0; d < 3; ++d) {
    if (c[static_cast<std::size_t>(d)] == 0) {
      continue;
    }
    if (out.empty()) {
      out = format("{}{}", c[static_cast<std::size_t>(d)] > 0 ? "" : "-", k_u[d]);
    } else {
      out += c[static_cast<std::size_t>(d)] > 0 ? " + " : " - ";
      out += k_u[d];
    }
  }
  return out.empty() ? "0.0" : "(" + out + ")";
}

// Whether site (y, z) of an ny × nz cross-section lies in the wall (or beyond it) of a pipe of
// `radius` around the centre.
bool solid_site(std::int64_t ny, std::int64_t nz, double radius, std::int64_t y, std::int64_t z) {
  if (y < 0 || y >= ny || z < 0 || z >= nz) {
    return true;
  }
  const double dy = static_cast<double>(y) - static_cast<double>(ny - 1) / 2;
  const double dz = static_cast<double>(z) - static_cast<double>(nz - 1) / 2;
  return dy * dy + dz * dz >= radius * radius;
}

} // namespace

std::span<const ParamDoc> PipeFlowNode::param_docs() noexcept {
  static const ParamDoc k_docs[] = {
      {"nx", "lattice sites along the pipe (x, periodic)", "sites", "[1, 16384]"},
      {"ny", "lattice sites across the pipe (y)", "sites", "[6, 16384]"},
      {"nz", "lattice sites across the pipe (z)", "sites", "[6, 16384]"},
      {"radius", "pipe radius (follows ny, nz unless set)", "lattice units",
       "[2, min(ny, nz)/2 - 1]"},
      {"tau", "BGK relaxation time; viscosity = (tau - 1/2)/3", "time steps", "(0.5, 1e6]"},
      {"u_max", "centreline velocity the body force is chosen for", "lattice units per step",
       "[1e-12, 0.2]"},
      {"extents", "lattice extents compiled into the kernel, or passed at run time", "",
       "compiled, runtime"},
  };
  return k_docs;
}

Params PipeFlowNode::defaults() {
  Params params{{"nx", 32},   {"ny", 24},      {"nz", 24},
                {"tau", 0.8}, {"u_max", 0.05}, {"extents", "compiled"}};
  derive_from_size(params);
  return params;
}

void PipeFlowNode::derive_from_size(Params& params) {
  const auto ny = params.get_int("ny");
  const auto nz = params.get_int("nz");
  params.set("radius", static_cast<double>(std::min(ny, nz)) / 2.0 - 1.0);
}

PipeFlowNode::PipeFlowNode(std::string name, Params params)
    : BuiltinNode(std::string(k_type), std::move(name), std::move(params)) {
  const Params& p = this->params();
  m_n[0] = detail::int_param(k_type, p, "nx", 1, 1 << 14);
  m_n[1] = detail::int_param(k_type, p, "ny", 6, 1 << 14);
  m_n[2] = detail::int_param(k_type, p, "nz", 6, 1 << 14);
  const double max_radius = static_cast<double>(std::min(m_n[1], m_n[2])) / 2.0 - 1.0;
  m_radius = detail::double_param(k_type, p, "radius", 2.0, max_radius, false);
  m_tau = detail::double_param(k_type, p, "tau", 0.5, 1e6, true);
  m_u_max = detail::double_param(k_type, p, "u_max", 1e-12, 0.2, false);
  m_force = 4.0 * viscosity() * m_u_max / (m_radius * m_radius);
  m_extents = detail::extents_param(k_type, p);
  (void)default_steps(); // a run's length, checked here
}

std::string PipeFlowNode::summary() const {
  return "D3Q19 lattice Boltzmann pipe flow (BGK, Guo forcing, half-way bounce-back)";
}

std::int64_t PipeFlowNode::steps_to_judge() const {
  return default_steps();
}

std::int64_t PipeFlowNode::default_steps() const {
  // The slowest transient decays like exp(-nu j0^2 t / R^2), j0 = 2.405 the first zero of J0:
  // run until it is down to 1e-4, in whole hundreds.
  const double rate = viscosity() * 2.405 * 2.405 / (m_radius * m_radius);
  return detail::checked_steps(k_type, "the steps to a developed flow, log(1e4) R^2 / (nu 2.405^2)",
                               std::log(1e4) / rate, params(), {"tau", "radius"});
}

runtime::NodeLayout PipeFlowNode::layout() const {
  // Periodic along the pipe, walls (edge halos, masked by the wall arrays) across it.
  auto axes =
      runtime::NodeLayout::grid({m_n[0], m_n[1], m_n[2]}, 1, runtime::Boundary::edge, m_extents);
  axes[0].boundary = runtime::Boundary::periodic;
  // Population q is pulled from x - c_q: it reads the halos of the axes where c_q is not 0 (and
  // the corners of two of them), its own cell otherwise. The rest population reads no halo.
  std::vector<std::uint32_t> halo_axes;
  for (const auto& c : k_c) {
    std::uint32_t mask = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      mask |= c[d] != 0 ? std::uint32_t{1} << d : 0U;
    }
    halo_axes.push_back(mask);
  }
  return {.axes = std::move(axes),
          .fields = {{"f", runtime::Dtype::f64, {k_q}, std::move(halo_axes)}},
          .integrals = {"drag", "mass", "momentum"},
          .slab_initial_state = true};
}

bool PipeFlowNode::solid(std::int64_t y, std::int64_t z) const {
  return solid_site(m_n[1], m_n[2], m_radius, y, z);
}

std::int64_t PipeFlowNode::fluid_nodes() const {
  std::int64_t count = 0;
  for (std::int64_t y = 0; y < m_n[1]; ++y) {
    for (std::int64_t z = 0; z < m_n[2]; ++z) {
      count += solid(y, z) ? 0 : 1;
    }
  }
  return count * m_n[0];
}

runtime::StaticData PipeFlowNode::build_static_data() const {
  // Computed when first read (a run binds them): the kernel's key needs only their shapes, so
  // `uwjit warm` never builds them, and a run too large for memory is refused before they are.
  const std::int64_t ny = m_n[1], nz = m_n[2];
  const double radius = m_radius;
  const auto solid = [ny, nz, radius](std::int64_t y, std::int64_t z) {
    return solid_site(ny, nz, radius, y, z);
  };
  // Box by box: a sharded run computes each rank's slab only (the pipe does not vary along x,
  // so a box's words depend on its y and z range alone). One word per node, not one byte per
  // direction: the kernel reads one stream of 4 bytes per node instead of 19 of one byte, whose
  // arrays (nx ny nz bytes apart, often a multiple of 4 KiB) fall into the same cache sets.
  auto links = [=](const runtime::ArrayBox& box, std::span<std::int32_t> word) {
    std::size_t at = 0;
    for (std::int64_t x = 0; x < box.extent[0]; ++x) {
      for (std::int64_t y = box.offset[1]; y < box.offset[1] + box.extent[1]; ++y) {
        for (std::int64_t z = box.offset[2]; z < box.offset[2] + box.extent[2]; ++z) {
          // Bit 0: a solid node. Bit q: at a fluid node, direction q would come from a solid
          // node and is bounced back instead.
          const bool wall = solid(y, z);
          std::int32_t bits = wall ? 1 : 0;
          for (int q = 1; q < k_q && !wall; ++q) {
            // Direction q arrives from x - c_q; the pipe does not vary along (periodic) x.
            const auto& c = k_c[static_cast<std::size_t>(q)];
            bits |= solid(y - c[1], z - c[2]) ? std::int32_t{1} << q : 0;
          }
          word[at++] = bits;
        }
      }
    }
  };
  runtime::StaticData data;
  data.add(runtime::StaticArray::computed_by_box<std::int32_t>(
      "pipe_links", {m_n[0], ny, nz}, std::move(links), runtime::Replication::shard, 0));
  return data;
}

void PipeFlowNode::initial_state(runtime::State& state) const {
  // At rest, density 1, in every cell of the slab it is given.
  runtime::Field& f = state["f"];
  const runtime::Slab& slab = state.slab();
  for (int q = 0; q < k_q; ++q) {
    for (std::int64_t x = 0; x < slab.extent[0]; ++x) {
      for (std::int64_t y = 0; y < slab.extent[1]; ++y) {
        for (std::int64_t z = 0; z < slab.extent[2]; ++z) {
          f.at<double>(q, x, y, z) = weight(q);
        }
      }
    }
  }
}

void PipeFlowNode::emit_update(codegen::KernelWriter& w) const {
  w.state_out("f");
  const codegen::Extent x = w.domain(0), y = w.domain(1), z = w.domain(2);
  w.static_array("pipe_links", runtime::Dtype::i32, {{x}, {y}, {z}});
  w.integral("drag");
  w.integral("mass");
  w.integral("momentum");

  // The relaxation rate and the body force are run-time params: a sweep over tau, the Reynolds
  // number or the force is one kernel (they cost no speed: the loop is bound by memory).
  w.param("omega", 1.0 / m_tau);
  w.param("fx", m_force);
  std::string cell;
  // Branch-free, so that the k loop vectorises: every node is streamed and collided, and a
  // solid node stores its rest populations w_q through a select. A solid node carries no flow:
  // it holds w_q from the initial state on, and what is computed for it, discarded, stays finite.
  // Storing the constant instead of the node's loaded value spares the solid nodes the read of
  // their own populations, which for the ten with an x component is a stream of its own (the
  // pulls read the planes beside it).
  // The k loop's trip count is the update box's, known only at run time: vectorised as usual, it
  // would get a scalar remainder loop, a second copy of this long cell that doubles the machine
  // code and the compile time. The masked cell form folds the remainder into masked vector
  // iterations where masked moves are cheap (UWJIT_MASKED_MOVES, set by the writer per target).
  cell += "          const uw_i32 links = pipe_links(i, j, k);\n"
          "          const bool solid = (links & 1) != 0;\n"
          "          // Pull streaming; a link from a solid node is bounced back at the wall.\n"
          "          const double f0 = f(0, i, j, k);\n";
  for (int q = 1; q < k_q; ++q) {
    const auto& c = k_c[static_cast<std::size_t>(q)];
    const std::string pull = format("f({}, {}, {}, {})", q, upstream("i", c[0]),
                                    upstream("j", c[1]), upstream("k", c[2]));
    if (c[1] == 0 && c[2] == 0) {
      // Along x alone a link never comes from a solid node (the wall does not vary along x), so
      // its bit is never set: pulled, with no read of the node's own opposite population.
      cell += format("          const double f{} = {};\n", q, pull);
      continue;
    }
    cell += format("          const bool m{} = (links & {}) != 0;\n", q, 1 << q);
    cell += format("          const double back{} = f({}, i, j, k);\n", q, opposite(q));
    cell += format("          const double pull{} = {};\n", q, pull);
    cell += format("          const double f{} = m{} ? back{} : pull{};\n", q, q, q, q);
    if (c[0] != 0) {
      // The bounced population hands 2 |c_x| f to the wall, along -c_x.
      cell += format("          drag += m{} ? {} * f{} : 0.0;\n", q, literal(-2.0 * c[0]), q);
    }
  }
  auto sum = [&](int d) {
    std::string out;
    for (int q = 1; q < k_q; ++q) {
      const int c = k_c[static_cast<std::size_t>(q)][static_cast<std::size_t>(d)];
      if (c != 0) {
        out += format("{} f{}", out.empty() ? (c > 0 ? "" : "-") : (c > 0 ? " +" : " -"), q);
      }
    }
    return out;
  };
  std::string rho = "f0";
  for (int q = 1; q < k_q; ++q) {
    rho += format(" + f{}", q);
  }
  cell += format("          const double rho = {};\n", rho);
  cell += "          const double inv_rho = 1.0 / rho;\n";
  cell += format("          const double ux = ({} + 0.5 * fx) * inv_rho;\n", sum(0));
  cell += format("          const double uy = ({}) * inv_rho;\n", sum(1));
  cell += format("          const double uz = ({}) * inv_rho;\n", sum(2));
  cell += "          const double usq = 1.5 * (ux * ux + uy * uy + uz * uz);\n";
  for (int q = 0; q < k_q; ++q) {
    const auto& c = k_c[static_cast<std::size_t>(q)];
    const std::string w_q = literal(weight(q));
    cell += format("          {\n            const double cu = {};\n", dot_u(c));
    cell += format("            const double feq = {} * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - "
                   "usq);\n",
                   w_q);
    // Guo's forcing term with F = (fx, 0, 0): w (3 (c - u) + 9 (c . u) c) . F
    cell += format("            const double source = {} * fx * (3.0 * ({} - ux) + 9.0 * cu * "
                   "{});\n",
                   w_q, literal(static_cast<double>(c[0])), literal(static_cast<double>(c[0])));
    cell +=
        format("            const double post = f{} - omega * (f{} - feq) + (1.0 - 0.5 * omega) * "
               "source;\n            f_out({}, i, j, k) = solid ? {} : post;\n"
               "          }\n",
               q, q, q, w_q);
  }
  cell += "          mass += solid ? 0.0 : rho;\n"
          "          momentum += solid ? 0.0 : rho * ux;\n";
  w.for_each_cell({.indices = {"i", "j", "k"}, .masked_remainder = true}, cell);
}

Verdict PipeFlowNode::check(const runtime::Snapshot& simulation, const Trace& trace) const {
  // The snapshot's slab of f (the whole domain, or one rank's slab: sums below are over the
  // slab, then over the ranks, so that no rank needs the whole domain).
  Verdict verdict;
  const runtime::Field& f = simulation.field(name(), "f");
  const runtime::Slab& slab = simulation.slab(name());
  const std::int64_t y0 = slab.offset[1], z0 = slab.offset[2];
  const std::int64_t nx = slab.extent[0], ny = slab.extent[1], nz = slab.extent[2];
  const double fluid = static_cast<double>(fluid_nodes());
  // The initial state has density sum_q w_q at every fluid node: the slab's initial mass and
  // its change, each summed accurately, then over the ranks.
  detail::Sum initial_sum;
  detail::Sum change;
  for (std::int64_t x = 0; x < nx; ++x) {
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t z = 0; z < nz; ++z) {
        for (int q = 0; q < k_q && !solid(y0 + y, z0 + z); ++q) {
          initial_sum.add(weight(q));
          change.add(f.at<double>(q, x, y, z));
          change.add(-weight(q));
        }
      }
    }
  }
  double totals[2] = {initial_sum.value(), change.value()};
  simulation.sum_over_ranks(totals);
  const double initial = totals[0];
  // Round-off only: each step's collision may round each of a node's 19 populations.
  const double steps = static_cast<double>(simulation.steps_taken());
  verdict.add("mass conservation", "|M(t) - M(0)| / M(0), M summed exactly",
              std::abs(totals[1]) / initial, std::max(1e-12, steps * k_q * 0x1.0p-52));
  const auto mass = trace.series("mass");
  if (!mass.empty()) {
    double drift = 0;
    for (const double m : mass) {
      drift = detail::worse(drift, std::abs(m - initial) / initial);
    }
    verdict.add("mass integral", "max |M_kernel(t) - M(0)| / M(0) (bound: nodes x 19 x 2^-52)",
                drift, detail::summation_bound(fluid_nodes() * k_q));
  }
  // The axial velocity from the post-collision populations: u = (sum c f* - F/2) / rho.
  const double nu = viscosity();
  double norms[2] = {0, 0}; // ||u_x - u_Poiseuille||^2, ||u_Poiseuille||^2
  double& err2 = norms[0];
  double& ref2 = norms[1];
  for (std::int64_t x = 0; x < nx; ++x) {
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t z = 0; z < nz; ++z) {
        if (solid(y0 + y, z0 + z)) {
          continue;
        }
        double rho = 0;
        double jx = 0;
        for (int q = 0; q < k_q; ++q) {
          const double value = f.at<double>(q, x, y, z);
          rho += value;
          jx += k_c[static_cast<std::size_t>(q)][0] * value;
        }
        const double ux = (jx - 0.5 * m_force) / rho;
        const double dy = static_cast<double>(y0 + y) - static_cast<double>(m_n[1] - 1) / 2;
        const double dz = static_cast<double>(z0 + z) - static_cast<double>(m_n[2] - 1) / 2;
        const double analytic = m_force * (m_radius * m_radius - dy * dy - dz * dz) / (4.0 * nu);
        err2 += (ux - analytic) * (ux - analytic);
        ref2 += analytic * analytic;
      }
    }
  }
  simulation.sum_over_ranks(norms);
  verdict.add("Poiseuille profile", "||u_x - u_Poiseuille||_2 / ||u_Poiseuille||_2",
              std::sqrt(err2 / ref2), 0.05);
  const auto drag = trace.series("drag");
  if (!drag.empty()) {
    const double body_force = m_force * fluid;
    verdict.add("drag balances body force", "|drag - F N_fluid| / (F N_fluid), last step",
                std::abs(drag.back() - body_force) / body_force, 0.01);
  } else {
    verdict.notes.push_back("drag balance: not checked, no steps recorded");
  }
  return verdict;
}

std::optional<runtime::VtkImage>
PipeFlowNode::vtk_image(const runtime::Snapshot& simulation) const {
  const runtime::Field& f = simulation.field(name(), "f");
  const runtime::Slab& slab = simulation.slab(name()); // the cells f holds
  const std::int64_t nx = slab.extent[0], ny = slab.extent[1], nz = slab.extent[2];
  const auto cells = static_cast<std::size_t>(nx * ny * nz);
  std::vector<double> density(cells);
  std::vector<double> velocity(3 * cells);
  std::vector<std::uint8_t> wall(cells);
  std::size_t at = 0;
  for (std::int64_t z = 0; z < nz; ++z) { // VTK order: x fastest
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t x = 0; x < nx; ++x, ++at) {
        wall[at] = solid(slab.offset[1] + y, slab.offset[2] + z) ? 1 : 0;
        if (wall[at] != 0) {
          continue; // solid nodes carry no flow
        }
        double rho = 0;
        std::array<double, 3> j = {-0.5 * m_force, 0, 0};
        for (int q = 0; q < k_q; ++q) {
          const double value = f.at<double>(q, x, y, z);
          rho += value;
          for (int d = 0; d < 3; ++d) {
            j[static_cast<std::size_t>(d)] +=
                k_c[static_cast<std::size_t>(q)][static_cast<std::size_t>(d)] * value;
          }
        }
        density[at] = rho;
        for (std::size_t d = 0; d < 3; ++d) {
          velocity[3 * at + d] = j[d] / rho;
        }
      }
    }
  }
  runtime::VtkImage image;
  image.geometry.cells = {nx, ny, nz};
  image.geometry.first = {slab.offset[0], slab.offset[1], slab.offset[2]};
  image.cells = {runtime::VtkArray::of<double>("density", density),
                 runtime::VtkArray::of<double>("velocity", velocity, 3),
                 runtime::VtkArray::of<std::uint8_t>("pipe_wall", wall)};
  image.field_data = field_data(simulation);
  return image;
}

Figures PipeFlowNode::figures(const runtime::Snapshot& simulation) const {
  // The snapshot's slab of f: each rank fills the planes' sites its slab holds (0 elsewhere) and
  // adds up its part of the profile, then the ranks' parts are joined (Snapshot::total_over_ranks).
  const runtime::Field& f = simulation.field(name(), "f");
  const runtime::Slab& slab = simulation.slab(name());
  const std::int64_t nx = m_n[0], ny = m_n[1], nz = m_n[2];
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto holds = [&](std::int64_t x, std::int64_t y, std::int64_t z) {
    const std::int64_t at[3] = {x, y, z};
    for (std::size_t d = 0; d < 3; ++d) {
      if (at[d] < slab.offset[d] || at[d] >= slab.offset[d] + slab.extent[d]) {
        return false;
      }
    }
    return true;
  };
  // The axial velocity u = (sum c f* - F/2) / rho and the density at one site of the slab (global
  // indices); NaN in a wall.
  auto site = [&](std::int64_t x, std::int64_t y, std::int64_t z) -> std::array<double, 2> {
    if (solid(y, z)) {
      return {nan, nan};
    }
    double rho = 0;
    double jx = -0.5 * m_force;
    for (int q = 0; q < k_q; ++q) {
      const double value =
          f.at<double>(q, x - slab.offset[0], y - slab.offset[1], z - slab.offset[2]);
      rho += value;
      jx += k_c[static_cast<std::size_t>(q)][0] * value;
    }
    return {jx / rho, rho};
  };
  Figures figures;
  Slice along{"velocity_x",
              "velocity_x",
              format("z = {} (mid-plane)", nz / 2),
              "x (sites)",
              "y (sites)",
              nx,
              ny,
              std::vector<double>(static_cast<std::size_t>(nx * ny), 0.0)};
  Slice density{"density",   "density",
                along.where, "x (sites)",
                "y (sites)", nx,
                ny,          std::vector<double>(static_cast<std::size_t>(nx * ny), 0.0)};
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t x = 0; x < nx; ++x) {
      if (holds(x, y, nz / 2)) {
        const auto [u, rho] = site(x, y, nz / 2);
        along.values[static_cast<std::size_t>(y * nx + x)] = u;
        density.values[static_cast<std::size_t>(y * nx + x)] = rho;
      }
    }
  }
  Slice across{"velocity_x-section",
               "velocity_x",
               format("x = {} (cross-section)", nx / 2),
               "y (sites)",
               "z (sites)",
               ny,
               nz,
               std::vector<double>(static_cast<std::size_t>(ny * nz), 0.0)};
  // The axial velocity of every fluid site summed along the pipe, for the profile below.
  std::vector<double> along_pipe(static_cast<std::size_t>(ny * nz), 0.0);
  for (std::int64_t z = 0; z < nz; ++z) {
    for (std::int64_t y = 0; y < ny; ++y) {
      const auto at = static_cast<std::size_t>(z * ny + y);
      if (holds(nx / 2, y, z)) {
        across.values[at] = site(nx / 2, y, z)[0];
      }
      if (solid(y, z) || !holds(slab.offset[0], y, z)) {
        continue; // a wall, or a row along the pipe that another rank holds
      }
      for (std::int64_t x = slab.offset[0]; x < slab.offset[0] + slab.extent[0]; ++x) {
        along_pipe[at] += site(x, y, z)[0];
      }
    }
  }
  simulation.total_over_ranks(along.values);
  simulation.total_over_ranks(density.values);
  simulation.total_over_ranks(across.values);
  simulation.total_over_ranks(along_pipe);
  figures.slices = {std::move(along), std::move(across), std::move(density)};
  // The checked quantity: the axial velocity of every fluid site (averaged along the pipe)
  // against its distance from the axis, and the Poiseuille profile.
  Chart chart{"profile",
              "axial velocity across the pipe",
              "distance from the axis r (sites)",
              "u_x (lattice units per step)",
              {}};
  Curve measured{"uwjit (each fluid site, mean over x)", {}, {}, true};
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t z = 0; z < nz; ++z) {
      if (solid(y, z)) {
        continue;
      }
      const double dy = static_cast<double>(y) - static_cast<double>(ny - 1) / 2;
      const double dz = static_cast<double>(z) - static_cast<double>(nz - 1) / 2;
      measured.x.push_back(std::sqrt(dy * dy + dz * dz));
      measured.y.push_back(along_pipe[static_cast<std::size_t>(z * ny + y)] /
                           static_cast<double>(nx));
    }
  }
  Curve poiseuille{"Poiseuille: F (R^2 - r^2) / (4 nu)", {}, {}, false};
  constexpr int k_samples = 200;
  for (int s = 0; s <= k_samples; ++s) {
    const double r = m_radius * s / k_samples;
    poiseuille.x.push_back(r);
    poiseuille.y.push_back(m_force * (m_radius * m_radius - r * r) / (4.0 * viscosity()));
  }
  chart.curves = {std::move(poiseuille), std::move(measured)};
  figures.charts.push_back(std::move(chart));
  return figures;
}

} // namespace uwjit::nodes
