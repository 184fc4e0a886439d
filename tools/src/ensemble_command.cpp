// uwjit ensemble: the driver's ensemble (uwjit/driver/ensemble_main.hpp) over the built-in kinds.
#include "commands.hpp"
#include "mpi_job.hpp"

#include <uwjit/driver/ensemble_main.hpp>
#include <uwjit/nodes/registry.hpp>

namespace uwjit::tools {

int ensemble_command(const std::vector<std::string>& argv) {
  const driver::Program program{
      .name = "uwjit",
      .command = "ensemble",
      .kinds_word = "built-in",
      .job = cli_job(),
  };
  return driver::ensemble(program, nodes::kinds(), argv);
}

} // namespace uwjit::tools
