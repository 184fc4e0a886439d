/* uwjit kernel prelude: header-free math over compiler builtins, in namespace uwm, so that
 * generated kernels need no standard header (<cmath> alone costs ~230 ms per compile). */
namespace uwm {
inline double sqrt(double x) { return __builtin_sqrt(x); }
inline float sqrt(float x) { return __builtin_sqrtf(x); }
inline double exp(double x) { return __builtin_exp(x); }
inline float exp(float x) { return __builtin_expf(x); }
inline double log(double x) { return __builtin_log(x); }
inline float log(float x) { return __builtin_logf(x); }
inline double pow(double x, double y) { return __builtin_pow(x, y); }
inline float pow(float x, float y) { return __builtin_powf(x, y); }
inline double fabs(double x) { return __builtin_fabs(x); }
inline float fabs(float x) { return __builtin_fabsf(x); }
inline double fmin(double x, double y) { return __builtin_fmin(x, y); }
inline float fmin(float x, float y) { return __builtin_fminf(x, y); }
inline double fmax(double x, double y) { return __builtin_fmax(x, y); }
inline float fmax(float x, float y) { return __builtin_fmaxf(x, y); }
inline double floor(double x) { return __builtin_floor(x); }
inline float floor(float x) { return __builtin_floorf(x); }
inline double tanh(double x) { return __builtin_tanh(x); }
inline float tanh(float x) { return __builtin_tanhf(x); }
} /* namespace uwm */
