#include "args.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>

namespace uwjit::tools {

namespace {

ArgSpec compile_spec() {
  ArgSpec spec("compile", "Compiles a kernel file in process through the uwjit engine and reports "
                          "the entry, the object size,\nthe tier that served it and where the time "
                          "went (frontend, optimise, codegen, link).");
  spec.option("--entry", "NAME", "the kernel's extern \"C\" entry function", "kernel")
      .option("-O", "LEVEL", "optimisation level 0-3", "3")
      .option("-I", "DIR", "add an include directory (kernels normally need none)")
      .flag("--json", "print the report as JSON")
      .positional("FILE", "the kernel source (C++20; the uwjit kernel ABI header is prepended)")
      .epilog("A compile error exits 1 and prints the diagnostics as kernel.cpp:LINE:COL, with\n"
              "lines counted in FILE. Example:\n"
              "  uwjit compile examples/kernels/diffusion.cpp --json");
  return spec;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::io, format("{}: cannot open the kernel file", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

int parse_level(const ArgSpec& spec, const std::string& text) {
  int level = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (ec != std::errc{} || end != text.data() + text.size() || level < 0 || level > 3) {
    spec.fail(format("-O: expected 0, 1, 2 or 3, got \"{}\"", text));
  }
  return level;
}

const char* tier_text(engine::Tier tier) {
  switch (tier) {
  case engine::Tier::memory:
    return "memory (already loaded in this process)";
  case engine::Tier::disk:
    return "disk cache (verified entry, no compile)";
  case engine::Tier::compiled:
    return "compiler (cold compile, published to the cache)";
  case engine::Tier::received:
    return "another rank (collective request)";
  }
  return "";
}

} // namespace

int compile_command(const std::vector<std::string>& argv) {
  const ArgSpec spec = compile_spec();
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const std::string& path = args.positional().at(0);
  engine::EngineOptions options = engine::EngineOptions::from_environment();
  options.compile.opt_level = parse_level(spec, args.value("-O"));
  if (auto dir = args.get("-I")) {
    options.compile.include_dirs.push_back(*dir);
  }
  const std::string body = read_file(path);
  const auto source = body.find(codegen::k_entry_placeholder) != std::string::npos
                          ? codegen::KernelSource::generated("source", body, {})
                          : codegen::KernelSource::from_text(body, args.value("--entry"));
  engine::Engine engine(options);
  const engine::Kernel kernel = engine.kernel(source);
  const engine::KernelInfo& info = kernel.info();

  if (args.has("--json")) {
    nlohmann::json report = {
        {"file", path},
        {"entry", info.entry},
        {"key", info.key},
        {"tier", engine::to_string(info.tier)},
        {"object_size", info.object_size},
        {"opt_level", options.compile.opt_level},
        {"warnings", info.warnings},
        {"timings_ms",
         {{"frontend", info.compile.frontend_ms},
          {"optimise", info.compile.optimise_ms},
          {"codegen", info.compile.codegen_ms},
          {"link", info.load_ms},
          {"total", info.request_ms}}},
    };
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::cout << path << ": " << engine::to_string(info.tier) << " (key " << info.key << ")\n"
            << "  served by  " << tier_text(info.tier) << "\n"
            << "  entry      " << info.entry << "\n"
            << "  object     " << human_size(info.object_size) << "\n"
            << "  frontend   " << milliseconds(info.compile.frontend_ms) << "\n"
            << "  optimise   " << milliseconds(info.compile.optimise_ms) << "\n"
            << "  codegen    " << milliseconds(info.compile.codegen_ms) << "\n"
            << "  link       " << milliseconds(info.load_ms) << "\n"
            << "  total      " << milliseconds(info.request_ms) << "\n";
  if (!info.warnings.empty()) {
    std::cerr << info.warnings;
  }
  return 0;
}

} // namespace uwjit::tools
