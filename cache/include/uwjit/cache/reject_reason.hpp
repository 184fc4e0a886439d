// Why a disk entry was refused: the verdicts of the store's verification, with stable names.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace uwjit::cache {

/// Why the store refused a disk entry. A refused entry is a miss for the caller: it is logged,
/// counted (Stat::rejected and its per-reason counter), removed, and the kernel is recompiled.
/// The names (to_string) are stable: they appear in `uwjit cache verify` and in stats.json.
enum class RejectReason {
  corrupt_manifest,  ///< the manifest is unreadable, not JSON, or lacks or mistypes a field
  format_mismatch,   ///< the manifest was written in another entry format (k_entry_format)
  key_mismatch,      ///< the manifest names another key, or the source does not hash to the key
  salt_mismatch,     ///< the entry was compiled under another salt (CPU, LLVM, flags, ...)
  missing_object,    ///< the manifest has no object file next to it (or not a regular file)
  truncated_object,  ///< the object is shorter than the manifest says
  checksum_mismatch, ///< the object's size or SHA-256 differs from the manifest
  slot_mismatch,     ///< the entry's slot tables differ from the request's
};

inline constexpr std::array<RejectReason, 8> k_all_reject_reasons{
    RejectReason::corrupt_manifest,  RejectReason::format_mismatch, RejectReason::key_mismatch,
    RejectReason::salt_mismatch,     RejectReason::missing_object,  RejectReason::truncated_object,
    RejectReason::checksum_mismatch, RejectReason::slot_mismatch};

/// The reason's stable name, e.g. "truncated_object". Thread-safe.
[[nodiscard]] std::string_view to_string(RejectReason reason) noexcept;

/// The reason named `name` (as to_string writes it), or nullopt. Thread-safe.
[[nodiscard]] std::optional<RejectReason> parse_reject_reason(std::string_view name) noexcept;

} // namespace uwjit::cache
