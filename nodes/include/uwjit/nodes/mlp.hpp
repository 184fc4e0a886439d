// mlp: a multilayer-perceptron surrogate right-hand side, evaluated pointwise over a field.
#pragma once

#include <uwjit/nodes/builtin.hpp>

#include <vector>

namespace uwjit::nodes {

/// A field u of `features` components on an nx × ny × nz grid evolves pointwise by
/// du/dt = g(u), with g an MLP surrogate: x = (u - in_mean) / in_scale, `layers` hidden layers
/// of `hidden` tanh units, a linear output y, and g = y · out_scale + out_mean; forward Euler.
/// The weights (w0 .. wL, b0 .. bL) and normalisation statistics (in_mean, in_scale, out_mean,
/// out_scale) are replicate static arrays, generated from `seed`; their shapes, not their
/// values, are compiled in, so new weights of the same shapes need no compile.
///
/// Params: nx, ny, nz; features (1..16); hidden (1..256); layers (1..8); seed; dt; extents
/// (default "runtime": one kernel for every grid size).
///
/// Integrals: u_sum (sum of u) and u_square (sum of u²). Check: the state equals a plain C++
/// evaluation of the same network and steps within 1e-12.
class MlpNode final : public BuiltinNode {
public:
  /// Throws Error(usage) naming a missing or out-of-range param.
  MlpNode(std::string name, runtime::Params params);

  [[nodiscard]] std::string summary() const override;
  [[nodiscard]] std::int64_t default_steps() const override;
  [[nodiscard]] runtime::NodeLayout layout() const override;
  void initial_state(runtime::State& state) const override;
  void emit_update(codegen::KernelWriter& writer) const override;
  [[nodiscard]] Verdict check(const runtime::Snapshot& simulation,
                              const Trace& trace) const override;

  /// The default params (a 16³ grid of 3 features, two hidden layers of 16).
  [[nodiscard]] static runtime::Params defaults();
  /// What each param means, its unit and accepted range.
  [[nodiscard]] static std::span<const ParamDoc> param_docs() noexcept;

  /// The plain C++ reference: `steps` Euler steps of the network `data` (this node's static
  /// data, or arrays rebound in its place) from the initial state, for every point; returns u
  /// as [feature][x][y][z], row-major.
  [[nodiscard]] std::vector<double> reference(const runtime::StaticData& data,
                                              std::int64_t steps) const;

protected:
  [[nodiscard]] runtime::StaticData build_static_data() const override;

private:
  [[nodiscard]] double initial(std::int64_t f, std::int64_t i, std::int64_t j,
                               std::int64_t k) const;
  std::int64_t m_n[3];
  std::int64_t m_features, m_hidden, m_layers, m_seed;
  codegen::ExtentMode m_extents;
};

} // namespace uwjit::nodes
