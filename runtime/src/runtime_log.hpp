// The runtime's logger, "uwjit.runtime".
#pragma once

#include <uwjit/common/log.hpp>

namespace uwjit::runtime::detail {

/// The logger of the runtime folder. Thread-safe.
inline log::Logger& logger() {
  static log::Logger instance = log::get("uwjit.runtime");
  return instance;
}

} // namespace uwjit::runtime::detail
