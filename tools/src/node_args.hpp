// Command-line arguments that choose a built-in node's params: --size and --set, shared by the
// subcommands that build nodes (run, warm).
#pragma once

#include <uwjit/runtime/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::tools {

/// "N" or "NXxNYxNZ" as one or three positive integers. Throws Error(usage) "COMMAND: --size: ...".
[[nodiscard]] std::vector<std::int64_t> parse_size(const std::string& text,
                                                   std::string_view command);

/// `params` with each "NAME=VALUE" of `assignments` set. Throws Error(usage)
/// "COMMAND: --set ...: ..." for a malformed assignment or a value the param refuses (with "did
/// you mean" for an unknown name).
void apply_sets(runtime::Params& params, const std::vector<std::string>& assignments,
                std::string_view command);

} // namespace uwjit::tools
