// One explicit step of 3-D heat diffusion (7-point stencil) on a halo-padded grid.
// A uwjit kernel: no #include, reads its buffers and extents through the ABI struct.
//   state_in[0], state_out[0]: u, doubles, (nx+2)*(ny+2)*(nz+2), one halo cell per side
//   extents: nx, ny, nz (interior);  integrals[0]: the total heat after the step
extern "C" int kernel(const uwjit_kernel_args* args) {
  const double* __restrict u = static_cast<const double*>(args->state_in[0]);
  double* __restrict out = static_cast<double*>(args->state_out[0]);
  const uw_i64 nx = args->extents[0];
  const uw_i64 ny = args->extents[1];
  const uw_i64 nz = args->extents[2];
  const uw_i64 sy = nz + 2;
  const uw_i64 sx = (ny + 2) * sy;
  const double r = 0.1 * args->dt; // diffusivity * dt / h^2, with h = 1
  double total = 0.0;
  for (uw_i64 i = 1; i <= nx; ++i) {
    for (uw_i64 j = 1; j <= ny; ++j) {
      const uw_i64 row = i * sx + j * sy;
      for (uw_i64 k = 1; k <= nz; ++k) {
        const uw_i64 c = row + k;
        const double lap =
            u[c - sx] + u[c + sx] + u[c - sy] + u[c + sy] + u[c - 1] + u[c + 1] - 6.0 * u[c];
        out[c] = u[c] + r * lap;
        total += out[c];
      }
    }
  }
  args->integrals[0] = total;
  return UWJIT_KERNEL_OK;
}
