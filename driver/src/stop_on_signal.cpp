#include "stop_on_signal.hpp"

namespace uwjit::driver {

namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal) {
  g_signal = signal;
}

} // namespace

StopOnSignal::StopOnSignal() {
  g_signal = 0;
  struct sigaction action{};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &m_saved[0]);
  ::sigaction(SIGTERM, &action, &m_saved[1]);
}

StopOnSignal::~StopOnSignal() {
  ::sigaction(SIGINT, &m_saved[0], nullptr);
  ::sigaction(SIGTERM, &m_saved[1], nullptr);
}

int StopOnSignal::signal() noexcept {
  return g_signal;
}

} // namespace uwjit::driver
