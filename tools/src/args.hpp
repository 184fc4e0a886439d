// The command-line parser of the uwjit subcommands: the driver's (<uwjit/driver/args.hpp>), with
// its names in uwjit::tools.
#pragma once

#include <uwjit/driver/args.hpp>

namespace uwjit::tools {

using driver::apply_sets;
using driver::Args;
using driver::ArgSpec;
using driver::parse_size;
using driver::UsageError;

} // namespace uwjit::tools
