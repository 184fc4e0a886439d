// The benchmark's kernels. Each is generated text, the same in every process, so that a child
// process asked for a kernel by name requests exactly the key its parent measured.
#include "bench.hpp"

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace uwjit::bench {

namespace {

using codegen::KernelSource;

// One explicit step of 3-D diffusion, a 7-point stencil on a grid with one halo cell per side.
KernelSource stencil() {
  return KernelSource::generated(
      "bench-stencil",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* __restrict u = static_cast<const double*>(args->state_in[0]);\n"
      "  double* __restrict out = static_cast<double*>(args->state_out[0]);\n"
      "  const uw_i64 nx = args->extents[0], ny = args->extents[1], nz = args->extents[2];\n"
      "  const uw_i64 sy = nz + 2, sx = (ny + 2) * sy;\n"
      "  const double r = 0.1 * args->dt;\n"
      "  double total = 0.0;\n"
      "  for (uw_i64 i = 1; i <= nx; ++i) {\n"
      "    for (uw_i64 j = 1; j <= ny; ++j) {\n"
      "      const uw_i64 row = i * sx + j * sy;\n"
      "      for (uw_i64 k = 1; k <= nz; ++k) {\n"
      "        const uw_i64 c = row + k;\n"
      "        const double lap = u[c - sx] + u[c + sx] + u[c - sy] + u[c + sy] + u[c - 1] +\n"
      "                           u[c + 1] - 6.0 * u[c];\n"
      "        out[c] = u[c] + r * lap;\n"
      "        total += out[c];\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "  args->integrals[0] = total;\n"
      "  return UWJIT_KERNEL_OK;\n"
      "}\n",
      {.state_in = {"u"},
       .state_out = {"u"},
       .extents = {"nx", "ny", "nz"},
       .integrals = {"heat"}});
}

// `fields` coupled fields, each a 13-point (fourth-order) Laplacian on a grid with two halo cells
// per side plus a reaction with the next field: 16 fields make 13 KB of canonical source.
KernelSource coupled_fields(int fields) {
  std::string body = "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n";
  codegen::SlotTables slots;
  for (int f = 0; f < fields; ++f) {
    body += format(
        "  const double* __restrict a{} = static_cast<const double*>(args->state_in[{}]);\n", f, f);
    body += format("  double* __restrict b{} = static_cast<double*>(args->state_out[{}]);\n", f, f);
    slots.state_in.push_back(format("u{}", f));
    slots.state_out.push_back(format("u{}", f));
  }
  body += "  const uw_i64 nx = args->extents[0], ny = args->extents[1], nz = args->extents[2];\n"
          "  const uw_i64 sy = nz + 4, sx = (ny + 4) * sy;\n"
          "  const double r = 0.05 * args->dt, kr = 0.01 * args->dt;\n"
          "  for (uw_i64 i = 2; i < nx + 2; ++i) {\n"
          "    for (uw_i64 j = 2; j < ny + 2; ++j) {\n"
          "      const uw_i64 row = i * sx + j * sy;\n"
          "      for (uw_i64 k = 2; k < nz + 2; ++k) {\n"
          "        const uw_i64 c = row + k;\n";
  const std::string block =
      "        {\n"
      "          const double near = a@[c - sx] + a@[c + sx] + a@[c - sy] + a@[c + sy] + "
      "a@[c - 1] + a@[c + 1];\n"
      "          const double far = a@[c - 2 * sx] + a@[c + 2 * sx] + a@[c - 2 * sy] + "
      "a@[c + 2 * sy] + a@[c - 2] + a@[c + 2];\n"
      "          const double lap = (16.0 * near - far - 90.0 * a@[c]) * (1.0 / 12.0);\n"
      "          b@[c] = a@[c] + r * lap + kr * a@[c] * (a#[c] - a@[c]);\n"
      "        }\n";
  for (int f = 0; f < fields; ++f) {
    body += codegen::replace_all(codegen::replace_all(block, "@", std::to_string(f)), "#",
                                 std::to_string((f + 1) % fields));
  }
  body += "      }\n    }\n  }\n  return UWJIT_KERNEL_OK;\n}\n";
  slots.extents = {"nx", "ny", "nz"};
  return KernelSource::generated("bench-fields" + std::to_string(fields), body, std::move(slots));
}

// STREAM's copy: the bandwidth a kernel can reach at most, measured with the same compiler.
KernelSource copy() {
  return KernelSource::generated(
      "bench-copy",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* __restrict x = static_cast<const double*>(args->state_in[0]);\n"
      "  double* __restrict y = static_cast<double*>(args->state_out[0]);\n"
      "  const uw_i64 n = args->extents[0];\n"
      "  for (uw_i64 i = 0; i < n; ++i) y[i] = x[i];\n"
      "  return UWJIT_KERNEL_OK;\n"
      "}\n",
      {.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}});
}

// The same copy with streaming stores: each output line is written whole, past the caches, so
// that it is never read first (the write-allocate a plain store costs). Vectors of 8 doubles
// from the first 64-byte boundary of the output, stored non-temporally; the rest plainly.
KernelSource copy_streaming() {
  return KernelSource::generated(
      "bench-copy-streaming",
      "typedef double uw_v8 __attribute__((vector_size(64)));\n"
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* __restrict x = static_cast<const double*>(args->state_in[0]);\n"
      "  double* __restrict y = static_cast<double*>(args->state_out[0]);\n"
      "  const uw_i64 n = args->extents[0];\n"
      "  uw_i64 i = 0;\n"
      "  for (; i < n && reinterpret_cast<__UINTPTR_TYPE__>(y + i) % 64 != 0; ++i) y[i] = x[i];\n"
      "  for (; i + 8 <= n; i += 8) {\n"
      "    uw_v8 v;\n"
      "    __builtin_memcpy(&v, x + i, sizeof v);\n"
      "    __builtin_nontemporal_store(v, reinterpret_cast<uw_v8*>(y + i));\n"
      "  }\n"
      "  for (; i < n; ++i) y[i] = x[i];\n"
      "  __builtin_ia32_sfence();\n"
      "  return UWJIT_KERNEL_OK;\n"
      "}\n",
      {.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}});
}

// A node whose static array `w` has `count` doubles: bound as an external buffer (its shape is
// compiled in, its contents never are), or baked into the source as an initialiser.
KernelSource static_array(std::int64_t count, bool baked) {
  std::string body;
  codegen::SlotTables slots{.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}};
  if (baked) {
    body.reserve(static_cast<std::size_t>(count) * 24 + 1024);
    body += format("static constexpr double w[{}] = {\n", count);
    // Deterministic values that need all 17 digits, as real data would.
    double value = 0.5;
    for (std::int64_t i = 0; i < count; ++i) {
      value = value * 3.9 * (1.0 - value); // the logistic map: chaotic in [0, 1]
      body += codegen::literal(value);
      body += (i % 8 == 7) ? ",\n" : ", ";
    }
    body += "};\n";
  } else {
    slots.statics = {"w"};
  }
  body += "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
          "  const double* __restrict x = static_cast<const double*>(args->state_in[0]);\n"
          "  double* __restrict y = static_cast<double*>(args->state_out[0]);\n";
  if (!baked) {
    body += "  const double* __restrict w = static_cast<const double*>(args->statics[0]);\n";
  }
  body += format("  constexpr uw_i64 w_count = {};\n", count);
  body += "  for (uw_i64 i = 0; i < args->extents[0]; ++i) y[i] = x[i] * w[i % w_count];\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n";
  return KernelSource::generated(baked ? "bench-static-baked" : "bench-static-external", body,
                                 std::move(slots));
}

KernelSource tiny(std::int64_t index) {
  return KernelSource::generated(
      "bench-tiny",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n"
      "  y[0] = " +
          std::to_string(index) +
          ".0;\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n",
      {.state_out = {"y"}});
}

// The pipe-flow node's kernel (default params), as `uwjit run pipe-flow` requests it. The
// runtime emits it only while building a Simulation, which requests (compiles) it: that is done
// once, by the parent, which leaves the source in $UWJIT_BENCH_SOURCES/pipe-flow.json for its
// children, so that no child compiles before it measures.
KernelSource pipe_flow() {
  static std::mutex mutex;
  static std::optional<KernelSource> cached;
  std::lock_guard lock(mutex);
  if (cached) {
    return *cached;
  }
  const char* dir = std::getenv("UWJIT_BENCH_SOURCES");
  const std::filesystem::path file =
      dir != nullptr ? std::filesystem::path(dir) / "pipe-flow.json" : std::filesystem::path();
  if (!file.empty() && std::filesystem::exists(file)) {
    std::ifstream in(file);
    const Json saved = Json::parse(in);
    codegen::SlotTables slots;
    slots.state_in = saved["state_in"].get<std::vector<std::string>>();
    slots.state_out = saved["state_out"].get<std::vector<std::string>>();
    slots.statics = saved["statics"].get<std::vector<std::string>>();
    slots.extents = saved["extents"].get<std::vector<std::string>>();
    slots.integrals = saved["integrals"].get<std::vector<std::string>>();
    cached.emplace(KernelSource::generated(saved["origin"].get<std::string>(),
                                           saved["body"].get<std::string>(), std::move(slots)));
    return *cached;
  }
  engine::Engine engine({.disk_cache = engine::DiskCache::off});
  const runtime::Simulation simulation(
      engine, {nodes::make("pipe-flow", "pipe", nodes::default_params("pipe-flow"))});
  cached.emplace(*simulation.kernel_reports().front().source);
  if (!file.empty()) {
    const auto& slots = cached->slots();
    const Json saved = {{"origin", cached->origin()},  {"body", cached->body()},
                        {"state_in", slots.state_in},  {"state_out", slots.state_out},
                        {"statics", slots.statics},    {"extents", slots.extents},
                        {"integrals", slots.integrals}};
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << saved.dump();
  }
  return *cached;
}

std::optional<std::int64_t> suffix_number(const std::string& name, std::string_view prefix) {
  if (name.rfind(prefix, 0) != 0) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc{} || ptr != end || value < 1) {
    return std::nullopt;
  }
  return value;
}

} // namespace

codegen::KernelSource kernel_source(const std::string& name) {
  if (name == "stencil") {
    return stencil();
  }
  if (name == "fields16") {
    return coupled_fields(16);
  }
  if (const auto n = suffix_number(name, "fields-"); n && *n <= 64) {
    return coupled_fields(static_cast<int>(*n));
  }
  if (name == "copy") {
    return copy();
  }
  if (name == "copy-streaming") {
    return copy_streaming();
  }
  if (name == "pipe-flow") {
    return pipe_flow();
  }
  if (const auto n = suffix_number(name, "static-ext-")) {
    return static_array(*n, false);
  }
  if (const auto n = suffix_number(name, "static-baked-")) {
    return static_array(*n, true);
  }
  if (const auto n = suffix_number(name, "tiny-")) {
    return tiny(*n);
  }
  throw Error(ErrorKind::usage,
              format("unknown benchmark kernel \"{}\" (known: stencil, fields16, fields-N, copy, "
                     "copy-streaming, pipe-flow, static-ext-N, static-baked-N, tiny-N)",
                     name));
}

} // namespace uwjit::bench
