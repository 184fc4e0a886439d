#include <uwjit/nodes/mlp.hpp>

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/vtk.hpp>

#include "params.hpp"

#include <cmath>
#include <numbers>

namespace uwjit::nodes {

using codegen::literal;
using runtime::Params;
using runtime::StaticArray;

namespace {
constexpr std::string_view k_type = "mlp";

std::string weight_key(std::int64_t layer) {
  return format("w{}", layer);
}
std::string bias_key(std::int64_t layer) {
  return format("b{}", layer);
}
} // namespace

std::span<const ParamDoc> MlpNode::param_docs() noexcept {
  static const ParamDoc k_docs[] = {
      {"nx", "grid points along x", "points", "[1, 16384]"},
      {"ny", "grid points along y", "points", "[1, 16384]"},
      {"nz", "grid points along z", "points", "[1, 16384]"},
      {"features", "values per point (the network's inputs and outputs)", "", "[1, 9]"},
      {"hidden", "width of each hidden layer", "neurons", "[1, 256]"},
      {"layers", "hidden layers", "", "[1, 8]"},
      {"seed", "seed of the generated weights", "", "[0, 2^63)"},
      {"dt", "forward Euler time step", "time units", "[1e-100, 1e6]"},
      {"extents", "grid extents compiled into the kernel, or passed at run time", "",
       "compiled, runtime"},
  };
  return k_docs;
}

Params MlpNode::defaults() {
  return Params{{"nx", 16},    {"ny", 16},  {"nz", 16},   {"features", 3},       {"hidden", 16},
                {"layers", 2}, {"seed", 1}, {"dt", 0.05}, {"extents", "runtime"}};
}

MlpNode::MlpNode(std::string name, Params params)
    : BuiltinNode(std::string(k_type), std::move(name), std::move(params)) {
  const Params& p = this->params();
  m_n[0] = detail::int_param(k_type, p, "nx", 1, 1 << 14);
  m_n[1] = detail::int_param(k_type, p, "ny", 1, 1 << 14);
  m_n[2] = detail::int_param(k_type, p, "nz", 1, 1 << 14);
  m_features = detail::int_param(k_type, p, "features", 1, 9);
  m_hidden = detail::int_param(k_type, p, "hidden", 1, 256);
  m_layers = detail::int_param(k_type, p, "layers", 1, 8);
  m_seed = detail::int_param(k_type, p, "seed", 0);
  (void)detail::double_param(k_type, p, "dt", 1e-100, 1e6, false);
  m_extents = detail::extents_param(k_type, p);
}

std::string MlpNode::summary() const {
  return "MLP surrogate right-hand side, evaluated pointwise, forward Euler";
}

std::int64_t MlpNode::default_steps() const {
  return 100;
}

runtime::NodeLayout MlpNode::layout() const {
  return {.axes = runtime::NodeLayout::grid({m_n[0], m_n[1], m_n[2]}, 0, runtime::Boundary::edge,
                                            m_extents),
          .fields = {{"u", runtime::Dtype::f64, {m_features}}},
          .integrals = {"u_sum", "u_square"}};
}

runtime::StaticData MlpNode::build_static_data() const {
  detail::SplitMix rng(static_cast<std::uint64_t>(m_seed) * 0x9e3779b97f4a7c15ULL + 1);
  runtime::StaticData data;
  std::int64_t inputs = m_features;
  for (std::int64_t layer = 0; layer <= m_layers; ++layer) {
    const std::int64_t outputs = layer == m_layers ? m_features : m_hidden;
    // Uniform with the variance 1 / fan-in, so activations stay in tanh's useful range.
    const double scale = std::sqrt(3.0 / static_cast<double>(inputs));
    std::vector<double> w(static_cast<std::size_t>(outputs * inputs));
    std::vector<double> b(static_cast<std::size_t>(outputs));
    for (auto& v : w) {
      v = scale * rng.symmetric();
    }
    for (auto& v : b) {
      v = 0.1 * rng.symmetric();
    }
    data.add(StaticArray::from_vector(weight_key(layer), std::move(w), {outputs, inputs}));
    data.add(StaticArray::from_vector(bias_key(layer), std::move(b), {outputs}));
    inputs = outputs;
  }
  const auto f = static_cast<std::size_t>(m_features);
  std::vector<double> in_mean(f), in_scale(f), out_mean(f), out_scale(f);
  for (std::size_t i = 0; i < f; ++i) {
    in_mean[i] = 0.1 * rng.symmetric();
    in_scale[i] = 0.75 + 0.25 * rng.symmetric();
    out_mean[i] = 0.05 * rng.symmetric();
    out_scale[i] = 0.5 + 0.2 * rng.symmetric();
  }
  data.add(StaticArray::from_vector("in_mean", std::move(in_mean), {m_features}));
  data.add(StaticArray::from_vector("in_scale", std::move(in_scale), {m_features}));
  data.add(StaticArray::from_vector("out_mean", std::move(out_mean), {m_features}));
  data.add(StaticArray::from_vector("out_scale", std::move(out_scale), {m_features}));
  data.add("layers", m_layers);
  return data;
}

double MlpNode::initial(std::int64_t f, std::int64_t i, std::int64_t j, std::int64_t k) const {
  constexpr double two_pi = 2 * std::numbers::pi;
  const double fd = static_cast<double>(f);
  const double x = two_pi * (static_cast<double>(i) + 0.5) / static_cast<double>(m_n[0]);
  const double y = two_pi * (static_cast<double>(j) + 0.5) / static_cast<double>(m_n[1]);
  const double z = two_pi * (static_cast<double>(k) + 0.5) / static_cast<double>(m_n[2]);
  return std::sin(x + fd) * std::cos(y) + 0.5 * std::cos(z + 0.3 * fd);
}

void MlpNode::initial_state(runtime::State& state) const {
  runtime::Field& u = state["u"];
  for (std::int64_t f = 0; f < m_features; ++f) {
    for (std::int64_t i = 0; i < m_n[0]; ++i) {
      for (std::int64_t j = 0; j < m_n[1]; ++j) {
        for (std::int64_t k = 0; k < m_n[2]; ++k) {
          u.at<double>(f, i, j, k) = initial(f, i, j, k);
        }
      }
    }
  }
}

void MlpNode::emit_update(codegen::KernelWriter& w) const {
  w.state_out("u");
  for (std::int64_t layer = 0; layer <= m_layers; ++layer) {
    w.static_array(weight_key(layer)); // the shapes, compiled in, from the bound arrays
    w.static_array(bias_key(layer));
  }
  for (const char* key : {"in_mean", "in_scale", "out_mean", "out_scale"}) {
    w.static_array(key);
  }
  w.integral("u_sum");
  w.integral("u_square");
  std::string cell = "          const double dt = args->dt;\n"
                     "          double a0[w0_n1];\n"
                     "          for (uw_i64 f = 0; f < w0_n1; ++f) {\n"
                     "            a0[f] = (u(f, i, j, k) - in_mean(f)) / in_scale(f);\n"
                     "          }\n";
  for (std::int64_t layer = 0; layer <= m_layers; ++layer) {
    const std::string wk = weight_key(layer);
    const std::string bk = bias_key(layer);
    const bool last = layer == m_layers;
    if (!last) {
      cell += format("          double a{}[{}_n0];\n", layer + 1, wk);
    }
    cell += format("          for (uw_i64 o = 0; o < {}_n0; ++o) {\n", wk);
    cell += format("            double acc = {}(o);\n", bk);
    cell += format("            for (uw_i64 n = 0; n < {}_n1; ++n) {\n", wk);
    cell += format("              acc += {}(o, n) * a{}[n];\n            }\n", wk, layer);
    if (!last) {
      cell += format("            a{}[o] = uwm::tanh(acc);\n", layer + 1);
    } else {
      cell += "            const double next = u(o, i, j, k) + dt * (acc * out_scale(o) + "
              "out_mean(o));\n"
              "            u_out(o, i, j, k) = next;\n"
              "            u_sum += next;\n"
              "            u_square += next * next;\n";
    }
    cell += "          }\n";
  }
  w.for_each_cell({.indices = {"i", "j", "k"}}, cell);
}

std::vector<double> MlpNode::reference(const runtime::StaticData& data, std::int64_t steps) const {
  const double dt = this->dt();
  const auto f_count = static_cast<std::size_t>(m_features);
  const auto points = static_cast<std::size_t>(m_n[0] * m_n[1] * m_n[2]);
  std::vector<double> u(f_count * points);
  std::size_t p = 0;
  for (std::int64_t i = 0; i < m_n[0]; ++i) {
    for (std::int64_t j = 0; j < m_n[1]; ++j) {
      for (std::int64_t k = 0; k < m_n[2]; ++k, ++p) {
        for (std::size_t f = 0; f < f_count; ++f) {
          u[f * points + p] = initial(static_cast<std::int64_t>(f), i, j, k);
        }
      }
    }
  }
  const auto in_mean = data.at("in_mean").values<double>();
  const auto in_scale = data.at("in_scale").values<double>();
  const auto out_mean = data.at("out_mean").values<double>();
  const auto out_scale = data.at("out_scale").values<double>();
  std::vector<double> a, next;
  for (std::int64_t s = 0; s < steps; ++s) {
    for (p = 0; p < points; ++p) {
      a.resize(f_count);
      for (std::size_t f = 0; f < f_count; ++f) {
        a[f] = (u[f * points + p] - in_mean[f]) / in_scale[f];
      }
      for (std::int64_t layer = 0; layer <= m_layers; ++layer) {
        const StaticArray& w = data.at(weight_key(layer));
        const auto weights = w.values<double>();
        const auto bias = data.at(bias_key(layer)).values<double>();
        const auto outputs = static_cast<std::size_t>(w.shape()[0]);
        const auto inputs = static_cast<std::size_t>(w.shape()[1]);
        next.assign(outputs, 0.0);
        for (std::size_t o = 0; o < outputs; ++o) {
          double acc = bias[o];
          for (std::size_t n = 0; n < inputs; ++n) {
            acc += weights[o * inputs + n] * a[n];
          }
          next[o] = layer == m_layers ? acc : std::tanh(acc);
        }
        a.swap(next);
      }
      for (std::size_t f = 0; f < f_count; ++f) {
        u[f * points + p] += dt * (a[f] * out_scale[f] + out_mean[f]);
      }
    }
  }
  return u;
}

Verdict MlpNode::check(const runtime::Snapshot& simulation, const Trace& trace) const {
  (void)trace;
  Verdict verdict;
  const runtime::Field& u = simulation.field(name(), "u");
  const auto expected = reference(simulation.bound_static_data(name()), simulation.steps_taken());
  double worst = 0;
  std::size_t at = 0;
  for (std::int64_t f = 0; f < m_features; ++f) {
    for (std::int64_t i = 0; i < m_n[0]; ++i) {
      for (std::int64_t j = 0; j < m_n[1]; ++j) {
        for (std::int64_t k = 0; k < m_n[2]; ++k, ++at) {
          worst = detail::worse(worst, std::abs(u.at<double>(f, i, j, k) - expected[at]));
        }
      }
    }
  }
  verdict.add("matches the C++ reference", "max |u - u_reference| over every point and feature",
              worst, 1e-12);
  return verdict;
}

} // namespace uwjit::nodes
