// The GPU form of cell-form kernels, without a GPU: the built-in nodes' GPU kernels compile to
// PTX with their entry and nothing left to link, a node that writes its own loops is refused, and
// the GPU form's text runs on the CPU under an emulation of the GPU's thread registers, giving
// the CPU form's state bit for bit. The emulation runs the GPU form one thread at a time: each
// thread adds its own integral share, so the warp shuffles are not exercised here (they need a
// GPU: the gpu tests).
#include "sandbox.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using uwjit::Error;
using uwjit::codegen::BufferDecl;
using uwjit::codegen::BufferRole;
using uwjit::codegen::ExtentMode;
using uwjit::codegen::KernelSource;
using uwjit::engine::DiskCache;
using uwjit::engine::Engine;
using uwjit::engine::EngineOptions;
using uwjit::engine::Target;
using uwjit::runtime::NodeKernel;
using uwjit_test::ScopedEnv;

namespace {

// Odd extents, so that thread blocks overhang the box.
std::shared_ptr<const uwjit::nodes::BuiltinNode> small(const std::string& type) {
  const std::vector<std::int64_t> size = type == "pipe-flow" ? std::vector<std::int64_t>{5, 9, 11}
                                         : type == "heat"    ? std::vector<std::int64_t>{5, 6, 13}
                                         : type == "fvm"     ? std::vector<std::int64_t>{7}
                                                             : std::vector<std::int64_t>{3, 4, 11};
  auto params = uwjit::nodes::sized_params(type, size);
  if (type == "heat") {
    params.set("contrast", 3.0);
  }
  return uwjit::nodes::make(type, type, params);
}

// The thread registers of a GPU, emulated: the GPU form's text, compiled for this CPU, is called
// once per thread of the launch kernel_abi.h describes (blocks of k_threads on x over the last
// axis of the box, the axis before on y, the first of three on z). A lane sees no other lane's
// value and is lane 0, so each thread adds its own share of an integral.
constexpr int k_threads = 8;

std::string emulated(const NodeKernel& gpu, int rank) {
  std::string body = R"(namespace {
unsigned emu_block[3];
unsigned emu_thread;
} // namespace
inline unsigned __nvvm_read_ptx_sreg_ctaid_x() { return emu_block[0]; }
inline unsigned __nvvm_read_ptx_sreg_ctaid_y() { return emu_block[1]; }
inline unsigned __nvvm_read_ptx_sreg_ctaid_z() { return emu_block[2]; }
inline unsigned __nvvm_read_ptx_sreg_tid_x() { return emu_thread; }
inline unsigned __nvvm_read_ptx_sreg_ntid_x() { return THREADS; }
inline unsigned __nvvm_read_ptx_sreg_laneid() { return 0; }
inline int __nvvm_shfl_sync_down_i32(unsigned, int, int, int) { return 0; }
inline double __nvvm_atom_add_gen_d(double* total, double value) {
  const double old = *total;
  *total += value;
  return old;
}
)";
  std::string text = gpu.source.body();
  const std::string placeholder(uwjit::codegen::k_entry_placeholder);
  text.replace(text.find(placeholder), placeholder.size(), "gpu_form");
  body += text;
  body += "extern \"C\" int launch(const uwjit_kernel_args* args) {\n"
          "  const uw_i64 last = args->update_end[RANK - 1] - args->update_begin[RANK - 1];\n"
          "  const uw_i64 y = RANK > 1 ? args->update_end[RANK - 2] - args->update_begin[RANK - 2] "
          ": 1;\n"
          "  const uw_i64 z = RANK > 2 ? args->update_end[0] - args->update_begin[0] : 1;\n"
          "  for (uw_i64 bz = 0; bz < z; ++bz)\n"
          "    for (uw_i64 by = 0; by < y; ++by)\n"
          "      for (uw_i64 bx = 0; bx * THREADS < last; ++bx)\n"
          "        for (unsigned t = 0; t < THREADS; ++t) {\n"
          "          emu_block[0] = unsigned(bx);\n"
          "          emu_block[1] = unsigned(by);\n"
          "          emu_block[2] = unsigned(bz);\n"
          "          emu_thread = t;\n"
          "          gpu_form(*args);\n"
          "        }\n"
          "  return 0;\n"
          "}\n";
  for (std::size_t at; (at = body.find("RANK")) != std::string::npos;) {
    body.replace(at, 4, std::to_string(rank));
  }
  for (std::size_t at; (at = body.find("THREADS")) != std::string::npos;) {
    body.replace(at, 7, std::to_string(k_threads) + "u");
  }
  return body;
}

// One buffer's memory, halo-padded as the writer declared it.
struct Buffer {
  std::vector<std::uint64_t> words; // 8-byte aligned storage for any dtype
  std::size_t bytes = 0;
};

std::int64_t padded_count(const NodeKernel& k, const BufferDecl& b) {
  std::int64_t count = 1;
  const auto shape = k.writer.interior_shape(b);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    count *= shape[d] + 2 * b.axes[d].halo;
  }
  return count;
}

// Inputs filled with values of the buffer's dtype (0 or 1 for integers, masks in the nodes),
// outputs with a sentinel: the same for both runs. A static array of indices the node provides
// (fvm's face graph, read with indirect addressing) keeps its contents.
Buffer make_buffer(const NodeKernel& k, const BufferDecl& b, std::mt19937_64& random,
                   const uwjit::runtime::StaticData& bound) {
  const auto count = static_cast<std::size_t>(padded_count(k, b));
  const std::size_t size = uwjit::codegen::size_of(b.dtype);
  Buffer buffer{std::vector<std::uint64_t>((count * size + 7) / 8 + 8), count * size};
  auto* bytes = reinterpret_cast<unsigned char*>(buffer.words.data());
  const bool halos =
      std::any_of(b.axes.begin(), b.axes.end(), [](const auto& a) { return a.halo > 0; });
  const auto* array = bound.array(b.name);
  if (b.role == BufferRole::statics && !halos && array != nullptr &&
      (b.dtype == uwjit::codegen::Dtype::i32 || b.dtype == uwjit::codegen::Dtype::i64)) {
    std::memcpy(bytes, array->data(), buffer.bytes);
    return buffer;
  }
  std::uniform_real_distribution<double> real(0.5, 1.5);
  for (std::size_t i = 0; i < count; ++i) {
    if (b.role == BufferRole::state_out) {
      const double sentinel = -7.25;
      std::memcpy(bytes + i * size, &sentinel, std::min<std::size_t>(size, 8));
    } else if (b.dtype == uwjit::codegen::Dtype::f64) {
      const double v = real(random);
      std::memcpy(bytes + i * size, &v, 8);
    } else if (b.dtype == uwjit::codegen::Dtype::f32) {
      const auto v = static_cast<float>(real(random));
      std::memcpy(bytes + i * size, &v, 4);
    } else {
      std::memset(bytes + i * size, 0, size);
      bytes[i * size] = static_cast<unsigned char>(random() % 2);
    }
  }
  return buffer;
}

struct Run {
  std::vector<Buffer> outputs;
  std::vector<double> integrals;
};

// Runs `kernel` (the CPU form, or the emulated GPU launch) over fresh buffers from `seed`, on the
// box [begin, end) of the node's domain.
Run run(const uwjit::engine::Kernel& kernel, const NodeKernel& k, std::uint64_t seed,
        const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& end,
        const uwjit::runtime::StaticData& bound) {
  std::mt19937_64 random(seed);
  std::vector<Buffer> in;
  std::vector<Buffer> out;
  std::vector<Buffer> statics;
  for (const BufferDecl& b : k.writer.buffers()) {
    auto& table = b.role == BufferRole::state_in    ? in
                  : b.role == BufferRole::state_out ? out
                                                    : statics;
    table.push_back(make_buffer(k, b, random, bound));
  }
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  std::vector<const void*> static_ptr;
  for (auto& b : in) {
    in_ptr.push_back(b.words.data());
  }
  for (auto& b : out) {
    out_ptr.push_back(b.words.data());
  }
  for (auto& b : statics) {
    static_ptr.push_back(b.words.data());
  }
  std::vector<uw_i64> extents;
  uwjit_kernel_args args{};
  for (const auto& e : k.writer.extents()) {
    if (e.mode == ExtentMode::runtime) {
      extents.push_back(e.value);
    }
    if (e.domain_axis >= 0) {
      args.shard_extent[e.domain_axis] = e.value;
      args.global_extent[e.domain_axis] = e.value;
    }
  }
  std::vector<double> params;
  for (const auto& p : k.writer.params()) {
    params.push_back(p.value);
  }
  std::vector<double> integrals(k.writer.integrals().size(), 0.0);
  args.state_in = in_ptr.data();
  args.state_out = out_ptr.data();
  args.statics = static_ptr.data();
  args.extents = extents.data();
  args.params = params.data();
  args.integrals = integrals.data();
  args.dt = 0.0625;
  for (std::size_t d = 0; d < begin.size(); ++d) {
    args.update_begin[d] = begin[d];
    args.update_end[d] = end[d];
  }
  REQUIRE(kernel(args) == 0);
  return {std::move(out), std::move(integrals)};
}

} // namespace

TEST_CASE("the built-in nodes' GPU kernels are PTX with their entry and nothing to link") {
  ScopedEnv cuda("UWJIT_CUDA_PATH", UWJIT_TEST_FAKE_CUDA); // mlp's tanh needs libdevice
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const Target sm90 = Target::parse("cuda:sm_90");
  for (const std::string type : {"heat", "pipe-flow", "fvm", "mlp"}) {
    CAPTURE(type);
    const auto kernels = uwjit::runtime::node_kernels(*small(type), true);
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].writer.is_gpu());
    const auto ptx = engine.ptx(kernels[0].source, sm90);
    const std::string& text = *ptx.ptx;
    CHECK(text.find(".target sm_90\n") != std::string::npos);
    CHECK(text.find(".visible .entry " + ptx.info->entry + "(") != std::string::npos);
    CHECK(text.find(".extern") == std::string::npos); // no call to an undefined function
    CHECK(text.find("fma.rn") == std::string::npos);  // contraction off, as on CPUs
    // The integrals: a warp's sum by shuffles, one atomic addition per warp.
    CHECK(text.find("shfl.sync.down.b32") != std::string::npos);
    CHECK(text.find("atom.global.add.f64") != std::string::npos);
  }
}

namespace {

// A node whose kernel walks its cells itself (body()): CPUs only.
class OwnLoops final : public uwjit::runtime::Node {
public:
  OwnLoops() : Node("own-loops", "own", uwjit::runtime::Params{}) {}
  uwjit::runtime::NodeLayout layout() const override {
    return {.axes = {{.cells = 8, .name = "n"}}, .fields = {{"u", uwjit::codegen::Dtype::f64}}};
  }
  void initial_state(uwjit::runtime::State&) const override {}
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("u");
    w.body("    for (uw_i64 i = 0; i < n; ++i) {\n      u_out(i) = 2.0 * u(i);\n    }\n");
  }
};

} // namespace

TEST_CASE("a node whose kernel writes its own loops is refused for a GPU, naming the way out") {
  const OwnLoops node;
  CHECK(uwjit::runtime::node_kernels(node, false).size() == 1); // fine on a CPU
  try {
    (void)uwjit::runtime::node_kernels(node, true);
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    CHECK(std::string(error.what()) ==
          "kernel of \"own\": it writes its own loops (body()), which run on CPUs only; a kernel "
          "that runs on a GPU gives the update of one cell with for_each_cell()");
  }
}

TEST_CASE("a node's kernels for the host are the ones its simulation requests") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  for (const std::string type : {"heat", "pipe-flow", "mlp", "fvm"}) {
    CAPTURE(type);
    const auto built = small(type);
    const uwjit::runtime::Simulation simulation(
        engine, std::vector<std::shared_ptr<const uwjit::runtime::Node>>{built}, {});
    const auto kernels = uwjit::runtime::node_kernels(*built, false);
    REQUIRE(kernels.size() == simulation.kernels().size());
    CHECK(engine.key_of(kernels[0].source).hex() == simulation.kernels()[0].info.key);
  }
}

TEST_CASE("the GPU form, run thread by thread on the CPU, gives the CPU form's state bit for bit") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  for (const std::string type : {"heat", "pipe-flow", "fvm", "mlp"}) {
    CAPTURE(type);
    const auto built = small(type);
    const auto cpu = uwjit::runtime::node_kernels(*built, false).at(0);
    const auto gpu = uwjit::runtime::node_kernels(*built, true).at(0);
    std::vector<std::int64_t> extent;
    for (const auto& e : cpu.writer.extents()) {
      if (e.domain_axis >= 0) {
        extent.push_back(e.value);
      }
    }
    const int rank = static_cast<int>(extent.size());
    const auto cpu_kernel = engine.kernel(cpu.source);
    const auto launch =
        engine.kernel(KernelSource::from_text(emulated(gpu, rank), "launch", gpu.source.slots()));
    // The whole interior, and a box inside it that starts off the origin.
    std::vector<std::int64_t> inner_begin;
    std::vector<std::int64_t> inner_end;
    for (std::size_t d = 0; d < extent.size(); ++d) {
      inner_begin.push_back(1 + static_cast<std::int64_t>(d % 2));
      inner_end.push_back(extent[d] - (d == 0 ? 1 : 0));
    }
    const std::vector<std::int64_t> origin(extent.size(), 0);
    const std::vector<std::vector<std::int64_t>> boxes[] = {{origin, extent},
                                                            {inner_begin, inner_end}};
    for (const auto& box : boxes) {
      CAPTURE(box[0]);
      const Run expected = run(cpu_kernel, cpu, 42, box[0], box[1], built->static_data());
      const Run got = run(launch, gpu, 42, box[0], box[1], built->static_data());
      REQUIRE(expected.outputs.size() == got.outputs.size());
      for (std::size_t o = 0; o < got.outputs.size(); ++o) {
        CHECK(std::memcmp(expected.outputs[o].words.data(), got.outputs[o].words.data(),
                          got.outputs[o].bytes) == 0);
      }
      REQUIRE(expected.integrals.size() == got.integrals.size());
      for (std::size_t i = 0; i < got.integrals.size(); ++i) {
        CHECK(std::abs(got.integrals[i] - expected.integrals[i]) <=
              1e-12 * std::abs(expected.integrals[i]));
        CHECK(expected.integrals[i] != 0.0);
      }
    }
  }
}
