// Compiles a kernel through uwjit's public API and calls it; exits 0 if the result is right.
#include <uwjit/engine/engine.hpp>

#include <cstdio>

int main() {
  const auto source = uwjit::codegen::KernelSource::generated(
      "consumer",
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n"
      "  const double* x = static_cast<const double*>(args->state_in[0]);\n"
      "  static_cast<double*>(args->state_out[0])[0] = uwm::sqrt(x[0]) + args->dt;\n"
      "  return UWJIT_KERNEL_OK;\n"
      "}\n",
      {.state_in = {"x"}, .state_out = {"y"}});
  uwjit::engine::Engine engine;
  const auto kernel = engine.kernel(source);
  const double x = 81.0;
  double y = 0.0;
  const void* in[] = {&x};
  void* out[] = {&y};
  uwjit_kernel_args args{};
  args.state_in = in;
  args.state_out = out;
  args.dt = 0.5;
  if (kernel(args) != UWJIT_KERNEL_OK || y != 9.5) {
    std::printf("consumer: wrong result %g\n", y);
    return 1;
  }
  std::printf("consumer: sqrt(81) + 0.5 = %g via %s kernel %s\n", y,
              uwjit::engine::to_string(kernel.info().tier), kernel.info().key.c_str());
  return 0;
}
