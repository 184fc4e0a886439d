// uwjit-bench-mpi: one MPI job of the benchmark: every rank asks for the same kernels through
// the engine's collective request, and rank 0 prints one JSON line.
//   mpiexec -n NP uwjit-bench-mpi --cache DIR --kernels A,B
#include "bench.hpp"

#include <uwjit/engine/engine.hpp>
#include <uwjit/mpi.hpp>

#include <iostream>
#include <string>

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) {
    out += (out.empty() ? "" : ",") + part;
  }
  return "[" + out + "]";
}

} // namespace

int main(int argc, char** argv) {
  using namespace uwjit::bench;
  const auto init_start = Clock::now();
  MPI_Init(&argc, &argv);
  const double init_ms = ms_since(init_start);
  int status = 0;
  try {
    std::string cache;
    std::vector<std::string> names;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--cache") {
        cache = argv[i + 1];
      } else if (flag == "--kernels") {
        names = split_list(argv[i + 1]);
      }
    }
    std::vector<uwjit::codegen::KernelSource> sources;
    for (const auto& name : names) {
      sources.push_back(kernel_source(name));
    }
    const auto comm = uwjit::mpi::make_comm(MPI_COMM_WORLD);
    uwjit::engine::Engine engine({.cache_dir = cache});
    comm->barrier();
    const auto start = Clock::now();
    const auto kernels = engine.kernels(sources, *comm);
    const double request_ms = ms_since(start);
    comm->barrier();
    const double all_ms = ms_since(start);
    std::uint64_t counts[3] = {engine.stats().get(uwjit::cache::Stat::compiles),
                               engine.stats().get(uwjit::cache::Stat::disk_hits),
                               engine.stats().get(uwjit::cache::Stat::published)};
    comm->all_reduce_sum(std::span(counts, 3));
    const auto request_all = comm->all_gather(std::to_string(request_ms));
    const auto pss_all = comm->all_gather(std::to_string(self_pss_kb()));
    const auto tier_all = comm->all_gather(
        std::string("\"") + uwjit::engine::to_string(kernels.front().info().tier) + "\"");
    if (comm->rank() == 0) {
      std::cout << "{\"np\": " << comm->size() << ", \"kernels\": " << sources.size()
                << ", \"compiles\": " << counts[0] << ", \"disk_hits\": " << counts[1]
                << ", \"published\": " << counts[2] << ", \"mpi_init_ms\": " << init_ms
                << ", \"request_all_ranks_ms\": " << all_ms
                << ", \"request_ms\": " << join(request_all) << ", \"pss_kb\": " << join(pss_all)
                << ", \"first_kernel_tiers\": " << join(tier_all) << "}" << std::endl;
    }
  } catch (const std::exception& error) {
    std::cerr << "uwjit-bench-mpi: error: " << error.what() << "\n";
    status = 1;
  }
  MPI_Finalize();
  return status;
}
