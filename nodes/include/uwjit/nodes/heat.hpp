// heat: 3-D explicit diffusion (7-point stencil) with a static conductivity field.
#pragma once

#include <uwjit/nodes/builtin.hpp>

namespace uwjit::nodes {

/// Explicit diffusion of u on an nx × ny × nz grid (h = 1) with a conductivity field kappa (a
/// static array, sharded along x when a domain is split): a sphere of `contrast` × kappa in a
/// background of kappa. Face conductivities are harmonic means, so the scheme is conservative.
/// The static data is kappa; on grids of at most 2^19 cells it is instead the conductance of each
/// face, computed once (face_x, face_y, face_z: the face between a cell and its neighbour one
/// further along the axis; with fixed walls also face_x_low, the face below along x), which the
/// kernel reads instead of computing each face for both its cells: the same bits, no divisions,
/// more bytes read. A host that rebinds them rebinds the faces, not kappa.
///
/// Params: nx, ny, nz (>= 3); kappa (> 0); contrast (> 0, 1 = uniform); boundary ("insulating":
/// zero-gradient walls, "periodic", or "fixed": u = u_low on the wall x = 0 and u_high on the
/// wall x = nx, as dirichlet faces, y and z insulating); mode (>= 1) and amplitude: u0 = 1 +
/// amplitude · cos(k (x + 1/2)) along x, with k = π·mode/nx (insulating) or 2π·mode/nx
/// (periodic), or, fixed, u0 = the linear profile u_low + (u_high - u_low) x / nx + amplitude ·
/// sin(k (x + 1/2)), k = π·mode/nx: an eigenmode of the discrete operator when kappa is uniform;
/// courant (dt = courant / max kappa, stable below 1/6); extents ("compiled" or "runtime").
///
/// Integral: heat (the sum of u). Check: the total heat is conserved to round-off (insulating or
/// periodic walls); with uniform conductivity, the mode's amplitude follows the discrete
/// solution (1 - dt·kappa·λ)^t to 1e-9 and decays at the continuum rate kappa·k² to 1 % (while
/// it is above 1e-6 of its start); fixed walls: u stays within |A0 (1 - dt·kappa·λ)^t| plus
/// t × 8 ulps of the linear steady profile, the analytic solution at the cell centres.
class HeatNode final : public BuiltinNode {
public:
  /// Throws Error(usage) naming a missing or out-of-range param.
  HeatNode(std::string name, runtime::Params params);

  [[nodiscard]] std::string summary() const override;
  [[nodiscard]] std::int64_t default_steps() const override;
  [[nodiscard]] runtime::NodeLayout layout() const override;
  void initial_state(runtime::State& state) const override;
  void emit_update(codegen::KernelWriter& writer) const override;
  [[nodiscard]] Verdict check(const runtime::Snapshot& simulation,
                              const Trace& trace) const override;
  [[nodiscard]] std::optional<runtime::VtkImage>
  vtk_image(const runtime::Snapshot& simulation) const override;
  [[nodiscard]] Figures figures(const runtime::Snapshot& simulation) const override;

  /// The default params (a 32³ grid).
  [[nodiscard]] static runtime::Params defaults();
  /// What each param means, its unit and accepted range.
  [[nodiscard]] static std::span<const ParamDoc> param_docs() noexcept;

protected:
  [[nodiscard]] runtime::StaticData build_static_data() const override;

private:
  // Whether the kernel reads each face's conductance from static arrays (face_x, face_y,
  // face_z, computed once) rather than computing it from kappa for both cells of the face: for
  // grids of at most 2^19 cells, whose arrays stay in a last-level cache. The same bits either way.
  [[nodiscard]] bool stores_faces() const;
  // Above that size, on a CPU: a kernel of its own loops that computes each face's conductance
  // from kappa once, for both its cells (on a GPU, a thread per cell computes it for each).
  void emit_faces_once(codegen::KernelWriter& writer) const;
  [[nodiscard]] double wavenumber() const;
  [[nodiscard]] double discrete_eigenvalue() const;
  [[nodiscard]] double profile(double x) const;    // the steady state: 1, or linear if fixed
  [[nodiscard]] double mode_shape(double x) const; // cos(k x), or sin(k x) if fixed
  // |discrete decay rate / continuum rate - 1| of the exact discrete solution with nx cells
  // along x (uniform conductivity): what the continuum check measures on a perfect run.
  [[nodiscard]] double continuum_deviation(std::int64_t nx) const;
  std::int64_t m_n[3];
  double m_kappa, m_contrast, m_amplitude, m_courant;
  std::int64_t m_mode;
  bool m_periodic;
  bool m_fixed;
  double m_u_low = 0.0, m_u_high = 0.0;
  codegen::ExtentMode m_extents;
};

} // namespace uwjit::nodes
