// What the GPU test program's files share: the driver's checked calls, device 0's target, the
// engine the tests compile with, and the nodes they run.
//
// Under the tests' stand-in driver (tests/jit/fake_libcuda.c, device "uwjit fake GPU"), which has
// no GPU, a launch is emulated on the CPU from the kernel's source in the cache directory named
// by UWJIT_FAKE_CUDA_EMULATE: the engine then keeps its cache there, so that every kernel the
// tests compile (or a simulation requests) can be emulated. Everything but the GPU itself (device
// memory, pointer tables, the argument struct, the launch's grid) runs; each thread is emulated
// alone, so the warp shuffles are not.
#pragma once

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/cuda/probe.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace uwjit_gpu_test {

inline const uwjit::cuda::Driver& driver() {
  return uwjit::cuda::Driver::get();
}

inline void check(uwjit::cuda::Result result, const char* call) {
  driver().check(result, call, uwjit::ErrorKind::jit);
}

// ctest's SKIP_RETURN_CODE of the GPU test programs.
inline constexpr int k_skipped = 77;

// Whether there is a CUDA device to run on; prints why not ("skipped: ...") when there is none,
// and which device 0 is when there is.
inline bool device_present() {
  const auto probe = uwjit::cuda::probe();
  if (!probe.usable || probe.devices.empty()) {
    std::printf("skipped: no CUDA device to run on: %s\n",
                probe.usable ? "the driver lists no device" : probe.problem.c_str());
    return false;
  }
  std::printf("running on device 0: %s (%s), driver %s\n", probe.devices[0].name.c_str(),
              probe.devices[0].arch().c_str(),
              uwjit::cuda::version_text(probe.version.value_or(0)).c_str());
  return true;
}

// The target of device 0, or sm_90 (whose PTX newer GPUs load) when LLVM 19 does not know it.
inline uwjit::engine::Target device_target() {
  const auto probe = uwjit::cuda::probe();
  try {
    return uwjit::engine::Target::parse("cuda:" + probe.devices.at(0).arch());
  } catch (const uwjit::Error&) {
    return uwjit::engine::Target::parse("cuda:sm_90");
  }
}

// An engine of its own: memory only on a GPU, the stand-in's emulation directory under it.
inline uwjit::engine::EngineOptions engine_options() {
  uwjit::engine::EngineOptions options;
  const char* emulated = std::getenv("UWJIT_FAKE_CUDA_EMULATE");
  if (emulated != nullptr && *emulated != '\0') {
    options.cache_dir = emulated;
  } else {
    options.disk_cache = uwjit::engine::DiskCache::off;
  }
  return options;
}

// A 2-D cell-form node (the built-in nodes are 3-D and 1-D): run-time extents, a static array
// with halos, a run-time param, two integrals, a state that varies along both axes.
// `w_shard`: the axis its static array is sharded along, for a run sharded along that axis.
class Shear2d final : public uwjit::runtime::Node {
public:
  explicit Shear2d(std::optional<int> w_shard = std::nullopt)
      : Node("shear-2d", "shear", uwjit::runtime::Params{}), m_w_shard(w_shard) {}
  uwjit::runtime::NodeLayout layout() const override {
    auto axes = uwjit::runtime::NodeLayout::grid({9, 37}, 1, uwjit::runtime::Boundary::periodic,
                                                 uwjit::codegen::ExtentMode::runtime);
    return {.axes = axes, .fields = {{"u", uwjit::codegen::Dtype::f64}}, .integrals = {"a", "b"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t x = 0; x < 9; ++x) {
      for (std::int64_t y = 0; y < 37; ++y) {
        state["u"].at<double>(x, y) =
            1.0 + 0.125 * static_cast<double>(x) - 0.01 * static_cast<double>(y * y % 17);
      }
    }
  }
  uwjit::runtime::StaticData build_static_data() const override {
    uwjit::runtime::StaticData data;
    std::vector<double> w(9 * 37);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = 0.25 + 0.5 * static_cast<double>(i % 5) / 5.0;
    }
    data.add(uwjit::runtime::StaticArray::from_vector(
        "w", std::move(w), {9, 37},
        m_w_shard ? uwjit::runtime::Replication::shard : uwjit::runtime::Replication::replicate,
        m_w_shard));
    return data;
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.static_array("w", uwjit::codegen::Dtype::f64, {{w.domain(0), 1}, {w.domain(1), 1}});
    w.integral("a");
    w.integral("b");
    w.param("gain", 0.75);
    w.for_each_cell({.indices = {"x", "y"}}, R"(      const double next =
          u(x, y) + gain * (w(x - 1, y) * u(x - 1, y) - w(x, y + 1) * u(x, y + 1)) * args->dt;
      u_out(x, y) = next;
      a += next;
      b -= next * static_cast<double>(x + nx_offset + 2 * (y + ny_offset));
)");
  }

private:
  std::optional<int> m_w_shard;
};

// A 2-D cell-form node on Shear2d's grid that reads Shear2d's field (a coupled input, "v"), its
// neighbours across the periodic faces included, into a field of its own; one integral.
class Carried2d final : public uwjit::runtime::Node {
public:
  Carried2d() : Node("carried-2d", "carried", uwjit::runtime::Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    auto axes = uwjit::runtime::NodeLayout::grid({9, 37}, 1, uwjit::runtime::Boundary::periodic,
                                                 uwjit::codegen::ExtentMode::runtime);
    return {.axes = axes,
            .fields = {{"c", uwjit::codegen::Dtype::f64}},
            .integrals = {"total"},
            .inputs = {{.node = "shear", .field = "u", .as = "v"}}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t x = 0; x < 9; ++x) {
      for (std::int64_t y = 0; y < 37; ++y) {
        state["c"].at<double>(x, y) = 0.5 * static_cast<double>((x + 3 * y) % 7);
      }
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("c");
    w.integral("total");
    w.for_each_cell({.indices = {"x", "y"}}, R"(      const double next =
          c(x, y) + 0.25 * (v(x + 1, y) - v(x - 1, y) + v(x, y - 1) * c(x, y + 1)) * args->dt;
      c_out(x, y) = next;
      total += next;
)");
  }
};

// A 2-D cell-form node of 11 x 70 cells relaxing towards a ramp at a run-time rate (param
// "rate"), with three integrals: the total (a sum), the largest change |u_new - u_old| and the
// largest -u_new (maxima), so that a row spans several warps and blocks on a GPU.
class Peaks2d final : public uwjit::runtime::Node {
public:
  explicit Peaks2d(uwjit::runtime::Params params = {{"rate", uwjit::runtime::Value(0.25)}})
      : Node("peaks-2d", "peaks", std::move(params)) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = uwjit::runtime::NodeLayout::grid({11, 70}, 1, uwjit::runtime::Boundary::edge),
            .fields = {{"u", uwjit::codegen::Dtype::f64}},
            .integrals = {"total", "change", "lowest"}};
  }
  void initial_state(uwjit::runtime::State& state) const override {
    for (std::int64_t x = 0; x < 11; ++x) {
      for (std::int64_t y = 0; y < 70; ++y) {
        state["u"].at<double>(x, y) = 2.0 - 0.03 * static_cast<double>((x * 7 + y * 3) % 23);
      }
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.param("rate", params().get_double("rate"));
    w.integral("total");
    w.integral("change", uwjit::codegen::Reduction::max);
    w.integral("lowest", uwjit::codegen::Reduction::max);
    w.for_each_cell({.indices = {"x", "y"}}, R"(      const double next =
          u(x, y) + rate * (0.01 * static_cast<double>(x * y) - 1.0 - u(x, y));
      u_out(x, y) = next;
      total += next;
      change.max(uwm::fabs(next - u(x, y)));
      lowest.max(-next);
)");
  }
};

inline std::shared_ptr<const uwjit::runtime::Node> built_in(const std::string& type,
                                                            std::vector<std::int64_t> size) {
  return uwjit::nodes::make(type, type, uwjit::nodes::sized_params(type, size));
}

// How closely a node's state on the GPU must match the CPU's. Bit for bit where each cell is the
// same IEEE operations on both (contraction off, division and sqrt correctly rounded). mlp calls
// tanh, which is libdevice's on the GPU and the C library's on the CPU: two implementations, each
// within 2 ulp of the exact value but not always equal to each other, so within 1e-12 of
// max(|value|, 1) there (a wrong cell or index is off by far more). 0 means bit for bit.
inline double gpu_tolerance(const uwjit::runtime::Node& node) {
  return node.type() == "mlp" ? 1e-12 : 0.0;
}

} // namespace uwjit_gpu_test
