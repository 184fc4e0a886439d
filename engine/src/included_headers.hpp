// The headers a kernel's text includes from the user's directories, and their contents: what a
// cache key must hash besides the text itself, so that an edited header is a new key.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine::detail {

/// One line per header directive of `text` and, recursively, of the user headers it reaches:
/// the name as written and either the SHA-256 of the file Clang will read (found as Clang finds
/// it: a quoted name in the including file's directory first, the working directory's for the
/// kernel's own text, then in `include_dirs`, the -I directories) or "not in the user's
/// directories" (a system header, found past them, or none). "" when `text` has no such
/// directive, as generated kernels: their keys are the text's alone. Throws Error(compile) for a
/// directive whose name is a macro (the file cannot be known without preprocessing) and for a
/// user header that is not a regular file (a FIFO would hang the compile, a device be read as
/// empty). Thread-safe.
[[nodiscard]] std::string included_headers(std::string_view text,
                                           const std::vector<std::string>& include_dirs);

} // namespace uwjit::engine::detail
