// A host for the debugger and profiler tests: requests one generated kernel (origin
// "debug_host"), prints what the engine did as one JSON line, then calls the kernel --calls times
// on --size elements and checks the result.
//   debug_host [--calls N] [--size N]
// The JSON line (pid, key, entry, tier) comes before the first call, so that a test can find the
// kernel's name in the output of a debugger or a profiler run.
#include <uwjit/engine/engine.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

namespace {
// Several statements on several lines, so that a debugger has lines to step through.
uwjit::codegen::KernelSource kernel_source() {
  return uwjit::codegen::KernelSource::generated(
      "debug_host",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* x = static_cast<const double*>(args->state_in[0]);\n"
      "  double* y = static_cast<double*>(args->state_out[0]);\n"
      "  const uw_i64 n = args->extents[0];\n"
      "  for (uw_i64 i = 0; i < n; ++i) {\n"
      "    const double r2 = x[i] * x[i] + 1.0;\n"
      "    y[i] = uwm::sqrt(r2);\n"
      "  }\n"
      "  return UWJIT_KERNEL_OK;\n"
      "}\n",
      {.state_in = {"x"}, .state_out = {"y"}, .extents = {"n"}});
}
} // namespace

int main(int argc, char** argv) {
  long calls = 1;
  long size = 1000;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    const long value = std::atol(argv[a + 1]);
    if (flag == "--calls") {
      calls = value;
    } else if (flag == "--size") {
      size = value;
    } else {
      std::fprintf(stderr, "debug_host: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    uwjit::engine::Engine engine;
    const auto kernel = engine.kernel(kernel_source());
    const auto& info = kernel.info();
    std::printf("{\"pid\": %ld, \"key\": \"%s\", \"entry\": \"%s\", \"tier\": \"%s\"}\n",
                static_cast<long>(::getpid()), info.key.c_str(), info.entry.c_str(),
                uwjit::engine::to_string(info.tier));
    std::fflush(stdout);
    std::vector<double> x(static_cast<std::size_t>(size));
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<double>(i % 100);
    }
    const void* in[] = {x.data()};
    void* out[] = {y.data()};
    const uw_i64 n[] = {static_cast<uw_i64>(size)};
    uwjit_kernel_args args{};
    args.state_in = in;
    args.state_out = out;
    args.extents = n;
    bool right = true;
    for (long c = 0; c < calls; ++c) {
      right = right && kernel(args) == UWJIT_KERNEL_OK;
    }
    for (std::size_t i = 0; calls > 0 && i < x.size(); ++i) {
      right = right && y[i] == std::sqrt(x[i] * x[i] + 1.0);
    }
    if (!right) {
      std::fprintf(stderr, "debug_host: the kernel computed a wrong result\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "debug_host: error: %s\n", error.what());
    return 1;
  }
}
