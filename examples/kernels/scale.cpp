// y = 2 x over n elements, in both forms: compiled for the host, the entry is a function that
// loops; compiled for a cuda:sm_XX target (__NVPTX__ defined), a GPU kernel of one thread per
// element. `uwjit compile examples/kernels/scale.cpp --state-in x --state-out y --extents n`
// compiles the first, with `--target cuda:sm_90` the second (to PTX, no GPU needed).
#ifdef __NVPTX__
extern "C" __attribute__((nvptx_kernel)) void kernel(uwjit_kernel_args args) {
  const uw_i64 i =
      static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_x()) * __nvvm_read_ptx_sreg_ntid_x() +
      __nvvm_read_ptx_sreg_tid_x();
  if (i < args.extents[0]) {
    const double* x = static_cast<const double*>(args.state_in[0]);
    static_cast<double*>(args.state_out[0])[i] = 2.0 * x[i];
  }
}
#else
extern "C" int kernel(const uwjit_kernel_args* args) {
  const double* x = static_cast<const double*>(args->state_in[0]);
  double* y = static_cast<double*>(args->state_out[0]);
  for (uw_i64 i = 0; i < args->extents[0]; ++i) {
    y[i] = 2.0 * x[i];
  }
  return UWJIT_KERNEL_OK;
}
#endif
