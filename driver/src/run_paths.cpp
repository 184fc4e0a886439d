#include "run_paths.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace uwjit::driver {

namespace {

[[noreturn]] void path_error(std::string_view command, std::string_view option,
                             const std::filesystem::path& path, const std::string& reason) {
  throw Error(ErrorKind::io, format("{}{}{} {}: {}", command, command.empty() ? "" : ": ", option,
                                    path.string(), reason));
}

std::filesystem::path directory_of(const std::filesystem::path& file) {
  return file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
}

// Creates `directory` if missing and proves that a file can be created in it.
void check_writable_directory(std::string_view command, std::string_view option,
                              const std::filesystem::path& shown,
                              const std::filesystem::path& directory) {
  std::error_code error;
  if (std::filesystem::exists(directory, error) &&
      !std::filesystem::is_directory(directory, error)) {
    path_error(command, option, shown,
               format("{} exists and is not a directory", directory.string()));
  }
  std::filesystem::create_directories(directory, error);
  if (error) {
    path_error(command, option, shown,
               format("cannot create the directory {}: {}", directory.string(), error.message()));
  }
  // An unnamed file (O_TMPFILE) leaves nothing behind even when the run is killed here; a file
  // system without it gets a named probe, removed at once.
  int fd = ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string probe = (directory / ".uwjit-probe-XXXXXX").string();
    fd = ::mkstemp(probe.data());
    if (fd >= 0) {
      ::unlink(probe.c_str());
    }
  }
  if (fd < 0) {
    path_error(command, option, shown,
               format("cannot write in {}: {}", directory.string(), std::strerror(errno)));
  }
  ::close(fd);
}

bool same_directory(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa{};
  struct stat sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

} // namespace

void check_output(std::string_view command, const std::filesystem::path& directory) {
  check_writable_directory(command, "--output", directory, directory);
}

void check_checkpoint(std::string_view command, const std::filesystem::path& file,
                      std::string_view magic, std::string_view kind) {
  std::error_code error;
  if (std::filesystem::is_directory(file, error)) {
    path_error(command, "--checkpoint", file, "is a directory");
  }
  check_writable_directory(command, "--checkpoint", file, directory_of(file));
  // What the checkpoint's writer will replace, by its rule: nothing, a symlink, an empty file or
  // an earlier checkpoint; a device, FIFO or socket, or a file of the user's, is refused.
  try {
    posix::check_replaceable(file, magic, kind);
  } catch (const Error& refused) {
    path_error(command, "--checkpoint", file, refused.what());
  }
}

void check_vtk_outputs(std::string_view command, const std::filesystem::path& output,
                       std::string_view node) {
  for (const std::string_view extension : {".vti", ".pvti", ".vtu", ".pvd"}) {
    const auto file = output / (std::string(node) + std::string(extension));
    try {
      posix::check_replaceable(file, runtime::k_vtk_magic, runtime::k_vtk_kind);
    } catch (const Error& refused) {
      path_error(command, "--output", file, refused.what());
    }
  }
}

void check_restore(std::string_view command, const std::filesystem::path& file) {
  posix::check_input_file(
      file, format("{}{}--restore {}", command, command.empty() ? "" : ": ", file.string()));
}

void check_checkpoint_apart(std::string_view command, const std::filesystem::path& checkpoint,
                            const std::filesystem::path& output, std::string_view node) {
  const auto named_for_node = [&](const std::string& name) {
    return name == node || name.starts_with(std::string(node) + ".") ||
           name.starts_with(std::string(node) + "_");
  };
  const std::filesystem::path directory = directory_of(checkpoint);
  const std::string name = checkpoint.filename().string();
  const std::string extension = checkpoint.extension().string();
  constexpr std::array<std::string_view, 5> k_written = {".vti", ".vtu", ".pvd", ".png", ".pvti"};
  // In --output, the files named above; in NODE/ or NODE_STEP/ there, a sharded run's pieces.
  const bool written_here =
      same_directory(directory, output) && named_for_node(name) &&
      std::find(k_written.begin(), k_written.end(), extension) != k_written.end();
  const bool a_piece = extension == ".vti" && named_for_node(name) &&
                       named_for_node(directory.filename().string()) &&
                       same_directory(directory_of(directory), output);
  if (written_here || a_piece) {
    path_error(command, "--checkpoint", checkpoint,
               format("is one of the files this run writes in --output {} (the fields, their "
                      "series and pictures of node \"{}\"); choose another name",
                      output.string(), node));
  }
}

} // namespace uwjit::driver
