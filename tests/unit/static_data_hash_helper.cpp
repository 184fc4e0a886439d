// Prints the static_data_hash of a fixed static data set, for the test that compares the hash
// across processes (tests/unit/runtime_tests.cpp).
#include "static_data_sample.hpp"

#include <uwjit/runtime/static_data.hpp>

#include <iostream>

int main() {
  std::cout << uwjit::runtime::static_data_hash(uwjit::tests::sample_static_data()) << "\n";
  return 0;
}
