// uwjit: the command-line interface to the uwjit engine and its kernel cache.
#include "commands.hpp"
#include "mpi_job.hpp"
#include "text.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/driver/args.hpp>

#include <cstdio>
#include <iostream>
#include <new>
#include <sstream>
#include <string_view>

namespace {

// Ends every rank of an MPI job at once on an error (see mpi_job.hpp); nothing serially.
void end_mpi_job_on_error(std::string_view message, int code) {
  if (auto* job = uwjit::tools::cli_job()) {
    job->end_on_error("uwjit", message, code);
  }
}

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
    {"ensemble",
     "run many members of a built-in node, differing in params, as one batch (sweeps, "
     "steady states)",
     uwjit::tools::ensemble_command},
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
  out << "\nRun 'uwjit <command> --help' (or 'uwjit help <command>') for the options of one "
         "command.\n";
}

// "cache inspect" for "cache inspect abc": the command and its subcommand, if it has one.
std::string with_subcommand(const Command& command, const std::vector<std::string>& rest) {
  std::string text(command.name);
  if (command.name == "cache" && !rest.empty() && !rest.front().starts_with('-')) {
    text += " " + rest.front();
  }
  return text;
}

// The usage line of the (sub)command, as its --help prints it.
std::string usage_line(const Command& command, const std::vector<std::string>& rest) {
  std::vector<std::string> help;
  if (command.name == "cache" && !rest.empty() && !rest.front().starts_with('-')) {
    help.push_back(rest.front());
  }
  help.emplace_back("--help");
  std::ostringstream text;
  std::streambuf* const saved = std::cout.rdbuf(text.rdbuf());
  try {
    (void)command.run(help);
  } catch (...) { // NOLINT(bugprone-empty-catch): no usage line is all that is lost
  }
  std::cout.rdbuf(saved);
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("usage: ")) {
      return line;
    }
  }
  return "usage: uwjit " + with_subcommand(command, rest) + " ...";
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
  if (first == "--help" || first == "-h" || (first == "help" && args.size() == 1)) {
    print_help(std::cout);
    return 0;
  }
  // "uwjit help COMMAND [SUBCOMMAND]" is "uwjit COMMAND [SUBCOMMAND] --help".
  const bool help = first == "help";
  const std::string& name = help ? args[1] : first;
  std::vector<std::string> rest(args.begin() + (help ? 2 : 1), args.end());
  if (help) {
    rest.emplace_back("--help");
  }
  for (const auto& command : k_commands) {
    if (command.name != name) {
      continue;
    }
    // Under MPI an error may have reached this rank only, while the others wait in a
    // collective: end_mpi_job_on_error ends the whole job with the message.
    int code = 0;
    try {
      code = command.run(rest);
    } catch (const uwjit::driver::UsageError& error) {
      const std::string message = uwjit::terminal_safe(error.what());
      end_mpi_job_on_error(message, 2);
      std::cerr << "uwjit: error: " << message << "\n"
                << error.usage() << (error.usage().ends_with('\n') ? "" : "\n") << "(run 'uwjit "
                << error.command() << " --help' for details)\n";
      code = 2;
    } catch (const uwjit::Error& error) {
      const int exit_code = error.kind() == uwjit::ErrorKind::usage ? 2 : 1;
      const std::string message = uwjit::terminal_safe(error.what());
      end_mpi_job_on_error(message, exit_code);
      std::cerr << "uwjit: error: " << message << "\n";
      // The arguments were at fault (e.g. a key prefix that matches no entry): the usage line,
      // as for a parse error. Not for a bad environment variable, which the message names.
      if (exit_code == 2 && !message.starts_with("UWJIT_")) {
        const std::string command_line = with_subcommand(command, rest);
        std::cerr << usage_line(command, rest) << "\n(run 'uwjit " << command_line
                  << " --help' for details)\n";
      }
      code = exit_code;
    } catch (const std::bad_alloc&) {
      // Where uwjit allocates much (state, static data, nodes) it names what; this is the rest.
      const std::string message = "out of memory: an allocation failed (std::bad_alloc); the "
                                  "run is too large for this machine's memory";
      end_mpi_job_on_error(message, 1);
      std::cerr << "uwjit: error: " << message << "\n";
      code = 1;
    } catch (const std::exception& error) {
      const std::string message = uwjit::terminal_safe(error.what());
      end_mpi_job_on_error(message, 1);
      std::cerr << "uwjit: error: " << message << "\n";
      code = 1;
    }
    if (auto* job = uwjit::tools::cli_job()) {
      job->finish();
    }
    return code;
  }
  std::vector<std::string> names;
  for (const auto& command : k_commands) {
    names.emplace_back(command.name);
  }
  names.emplace_back("help");
  std::cerr << "uwjit: error: unknown command \"" << name << "\""
            << uwjit::did_you_mean(name, names) << "\n\n";
  print_help(std::cerr);
  return 2;
}
