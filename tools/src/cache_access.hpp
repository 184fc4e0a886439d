// What the cache subcommands share: the store they read, opened only if it exists, and an
// entry found by a key prefix; and the two subcommands that show entries (cache_entry_command.cpp).
#pragma once

#include "args.hpp"

#include <uwjit/cache/store.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace uwjit::tools {

/// The cache directory for commands that only read. Throws Error(usage) when the cache is
/// disabled.
[[nodiscard]] std::filesystem::path cache_dir_or_throw();

/// The store if its directory exists; nullopt (after saying so on stderr) when there is none
/// yet. The directory is the one Store::open uses: uwjit/ inside a directory holding other
/// files. Throws Error(io) when a file stands in the directory's place.
[[nodiscard]] std::optional<cache::Store> open_existing();

/// Checked before any store is opened: a malformed prefix is a misuse of the command line.
void check_prefix(const ArgSpec& spec, const std::string& prefix);

/// The one key of `store` that starts with `prefix`. Throws Error(usage) for none or several.
[[nodiscard]] cache::Key resolve_prefix(cache::Store& store, const std::string& prefix);

int inspect_command(const std::vector<std::string>& argv); ///< uwjit cache inspect
int explain_command(const std::vector<std::string>& argv); ///< uwjit cache explain

} // namespace uwjit::tools
