// uwjit: the command-line interface to the uwjit engine and its kernel cache.
#include "args.hpp"
#include "commands.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/version.hpp>

#include <cstdio>
#include <iostream>
#include <string_view>

namespace {

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Command k_commands[] = {
    {"compile", "compile a kernel file in process and report its timings",
     uwjit::tools::compile_command},
    {"env", "print the resolved configuration (versions, target, CPU, flags, cache)",
     uwjit::tools::env_command},
    {"cache",
     "inspect and maintain the kernel cache (dir, list, stats, inspect, explain, "
     "verify, prune, wipe)",
     uwjit::tools::cache_command},
    {"run", "run a built-in node (heat, pipe-flow, fvm, mlp), check its physics, write VTK",
     uwjit::tools::run_command},
    {"warm", "compile a built-in node's kernels into the cache without running it",
     uwjit::tools::warm_command},
};

void print_help(std::ostream& out) {
  out << "usage: uwjit [--version] [--help] <command> [<args>]\n\n"
         "uwjit compiles simulation kernels in process with Clang/LLVM and caches them.\n\n"
         "commands:\n";
  for (const auto& command : k_commands) {
    std::string name(command.name);
    name.resize(12, ' ');
    out << "  " << name << command.summary << "\n";
  }
  out << "\nRun 'uwjit <command> --help' for the options of one command.\n";
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_help(std::cerr);
    return 2;
  }
  const std::string& first = args.front();
  if (first == "--version" || first == "-V") {
    std::cout << "uwjit " << uwjit::k_version << "\n";
    return 0;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    print_help(std::cout);
    return 0;
  }
  for (const auto& command : k_commands) {
    if (command.name != first) {
      continue;
    }
    try {
      return command.run({args.begin() + 1, args.end()});
    } catch (const uwjit::tools::UsageError& error) {
      std::cerr << "uwjit: error: " << error.what() << "\n"
                << error.usage() << (error.usage().ends_with('\n') ? "" : "\n") << "(run 'uwjit "
                << error.command() << " --help' for details)\n";
      return 2;
    } catch (const uwjit::Error& error) {
      std::cerr << "uwjit: error: " << error.what() << "\n";
      if (error.kind() == uwjit::ErrorKind::usage) {
        // Point at the usage only when the arguments were at fault, not e.g. a variable.
        if (std::string_view(error.what()).rfind(first, 0) == 0) {
          std::cerr << "(run 'uwjit " << first << " --help' for usage)\n";
        }
        return 2;
      }
      return 1;
    } catch (const std::exception& error) {
      std::cerr << "uwjit: error: " << error.what() << "\n";
      return 1;
    }
  }
  std::cerr << "uwjit: error: unknown command \"" << first << "\"\n\n";
  print_help(std::cerr);
  return 2;
}
