// A small host for multi-process tests: requests kernels through the public API, checks that
// each computes what it should, and prints what the engine did as one JSON line.
//   kernel_host [--kernels N] [--first I] [--offset J] [--opt O] [--hold-ms T]
// Kernel i computes y = i * x + 1, for i = I .. I+N-1, requested in that order starting with the
// J-th (so that racing processes can start on different kernels). --opt sets the optimisation
// level (the fault suite uses 0: its compiles are cheap). --hold-ms keeps the process alive after
// loading (for tests that need a live holder). "tiers" and "keys" map each i to the tier that
// served it and its key.
#include <uwjit/engine/engine.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {
uwjit::codegen::KernelSource kernel_source(int i) {
  return uwjit::codegen::KernelSource::generated(
      "host",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* x = static_cast<const double*>(args->state_in[0]);\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n"
      "  for (uw_i64 k = 0; k < args->extents[0]; ++k) y[k] = " +
          std::to_string(i) +
          ".0 * x[k] + 1.0;\n"
          "  return UWJIT_KERNEL_OK;\n"
          "}\n",
      {.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}});
}
} // namespace

int main(int argc, char** argv) {
  int kernels = 1;
  int first = 1;
  int hold_ms = 0;
  int offset = 0;
  int opt = -1;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    const int value = std::atoi(argv[a + 1]);
    if (flag == "--kernels") {
      kernels = value;
    } else if (flag == "--first") {
      first = value;
    } else if (flag == "--hold-ms") {
      hold_ms = value;
    } else if (flag == "--offset") {
      offset = value;
    } else if (flag == "--opt") {
      opt = value;
    } else {
      std::fprintf(stderr, "kernel_host: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    auto options = uwjit::engine::EngineOptions::from_environment();
    if (opt >= 0) {
      options.compile.opt_level = opt;
    }
    uwjit::engine::Engine engine(options);
    std::string tiers;
    std::string keys;
    bool right = true;
    for (int step = 0; step < kernels; ++step) {
      const int i = first + (step + offset) % kernels;
      const auto kernel = engine.kernel(kernel_source(i));
      const double x[3] = {0.0, 1.0, 2.0};
      double y[3] = {};
      const void* in[] = {x};
      void* out[] = {y};
      const uw_i64 n[] = {3};
      uwjit_kernel_args args{};
      args.state_in = in;
      args.state_out = out;
      args.extents = n;
      right = right && kernel(args) == 0 && y[0] == 1.0 && y[1] == i + 1.0 && y[2] == 2.0 * i + 1;
      tiers += std::string(tiers.empty() ? "" : ", ") + "\"" + std::to_string(i) + "\": \"" +
               uwjit::engine::to_string(kernel.info().tier) + "\"";
      keys += std::string(keys.empty() ? "" : ", ") + "\"" + std::to_string(i) + "\": \"" +
              kernel.info().key + "\"";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    const auto stats = engine.stats();
    using uwjit::cache::Stat;
    std::printf("{\"ok\": %s, \"compiles\": %llu, \"disk_hits\": %llu, \"memory_hits\": %llu, "
                "\"published\": %llu, \"publish_failed\": %llu, \"rejected\": %llu, "
                "\"lock_waits\": %llu, \"lock_timeouts\": %llu, \"cache_dir\": \"%s\", "
                "\"tiers\": {%s}, \"keys\": {%s}}\n",
                right ? "true" : "false", (unsigned long long)stats.get(Stat::compiles),
                (unsigned long long)stats.get(Stat::disk_hits),
                (unsigned long long)stats.get(Stat::memory_hits),
                (unsigned long long)stats.get(Stat::published),
                (unsigned long long)stats.get(Stat::publish_failed),
                (unsigned long long)stats.get(Stat::rejected),
                (unsigned long long)stats.get(Stat::lock_waits),
                (unsigned long long)stats.get(Stat::lock_timeouts),
                engine.cache_dir() ? engine.cache_dir()->c_str() : "", tiers.c_str(), keys.c_str());
    return right ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kernel_host: error: %s\n", error.what());
    return 1;
  }
}
