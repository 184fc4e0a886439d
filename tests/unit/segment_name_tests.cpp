// runtime/src/node_shared: the names of shared-memory objects.
#include "node_shared.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include <unistd.h>

TEST_CASE("each shared-memory segment gets a name of its own that ends in its counter") {
  std::set<std::string> names;
  const std::string first = uwjit::runtime::detail::segment_name();
  names.insert(first);
  const std::string prefix = "/uwjit-" + std::to_string(::getpid()) + "-";
  CHECK(first.rfind(prefix, 0) == 0);
  CHECK(first.find_first_of("{}:") == std::string::npos);
  const auto counter_of = [](const std::string& name) {
    return std::stoul(name.substr(name.rfind('-') + 1));
  };
  for (unsigned i = 1; i <= 100; ++i) {
    const std::string name = uwjit::runtime::detail::segment_name();
    CHECK(names.insert(name).second);
    CHECK(counter_of(name) == counter_of(first) + i);
  }
}
