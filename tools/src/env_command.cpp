#include "args.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/engine.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace uwjit::tools {

int env_command(const std::vector<std::string>& argv) {
  ArgSpec spec("env", "Prints the configuration uwjit resolves on this machine: versions, target, "
                      "CPU and features,\nClang's resource directory and the compile flags.");
  spec.flag("--json", "print it as JSON");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const engine::TargetInfo& target = engine::host_target();
  const engine::EngineOptions options = engine::EngineOptions::from_environment();
  const engine::Compiler compiler(options.compile);
  const cache::CacheLocation location = cache::resolve_cache_location();
  const std::string cache_dir = location.dir ? location.dir->string() : "";
  const bool cache_exists = location.dir && std::filesystem::is_directory(*location.dir);
  const std::uint64_t max_size = cache::max_cache_size();
  const double lock_timeout_s = static_cast<double>(options.lock_timeout.count()) / 1000;
  std::string features;
  for (const auto& feature : target.features) {
    if (feature.front() == '+') {
      features += (features.empty() ? "" : " ") + feature.substr(1);
    }
  }
  if (args.has("--json")) {
    nlohmann::json report = {
        {"uwjit_version", k_version},
        {"llvm_version", target.llvm_version},
        {"triple", target.triple},
        {"cpu", target.cpu},
        {"features", target.features},
        {"resource_dir", target.resource_dir},
        {"clang", target.clang_path},
        {"opt_level", compiler.options().opt_level},
        {"flags", compiler.flags()},
        {"cache_dir", cache_dir},
        {"cache_rule", location.rule},
        {"cache_exists", cache_exists},
        {"cache_max_size", max_size},
        {"lock_timeout_s", lock_timeout_s},
        {"dump_dir", options.dump_dir ? options.dump_dir->string() : ""},
    };
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::cout << "uwjit version   " << k_version << "\n"
            << "LLVM version    " << target.llvm_version << "\n"
            << "target triple   " << target.triple << "\n"
            << "CPU             " << target.cpu << "\n"
            << "CPU features    " << features << "\n"
            << "resource dir    " << target.resource_dir << "\n"
            << "clang driver    " << target.clang_path << "\n"
            << "opt level       " << compiler.options().opt_level << "\n"
            << "flags           " << compiler.flags() << "\n"
            << "cache dir       " << (cache_dir.empty() ? "(none)" : cache_dir)
            << (cache_exists || cache_dir.empty() ? "" : " (not created yet)") << "\n"
            << "  chosen by     " << location.rule << "\n"
            << "cache max size  " << human_size(max_size) << "\n"
            << "lock timeout    " << lock_timeout_s << " s\n";
  if (options.dump_dir) {
    std::cout << "dump dir        " << options.dump_dir->string() << "\n";
  }
  return 0;
}

} // namespace uwjit::tools
