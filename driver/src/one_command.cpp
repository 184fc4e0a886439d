// The ranks of a job run one command (one_command.hpp).
#include "one_command.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cstdlib>

namespace uwjit::driver {

bool launched_as_ranks() {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && std::atol(value) > 1) {
      return true;
    }
  }
  return false;
}

namespace {

std::string encoded(const std::vector<std::string>& arguments) {
  ByteWriter writer;
  writer.u64(arguments.size());
  for (const auto& argument : arguments) {
    writer.str(argument);
  }
  return std::move(writer.bytes());
}

std::vector<std::string> decoded(std::string_view bytes) {
  ByteReader reader(bytes, "rank 0's arguments");
  std::vector<std::string> arguments(reader.count(4));
  for (auto& argument : arguments) {
    argument = reader.str();
  }
  return arguments;
}

// Argument i, with the option it is the value of ("`--steps 30`"); "nothing" past the end.
std::string shown(const std::vector<std::string>& arguments, std::size_t i) {
  if (i >= arguments.size()) {
    return "nothing";
  }
  if (i > 0 && arguments[i - 1].starts_with("--") && !arguments[i].starts_with("-")) {
    return format("`{} {}`", arguments[i - 1], arguments[i]);
  }
  return format("`{}`", arguments[i]);
}

} // namespace

void check_one_command(comm::Collectives& comm, const std::vector<std::string>& arguments) {
  const std::string root = comm.broadcast(comm.rank() == 0 ? encoded(arguments) : std::string(), 0);
  comm::together(comm, [&] {
    const std::vector<std::string> first = decoded(root);
    if (first == arguments) {
      return;
    }
    const auto differ = static_cast<std::size_t>(
        std::mismatch(first.begin(), first.end(), arguments.begin(), arguments.end()).first -
        first.begin());
    throw Error(ErrorKind::usage,
                format("the ranks of this job were started with other arguments: argument {} is "
                       "{} on rank {} and {} on rank 0; every rank of a job runs one command, "
                       "so give each rank the same arguments",
                       differ + 1, shown(arguments, differ), comm.rank(), shown(first, differ)));
  });
}

} // namespace uwjit::driver
