// The one atomic writer: old file or new file, never torn, never through a planted symlink.
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/posix_file.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

using uwjit_test::read_text;
using uwjit_test::TempDir;
using uwjit_test::write_text;

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& item : fs::directory_iterator(dir)) {
    names.insert(item.path().filename().string());
  }
  return names;
}

} // namespace

TEST_CASE("the atomic writer replaces a symlink at the final name, never writes through it") {
  const TempDir dir;
  // Stands for a file of root's that another user points a link at.
  const auto victim = dir.path() / "victim";
  write_text(victim, "root's file");
  ::chmod(victim.c_str(), 0644);
  const auto target = dir.path() / "out.vti";
  fs::create_symlink(victim, target);

  uwjit::posix::write_file_atomically(target, "new output", {.mode = 0644});

  CHECK(read_text(victim) == "root's file");
  CHECK_FALSE(fs::is_symlink(fs::symlink_status(target)));
  CHECK(read_text(target) == "new output");
  CHECK(names_in(dir.path()) == std::set<std::string>{"out.vti", "victim"});
}

TEST_CASE("a symlink at the old predictable temporary name is never followed") {
  const TempDir dir;
  const auto victim = dir.path() / "victim";
  write_text(victim, "root's file");
  const auto target = dir.path() / "heat.ckpt";
  // The names writers used before: PATH.tmp.PID.
  fs::create_symlink(victim, dir.path() / ("heat.ckpt.tmp." + std::to_string(::getpid())));
  fs::create_symlink(victim, dir.path() / ("heat.ckpt.tmp." + std::to_string(::getpid()) + ".0"));

  uwjit::posix::write_file_atomically(target, "checkpoint");

  CHECK(read_text(victim) == "root's file");
  CHECK(read_text(target) == "checkpoint");
}

TEST_CASE("temporary names carry uwjit's prefix and an unpredictable part") {
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) {
    const auto name = uwjit::posix::temporary_name("heat.vti");
    CHECK(name.starts_with(".uwjit-tmp.heat.vti." + std::to_string(::getpid()) + "."));
    names.insert(name);
  }
  CHECK(names.size() == 1000);
  // A long final name still gives a temporary name the filesystem accepts.
  CHECK(uwjit::posix::temporary_name(std::string(255, 'x')).size() < 255);
}

TEST_CASE("a file is created with the mode asked for, and an uncommitted one leaves nothing") {
  const TempDir dir;
  const auto target = dir.path() / "secret";
  const mode_t old_mask = ::umask(0);
  {
    uwjit::posix::AtomicFile file(target);
    file.write(std::string_view("half"));
    struct stat st{};
    REQUIRE(::stat((dir.path() / file.temporary()).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
  }
  ::umask(old_mask);
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("a commit replaces the old file whole, and a directory cannot be replaced") {
  const TempDir dir;
  const auto target = dir.path() / "data";
  uwjit::posix::write_file_atomically(target, "old");
  uwjit::posix::write_file_atomically(target, "new, longer");
  CHECK(read_text(target) == "new, longer");
  fs::create_directory(dir.path() / "taken");
  CHECK_THROWS_AS(uwjit::posix::write_file_atomically(dir.path() / "taken", "x"), uwjit::Error);
  CHECK(names_in(dir.path()) == std::set<std::string>{"data", "taken"});
  CHECK_THROWS_AS(uwjit::posix::write_file_atomically(dir.path() / "missing" / "f", "x"),
                  uwjit::Error);
}
