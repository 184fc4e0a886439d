// fvm: finite-volume diffusion on an unstructured 2-D Voronoi mesh, run to its steady state.
#pragma once

#include <uwjit/nodes/builtin.hpp>

namespace uwjit::nodes {

/// Explicit finite-volume diffusion of T on the Voronoi cells of the perturbed points of a
/// triangular lattice on about the unit square. The outer ring of lattice points holds the
/// Dirichlet values of the harmonic function T*(x, y) = exp(π (x - 1)) sin(π y), so the steady
/// state is T* itself. Two-point fluxes between generator points are consistent on a Voronoi
/// mesh (each face is the perpendicular bisector of its two generators).
///
/// The mesh is a face graph in replicate static arrays, read with indirect addressing:
/// face_owner, face_neighbour (i32), face_area (f64) per face; cell_volume (f64) and
/// cell_centre (f64, cells × 2) per cell; boundary_owner (i32), boundary_area, boundary_value
/// (f64) and boundary_point (f64, × 2) per Dirichlet face; and scalars n_cells, n_faces,
/// n_boundary_faces, dim. Cells and faces are numbered in a shuffled order.
///
/// Params: n (points per lattice row, >= 4); perturbation (of interior points, in lattice
/// spacings, below 0.25); seed; kappa (diffusivity > 0); safety (dt as a fraction of the
/// explicit stability limit, (0, 1]); extents.
///
/// Integrals: heat (sum of V T), boundary_flux (into the domain) and residual (sum of
/// V (dT/dt)²). Check: heat changes by exactly dt · boundary_flux each step (to round-off);
/// the run has reached a steady state (rms dT/dt below 1e-6); T matches T* within h² of
/// max |T*|, h = 1/(n-1) the lattice spacing (the scheme is second order: the error falls about
/// fourfold when n doubles).
class FvmNode final : public BuiltinNode {
public:
  /// Builds the mesh; throws Error(usage) naming a missing or out-of-range param.
  FvmNode(std::string name, runtime::Params params);
  ~FvmNode() override;

  [[nodiscard]] std::string summary() const override;
  [[nodiscard]] std::int64_t default_steps() const override;
  /// The check compares with a steady state: it needs default_steps() to judge a run.
  [[nodiscard]] std::int64_t steps_to_judge() const override;
  [[nodiscard]] runtime::NodeLayout layout() const override;
  void initial_state(runtime::State& state) const override;
  void emit_update(codegen::KernelWriter& writer) const override;
  [[nodiscard]] Verdict check(const runtime::Snapshot& simulation,
                              const Trace& trace) const override;
  /// None: its cells are a mesh (write_vtk writes an UnstructuredGrid).
  [[nodiscard]] std::optional<runtime::VtkImage>
  vtk_image(const runtime::Snapshot& simulation) const override;
  std::vector<std::filesystem::path> write_vtk(const runtime::Snapshot& simulation,
                                               const std::filesystem::path& directory,
                                               std::string_view stem) const override;
  [[nodiscard]] Figures figures(const runtime::Snapshot& simulation) const override;

  /// The default params (32 points per row: 900 cells).
  [[nodiscard]] static runtime::Params defaults();
  /// What each param means, its unit and accepted range.
  [[nodiscard]] static std::span<const ParamDoc> param_docs() noexcept;
  /// The steady state T*(x, y).
  [[nodiscard]] static double exact(double x, double y);
  /// The largest |T - T*| over the cells of `simulation`'s state, relative to max |T*|.
  [[nodiscard]] double error(const runtime::Snapshot& simulation) const;

protected:
  [[nodiscard]] runtime::StaticData build_static_data() const override;

private:
  struct Mesh;
  // The GPU form of the kernel (a gather over each cell's faces), declared after the arrays both
  // forms read; `boundary` is the boundary faces' extent.
  void emit_gather(codegen::KernelWriter& w, codegen::Extent boundary) const;
  std::shared_ptr<const Mesh> m_mesh; // shared with the computed static arrays
  double m_kappa, m_safety, m_dt;
  codegen::ExtentMode m_extents;
};

} // namespace uwjit::nodes
