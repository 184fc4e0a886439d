// Stopping cleanly on SIGINT and SIGTERM: `uwjit run` stops after the current step, `uwjit
// ensemble` after the current round, and both report what they did.
#pragma once

#include <csignal>

namespace uwjit::driver {

/// While it lives, SIGINT and SIGTERM only ask the work to stop at its next clean point; a second
/// one acts as it normally would (SA_RESETHAND), so work stuck in its output can still be ended.
/// The handlers it found (a host's, Python's) are put back when it goes. One at a time.
class StopOnSignal {
public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  /// The signal that asked to stop, or 0.
  [[nodiscard]] static int signal() noexcept;

private:
  struct sigaction m_saved[2]{};
};

} // namespace uwjit::driver
