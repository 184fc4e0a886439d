/* A stand-in for CUDA's libdevice in the tests: bitcode with two of its functions, so that
 * linking libdevice in process is tested without a CUDA installation. Not libdevice's math. */
double __nv_exp(double x) { return 1.0 + x + 0.5 * x * x; }
double __nv_tanh(double x) { return x / (1.0 + (x < 0 ? -x : x)); }
