// The main() of every doctest executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "sandbox.hpp"

#include <uwjit/common/log.hpp>

#include <cstdlib>
#include <optional>

#include <stdlib.h>

int main(int argc, char** argv) {
  // Tests never touch the user's cache: without UWJIT_CACHE_DIR, a fresh directory is used and
  // removed afterwards. (Tests that count compiles use memory-only engines or their own dirs.)
  std::optional<uwjit_test::TempDir> sandbox;
  if (std::getenv("UWJIT_CACHE_DIR") == nullptr) {
    ::setenv("UWJIT_CACHE_DIR", sandbox.emplace("uwjit-tests").path().c_str(), 1);
  }
  // The tests provoke every warning on purpose and assert on counters, never on log text; keep
  // the output for failures, unless UWJIT_LOG_LEVEL asks for the log.
  if (std::getenv("UWJIT_LOG_LEVEL") == nullptr) {
    uwjit::log::set_level(uwjit::log::Level::off);
  }
  return doctest::Context(argc, argv).run();
}
