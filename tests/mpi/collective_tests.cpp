// Collective kernel requests under mpiexec: one compile per job, the same error on every rank.
#include "harness.hpp"
#include "job.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/mpi.hpp>

#include <filesystem>
#include <fstream>
#include <stdlib.h>
#include <sys/stat.h>

using uwjit::cache::Stat;
using uwjit::codegen::KernelSource;
using uwjit::engine::Engine;
using uwjit::engine::Tier;

namespace {

using uwjit_test::comm;

std::filesystem::path job_sandbox() {
  return uwjit_test::job_sandbox("uwjit-mpi");
}

KernelSource scale(double factor, const std::string& extra = "") {
  return KernelSource::generated(
      "scale",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* x = static_cast<const double*>(args->state_in[0]);\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n" +
          extra + "  y[0] = " + std::to_string(factor) +
          " * x[0];\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n",
      {.state_in = {"x"}, .state_out = {"y"}});
}

double call(const uwjit::engine::Kernel& kernel, double x) {
  double y = 0;
  const void* in[] = {&x};
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_in = in;
  args.state_out = out;
  MPI_CHECK(kernel(args) == UWJIT_KERNEL_OK);
  return y;
}

std::uint64_t job_total(const Engine& engine, Stat stat) {
  std::uint64_t value = engine.stats().get(stat);
  comm()->all_reduce_sum(std::span(&value, 1));
  return value;
}

// The error every rank raised, checked to be the same text everywhere.
std::string same_error_everywhere(const std::function<void()>& body, uwjit::ErrorKind kind) {
  std::string message = "(no error)";
  bool right_kind = false;
  try {
    body();
  } catch (const uwjit::Error& error) {
    message = error.what();
    right_kind = error.kind() == kind;
  }
  MPI_CHECK(right_kind);
  for (const auto& other : comm()->all_gather(message)) {
    MPI_CHECK(other == message);
  }
  return message;
}

MPI_TEST_CASE("a cold job compiles each kernel once in total, and every rank computes") {
  const auto dir = job_sandbox();
  {
    Engine engine({.cache_dir = dir});
    const std::vector<KernelSource> sources = {scale(2.0), scale(3.0), scale(4.0)};
    const auto kernels = engine.kernels(sources, comm().get());
    MPI_CHECK(job_total(engine, Stat::compiles) == 3);
    MPI_CHECK(call(kernels[0], 1.5) == 3.0);
    MPI_CHECK(call(kernels[2], 1.5) == 6.0);
    for (const auto& kernel : kernels) {
      MPI_CHECK(kernel.info().tier == (comm()->rank() == 0 ? Tier::compiled : Tier::received));
    }
    // Asked again: every rank has them in memory, nothing is compiled or sent.
    const auto again = engine.kernels(sources, comm().get());
    MPI_CHECK(again[1].info().tier == Tier::memory);
    MPI_CHECK(job_total(engine, Stat::compiles) == 3);
  }
  // A new job on the same cache: rank 0 reads the disk, nobody compiles.
  Engine engine({.cache_dir = dir});
  const auto kernel = engine.kernel(scale(3.0), comm().get());
  MPI_CHECK(job_total(engine, Stat::compiles) == 0);
  MPI_CHECK(kernel.info().tier == (comm()->rank() == 0 ? Tier::disk : Tier::received));
  MPI_CHECK(call(kernel, 2.0) == 6.0);
}

MPI_TEST_CASE("a key mismatch raises the same collective error on every rank") {
  if (comm()->size() < 2) {
    return; // one rank cannot disagree with itself
  }
  const auto dir = job_sandbox();
  Engine engine({.cache_dir = dir});
  // The last rank emits a different source: a generator that depends on the rank.
  const bool odd = comm()->rank() == comm()->size() - 1;
  const auto message =
      same_error_everywhere([&] { (void)engine.kernel(scale(odd ? 5.0 : 2.0), comm().get()); },
                            uwjit::ErrorKind::collective);
  MPI_CHECK(message.find("ranks disagree on kernel 1 of 1") != std::string::npos);
  MPI_CHECK(message.find("rank " + std::to_string(comm()->size() - 1) + " first differs") !=
            std::string::npos);
  MPI_CHECK(message.find("5.000000 * x[0]") != std::string::npos);
  MPI_CHECK(message.find("2.000000 * x[0]") != std::string::npos);
  // Each distinct source is kept for inspection, and the engine still works afterwards.
  std::size_t written = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir / "mismatch")) {
    written += file.path().extension() == ".cpp" ? 1 : 0;
  }
  MPI_CHECK(written == 2);
  MPI_CHECK(call(engine.kernel(scale(7.0), comm().get()), 1.0) == 7.0);
}

MPI_TEST_CASE("a rank compiling with other options names the salt components that differ") {
  if (comm()->size() < 2) {
    return; // one rank cannot disagree with itself
  }
  const auto dir = job_sandbox();
  // The same source everywhere; the last rank optimises at another level, so only the salt
  // differs and there is no source line to show.
  const bool odd = comm()->rank() == comm()->size() - 1;
  uwjit::engine::EngineOptions options{.cache_dir = dir};
  options.compile.opt_level = odd ? 2 : 3;
  Engine engine(options);
  const auto message = same_error_everywhere([&] { (void)engine.kernel(scale(2.0), comm().get()); },
                                             uwjit::ErrorKind::collective);
  const std::string last = std::to_string(comm()->size() - 1);
  MPI_CHECK(message.find("rank " + last + " has the same source but another salt than rank 0") !=
            std::string::npos);
  MPI_CHECK(message.find("\"opt\" is \"3\" on rank 0, \"2\" on rank " + last) != std::string::npos);
  MPI_CHECK(message.find("line 0") == std::string::npos);
  MPI_CHECK(message.find("\"cpu\"") == std::string::npos);
}

MPI_TEST_CASE("a compile error on the compiling rank raises the same error on every rank") {
  const auto dir = job_sandbox();
  Engine engine({.cache_dir = dir});
  const auto message = same_error_everywhere(
      [&] { (void)engine.kernel(scale(1.0, "  int broken = ;\n"), comm().get()); },
      uwjit::ErrorKind::compile);
  MPI_CHECK(message.find("kernel.cpp:4:") != std::string::npos);
  MPI_CHECK(job_total(engine, Stat::compiles) == 0);
  // Every rank gets the diagnostics too, not only the message.
  try {
    (void)engine.kernel(scale(1.0, "  int broken = ;\n"), comm().get());
    MPI_CHECK(false);
  } catch (const uwjit::Error& error) {
    MPI_CHECK(error.diagnostics().size() == 1);
    MPI_CHECK(!error.diagnostics().empty() && error.diagnostics()[0].line == 4 &&
              error.diagnostics()[0].section == "kernel.cpp" &&
              error.diagnostics()[0].severity == "error");
  }
  // The job goes on: the next request works.
  MPI_CHECK(call(engine.kernel(scale(8.0), comm().get()), 1.0) == 8.0);
}

MPI_TEST_CASE("a header one rank cannot read raises the same error on every rank, never a hang") {
  if (comm()->size() < 2) {
    return;
  }
  // Each rank its own include directory: the last rank's header is a FIFO, which would hang its
  // compile; its key cannot be taken, and every rank hears why.
  const auto dir = job_sandbox() / ("include-" + std::to_string(comm()->rank()));
  std::filesystem::create_directories(dir);
  const bool odd = comm()->rank() == comm()->size() - 1;
  if (odd) {
    MPI_CHECK(::mkfifo((dir / "factor.h").c_str(), 0600) == 0);
  } else {
    std::ofstream(dir / "factor.h") << "constexpr double factor = 2.0;\n";
  }
  uwjit::engine::EngineOptions options{.disk_cache = uwjit::engine::DiskCache::off};
  options.compile.include_dirs = {dir.string()};
  Engine engine(options);
  const auto source =
      KernelSource::generated("scale",
                              "#include <factor.h>\n"
                              "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
                              "  static_cast<double*>(args->state_out[0])[0] = factor;\n"
                              "  return UWJIT_KERNEL_OK;\n"
                              "}\n",
                              {.state_in = {"x"}, .state_out = {"y"}});
  const auto message = same_error_everywhere([&] { (void)engine.kernel(source, comm().get()); },
                                             uwjit::ErrorKind::compile);
  MPI_CHECK(message.find("which is a FIFO") != std::string::npos);
  MPI_CHECK(message.find("include-" + std::to_string(comm()->size() - 1)) != std::string::npos);
  MPI_CHECK(job_total(engine, Stat::compiles) == 0);
}

MPI_TEST_CASE("ranks asking for different numbers of kernels get a collective error") {
  if (comm()->size() < 2) {
    return;
  }
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  std::vector<KernelSource> sources = {scale(2.0)};
  if (comm()->rank() == 1) {
    sources.push_back(scale(3.0));
  }
  const auto message = same_error_everywhere([&] { (void)engine.kernels(sources, comm().get()); },
                                             uwjit::ErrorKind::collective);
  MPI_CHECK(message.find("rank 1 asks for 2 kernels, rank 0 for 1") != std::string::npos);
}

namespace {

// A GPU kernel: one thread per element, y = factor x (plus `extra`).
KernelSource gpu_scale(double factor, const std::string& extra = "") {
  return KernelSource::generated(
      "gpu-scale",
      "extern \"C\" __attribute__((nvptx_kernel)) void __UWJIT_ENTRY__(uwjit_kernel_args args) {\n"
      "  const long i = __nvvm_read_ptx_sreg_tid_x();\n"
      "  const double* x = static_cast<const double*>(args.state_in[0]);\n"
      "  double* y = static_cast<double*>(args.state_out[0]);\n" +
          extra + "  y[i] = " + std::to_string(factor) + " * x[i];\n}\n",
      {.state_in = {"x"}, .state_out = {"y"}});
}

const uwjit::engine::Target& sm90() {
  static const auto target = uwjit::engine::Target::parse("cuda:sm_90");
  return target;
}

} // namespace

MPI_TEST_CASE("a cold job compiles each GPU kernel's PTX once in total, and every rank gets it") {
  const auto dir = job_sandbox();
  std::string first;
  {
    Engine engine({.cache_dir = dir});
    const std::vector<KernelSource> sources = {gpu_scale(2.0), gpu_scale(3.0)};
    const auto ptx = engine.ptx(sources, sm90(), comm().get());
    MPI_CHECK(ptx.size() == 2);
    MPI_CHECK(job_total(engine, Stat::compiles) == 2);
    for (const auto& kernel : ptx) {
      MPI_CHECK(kernel.info->tier == (comm()->rank() == 0 ? Tier::compiled : Tier::received));
      MPI_CHECK(kernel.ptx->find(".visible .entry " + kernel.info->entry + "(") !=
                std::string::npos);
      // The same text on every rank.
      for (const auto& other : comm()->all_gather(*kernel.ptx)) {
        MPI_CHECK(other == *kernel.ptx);
      }
    }
    first = *ptx[0].ptx;
    // Asked again: every rank has them in memory, nothing is compiled or sent.
    const auto again = engine.ptx(sources, sm90(), comm().get());
    MPI_CHECK(again[1].info->tier == Tier::memory);
    MPI_CHECK(job_total(engine, Stat::compiles) == 2);
    // The host kernel of another source is still a collective request of its own kind.
    MPI_CHECK(call(engine.kernel(scale(2.0), comm().get()), 1.5) == 3.0);
  }
  // A new job on the same cache: rank 0 reads the PTX from disk, nobody compiles.
  Engine engine({.cache_dir = dir});
  const auto ptx = engine.ptx(std::vector<KernelSource>{gpu_scale(2.0)}, sm90(), comm().get());
  MPI_CHECK(job_total(engine, Stat::compiles) == 0);
  MPI_CHECK(ptx[0].info->tier == (comm()->rank() == 0 ? Tier::disk : Tier::received));
  MPI_CHECK(*ptx[0].ptx == first);
}

MPI_TEST_CASE("ranks asking for other GPU architectures get one collective error naming them") {
  if (comm()->size() < 2) {
    return; // one rank cannot disagree with itself
  }
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const bool odd = comm()->rank() == comm()->size() - 1;
  const auto target = uwjit::engine::Target::parse(odd ? "cuda:sm_80" : "cuda:sm_90");
  const auto message = same_error_everywhere(
      [&] { (void)engine.ptx(std::vector<KernelSource>{gpu_scale(2.0)}, target, comm().get()); },
      uwjit::ErrorKind::collective);
  const std::string last = std::to_string(comm()->size() - 1);
  MPI_CHECK(message.find("rank " + last + " has the same source but another salt than rank 0") !=
            std::string::npos);
  MPI_CHECK(message.find("\"target\" is \"cuda:sm_90\" on rank 0, \"cuda:sm_80\" on rank " +
                         last) != std::string::npos);
}

MPI_TEST_CASE("a GPU compile error on the compiling rank raises the same error on every rank") {
  Engine engine({.disk_cache = uwjit::engine::DiskCache::off});
  const auto message = same_error_everywhere(
      [&] {
        (void)engine.ptx(std::vector<KernelSource>{gpu_scale(1.0, "  int broken = ;\n")}, sm90(),
                         comm().get());
      },
      uwjit::ErrorKind::compile);
  MPI_CHECK(message.find("kernel.cpp:5:") != std::string::npos);
  MPI_CHECK(job_total(engine, Stat::compiles) == 0);
  // A host target is a usage error on every rank, before any collective.
  const auto usage = same_error_everywhere(
      [&] {
        (void)engine.ptx(std::vector<KernelSource>{gpu_scale(1.0)}, uwjit::engine::Target::host(),
                         comm().get());
      },
      uwjit::ErrorKind::usage);
  MPI_CHECK(usage.find("is not a GPU target") != std::string::npos);
  // The job goes on.
  MPI_CHECK(engine.ptx(std::vector<KernelSource>{gpu_scale(4.0)}, sm90(), comm().get()).size() ==
            1);
}

MPI_TEST_CASE("collectives of the communicator agree with MPI") {
  std::vector<double> values = {1.0, static_cast<double>(comm()->rank())};
  comm()->all_reduce_sum(values);
  const int n = comm()->size();
  MPI_CHECK(values[0] == n);
  MPI_CHECK(values[1] == n * (n - 1) / 2.0);
  const auto all = comm()->all_gather(std::string(static_cast<std::size_t>(comm()->rank()), 'x'));
  MPI_CHECK(static_cast<int>(all.size()) == n);
  MPI_CHECK(all.back().size() == static_cast<std::size_t>(n - 1));
}

} // namespace

int main(int argc, char** argv) {
  return uwjit_test::run_job(argc, argv);
}
