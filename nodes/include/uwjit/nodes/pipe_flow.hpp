// pipe-flow: D3Q19 lattice Boltzmann flow through a circular pipe, driven by a body force.
#pragma once

#include <uwjit/nodes/builtin.hpp>

namespace uwjit::nodes {

/// D3Q19 lattice Boltzmann (BGK collision, Guo forcing) in a circular pipe along x, periodic in
/// x. The wall is one static array built from the params, `pipe_links` (nx, ny, nz) i32, one word
/// per node: bit 0 set for a solid node; at a fluid node, bit q (1..18) set where the population
/// of direction q would come from a solid node and is bounced back (half-way bounce-back)
/// instead. It is sharded along x when a domain is split.
///
/// Params: nx, ny, nz (lattice); radius (lattice units, at most min(ny, nz)/2 - 1: one solid
/// layer at least); tau (relaxation time > 1/2; viscosity (tau - 1/2)/3); u_max (the centreline
/// velocity the body force is chosen for: force = 4 nu u_max / radius²); extents.
///
/// Integrals: drag (the x force on the wall, by momentum exchange), mass (sum of densities) and
/// momentum (x momentum of the fluid). Check, at the end of a run: mass conserved to round-off;
/// the axial velocity profile matches Poiseuille, u(r) = force (radius² - r²) / (4 nu), within
/// 5 % (L2, relative); the wall drag balances the body force on the fluid within 1 %.
class PipeFlowNode final : public BuiltinNode {
public:
  /// Throws Error(usage) naming a missing or out-of-range param.
  PipeFlowNode(std::string name, runtime::Params params);

  [[nodiscard]] std::string summary() const override;
  [[nodiscard]] std::int64_t default_steps() const override;
  /// The check compares with a steady state: it needs default_steps() to judge a run.
  [[nodiscard]] std::int64_t steps_to_judge() const override;
  [[nodiscard]] runtime::NodeLayout layout() const override;
  void initial_state(runtime::State& state) const override;
  void emit_update(codegen::KernelWriter& writer) const override;
  [[nodiscard]] Verdict check(const runtime::Snapshot& simulation,
                              const Trace& trace) const override;
  [[nodiscard]] std::optional<runtime::VtkImage>
  vtk_image(const runtime::Snapshot& simulation) const override;
  [[nodiscard]] Figures figures(const runtime::Snapshot& simulation) const override;

  /// The default params (a 32 × 24 × 24 lattice).
  [[nodiscard]] static runtime::Params defaults();
  /// What each param means, its unit and accepted range.
  [[nodiscard]] static std::span<const ParamDoc> param_docs() noexcept;
  /// Sets the radius that follows from nx, ny, nz in `params`: min(ny, nz)/2 - 1.
  static void derive_from_size(runtime::Params& params);

  /// The body force per node (lattice units).
  [[nodiscard]] double force() const noexcept { return m_force; }
  /// The kinematic viscosity (tau - 1/2) / 3.
  [[nodiscard]] double viscosity() const noexcept { return (m_tau - 0.5) / 3.0; }
  /// The number of fluid nodes.
  [[nodiscard]] std::int64_t fluid_nodes() const;

protected:
  [[nodiscard]] runtime::StaticData build_static_data() const override;

private:
  [[nodiscard]] bool solid(std::int64_t y, std::int64_t z) const;
  std::int64_t m_n[3];
  double m_radius, m_tau, m_u_max, m_force;
  codegen::ExtentMode m_extents;
};

} // namespace uwjit::nodes
