// Private helpers around the manifest's JSON form.
#pragma once

#include <optional>
#include <string_view>

namespace uwjit::cache {

/// The "format" field of a manifest, if `json` is an object with an integer "format"; read
/// before the full parse so that an entry from another format version is reported as such
/// rather than as corrupt. Never throws.
[[nodiscard]] std::optional<long long> manifest_format(std::string_view json) noexcept;

} // namespace uwjit::cache
