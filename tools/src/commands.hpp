// The uwjit subcommands: each takes its arguments (after the subcommand name) and returns the
// process exit code (0 success, 1 failure). Usage errors throw Error(usage); main prints them
// with the subcommand's usage and exits 2.
#pragma once

#include <string>
#include <vector>

namespace uwjit::tools {

int compile_command(const std::vector<std::string>& argv);
int env_command(const std::vector<std::string>& argv);
int ensemble_command(const std::vector<std::string>& argv);
int cache_command(const std::vector<std::string>& argv);
int run_command(const std::vector<std::string>& argv);
int warm_command(const std::vector<std::string>& argv);

} // namespace uwjit::tools
