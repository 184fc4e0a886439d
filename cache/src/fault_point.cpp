#include "fault_point.hpp"

#include <uwjit/common/env.hpp>

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

namespace uwjit::cache::detail {

namespace {

struct Fault {
  int signal = 0; // 0: disarmed
  std::string point;
};

Fault read_fault() noexcept {
  Fault fault;
  try {
    const auto value = env::get("UWJIT_TEST_FAULT");
    if (!value) {
      return fault;
    }
    const auto at = value->find('@');
    const std::string action = value->substr(0, at);
    const std::string point = at == std::string::npos ? "" : value->substr(at + 1);
    bool known = false;
    for (const auto name : k_fault_points) {
      known = known || name == point;
    }
    if ((action != "kill" && action != "stop") || !known) {
      // Test-only: a typo must not silently test nothing.
      std::fprintf(stderr,
                   "uwjit: UWJIT_TEST_FAULT: unrecognised value \"%s\" (accepted: "
                   "kill@POINT or stop@POINT, POINT as in cache/src/fault_point.hpp)\n",
                   value->c_str());
      return fault;
    }
    fault.signal = action == "kill" ? SIGKILL : SIGSTOP;
    fault.point = point;
  } catch (...) {
    fault = Fault{};
  }
  return fault;
}

} // namespace

void fault_point(std::string_view point) noexcept {
  static const Fault fault = read_fault();
  if (fault.signal != 0 && point == fault.point) {
    std::raise(fault.signal);
  }
}

} // namespace uwjit::cache::detail
