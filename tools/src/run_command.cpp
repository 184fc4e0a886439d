// uwjit run: the driver (uwjit/driver/run_main.hpp) over the built-in node kinds.
#include "commands.hpp"
#include "mpi_job.hpp"

#include <uwjit/driver/run_main.hpp>
#include <uwjit/nodes/registry.hpp>

namespace uwjit::tools {

int run_command(const std::vector<std::string>& argv) {
  const driver::Program program{
      .name = "uwjit",
      .command = "run",
      .summary = "Runs a built-in node in this process: emits its kernel, gets it from the engine "
                 "(compiled, or from\nthe cache), takes the steps, checks the physics and writes "
                 "the final fields as VTK XML\n(.vti image data; .vtu unstructured grid for fvm) "
                 "that ParaView opens.",
      .epilog = "Examples:\n"
                "  uwjit run pipe-flow\n"
                "  uwjit run heat --size 64 --steps 200 --output out --json\n"
                "  uwjit run heat --set contrast=5 --set boundary=periodic\n"
                "  uwjit run heat --steps 200 --checkpoint heat.ckpt && uwjit run heat --restore "
                "heat.ckpt --steps 300\n"
                "  uwjit run pipe-flow --plot --output out\n"
                "  uwjit run heat --steps 500 --output-every 50 --output series\n"
                "  mpirun -np 2 uwjit run pipe-flow --shard x --exchange overlap\n"
                "  uwjit run pipe-flow --device cuda",
      .kinds_word = "built-in",
      .job = cli_job(),
  };
  return driver::run(program, nodes::kinds(), argv);
}

} // namespace uwjit::tools
