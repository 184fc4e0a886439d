// The one atomic writer: old file or new file, never torn, never through a planted symlink.
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/posix_file.hpp>

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// Makes a special file of each kind a user may have at an output path, inside `dir`: a FIFO, a
// Unix socket and a directory (no privileges needed).
std::vector<std::pair<std::string, fs::path>> special_files(const fs::path& dir) {
  std::vector<std::pair<std::string, fs::path>> made;
  const auto fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  made.emplace_back("FIFO", fifo);
  const auto socket_path = dir / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  ::close(fd);
  made.emplace_back("socket", socket_path);
  fs::create_directory(dir / "folder");
  made.emplace_back("directory", dir / "folder");
  return made;
}

} // namespace

TEST_CASE("a FIFO, a socket or a directory at the final name is refused, named, and left alone") {
  const TempDir dir;
  for (const auto& [type, path] : special_files(dir.path())) {
    CAPTURE(type);
    const auto before = fs::symlink_status(path).type();
    try {
      uwjit::posix::write_file_atomically(path, "checkpoint bytes");
      FAIL("no error for a " << type);
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::io);
      CHECK(std::string(error.what()).find(path.string()) != std::string::npos);
      CHECK(std::string(error.what()).find("is a " + type + ", not a regular file") !=
            std::string::npos);
    }
    CHECK(fs::symlink_status(path).type() == before);
  }
  // Nothing else was created: no temporary left behind.
  CHECK(names_in(dir.path()) == std::set<std::string>{"pipe", "sock", "folder"});
}

TEST_CASE("a FIFO that appears at the final name while the file is written is not renamed over") {
  const TempDir dir;
  const auto target = dir.path() / "heat.ckpt";
  uwjit::posix::AtomicFile file(target);
  file.write(std::string_view("state"));
  REQUIRE(::mkfifo(target.c_str(), 0600) == 0);
  CHECK_THROWS_AS(file.commit(), uwjit::Error);
  CHECK(fs::is_fifo(fs::symlink_status(target)));
}

TEST_CASE("with `replaces`, only an empty file or an earlier one of its kind is replaced") {
  const TempDir dir;
  const uwjit::posix::AtomicFileOptions options{.replaces = "UWJITCKP", .kind = "uwjit checkpoint"};
  // A user's file at the checkpoint's path: refused, named with what it is, left as it was.
  const auto script = dir.path() / "run.py";
  write_text(script, "print('results')\n");
  try {
    uwjit::posix::write_file_atomically(script, "UWJITCKP new", options);
    FAIL("a user's file was replaced");
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::io);
    const std::string what = error.what();
    CHECK(what.find(script.string()) != std::string::npos);
    CHECK(what.find("17 bytes) and is not a uwjit checkpoint") != std::string::npos);
  }
  CHECK(read_text(script) == "print('results')\n");
  // Shorter than the magic, or the magic's prefix only: refused as well.
  const auto short_file = dir.path() / "short";
  write_text(short_file, "UWJIT");
  CHECK_THROWS_AS(uwjit::posix::write_file_atomically(short_file, "UWJITCKP new", options),
                  uwjit::Error);
  CHECK(read_text(short_file) == "UWJIT");
  // check_replaceable says the same before any work.
  CHECK_THROWS_AS(uwjit::posix::check_replaceable(script, options.replaces, options.kind),
                  uwjit::Error);
  // An earlier checkpoint, an empty file (as mkstemp makes) and nothing at all are replaced.
  const auto earlier = dir.path() / "earlier.ckpt";
  write_text(earlier, "UWJITCKP old");
  const auto empty = dir.path() / "empty.ckpt";
  write_text(empty, "");
  for (const auto& path : {earlier, empty, dir.path() / "new.ckpt"}) {
    CAPTURE(path);
    uwjit::posix::check_replaceable(path, options.replaces, options.kind);
    uwjit::posix::write_file_atomically(path, "UWJITCKP new", options);
    CHECK(read_text(path) == "UWJITCKP new");
  }
  // Without `replaces`, any regular file is replaced, as before.
  uwjit::posix::write_file_atomically(script, "anything");
  CHECK(read_text(script) == "anything");
  CHECK(names_in(dir.path()) ==
        std::set<std::string>{"run.py", "short", "earlier.ckpt", "empty.ckpt", "new.ckpt"});
}

TEST_CASE("a user's file that takes an earlier checkpoint's place meanwhile is not renamed over") {
  const TempDir dir;
  const auto target = dir.path() / "heat.ckpt";
  write_text(target, "UWJITCKP old");
  uwjit::posix::AtomicFile file(target, {.replaces = "UWJITCKP", .kind = "uwjit checkpoint"});
  file.write(std::string_view("UWJITCKP new"));
  write_text(target, "the user's notes");
  CHECK_THROWS_AS(file.commit(), uwjit::Error);
  CHECK(read_text(target) == "the user's notes");
}
