// Cold compile: the engine's in-process request (compile, publish, load) against the reference
// way (a compiler subprocess writes a .so, dlopen loads it), run alternately, per kernel.
#include "bench.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>

#include <dlfcn.h>

#include <cmath>
#include <fstream>
#include <iterator>

namespace uwjit::bench {

const std::vector<std::string>& subprocess_flags() {
  static const std::vector<std::string> flags = {
      "-O3",        "-march=native",   "-shared",          "-fPIC",
      "-std=c++20", "-fno-math-errno", "-ffp-contract=off"};
  return flags;
}

std::vector<std::string> compile_only_flags() {
  std::vector<std::string> flags;
  for (const auto& flag : subprocess_flags()) {
    if (flag != "-shared") {
      flags.push_back(flag);
    }
  }
  return flags;
}

SubprocessBuild build_subprocess(const std::string& compiler, const std::string& text,
                                 const std::string& entry, const std::filesystem::path& dir,
                                 const std::string& name) {
  SubprocessBuild build;
  const auto start = Clock::now();
  const auto source = dir / (name + ".cpp");
  const auto library = dir / (name + ".so");
  {
    std::ofstream out(source, std::ios::binary | std::ios::trunc);
    out << text;
  }
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), subprocess_flags().begin(), subprocess_flags().end());
  argv.insert(argv.end(), {"-o", library.string(), source.string()});
  for (const auto& arg : argv) {
    build.command += (build.command.empty() ? "" : " ") + arg;
  }
  const auto compiled = run(argv);
  build.compiler_ms = compiled.wall_ms;
  if (!compiled.ok()) {
    throw Error(ErrorKind::compile,
                format("{} failed: {}{}", build.command, compiled.out, compiled.err));
  }
  const auto open_start = Clock::now();
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw Error(ErrorKind::jit, format("dlopen {}: {}", library.string(), ::dlerror()));
  }
  build.kernel.library = std::shared_ptr<void>(handle, [](void* h) { ::dlclose(h); });
  build.kernel.function = reinterpret_cast<uwjit_kernel_fn>(::dlsym(handle, entry.c_str()));
  if (build.kernel.function == nullptr) {
    throw Error(ErrorKind::jit, format("dlsym {} in {}: not found", entry, library.string()));
  }
  build.dlopen_ms = ms_since(open_start);
  build.total_ms = ms_since(start);
  return build;
}

namespace {

// What publishing the entry that `engine` just wrote costs on its own: the same object, manifest
// and source published again into a fresh directory (three files fsynced, then the directory).
double publish_ms(const std::filesystem::path& cache, const std::filesystem::path& scratch,
                  const codegen::KernelSource& source, const engine::Engine& engine) {
  cache::Stats counters;
  auto store = cache::Store::open(cache, counters);
  const auto key = engine.key_of(source);
  auto manifest = store.read_manifest(key);
  if (!manifest) {
    return std::nan("");
  }
  const auto bytes = [&] {
    std::ifstream in(cache / (key.hex() + ".o"), std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  }();
  auto fresh = cache::Store::open(fresh_dir(scratch, "publish"), counters);
  const auto start = Clock::now();
  const auto outcome = fresh.publish(key, bytes, *manifest, source.canonical());
  const double ms = ms_since(start);
  return outcome.published() ? ms : std::nan("");
}

// The compiler subprocess on `source` (the file build_subprocess wrote), stopped at the object
// (-c): what the process costs without running a linker, nor dlopen. Throws Error(compile) with
// its output if it fails.
double object_only_ms(const std::string& compiler, const std::filesystem::path& source) {
  std::vector<std::string> argv = {compiler};
  const auto flags = compile_only_flags();
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto object = source;
  argv.insert(argv.end(), {"-c", "-o", object.replace_extension(".o").string(), source.string()});
  const auto compiled = run(argv);
  if (!compiled.ok()) {
    throw Error(ErrorKind::compile, format("{} -c {} failed: {}{}", compiler, source.string(),
                                           compiled.out, compiled.err));
  }
  return compiled.wall_ms;
}

} // namespace

void cold_section(const Options& options, Report& report) {
  Json& section = report.section("cold");
  section["subprocess_flags"] = subprocess_flags();
  section["method"] =
      "per round and kernel, in rotating order: (a) a fresh Engine on a fresh cache directory "
      "requests the kernel (request to callable: key, disk miss, lock, in-process compile, "
      "atomic publish with fsync, JIT link); (b) g++ and (c) clang++-19 as subprocesses write "
      "a .so, which dlopen loads (writing the source file to callable); then clang++-19 -c writes "
      "only the object of the same text (its compile without linker or dlopen). Ratios are per "
      "round.";
  Json kernels = Json::object();
  const auto dir = fresh_dir(options.work, "cold");
  for (const auto& name : options.kernels) {
    const auto source = kernel_source(name);
    Series series;
    std::string gcc_command, clang_command;
    for (int round = 0; round < options.rounds; ++round) {
      // Rotate the order, so that drift on a noisy machine does not favour one way.
      for (int step = 0; step < 3; ++step) {
        const int way = (round + step) % 3;
        if (way == 0) {
          engine::Engine engine({.cache_dir = fresh_dir(dir, name + "-jit")});
          const auto start = Clock::now();
          const auto kernel = engine.kernel(source);
          const double total = ms_since(start);
          const auto& info = kernel.info();
          UWJIT_ASSERT(info.tier == engine::Tier::compiled, "a cold request was not compiled");
          series.add("jit_ms", total);
          series.add("jit_frontend_ms", info.compile.frontend_ms);
          series.add("jit_optimise_ms", info.compile.optimise_ms);
          series.add("jit_codegen_ms", info.compile.codegen_ms);
          series.add("jit_load_ms", info.load_ms);
          series.add("jit_other_ms", total - info.compile.total_ms() - info.load_ms);
          series.add("object_bytes", static_cast<double>(info.object_size));
          series.add("publish_ms", publish_ms(*engine.cache_dir(), dir, source, engine));
          // The compiler's own timings stop before its AST, module and LLVM context are freed.
          const std::string text = source.instantiate(info.entry, "bench_teardown");
          const auto again = Clock::now();
          const double timed = engine.compiler().compile(text).timings.total_ms();
          series.add("compile_teardown_ms", ms_since(again) - timed);
        } else {
          const std::string compiler = way == 1 ? "g++" : "clang++-19";
          const std::string label = way == 1 ? "gcc" : "clang";
          const std::string stem = format("{}-{}-{}", name, label, round);
          const std::string entry = "bench_" + label + "_" + std::to_string(round);
          const auto build = build_subprocess(compiler, source.instantiate(entry, "bench_module"),
                                              entry, dir, stem);
          series.add(label + "_ms", build.total_ms);
          series.add(label + "_compiler_ms", build.compiler_ms);
          series.add(label + "_dlopen_ms", build.dlopen_ms);
          (way == 1 ? gcc_command : clang_command) = build.command;
          if (way == 2) {
            // A share of the subprocess is its linker: the same compile stopped at the object
            // shows how much, so that the ratio above is not read as compile work alone.
            series.add("clang_object_ms", object_only_ms(compiler, dir / (stem + ".cpp")));
          }
        }
      }
      const auto& jit = series.values("jit_ms");
      series.add("gcc_over_jit", series.values("gcc_ms").back() / jit.back());
      series.add("clang_over_jit", series.values("clang_ms").back() / jit.back());
      const double compile_only = series.values("jit_frontend_ms").back() +
                                  series.values("jit_optimise_ms").back() +
                                  series.values("jit_codegen_ms").back();
      series.add("clang_object_over_jit", series.values("clang_object_ms").back() / jit.back());
      series.add("jit_compile_share", compile_only / jit.back());
      series.add("gcc_over_compile_only", series.values("gcc_ms").back() / compile_only);
      series.add("clang_over_compile_only", series.values("clang_ms").back() / compile_only);
    }
    Json entry = series.to_json();
    entry["source_bytes"] = source.canonical().size();
    entry["gcc_command"] = gcc_command;
    entry["clang_command"] = clang_command;
    kernels[name] = std::move(entry);

    const std::string command = options.command("--sections cold --kernels " + name);
    const Summary jit = series.summary("jit_ms");
    const double compile_share = series.summary("jit_compile_share").median;
    // What limits a ratio, from the figures: the in-process request's parts, and the ratio the
    // subprocess would reach against the in-process compile alone (no key, lock, publish, load).
    const auto limit = [&](const std::string& label, const std::string& compiler) {
      return format(
          "the in-process request is {}% compile (frontend {} ms, optimise {} ms, codegen {} ms), "
          "JIT link {} ms, the rest {} ms (publishing the entry with its fsyncs alone takes {} "
          "ms, freeing a compile's AST, module and LLVM context {} ms); {} spends {} ms as a "
          "subprocess and {} ms in dlopen. Against the in-process compile alone the ratio would be "
          "{}×: {}",
          number_text(100 * compile_share), number_text(series.summary("jit_frontend_ms").median),
          number_text(series.summary("jit_optimise_ms").median),
          number_text(series.summary("jit_codegen_ms").median),
          number_text(series.summary("jit_load_ms").median),
          number_text(series.summary("jit_other_ms").median),
          number_text(series.summary("publish_ms").median),
          number_text(series.summary("compile_teardown_ms").median), compiler,
          number_text(series.summary(label + "_compiler_ms").median),
          number_text(series.summary(label + "_dlopen_ms").median),
          number_text(series.summary(label + "_over_compile_only").median),
          series.summary(label + "_over_compile_only").median < 3
              ? "the compile work itself, which both ways share, keeps it under 3×"
              : "what keeps it under 3× is the request's work besides the compile (above)");
    };
    report.add({.section = "cold",
                .figure = name + ": in-process request (compile + publish + load)",
                .unit = "ms",
                .value = jit,
                .command = command,
                .note = "fresh Engine and cache directory per round"});
    report.add({.section = "cold",
                .figure = name + ": g++ subprocess + dlopen / in-process",
                .unit = "×",
                .value = series.summary("gcc_over_jit"),
                .goal = Goal{"≥ 3×", 3.0, std::nullopt},
                .limit = limit("gcc", "g++"),
                .command = command,
                .note = gcc_command});
    report.add({.section = "cold",
                .figure = name + ": clang++-19 subprocess + dlopen / in-process",
                .unit = "×",
                .value = series.summary("clang_over_jit"),
                .goal = Goal{"≥ 3×", 3.0, std::nullopt},
                .limit = limit("clang", "clang++-19"),
                .command = command,
                .note = clang_command});
    report.add({.section = "cold",
                .figure = name + ": clang++-19 -c (object only: no linker, no dlopen) / in-process",
                .unit = "×",
                .value = series.summary("clang_object_over_jit"),
                .command = command,
                .note = format("the subprocess above without its link: the compiler's own work "
                               "on the same text, {} ms, against the whole in-process request "
                               "(which does link and load); {} ms of the subprocess's {} ms are "
                               "the linker and dlopen",
                               number_text(series.summary("clang_object_ms").median),
                               number_text(series.summary("clang_ms").median -
                                           series.summary("clang_object_ms").median),
                               number_text(series.summary("clang_ms").median))});
  }
  section["kernels"] = std::move(kernels);
}

} // namespace uwjit::bench
