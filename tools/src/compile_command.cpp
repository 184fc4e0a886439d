#include "args.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/engine/engine.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>

namespace uwjit::tools {

namespace {

ArgSpec compile_spec() {
  ArgSpec spec("compile", "Compiles a kernel file in process through the uwjit engine and reports "
                          "the entry, the object size,\nthe tier that served it, what became of "
                          "the object in the disk cache and where the time\nwent (frontend, "
                          "optimise, codegen, link).");
  spec.option("--entry", "NAME", "the kernel's extern \"C\" entry function", "kernel")
      .option("-O", "LEVEL", "optimisation level 0-3", "3")
      .option("--fp-contract", "off|on|fast",
              "floating-point contraction (fused multiply-add); off rounds as written", "off")
      .flag("--fast-math", "compile with -ffast-math")
      .option("--target", "host|cuda:sm_XX",
              "what to compile for: the host CPU, or PTX for an NVIDIA GPU (published to the "
              "cache, not run)",
              "host")
      .option("-D", "NAME[=VALUE]", "define a preprocessor macro (repeatable)")
      .option("-I", "DIR", "add an include directory (kernels normally need none)")
      .option("--state-in", "A,B,...", "the names of the state-in slots, in ABI order")
      .option("--state-out", "A,B,...", "the names of the state-out slots")
      .option("--statics", "A,B,...", "the names of the static-array slots")
      .option("--extents", "A,B,...", "the names of the run-time extents")
      .option("--integrals", "A,B,...", "the names of the domain integrals")
      .option("--params", "A,B,...", "the names of the run-time params (args->params)")
      .flag("--json", "print the report as JSON, also when the kernel does not compile")
      .positional("FILE", "the kernel source (C++20; the uwjit kernel ABI header is prepended)")
      .epilog("The slot names and the compile options are part of the cache key: give the ones "
              "the host\nasks for and the host finds the kernel in the cache (warming a cache).\n"
              "So are the contents of the headers FILE includes from the working directory or an\n"
              "-I directory (a quoted name is looked for in the working directory first, then\n"
              "in -I; an edited header is a new key), which must be regular files named plainly.\n"
              "A compile error exits 1 and prints the diagnostics as FILE:LINE:COL. Example:\n"
              "  uwjit compile examples/kernels/diffusion.cpp --state-in u --state-out u_next "
              "--json");
  return spec;
}

// A kernel is source text of a few kilobytes: a regular file only (a FIFO or device is never
// read), at most 16 MiB.
std::string read_file(const std::string& path) {
  return posix::read_input_file(
      path, {.what = format("kernel file {}", path), .limit = std::uint64_t{16} << 20});
}

int parse_level(const ArgSpec& spec, const std::string& text) {
  int level = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (ec != std::errc{} || end != text.data() + text.size() || level < 0 || level > 3) {
    spec.fail(format("-O: expected 0, 1, 2 or 3, got \"{}\"", text));
  }
  return level;
}

// "a,b" → {"a", "b"}; "" → {}. The names are checked by KernelSource.
std::vector<std::string> slot_list(const std::optional<std::string>& text) {
  std::vector<std::string> names;
  if (!text || text->empty()) {
    return names;
  }
  std::size_t start = 0;
  while (true) {
    const auto comma = text->find(',', start);
    names.push_back(text->substr(start, comma - start));
    if (comma == std::string::npos) {
      return names;
    }
    start = comma + 1;
  }
}

// What the engine did with the disk cache, in words that are true for this request.
std::string served_by(const engine::KernelInfo& info, const engine::Engine& engine) {
  const std::string dir = engine.cache_dir() ? engine.cache_dir()->string() : "";
  switch (info.tier) {
  case engine::Tier::memory:
    return "memory (already loaded in this process)";
  case engine::Tier::disk:
    return "disk cache (verified entry in " + dir + ", no compile)";
  case engine::Tier::received:
    return "another rank (collective request)";
  case engine::Tier::compiled:
    break;
  }
  if (info.publication == engine::Publication::published) {
    return "compiler (cold compile, published to the cache in " + dir + ")";
  }
  return "compiler (cold compile; not published: " + info.not_published_because + ")";
}

// The diagnostics name the buffer kernel.cpp, with lines counted in the kernel's body, which is
// the user's file: name that instead, so that editors can jump to FILE:LINE:COL.
std::string name_file(std::string_view text, const std::string& path) {
  return codegen::replace_all(text, std::string(codegen::k_buffer_name) + ":", path + ":");
}

// Each "FILE:LINE:COL: SEVERITY: MESSAGE" line of compiler output.
nlohmann::json diagnostics_json(const std::string& text) {
  static const std::regex line(R"(^(.+):(\d+):(\d+): (fatal error|error|warning|note): (.*)$)");
  nlohmann::json list = nlohmann::json::array();
  std::istringstream lines(text);
  std::string one;
  while (std::getline(lines, one)) {
    std::smatch match;
    if (std::regex_match(one, match, line)) {
      list.push_back({{"file", match[1].str()},
                      {"line", std::stol(match[2].str())},
                      {"column", std::stol(match[3].str())},
                      {"severity", match[4].str()},
                      {"message", match[5].str()}});
    }
  }
  return list;
}

} // namespace

int compile_command(const std::vector<std::string>& argv) {
  // Known before parsing: with --json, even a misuse is reported as JSON.
  const bool json = std::find(argv.begin(), argv.end(), "--json") != argv.end();
  const ArgSpec spec = compile_spec();
  std::string path;
  engine::EngineOptions options = engine::EngineOptions::from_environment();
  std::optional<engine::Engine> engine;
  std::optional<engine::Kernel> kernel;
  std::optional<engine::PtxKernel> ptx;
  engine::Target target;
  std::string flags;
  try {
    const Args args = Args::parse(spec, argv);
    if (args.wants_help()) {
      std::cout << spec.help();
      return 0;
    }
    path = args.positional().at(0);
    options.compile.opt_level = parse_level(spec, args.value("-O"));
    try {
      target = engine::Target::parse(args.value("--target"));
    } catch (const Error& error) {
      spec.fail(format("--target: {}", error.what()));
    }
    if (auto dir = args.get("-I")) {
      options.compile.include_dirs.push_back(*dir);
    }
    const auto contract = codegen::parse_fp_contract(args.value("--fp-contract"));
    if (!contract) {
      spec.fail(format("--fp-contract: expected off, on or fast, got \"{}\"",
                       args.value("--fp-contract")));
    }
    options.compile.fp_contract = *contract;
    options.compile.fast_math =
        args.has("--fast-math") ? codegen::FastMath::yes : codegen::FastMath::no;
    options.compile.defines = args.all("-D");
    const codegen::SlotTables slots{.state_in = slot_list(args.get("--state-in")),
                                    .state_out = slot_list(args.get("--state-out")),
                                    .statics = slot_list(args.get("--statics")),
                                    .extents = slot_list(args.get("--extents")),
                                    .integrals = slot_list(args.get("--integrals")),
                                    .params = slot_list(args.get("--params"))};
    const std::string body = read_file(path);
    const auto source = body.find(codegen::k_entry_placeholder) != std::string::npos
                            ? codegen::KernelSource::generated("source", body, slots)
                            : codegen::KernelSource::from_text(body, args.value("--entry"), slots);
    engine.emplace(options);
    if (target.is_cuda()) {
      ptx.emplace(engine->ptx(source, target));
    } else {
      kernel.emplace(engine->kernel(source));
    }
    flags = engine->salt_of(source, target).get("flags").value_or("");
  } catch (const Error& error) {
    const std::string message = path.empty() ? error.what() : name_file(error.what(), path);
    if (!json) {
      if (message == error.what()) {
        throw; // as it was: a misuse keeps its usage line
      }
      throw Error(error.kind(), message);
    }
    const nlohmann::json report = {
        {"ok", false},
        {"file", path.empty() ? nlohmann::json(nullptr) : nlohmann::json(path)},
        {"error",
         {{"kind", std::string(to_string(error.kind()))},
          {"message", message},
          {"diagnostics", diagnostics_json(message)}}},
    };
    std::cout << report.dump(2) << "\n";
    return error.kind() == ErrorKind::usage ? 2 : 1;
  }
  const engine::KernelInfo& info = ptx ? *ptx->info : kernel->info();
  const std::string warnings = name_file(info.warnings, path);

  if (json) {
    nlohmann::json report = {
        {"ok", true},
        {"file", path},
        {"entry", info.entry},
        {"target", target.text()},
        {"key", info.key},
        {"tier", engine::to_string(info.tier)},
        {"publication", engine::to_string(info.publication)},
        {"cache_dir", engine->cache_dir() ? nlohmann::json(engine->cache_dir()->string())
                                          : nlohmann::json(nullptr)},
        {"object_size", info.object_size},
        {"opt_level", options.compile.opt_level},
        {"flags", flags},
        {"warnings", warnings},
        {"diagnostics", diagnostics_json(warnings)},
        {"timings_ms",
         {{"frontend", info.compile.frontend_ms},
          {"optimise", info.compile.optimise_ms},
          {"codegen", info.compile.codegen_ms},
          {"link", info.load_ms},
          {"total", info.request_ms}}},
    };
    if (info.publication == engine::Publication::not_published) {
      report["not_published_because"] = info.not_published_because;
    }
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::cout << path << ": " << engine::to_string(info.tier) << " (key " << info.key << ")\n"
            << "  served by  " << served_by(info, *engine) << "\n"
            << (ptx ? "  target     " + target.text() + "\n" : std::string()) << "  entry      "
            << info.entry << "\n"
            << (ptx ? "  ptx        " : "  object     ") << human_size(info.object_size) << "\n"
            << "  frontend   " << milliseconds(info.compile.frontend_ms) << "\n"
            << "  optimise   " << milliseconds(info.compile.optimise_ms) << "\n"
            << "  codegen    " << milliseconds(info.compile.codegen_ms) << "\n";
  if (!ptx) {
    std::cout << "  link       " << milliseconds(info.load_ms) << "\n"; // PTX is not loaded
  }
  std::cout << "  total      " << milliseconds(info.request_ms) << "\n";
  if (!warnings.empty()) {
    std::cerr << warnings;
  }
  return 0;
}

} // namespace uwjit::tools
