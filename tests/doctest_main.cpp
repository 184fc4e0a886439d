// The main() of every doctest executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <uwjit/common/log.hpp>

#include <cstdlib>

int main(int argc, char** argv) {
  // The tests provoke every warning on purpose and assert on counters, never on log text; keep
  // the output for failures, unless UWJIT_LOG_LEVEL asks for the log.
  if (std::getenv("UWJIT_LOG_LEVEL") == nullptr) {
    uwjit::log::set_level(uwjit::log::Level::off);
  }
  return doctest::Context(argc, argv).run();
}
