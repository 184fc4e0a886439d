// engine/: compiling in process, loading with ORC, the Engine façade. These tests really JIT.
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/disassemble.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/jit.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdlib.h>
#include <sys/stat.h>
#include <thread>
#include <type_traits>
#include <vector>

using uwjit::codegen::KernelSource;
using uwjit::codegen::SlotTables;
using uwjit::engine::DiskCache;
using uwjit::engine::Engine;
using uwjit::engine::EngineOptions;

namespace {

// These tests are about compiling and loading; the disk tier has its own tests below.
EngineOptions memory_only() {
  return {.disk_cache = DiskCache::off};
}

// A fresh directory for one test, removed afterwards.
using SandboxDir = uwjit_test::TempDir;

// Only an engine makes kernels: a host cannot wrap an arbitrary function pointer as one, while
// the kernels it gets may be copied and kept.
static_assert(
    !std::is_constructible_v<uwjit::engine::Kernel, uwjit_kernel_fn, std::shared_ptr<const void>,
                             std::shared_ptr<const uwjit::engine::KernelInfo>>);
static_assert(std::is_copy_constructible_v<uwjit::engine::Kernel>);

// out[i] = a * in[i] + b over n elements, with a and b baked in, n at run time.
KernelSource axpb(double a, double b) {
  return KernelSource::generated(
      "axpb",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* in = static_cast<const double*>(args->state_in[0]);\n"
      "  double* out = static_cast<double*>(args->state_out[0]);\n"
      "  for (uw_i64 i = 0; i < args->extents[0]; ++i) {\n"
      "    out[i] = " +
          std::to_string(a) + " * in[i] + " + std::to_string(b) +
          ";\n"
          "  }\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n",
      SlotTables{.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}});
}

std::vector<double> run(const uwjit::engine::Kernel& kernel, const std::vector<double>& input) {
  std::vector<double> output(input.size(), 0.0);
  const void* in[] = {input.data()};
  void* out[] = {output.data()};
  const uw_i64 extents[] = {static_cast<uw_i64>(input.size())};
  uwjit_kernel_args args{};
  args.state_in = in;
  args.state_out = out;
  args.extents = extents;
  REQUIRE(kernel(args) == UWJIT_KERNEL_OK);
  return output;
}

std::string compile_error_of(Engine& engine, const KernelSource& source) {
  try {
    (void)engine.kernel(source);
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::compile);
    return error.what();
  }
  return "(compiled)";
}

} // namespace

TEST_CASE("a kernel compiles, loads and computes") {
  Engine engine(memory_only());
  const auto kernel = engine.kernel(axpb(2.0, 1.0));
  CHECK(run(kernel, {0.0, 1.0, 2.5}) == std::vector<double>{1.0, 3.0, 6.0});
  CHECK(kernel.info().tier == uwjit::engine::Tier::compiled);
  CHECK(kernel.info().object_size > 0);
  CHECK(kernel.info().compile.frontend_ms > 0);
  CHECK(kernel.info().compile.codegen_ms > 0);
  CHECK(kernel.info().entry == "uwjit_" + kernel.info().key);
}

TEST_CASE("a second request for the same source is served from memory") {
  Engine engine(memory_only());
  const auto first = engine.kernel(axpb(3.0, 0.0));
  const auto second = engine.kernel(axpb(3.0, 0.0));
  CHECK(second.info().tier == uwjit::engine::Tier::memory);
  CHECK(reinterpret_cast<void*>(second.function()) == reinterpret_cast<void*>(first.function()));
  CHECK(run(second, {2.0}) == std::vector<double>{6.0});
}

TEST_CASE("a syntax error names kernel.cpp with the line and column of the body") {
  Engine engine(memory_only());
  const auto message = compile_error_of(
      engine, KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* a) {\n"
                                      "  int x = 1\n"
                                      "  return x;\n"
                                      "}\n",
                                      "k"));
  CHECK(message.find("kernel.cpp:2:12: error: expected ';'") != std::string::npos);
  CHECK(message.find("  int x = 1") != std::string::npos); // the offending line is shown
  CHECK(message.find("set UWJIT_DUMP_DIR") != std::string::npos);
}

TEST_CASE("a hand-written kernel's diagnostics keep its own lines and columns") {
  Engine engine(memory_only());
  try {
    (void)engine.kernel(KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* a) {\n"
                                                "  int x = 1\n"
                                                "  return x;\n"
                                                "}\n",
                                                "k"));
    FAIL("compiled");
  } catch (const uwjit::Error& error) {
    REQUIRE_FALSE(error.diagnostics().empty());
    const auto& d = error.diagnostics()[0];
    CHECK(d.severity == "error");
    CHECK(d.section == "kernel.cpp");
    CHECK(d.line == 2);
    CHECK(d.column == 12);
    CHECK(d.message == "expected ';' at end of declaration");
  }
}

TEST_CASE("a failed compile leaves nothing behind and the engine goes on") {
  Engine engine(memory_only());
  const auto bad = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args*) { "
                                           "return undeclared; }",
                                           "k");
  CHECK(compile_error_of(engine, bad).find("undeclared identifier 'undeclared'") !=
        std::string::npos);
  // The same bad source fails again (no poisoned slot), and a good one still works.
  CHECK(compile_error_of(engine, bad).find("undeclared") != std::string::npos);
  CHECK(run(engine.kernel(axpb(1.0, 1.0)), {1.0}) == std::vector<double>{2.0});
}

TEST_CASE("two kernels with the same internal symbol names coexist") {
  Engine engine(memory_only());
  auto with_helper = [](int value) {
    return KernelSource::from_text(
        "double helper_value = " + std::to_string(value) +
            ";\n"
            "double helper(double x) { return x * helper_value; }\n"
            "extern \"C\" int kernel(const uwjit_kernel_args* args) {\n"
            "  static_cast<double*>(args->state_out[0])[0] = helper(1.0);\n"
            "  return 0;\n"
            "}\n",
        "kernel", SlotTables{.state_out = {"y"}});
  };
  const auto one = engine.kernel(with_helper(1));
  const auto two = engine.kernel(with_helper(2));
  double y1 = 0, y2 = 0;
  void* out1[] = {&y1};
  void* out2[] = {&y2};
  uwjit_kernel_args a{}, b{};
  a.state_out = out1;
  b.state_out = out2;
  CHECK(one(a) == 0);
  CHECK(two(b) == 0);
  CHECK(y1 == 1.0);
  CHECK(y2 == 2.0);
}

TEST_CASE("two threads compiling at once both get working kernels") {
  Engine engine(memory_only());
  std::vector<uwjit::engine::Kernel> kernels;
  std::mutex mutex;
  std::vector<std::thread> threads;
  std::exception_ptr failure;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto kernel = engine.kernel(axpb(10.0 + t, 0.0));
        std::lock_guard lock(mutex);
        kernels.push_back(std::move(kernel));
      } catch (...) {
        std::lock_guard lock(mutex);
        failure = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  REQUIRE_FALSE(failure);
  REQUIRE(kernels.size() == 2);
  const double a = run(kernels[0], {1.0})[0];
  const double b = run(kernels[1], {1.0})[0];
  CHECK(std::min(a, b) == 10.0);
  CHECK(std::max(a, b) == 11.0);
}

TEST_CASE("concurrent requests for one source share a single compile") {
  Engine engine(memory_only());
  std::vector<std::thread> threads;
  std::vector<uwjit::engine::Tier> tiers(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { tiers[t] = engine.kernel(axpb(7.0, 7.0)).info().tier; });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(std::count(tiers.begin(), tiers.end(), uwjit::engine::Tier::compiled) == 1);
}

TEST_CASE("the optimiser vectorises a simple loop at -O3 and not at -O0") {
  const std::string loop = "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                           "  const double* __restrict a = (const double*)args->state_in[0];\n"
                           "  double* __restrict b = (double*)args->state_out[0];\n"
                           "  for (uw_i64 i = 0; i < args->extents[0]; ++i) b[i] = 2.0 * a[i];\n"
                           "  return 0;\n"
                           "}\n";
  const auto text = KernelSource::from_text(loop, "k").canonical();
  const uwjit::engine::Compiler o3;
  const auto optimised = o3.compile(text, uwjit::engine::Listing::ir);
  // Block names are discarded, so look for vector stores of doubles.
  CHECK(optimised.optimised_ir.find("store <") != std::string::npos);
  CHECK(optimised.optimised_ir.find("x double>") != std::string::npos);
  const uwjit::engine::Compiler o0({.opt_level = 0});
  const auto plain = o0.compile(text, uwjit::engine::Listing::ir);
  CHECK(plain.optimised_ir.find("x double>") == std::string::npos);
}

namespace {

// A 7-point stencil over u with its row and plane strides given by `strides` (in scope: nx, ny,
// nz, read at run time), summing what it writes.
std::string stencil_with_strides(const std::string& strides) {
  return "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
         "  const double* __restrict u = (const double*)args->state_in[0];\n"
         "  double* __restrict out = (double*)args->state_out[0];\n"
         "  const uw_i64 nx = args->extents[0], ny = args->extents[1], nz = args->extents[2];\n"
         "  " +
         strides +
         "\n"
         "  double total = 0.0;\n"
         "  for (uw_i64 i = 1; i <= nx; ++i)\n"
         "    for (uw_i64 j = 1; j <= ny; ++j)\n"
         "      for (uw_i64 k = 1; k <= nz; ++k) {\n"
         "        const uw_i64 c = i * sx + j * sy + k;\n"
         "        out[c] = u[c - sx] + u[c + sx] + u[c - sy] + u[c + sy] + u[c - 1] + u[c + 1];\n"
         "        total += out[c];\n"
         "      }\n"
         "  args->integrals[0] = total;\n"
         "  return 0;\n"
         "}\n";
}

// Rows of a 3-point average with compiled-in extents: a loop the loop vectoriser vectorises,
// whose offsets are constants.
std::string rows_with_constant_offsets() {
  return "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
         "  const double* __restrict u = (const double*)args->state_in[0];\n"
         "  double* __restrict out = (double*)args->state_out[0];\n"
         "  constexpr uw_i64 sx = 66;\n"
         "  for (uw_i64 i = 1; i <= 64; ++i)\n"
         "    for (uw_i64 k = args->update_begin[0]; k < args->update_end[0]; ++k) {\n"
         "      const uw_i64 c = i * sx + k;\n"
         "      out[c] = (u[c - sx] + u[c + sx] + u[c - 1] + u[c + 1]) * 0.25;\n"
         "    }\n"
         "  return 0;\n"
         "}\n";
}

} // namespace

TEST_CASE("the kernel pipeline reduces loop strength where an array's offsets vary at run time "
          "and, with 16 vector registers, in vectorised loops; and SLP-vectorises straight code") {
  const uwjit::engine::Compiler o3;
  // The choice is named in every key's salt, the same on every CPU.
  CHECK(o3.pipeline() ==
        "slp-where-scalar,lsr-where-offsets-vary,lsr-vector-loops-on-x86-without-avx512");
  // Loop strength reduction gives each of u's offsets a pointer of its own that the loop
  // advances (a pointer phi in the IR, which no other pass of the pipeline makes here): where
  // the strides are run-time extents, the stencil gets it; where they are constants, code
  // generation folds the offsets into its addresses and the pass is left out (pipeline.cpp).
  const auto pointer_phis_of = [&](const std::string& kernel) {
    const auto text = KernelSource::from_text(kernel, "k").canonical();
    const std::string ir = o3.compile(text, uwjit::engine::Listing::ir).optimised_ir;
    std::size_t count = 0;
    for (std::size_t at = ir.find("phi ptr"); at != std::string::npos;
         at = ir.find("phi ptr", at + 1)) {
      ++count;
    }
    return count;
  };
  const auto pointer_phis = [&](const std::string& strides) {
    return pointer_phis_of(stencil_with_strides(strides));
  };
  CHECK(pointer_phis("const uw_i64 sy = nz + 2, sx = (ny + 2) * sy;") > 0);
  CHECK(pointer_phis("constexpr uw_i64 sy = 66, sx = 66 * sy; (void)nz;") == 0);
  // A vectorised loop with constant offsets gets the pass on an x86 CPU of 16 vector registers
  // (no AVX-512), where such a loop of many streams spills without it, and not on others.
  const auto& features = uwjit::engine::host_target().features;
  const bool sixteen_vector_registers =
      uwjit::engine::host_target().triple.starts_with("x86_64") &&
      std::find(features.begin(), features.end(), "+avx512f") == features.end();
  const std::size_t vector_loop_phis = pointer_phis_of(rows_with_constant_offsets());
  INFO("16 vector registers: " << sixteen_vector_registers);
  if (sixteen_vector_registers) {
    CHECK(vector_loop_phis > 0);
  } else {
    CHECK(vector_loop_phis == 0);
  }
  // Straight-line code, which the loop vectoriser has nothing to do with, still gets the SLP
  // vectoriser: four adjacent loads and stores become vector ones.
  const std::string straight = "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                               "  const double* a = (const double*)args->state_in[0];\n"
                               "  double* b = (double*)args->state_out[0];\n"
                               "  const double x0 = a[0], x1 = a[1], x2 = a[2], x3 = a[3];\n"
                               "  b[0] = 2.0 * x0 + 1.0; b[1] = 2.0 * x1 + 1.0;\n"
                               "  b[2] = 2.0 * x2 + 1.0; b[3] = 2.0 * x3 + 1.0;\n"
                               "  return 0;\n"
                               "}\n";
  const auto slp =
      o3.compile(KernelSource::from_text(straight, "k").canonical(), uwjit::engine::Listing::ir);
  CHECK(slp.optimised_ir.find("store <") != std::string::npos);
  CHECK(slp.optimised_ir.find("x double>") != std::string::npos);
  // The kernel runs as written.
  Engine engine(memory_only());
  const auto kernel = engine.kernel(KernelSource::from_text(straight, "k"));
  std::vector<double> in = {1.0, 2.0, 3.0, 4.0}, out(4, 0.0);
  const void* ins[] = {in.data()};
  void* outs[] = {out.data()};
  uwjit_kernel_args args{};
  args.abi_version = UWJIT_KERNEL_ABI_VERSION;
  args.n_state_in = 1;
  args.n_state_out = 1;
  args.state_in = ins;
  args.state_out = outs;
  CHECK(kernel(args) == UWJIT_KERNEL_OK);
  CHECK(out == std::vector<double>{3.0, 5.0, 7.0, 9.0});
}

TEST_CASE("a kernel that needs a static initialiser is refused at compile time") {
  Engine engine(memory_only());
  const auto message = compile_error_of(
      engine, KernelSource::from_text("double make() { return 2.0; }\n"
                                      "double global = make();\n"
                                      "extern \"C\" int k(const uwjit_kernel_args*) { return "
                                      "(int)global; }\n",
                                      "k"));
  CHECK(message.find("static initialisers") != std::string::npos);
}

TEST_CASE("an object that references an unknown symbol fails to load with a jit error") {
  Engine engine(memory_only());
  try {
    (void)engine.kernel(KernelSource::from_text(
        "extern \"C\" double uwjit_no_such_function(double);\n"
        "extern \"C\" int k(const uwjit_kernel_args*) { return (int)uwjit_no_such_function(1.0); "
        "}\n",
        "k"));
    FAIL("the kernel loaded");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::jit);
    CHECK(std::string(error.what()).find("uwjit_no_such_function") != std::string::npos);
  }
}

TEST_CASE("megabytes of binary garbage are a compile error with bounded diagnostics") {
  Engine engine(memory_only());
  std::string garbage(3 << 20, '\0');
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (auto& byte : garbage) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    byte = static_cast<char>(state >> 56);
  }
  const auto message = compile_error_of(engine, KernelSource::from_text(garbage, "k"));
  CHECK(message.rfind("kernel does not compile:\n", 0) == 0);
  CHECK(message.find("kernel.cpp:") != std::string::npos);
  CHECK(message.find("too many errors emitted") != std::string::npos);
  CHECK(message.size() < 100000); // clang's error limit and line excerpts bound the text
  CHECK(run(engine.kernel(axpb(1.0, 2.0)), {1.0}) == std::vector<double>{3.0});
}

TEST_CASE("a kernel of several megabytes compiles and gets one key") {
  Engine engine(memory_only());
  std::string body = "// " + std::string(4 << 20, 'x') + "\n";
  body += "extern \"C\" int k(const uwjit_kernel_args* a) {\n"
          "  *static_cast<double*>(a->state_out[0]) = 7.0;\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n";
  const auto source = KernelSource::from_text(body, "k");
  const auto kernel = engine.kernel(source);
  CHECK(kernel.info().key == engine.key_of(source).hex());
  double out = 0;
  void* outs[] = {&out};
  uwjit_kernel_args args{};
  args.state_out = outs;
  CHECK(kernel(args) == UWJIT_KERNEL_OK);
  CHECK(out == 7.0);
}

TEST_CASE("an expression nested 36,000 deep compiles instead of overflowing the caller's stack") {
  // Clang recurses once per term of the sum: on the calling thread's 8 MiB this took the whole
  // process down with SIGSEGV; the compile's own thread has the stack it needs.
  std::string sum;
  for (int i = 0; i < 36000; ++i) {
    sum += "args->dt+";
  }
  Engine engine(memory_only());
  const auto kernel =
      engine.kernel(KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                                            "  args->integrals[0] = " +
                                                sum +
                                                "1.0;\n"
                                                "  return 0;\n"
                                                "}\n",
                                            "k", SlotTables{.integrals = {"s"}}));
  double integral = 0;
  uwjit_kernel_args args{};
  args.dt = 0.5;
  args.integrals = &integral;
  CHECK(kernel(args) == 0);
  CHECK(integral == 18001.0);
}

TEST_CASE("a wrong entry is one compile error naming the functions the kernel defines") {
  SandboxDir dir;
  const std::string body = "extern \"C\" int other(const uwjit_kernel_args*) { return 0; }\n"
                           "extern \"C\" int another(const uwjit_kernel_args*) { return 1; }\n";
  const auto entry_error = [&](Engine& engine, const std::string& entry) {
    try {
      (void)engine.kernel(KernelSource::from_text(body, entry));
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::compile);
      return std::string(error.what());
    }
    return std::string("(loaded)");
  };
  {
    Engine engine({.cache_dir = dir.path()});
    const auto message = entry_error(engine, "missing_entry");
    CHECK(message.find("\"missing_entry\"") != std::string::npos);
    CHECK(message.find("another, other") != std::string::npos);
    CHECK(engine.stats().get(uwjit::cache::Stat::published) == 0);
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      CHECK(file.path().extension() != ".o");
      CHECK(file.path().extension() != ".json");
    }
    // The right entry is published under the same key, with the symbol the object defines.
    const auto kernel = engine.kernel(KernelSource::from_text(body, "other"));
    CHECK(kernel.info().tier == uwjit::engine::Tier::compiled);
    CHECK(kernel.info().publication == uwjit::engine::Publication::published);
    // The wrong entry again, now a memory hit of the same key: the same error.
    CHECK(entry_error(engine, "missing_entry").find("another, other") != std::string::npos);
  }
  // A disk hit under a wrong entry: the same error, and no compile.
  Engine fresh({.cache_dir = dir.path()});
  CHECK(entry_error(fresh, "missing_entry").find("another, other") != std::string::npos);
  CHECK(fresh.stats().get(uwjit::cache::Stat::compiles) == 0);
  CHECK(fresh.stats().get(uwjit::cache::Stat::rejected) == 0);
  CHECK(fresh.kernel(KernelSource::from_text(body, "another")).info().tier ==
        uwjit::engine::Tier::disk);
}

TEST_CASE("a malformed object is a jit error, not a crash") {
  auto jit = uwjit::engine::Jit::create();
  const std::vector<char> junk(64, 'x');
  CHECK_THROWS_AS((void)jit->load(junk, "k"), uwjit::Error);
}

TEST_CASE("a kernel stays callable after its engine is gone, and unloads with its last copy") {
  std::optional<uwjit::engine::Kernel> kept;
  {
    Engine engine(memory_only());
    kept = engine.kernel(axpb(5.0, 0.0));
  }
  CHECK(run(*kept, {2.0}) == std::vector<double>{10.0});
  kept.reset(); // unloads; must not crash
  Engine again(memory_only());
  CHECK(run(again.kernel(axpb(5.0, 0.0)), {1.0}) == std::vector<double>{5.0});
}

TEST_CASE("kernels may include headers from configured include directories") {
  const SandboxDir include_dir("uwjit-include-test");
  const auto& dir = include_dir.path();
  std::ofstream(dir / "scale.h") << "inline double scale(double x) { return 4.0 * x; }\n";
  Engine engine({.compile = {.include_dirs = {dir.string()}}, .disk_cache = DiskCache::off});
  const auto kernel = engine.kernel(
      KernelSource::from_text("#include \"scale.h\"\n"
                              "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                              "  static_cast<double*>(args->state_out[0])[0] = scale(2.0);\n"
                              "  return 0;\n"
                              "}\n",
                              "k", SlotTables{.state_out = {"y"}}));
  double y = 0;
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_out = out;
  CHECK(kernel(args) == 0);
  CHECK(y == 8.0);
}

namespace {
KernelSource scaled_by_header(const std::string& include) {
  return KernelSource::from_text(include +
                                     "\nextern \"C\" int k(const uwjit_kernel_args* args) {\n"
                                     "  static_cast<double*>(args->state_out[0])[0] = scale(2.0);\n"
                                     "  return 0;\n"
                                     "}\n",
                                 "k", SlotTables{.state_out = {"y"}});
}

double scaled(const uwjit::engine::Kernel& kernel) {
  double y = 0;
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_out = out;
  REQUIRE(kernel(args) == 0);
  return y;
}
} // namespace

TEST_CASE("an edited header is a new key, and an earlier header's object is found again") {
  const SandboxDir cache;
  const SandboxDir include_dir("uwjit-include-test");
  const auto& dir = include_dir.path();
  std::filesystem::create_directories(dir / "more");
  std::ofstream(dir / "scale.h") << "#include \"more/factor.h\"\n"
                                 << "inline double scale(double x) { return factor * x; }\n";
  const auto factor = [&](const char* value) {
    std::ofstream(dir / "more" / "factor.h") << "constexpr double factor = " << value << ";\n";
  };
  const auto engine = [&] {
    EngineOptions options{.compile = {.include_dirs = {dir.string()}}};
    options.cache_dir = cache.path();
    return Engine(options);
  };
  const auto source = scaled_by_header("#include <scale.h>");
  factor("4.0");
  const auto first = engine().key_of(source);
  CHECK(scaled(engine().kernel(source)) == 8.0);
  factor("5.0"); // a header the header includes
  CHECK(engine().key_of(source) != first);
  const auto edited = engine().kernel(source);
  CHECK(edited.info().tier == uwjit::engine::Tier::compiled);
  CHECK(scaled(edited) == 10.0);
  factor("4.0");
  CHECK(engine().key_of(source) == first);
  const auto again = engine().kernel(source);
  CHECK(again.info().tier == uwjit::engine::Tier::disk);
  CHECK(scaled(again) == 8.0);
}

TEST_CASE("a header that is a FIFO, a device or named by a macro is refused before compiling") {
  const SandboxDir include_dir("uwjit-include-test");
  const auto& dir = include_dir.path();
  REQUIRE(::mkfifo((dir / "pipe.h").c_str(), 0600) == 0);
  Engine engine({.compile = {.include_dirs = {dir.string()}}, .disk_cache = DiskCache::off});
  const auto refused = [&](const std::string& include) {
    try {
      (void)engine.kernel(scaled_by_header(include));
    } catch (const uwjit::Error& e) {
      CHECK(e.kind() == uwjit::ErrorKind::compile);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused("#include \"pipe.h\"").find("which is a FIFO") != std::string::npos);
  CHECK(refused("#include \"/dev/zero\"").find("which is a device") != std::string::npos);
  CHECK(refused("#define H \"pipe.h\"\n#include H").find("names its header with a macro") !=
        std::string::npos);
  CHECK(refused("#if __has_include(<pipe.h>)\n#endif").find("which is a FIFO") !=
        std::string::npos);
}

TEST_CASE("math prelude functions work without any standard header") {
  Engine engine(memory_only());
  const auto kernel = engine.kernel(KernelSource::from_text(
      "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n"
      "  y[0] = uwm::sqrt(16.0) + uwm::exp(0.0) + uwm::log(1.0) + uwm::pow(2.0, 3.0)\n"
      "         + uwm::fabs(-1.0) + uwm::fmin(1.0, 2.0) + uwm::fmax(1.0, 2.0) + uwm::floor(2.7);\n"
      "  return 0;\n"
      "}\n",
      "k", SlotTables{.state_out = {"y"}}));
  double y = 0;
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_out = out;
  CHECK(kernel(args) == 0);
  CHECK(y == 4.0 + 1.0 + 0.0 + 8.0 + 1.0 + 1.0 + 2.0 + 2.0);
}

// Every function of the prelude, computed by a kernel for each input, against the same
// function of the host's libm (<cmath>) bit for bit: the kernel either computes an exactly
// rounded operation (sqrt, fma, floor, ...) or calls the same libm.
template <class T> void check_prelude_against_libm(const char* type) {
  const std::vector<std::string> names = {
      "sqrt", "cbrt",  "exp",   "log",      "sin",  "cos",   "tan",  "asin",  "acos",
      "atan", "sinh",  "cosh",  "tanh",     "fabs", "floor", "ceil", "round", "trunc",
      "pow",  "atan2", "hypot", "copysign", "fmin", "fmax",  "fma"};
  std::string body = std::string("extern \"C\" int k(const uwjit_kernel_args* args) {\n") +
                     "  using T = " + type + ";\n" +
                     "  const T* x = static_cast<const T*>(args->state_in[0]);\n"
                     "  const T* y = static_cast<const T*>(args->state_in[1]);\n"
                     "  T* out = static_cast<T*>(args->state_out[0]);\n"
                     "  const uw_i64 n = args->extents[0];\n"
                     "  for (uw_i64 i = 0; i < n; ++i) {\n";
  for (std::size_t f = 0; f < names.size(); ++f) {
    const auto& name = names[f];
    const bool unary = f < 18;
    const std::string args = name == "fma" ? "x[i], y[i], x[i]" : unary ? "x[i]" : "x[i], y[i]";
    body += "    out[" + std::to_string(f) + " * n + i] = uwm::" + name + "(" + args + ");\n";
  }
  body += "  }\n  return 0;\n}\n";
  Engine engine(memory_only());
  const auto kernel = engine.kernel(KernelSource::from_text(
      body, "k", SlotTables{.state_in = {"x", "y"}, .state_out = {"out"}, .extents = {"n"}}));

  // In the domain of every function (asin, acos: |x| <= 1; log: x > 0), halves included so that
  // round's ties are tested, and values where sin, exp and pow are not trivial.
  const std::vector<T> x = {T(0.5), T(0.25), T(0.9), T(0.1), T(0.999), T(1e-5), T(0.7071), T(1)};
  const std::vector<T> y = {T(2.5), T(-3.75), T(0.3), T(7), T(-0.5), T(1e3), T(-1e-3), T(0)};
  const std::size_t n = x.size();
  std::vector<T> out(names.size() * n);
  const void* in[] = {x.data(), y.data()};
  void* outs[] = {out.data()};
  const uw_i64 extents[] = {static_cast<uw_i64>(n)};
  uwjit_kernel_args args{};
  args.state_in = in;
  args.state_out = outs;
  args.extents = extents;
  REQUIRE(kernel(args) == 0);

  const auto libm = [](const std::string& name, T a, T b) -> T {
    // clang-format off
    if (name == "sqrt") return std::sqrt(a);
    if (name == "cbrt") return std::cbrt(a);
    if (name == "exp") return std::exp(a);
    if (name == "log") return std::log(a);
    if (name == "sin") return std::sin(a);
    if (name == "cos") return std::cos(a);
    if (name == "tan") return std::tan(a);
    if (name == "asin") return std::asin(a);
    if (name == "acos") return std::acos(a);
    if (name == "atan") return std::atan(a);
    if (name == "sinh") return std::sinh(a);
    if (name == "cosh") return std::cosh(a);
    if (name == "tanh") return std::tanh(a);
    if (name == "fabs") return std::fabs(a);
    if (name == "floor") return std::floor(a);
    if (name == "ceil") return std::ceil(a);
    if (name == "round") return std::round(a);
    if (name == "trunc") return std::trunc(a);
    if (name == "pow") return std::pow(a, b);
    if (name == "atan2") return std::atan2(a, b);
    if (name == "hypot") return std::hypot(a, b);
    if (name == "copysign") return std::copysign(a, b);
    if (name == "fmin") return std::fmin(a, b);
    if (name == "fmax") return std::fmax(a, b);
    if (name == "fma") return std::fma(a, b, a);
    // clang-format on
    FAIL("no libm function for ", name);
    return T(0);
  };
  for (std::size_t f = 0; f < names.size(); ++f) {
    for (std::size_t i = 0; i < n; ++i) {
      const T expected = libm(names[f], x[i], y[i]);
      const T got = out[f * n + i];
      INFO(type, " uwm::", names[f], "(", x[i], ", ", y[i], "): kernel ", got, ", libm ", expected);
      CHECK(std::memcmp(&got, &expected, sizeof(T)) == 0);
    }
  }
}

TEST_CASE("every prelude function equals libm bit for bit, in double and in float") {
  check_prelude_against_libm<double>("double");
  check_prelude_against_libm<float>("float");
}

TEST_CASE("prelude functions take integer arguments without ambiguity, as <cmath> does") {
  Engine engine(memory_only());
  const auto kernel = engine.kernel(KernelSource::from_text(
      "template <class A, class B> struct same { static constexpr bool value = false; };\n"
      "template <class A> struct same<A, A> { static constexpr bool value = true; };\n"
      "static_assert(same<decltype(uwm::sqrt(4)), double>::value);\n"
      "static_assert(same<decltype(uwm::sin(1.0f)), float>::value);\n"
      "static_assert(same<decltype(uwm::pow(2.0f, 3)), double>::value);\n"
      "static_assert(same<decltype(uwm::atan2(1.0f, 2.0f)), float>::value);\n"
      "static_assert(same<decltype(uwm::abs(-3)), int>::value);\n"
      "static_assert(same<decltype(uwm::min(2L, 5L)), long>::value);\n"
      "static_assert(same<decltype(uwm::max(2u, 5u)), unsigned>::value);\n"
      "static_assert(same<decltype(uwm::abs(-2.5)), double>::value);\n"
      "extern \"C\" int k(const uwjit_kernel_args* args) {\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n"
      "  y[0] = uwm::sqrt(16) + uwm::pow(2, 10) + uwm::hypot(3, 4) + uwm::fma(2, 3.0, 1.0f)\n"
      "         + uwm::abs(-3) + uwm::min(2, 5) + uwm::max(2L, 7L) + uwm::ceil(1) + uwm::cos(0)\n"
      "         + uwm::copysign(2, -1) + uwm::min(1.5, 0.5) + uwm::max(1.5f, 0.5f);\n"
      "  return 0;\n"
      "}\n",
      "k", SlotTables{.state_out = {"y"}}));
  double y = 0;
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_out = out;
  CHECK(kernel(args) == 0);
  CHECK(y == 4.0 + 1024.0 + 5.0 + 7.0 + 3.0 + 2.0 + 7.0 + 1.0 + 1.0 - 2.0 + 0.5 + 1.5);
}

// y = x0 * x1 + x2, for inputs where the fused result differs from the rounded product plus x2.
double multiply_add(Engine& engine, const KernelSource& base,
                    const uwjit::codegen::KernelOptions& options) {
  const auto kernel = engine.kernel(base.with_options(options));
  const double x[] = {1.0 + 0x1p-30, 1.0 - 0x1p-30, -1.0};
  double y = 0;
  const void* in[] = {x};
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_in = in;
  args.state_out = out;
  REQUIRE(kernel(args) == 0);
  return y;
}

TEST_CASE("kernel options reach the compiler, are part of the key, and equal the engine's") {
  using uwjit::codegen::FastMath;
  using uwjit::codegen::FpContract;
  using uwjit::codegen::KernelOptions;
  Engine engine(memory_only());
  const auto base =
      KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                              "  const double* x = static_cast<const double*>(args->state_in[0]);\n"
                              "  double* y = static_cast<double*>(args->state_out[0]);\n"
                              "  y[0] = x[0] * x[1] + x[2] + SHIFT;\n"
                              "  return 0;\n"
                              "}\n",
                              "k", SlotTables{.state_in = {"x"}, .state_out = {"y"}});
  // (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly; the rounded product is 1, so unfused gives 0.
  const double unfused =
      multiply_add(engine, base, {.fp_contract = FpContract::off, .defines = {"SHIFT=0"}});
  CHECK(unfused == 0.0);
  // The default rounds as written: the same bits with or without FMA in the CPU.
  CHECK(multiply_add(engine, base, {.defines = {"SHIFT=0"}}) == 0.0);
  const auto& features = uwjit::engine::host_target().features;
  if (std::find(features.begin(), features.end(), "+fma") != features.end()) {
    CHECK(multiply_add(engine, base, {.fp_contract = FpContract::on, .defines = {"SHIFT=0"}}) ==
          -0x1p-60);
  }
  CHECK(multiply_add(engine, base, {.fp_contract = FpContract::off, .defines = {"SHIFT=2"}}) ==
        2.0);

  // Each option changes the key; the salt's flags name it.
  const auto with = [&](KernelOptions options) {
    options.defines.push_back("SHIFT=0");
    return base.with_options(options);
  };
  const auto plain = engine.key_of(with({}));
  CHECK(engine.key_of(with({.opt_level = 2})) != plain);
  CHECK(engine.key_of(with({.fp_contract = FpContract::fast})) != plain);
  CHECK(engine.key_of(with({.fast_math = FastMath::yes})) != plain);
  CHECK(engine.key_of(base.with_options({.defines = {"SHIFT=1"}})) != plain);
  CHECK(engine.salt_of(with({.fast_math = FastMath::yes})).get("flags")->find("-ffast-math") !=
        std::string::npos);
  CHECK(engine.salt_of(with({.opt_level = 1})).get("opt") == "1");
  // Options equal to the engine's give the engine's key: fp-contract off is uwjit's default.
  CHECK(engine.key_of(with({.opt_level = 3, .fp_contract = FpContract::off})) == plain);
  CHECK(engine.key_of(with({.fp_contract = FpContract::on})) != plain);
  CHECK(engine.salt_of(with({})).get("flags")->find("-ffp-contract=off") != std::string::npos);
  // The same options set on the engine instead give the same key (what `uwjit compile` does).
  EngineOptions fast = memory_only();
  fast.compile.fast_math = FastMath::yes;
  fast.compile.defines = {"SHIFT=0"};
  CHECK(Engine(fast).key_of(base) == engine.key_of(with({.fast_math = FastMath::yes})));
  // Defines in another order give the same key.
  CHECK(engine.key_of(base.with_options({.defines = {"A=1", "SHIFT=0"}})) ==
        engine.key_of(base.with_options({.defines = {"SHIFT=0", "A=1"}})));
}

TEST_CASE("invalid kernel options are usage errors naming the option") {
  using uwjit::codegen::KernelOptions;
  const auto source = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args*) "
                                              "{ return 0; }\n",
                                              "k");
  const auto usage_error = [&](const KernelOptions& options) {
    try {
      (void)source.with_options(options);
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::usage);
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  CHECK(usage_error({.opt_level = 4}).find("optimisation level 4") != std::string::npos);
  CHECK(usage_error({.defines = {"1X=2"}}).find("define \"1X=2\"") != std::string::npos);
  CHECK(usage_error({.defines = {"X=a b"}}).find("without spaces") != std::string::npos);
  CHECK(usage_error({.defines = {"X=1", "X=2"}}).find("define X given twice") != std::string::npos);
}

TEST_CASE("compiler warnings are stored with the entry and replayed on a disk hit") {
  SandboxDir dir;
  const auto source = KernelSource::from_text(
      "extern \"C\" int k(const uwjit_kernel_args*) {\n  int x = 1.5;\n  return x - 1;\n}\n", "k");
  std::string warnings;
  {
    Engine first({.cache_dir = dir.path()});
    const auto kernel = first.kernel(source);
    warnings = kernel.info().warnings;
    CHECK(warnings.find("kernel.cpp:2:11: warning: implicit conversion") != std::string::npos);
  }
  Engine second({.cache_dir = dir.path()});
  const auto kernel = second.kernel(source);
  CHECK(kernel.info().tier == uwjit::engine::Tier::disk);
  CHECK(kernel.info().warnings == warnings);
}

TEST_CASE("a compiled kernel says whether it was published, and why not") {
  SandboxDir dir;
  Engine on_disk({.cache_dir = dir.path()});
  const auto published = on_disk.kernel(axpb(2.0, 1.0)).info();
  CHECK(published.publication == uwjit::engine::Publication::published);
  CHECK(published.not_published_because.empty());
  CHECK(on_disk.kernel(axpb(2.0, 1.0)).info().publication ==
        uwjit::engine::Publication::not_needed);

  Engine memory(memory_only());
  const auto info = memory.kernel(axpb(2.0, 1.0)).info();
  CHECK(info.publication == uwjit::engine::Publication::not_published);
  CHECK(info.not_published_because == "the disk cache is off (DiskCache::off); memory only");
}

TEST_CASE("an optimisation level outside 0-3 is a usage error") {
  CHECK_THROWS_AS(uwjit::engine::Compiler({.opt_level = 7}), uwjit::Error);
}

TEST_CASE("the host target lists its features sorted") {
  const auto& target = uwjit::engine::host_target();
  CHECK(std::is_sorted(target.features.begin(), target.features.end()));
  CHECK_FALSE(target.cpu.empty());
  CHECK(target.llvm_version.rfind("19.", 0) == 0);
}

TEST_CASE("a second engine on the same cache directory loads from disk without compiling") {
  SandboxDir dir;
  const EngineOptions options{.cache_dir = dir.path()};
  {
    Engine first(options);
    CHECK(first.kernel(axpb(6.0, 1.0)).info().tier == uwjit::engine::Tier::compiled);
    CHECK(first.stats().get(uwjit::cache::Stat::published) == 1);
  }
  Engine second(options);
  const auto kernel = second.kernel(axpb(6.0, 1.0));
  CHECK(kernel.info().tier == uwjit::engine::Tier::disk);
  CHECK(second.stats().get(uwjit::cache::Stat::compiles) == 0);
  CHECK(run(kernel, {1.0}) == std::vector<double>{7.0});
}

TEST_CASE("the key does not depend on the generated names and changes with any code change") {
  Engine engine(memory_only());
  const auto a = engine.key_of(axpb(1.0, 2.0));
  CHECK(engine.key_of(axpb(1.0, 2.0)) == a);
  CHECK(engine.key_of(axpb(1.0, 2.5)) != a);
  // The salt names every component that changes the object.
  for (const char* part : {"uwjit", "format", "abi", "canonical", "llvm", "triple", "cpu",
                           "features", "opt", "flags", "pipeline"}) {
    CAPTURE(part);
    CHECK(engine.salt().get(part).has_value());
  }
  CHECK(engine.salt().get("pipeline") == engine.compiler().pipeline());
  Engine o2({.compile = {.opt_level = 2}, .disk_cache = DiskCache::off});
  CHECK(o2.key_of(axpb(1.0, 2.0)) != a);
}

TEST_CASE("dumps hold source, IR and assembly and change neither key nor object") {
  SandboxDir cache;
  SandboxDir dumps;
  Engine plain({.disk_cache = DiskCache::off});
  Engine dumping({.cache_dir = cache.path(), .dump_dir = dumps.path()});
  const auto kernel = dumping.kernel(axpb(9.0, 0.0));
  CHECK(kernel.info().key == plain.key_of(axpb(9.0, 0.0)).hex());
  const auto stem = dumps.path() / ("axpb-" + kernel.info().key);
  std::ifstream ir(stem.string() + ".ll");
  std::ifstream assembly(stem.string() + ".s");
  std::ifstream source(stem.string() + ".cpp");
  std::stringstream ir_text, asm_text, source_text;
  ir_text << ir.rdbuf();
  asm_text << assembly.rdbuf();
  source_text << source.rdbuf();
  CHECK(ir_text.str().find("define") != std::string::npos);
  CHECK(asm_text.str().find(kernel.info().entry + ":") != std::string::npos);
  CHECK(source_text.str() == axpb(9.0, 0.0).canonical());
  // The cached object is byte for byte what a compile without dumps makes.
  const uwjit::engine::Compiler compiler;
  const auto reference = compiler.compile(
      axpb(9.0, 0.0).instantiate(kernel.info().entry, "uwjit_mod_" + kernel.info().key));
  std::ifstream object(cache.path() / (kernel.info().key + ".o"), std::ios::binary);
  const std::vector<char> stored((std::istreambuf_iterator<char>(object)),
                                 std::istreambuf_iterator<char>());
  CHECK(stored == reference.bytes);
}

TEST_CASE("a dump is never written through a symlink planted where it goes") {
  SandboxDir dumps;
  const auto victim = dumps.path() / "victim.txt";
  std::ofstream(victim) << "keep me";
  Engine dumping({.disk_cache = DiskCache::off, .dump_dir = dumps.path()});
  const auto stem = dumps.path() / ("axpb-" + dumping.key_of(axpb(8.0, 0.0)).hex());
  std::filesystem::create_symlink(victim, stem.string() + ".s");
  CHECK(run(dumping.kernel(axpb(8.0, 0.0)), {1.0}) == std::vector<double>{8.0});
  std::ifstream in(victim);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "keep me");
  CHECK(std::filesystem::exists(stem.string() + ".ll")); // the other dumps are written
}

TEST_CASE("a stored object disassembles to the entry's instructions") {
  const uwjit::engine::Compiler compiler;
  const auto object = compiler.compile(axpb(2.0, 0.0).instantiate("uwjit_entry", "m"));
  const std::string text = uwjit::engine::disassemble(object.bytes);
  CHECK(text.find("uwjit_entry:") != std::string::npos);
  CHECK(text.find("ret") != std::string::npos);
  CHECK_THROWS_AS((void)uwjit::engine::disassemble(std::vector<char>(16, 'z')), uwjit::Error);
}

TEST_CASE("compiling the same source twice gives byte-identical objects") {
  const uwjit::engine::Compiler compiler;
  const auto text = axpb(3.0, 4.0).instantiate("uwjit_0000000000000000", "m");
  CHECK(compiler.compile(text).bytes == compiler.compile(text).bytes);
}

namespace {
EngineOptions debug_options(const std::filesystem::path& cache_dir,
                            const std::filesystem::path& source_dir) {
  EngineOptions options{.cache_dir = cache_dir, .debug_source_dir = source_dir};
  options.compile.debug_info = uwjit::engine::DebugInfo::yes;
  return options;
}
} // namespace

TEST_CASE("a debug kernel's debug info names its body uwjit_KEY.cpp, written for the debugger") {
  SandboxDir cache;
  SandboxDir sources;
  Engine debug(debug_options(cache.path(), sources.path()));
  const auto kernel = debug.kernel(axpb(5.0, 1.0));
  const auto& key = kernel.info().key;
  // -g is in the salt: debug objects are cached apart.
  CHECK(key != Engine(memory_only()).key_of(axpb(5.0, 1.0)).hex());
  CHECK(run(kernel, {1.0, 2.0}) == std::vector<double>{6.0, 11.0});

  const std::string file = "uwjit_" + key + ".cpp";
  const std::string object = uwjit_test::read_text(cache.path() / (key + ".o"));
  CHECK(object.find(file) != std::string::npos);
  // Line 1 of the file is line 1 of the body, with the real entry name.
  CHECK(uwjit_test::read_text(sources.path() / file) ==
        uwjit::codegen::replace_all(axpb(5.0, 1.0).body(), uwjit::codegen::k_entry_placeholder,
                                    kernel.info().entry));
  CHECK(uwjit_test::read_text(sources.path() / "uwjit_kernel_abi.h") ==
        uwjit::codegen::kernel_abi_text());
  CHECK(uwjit_test::read_text(sources.path() / "uwjit_kernel_prelude.h") ==
        uwjit::codegen::kernel_prelude_text());

  // A disk hit in another engine writes the sources too.
  SandboxDir other_sources;
  Engine second(debug_options(cache.path(), other_sources.path()));
  CHECK(second.kernel(axpb(5.0, 1.0)).info().tier == uwjit::engine::Tier::disk);
  CHECK(std::filesystem::exists(other_sources.path() / file));
}

TEST_CASE("debug headers replace an earlier copy of themselves but never a user's file") {
  SandboxDir cache;
  SandboxDir sources;
  std::ofstream(sources.path() / "uwjit_kernel_abi.h") << "/* my own edited header */\n";
  std::ofstream(sources.path() / "uwjit_kernel_prelude.h")
      << "/* uwjit kernel prelude: of an older version */\n";
  Engine debug(debug_options(cache.path(), sources.path()));
  CHECK(run(debug.kernel(axpb(5.0, 1.0)), {1.0}) == std::vector<double>{6.0});
  CHECK(uwjit_test::read_text(sources.path() / "uwjit_kernel_abi.h") ==
        "/* my own edited header */\n");
  CHECK(uwjit_test::read_text(sources.path() / "uwjit_kernel_prelude.h") ==
        uwjit::codegen::kernel_prelude_text());
}

TEST_CASE("with debug info, diagnostics still name kernel.cpp") {
  SandboxDir sources;
  EngineOptions options = debug_options({}, sources.path());
  options.disk_cache = DiskCache::off;
  Engine engine(options);
  const auto message = compile_error_of(
      engine, KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* a) {\n"
                                      "  return a->missing;\n"
                                      "}\n",
                                      "k"));
  CHECK(message.find("kernel.cpp:2:13: error: no member named 'missing'") != std::string::npos);
}
