// heat: 3-D explicit diffusion (7-point stencil) with a static conductivity field.
#pragma once

#include <uwjit/nodes/builtin.hpp>

namespace uwjit::nodes {

/// Explicit diffusion of u on an nx × ny × nz grid (h = 1) with a conductivity field kappa (a
/// static array, sharded along x when a domain is split): a sphere of `contrast` × kappa in a
/// background of kappa. Face conductivities are harmonic means, so the scheme is conservative.
///
/// Params: nx, ny, nz (>= 3); kappa (> 0); contrast (> 0, 1 = uniform); boundary ("insulating":
/// zero-gradient walls, or "periodic"); mode (>= 1) and amplitude: u0 = 1 + amplitude ·
/// cos(k (x + 1/2)) along x, with k = π·mode/nx (insulating) or 2π·mode/nx (periodic), an
/// eigenmode of the discrete operator when kappa is uniform; courant (dt = courant / max kappa,
/// stable below 1/6); extents ("compiled" or "runtime").
///
/// Integral: heat (the sum of u). Check: the total heat is conserved to round-off (insulating or
/// periodic walls); with uniform conductivity, the mode's amplitude follows the discrete
/// solution (1 - dt·kappa·λ)^t to 1e-9 and decays at the continuum rate kappa·k² to 1 %.
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
  std::vector<std::filesystem::path> write_output(const runtime::Snapshot& simulation,
                                                  const std::filesystem::path& directory,
                                                  std::string_view stem) const override;
  [[nodiscard]] Figures figures(const runtime::Snapshot& simulation) const override;

  /// The default params (a 32³ grid).
  [[nodiscard]] static runtime::Params defaults();
  /// What each param means, its unit and accepted range.
  [[nodiscard]] static std::span<const ParamDoc> param_docs() noexcept;

protected:
  [[nodiscard]] runtime::StaticData build_static_data() const override;

private:
  [[nodiscard]] double wavenumber() const;
  [[nodiscard]] double discrete_eigenvalue() const;
  std::int64_t m_n[3];
  double m_kappa, m_contrast, m_amplitude, m_courant;
  std::int64_t m_mode;
  bool m_periodic;
  codegen::ExtentMode m_extents;
};

} // namespace uwjit::nodes
