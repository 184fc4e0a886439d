// An example host: compiles examples/kernels/diffusion.cpp in process, runs it for a number of
// steps on a 64^3 grid with insulating (zero-flux) walls, and checks that total heat is conserved.
//   stencil_demo [KERNEL_FILE] [STEPS]
#include <uwjit/engine/engine.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef UWJIT_EXAMPLE_KERNEL
#define UWJIT_EXAMPLE_KERNEL "examples/kernels/diffusion.cpp"
#endif

namespace {
// Zero-flux walls: each halo cell copies its interior neighbour.
void fill_halo(std::vector<double>& u, long n) {
  const long s = n + 2;
  auto at = [&](long i, long j, long k) -> double& { return u[(i * s + j) * s + k]; };
  for (long a = 0; a < s; ++a) {
    for (long b = 0; b < s; ++b) {
      at(0, a, b) = at(1, a, b);
      at(n + 1, a, b) = at(n, a, b);
      at(a, 0, b) = at(a, 1, b);
      at(a, n + 1, b) = at(a, n, b);
      at(a, b, 0) = at(a, b, 1);
      at(a, b, n + 1) = at(a, b, n);
    }
  }
}
} // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : UWJIT_EXAMPLE_KERNEL;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "stencil_demo: cannot open %s\n", path.c_str());
    return 1;
  }
  std::stringstream text;
  text << file.rdbuf();
  const auto source = uwjit::codegen::KernelSource::from_text(text.str(), "kernel",
                                                              {.state_in = {"u"},
                                                               .state_out = {"u"},
                                                               .extents = {"nx", "ny", "nz"},
                                                               .integrals = {"heat"}});

  uwjit::engine::Engine engine;
  const auto kernel = engine.kernel(source);
  const auto& info = kernel.info();
  std::printf("kernel %s: %s in %.1f ms (frontend %.1f, optimise %.1f, codegen %.1f, link %.1f)\n",
              info.key.c_str(), uwjit::engine::to_string(info.tier), info.request_ms,
              info.compile.frontend_ms, info.compile.optimise_ms, info.compile.codegen_ms,
              info.load_ms);

  const long n = 64;
  const long s = n + 2;
  std::vector<double> a(s * s * s, 0.0), b(s * s * s, 0.0);
  for (long i = 1; i <= n; ++i) {
    for (long j = 1; j <= n; ++j) {
      for (long k = 1; k <= n; ++k) {
        const double r2 =
            (i - 32.5) * (i - 32.5) + (j - 32.5) * (j - 32.5) + (k - 32.5) * (k - 32.5);
        a[(i * s + j) * s + k] = std::exp(-r2 / 50.0);
      }
    }
  }
  const uw_i64 extents[] = {n, n, n};
  double heat = 0.0, initial = 0.0;
  for (long i = 1; i <= n; ++i) {
    for (long j = 1; j <= n; ++j) {
      for (long k = 1; k <= n; ++k) {
        initial += a[(i * s + j) * s + k];
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    fill_halo(a, n);
    const void* in[] = {a.data()};
    void* out[] = {b.data()};
    uwjit_kernel_args args{};
    args.state_in = in;
    args.state_out = out;
    args.extents = extents;
    args.dt = 1.0;
    args.step = step;
    args.integrals = &heat;
    if (kernel(args) != UWJIT_KERNEL_OK) {
      std::fprintf(stderr, "stencil_demo: the kernel failed at step %d\n", step);
      return 1;
    }
    a.swap(b);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double drift = std::abs(heat - initial) / initial;
  std::printf("%d steps of %ld^3 in %.3f s: %.1f MLUPS\n", steps, n, seconds,
              steps * double(n * n * n) / seconds / 1e6);
  std::printf("total heat %.12g -> %.12g (relative drift %.2e): %s\n", initial, heat, drift,
              drift < 1e-10 ? "conserved" : "NOT CONSERVED");
  return drift < 1e-10 ? 0 : 1;
}
