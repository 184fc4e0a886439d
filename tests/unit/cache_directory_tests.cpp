// Cache-directory resolution: the environment-variable matrix shared by the library and the CLI.
#include "cache_sandbox.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

using namespace uwjit;
using namespace uwjit::cache;
using uwjit::cache::testing::ScopedEnv;

namespace {
// Every variable the resolution reads, set as given (nullopt: unset) for one scope.
struct Environment {
  ScopedEnv cache;
  ScopedEnv cache_dir;
  ScopedEnv xdg;
  ScopedEnv home;
  Environment(std::optional<std::string> uwjit_cache, std::optional<std::string> uwjit_cache_dir,
              std::optional<std::string> xdg_cache_home, std::optional<std::string> home_dir)
      : cache("UWJIT_CACHE", std::move(uwjit_cache)),
        cache_dir("UWJIT_CACHE_DIR", std::move(uwjit_cache_dir)),
        xdg("XDG_CACHE_HOME", std::move(xdg_cache_home)), home("HOME", std::move(home_dir)) {}
};
} // namespace

TEST_CASE("UWJIT_CACHE_DIR wins over XDG_CACHE_HOME and HOME") {
  const Environment env(std::nullopt, "/srv/kernels", "/xdg", "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(*location.dir == "/srv/kernels");
  CHECK(location.rule == "UWJIT_CACHE_DIR");
}

TEST_CASE("a trailing separator does not change the directory") {
  const Environment env(std::nullopt, "/srv/kernels/", std::nullopt, "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(location.dir->string() == "/srv/kernels");
}

TEST_CASE("XDG_CACHE_HOME wins over HOME") {
  const Environment env(std::nullopt, std::nullopt, "/xdg", "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(*location.dir == "/xdg/uwjit");
  CHECK(location.rule == "XDG_CACHE_HOME");
}

TEST_CASE("HOME gives ~/.cache/uwjit when nothing else is set") {
  const Environment env(std::nullopt, std::nullopt, std::nullopt, "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(*location.dir == "/home/ada/.cache/uwjit");
  CHECK(location.rule == "HOME (~/.cache/uwjit)");
}

TEST_CASE("an empty variable counts as unset") {
  const Environment env("", "", "", "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(*location.dir == "/home/ada/.cache/uwjit");
}

TEST_CASE("a relative XDG_CACHE_HOME is ignored, as the XDG specification says") {
  const Environment env(std::nullopt, std::nullopt, "relative/cache", "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(*location.dir == "/home/ada/.cache/uwjit");
}

TEST_CASE("a relative UWJIT_CACHE_DIR is made absolute against the working directory") {
  const Environment env(std::nullopt, "some/dir/../cache", std::nullopt, "/home/ada");
  const auto location = resolve_cache_location();
  REQUIRE(location.dir);
  CHECK(location.dir->is_absolute());
  CHECK(*location.dir == (std::filesystem::current_path() / "some/cache").lexically_normal());
}

TEST_CASE("no HOME means memory only") {
  const Environment env(std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  const auto location = resolve_cache_location();
  CHECK_FALSE(location.dir);
  CHECK(location.rule == "no HOME: memory only");
}

TEST_CASE("UWJIT_CACHE=0, false, no or off turns the disk cache off whatever else is set") {
  for (const char* value : {"0", "false", "no", "off", "OFF", "False"}) {
    CAPTURE(value);
    const Environment env(value, "/srv/kernels", "/xdg", "/home/ada");
    const auto location = resolve_cache_location();
    CHECK_FALSE(location.dir);
    CHECK(location.rule == std::string("disabled by UWJIT_CACHE=") + value);
  }
}

TEST_CASE("UWJIT_CACHE=1, true, yes or on keeps the disk cache on") {
  for (const char* value : {"1", "true", "yes", "on", "YES"}) {
    CAPTURE(value);
    const Environment env(value, "/srv/kernels", std::nullopt, "/home/ada");
    const auto location = resolve_cache_location();
    REQUIRE(location.dir);
    CHECK(*location.dir == "/srv/kernels");
  }
}

TEST_CASE("UWJIT_CACHE=maybe is an error naming the variable and the accepted values") {
  const Environment env("maybe", "/srv/kernels", std::nullopt, "/home/ada");
  try {
    (void)resolve_cache_location();
    FAIL("no error for UWJIT_CACHE=maybe");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    const std::string message = e.what();
    CHECK(message.find("UWJIT_CACHE") != std::string::npos);
    CHECK(message.find("\"maybe\"") != std::string::npos);
    CHECK(message.find("0, false, no, off, 1, true, yes, on") != std::string::npos);
  }
}

TEST_CASE("max_cache_size reads UWJIT_CACHE_MAX_SIZE and defaults to 2 GiB") {
  {
    const ScopedEnv unset("UWJIT_CACHE_MAX_SIZE", std::nullopt);
    CHECK(max_cache_size() == k_default_max_cache_size);
    CHECK(k_default_max_cache_size == 2ULL * 1024 * 1024 * 1024);
  }
  {
    const ScopedEnv set("UWJIT_CACHE_MAX_SIZE", "500M");
    CHECK(max_cache_size() == 500ULL * 1024 * 1024);
  }
  {
    const ScopedEnv bad("UWJIT_CACHE_MAX_SIZE", "lots");
    CHECK_THROWS_AS((void)max_cache_size(), Error);
  }
}
