#include <uwjit/cache/reject_reason.hpp>

namespace uwjit::cache {

std::string_view to_string(RejectReason reason) noexcept {
  switch (reason) {
  case RejectReason::corrupt_manifest:
    return "corrupt_manifest";
  case RejectReason::format_mismatch:
    return "format_mismatch";
  case RejectReason::key_mismatch:
    return "key_mismatch";
  case RejectReason::salt_mismatch:
    return "salt_mismatch";
  case RejectReason::missing_object:
    return "missing_object";
  case RejectReason::truncated_object:
    return "truncated_object";
  case RejectReason::checksum_mismatch:
    return "checksum_mismatch";
  case RejectReason::slot_mismatch:
    return "slot_mismatch";
  }
  return "corrupt_manifest";
}

std::optional<RejectReason> parse_reject_reason(std::string_view name) noexcept {
  for (const auto reason : k_all_reject_reasons) {
    if (to_string(reason) == name) {
      return reason;
    }
  }
  return std::nullopt;
}

} // namespace uwjit::cache
