#include "args.hpp"
#include "commands.hpp"

#include <uwjit/common/version.hpp>
#include <uwjit/engine/compiler.hpp>

#include <nlohmann/json.hpp>

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
  const engine::Compiler compiler;
  std::string features;
  for (const auto& feature : target.features) {
    if (feature.front() == '+') {
      features += (features.empty() ? "" : " ") + feature.substr(1);
    }
  }
  if (args.has("--json")) {
    nlohmann::json report = {
        {"uwjit_version", k_version},  {"llvm_version", target.llvm_version},
        {"triple", target.triple},     {"cpu", target.cpu},
        {"features", target.features}, {"resource_dir", target.resource_dir},
        {"clang", target.clang_path},  {"opt_level", compiler.options().opt_level},
        {"flags", compiler.flags()},
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
            << "flags           " << compiler.flags() << "\n";
  return 0;
}

} // namespace uwjit::tools
