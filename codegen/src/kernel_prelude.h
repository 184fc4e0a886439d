/* uwjit kernel prelude: header-free math over compiler builtins, in namespace uwm, so that
 * generated kernels need no standard header (<cmath> alone costs ~230 ms per compile).
 * Each function takes double, float or integer arguments, as <cmath> does: float arguments give
 * a float; double, integer or mixed arguments give a double. Integer min, max and abs stay
 * integers. The macros are undefined at the end. */
namespace uwm {
/* Integer and mixed arguments go to templates constrained by these traits (as std::is_integral
 * and std::is_arithmetic, without the header; the same text compiles with GCC, for the kernels
 * people also build ahead of time). */
namespace traits {
template <class T> inline constexpr bool integral = false;
template <> inline constexpr bool integral<bool> = true;
template <> inline constexpr bool integral<char> = true;
template <> inline constexpr bool integral<signed char> = true;
template <> inline constexpr bool integral<unsigned char> = true;
template <> inline constexpr bool integral<short> = true;
template <> inline constexpr bool integral<unsigned short> = true;
template <> inline constexpr bool integral<int> = true;
template <> inline constexpr bool integral<unsigned> = true;
template <> inline constexpr bool integral<long> = true;
template <> inline constexpr bool integral<unsigned long> = true;
template <> inline constexpr bool integral<long long> = true;
template <> inline constexpr bool integral<unsigned long long> = true;
template <class T> inline constexpr bool arithmetic = integral<T>;
template <> inline constexpr bool arithmetic<float> = true;
template <> inline constexpr bool arithmetic<double> = true;
template <> inline constexpr bool arithmetic<long double> = true;
} /* namespace traits */
#define UWM_UNARY(name)                                                                            \
  inline double name(double x) { return __builtin_##name(x); }                                    \
  inline float name(float x) { return __builtin_##name##f(x); }                                   \
  template <class I>                                                                               \
    requires traits::integral<I>                                                                      \
  inline double name(I x) { return __builtin_##name(static_cast<double>(x)); }
#define UWM_BINARY(name)                                                                           \
  inline double name(double x, double y) { return __builtin_##name(x, y); }                       \
  inline float name(float x, float y) { return __builtin_##name##f(x, y); }                        \
  template <class A, class B>                                                                      \
    requires traits::arithmetic<A> && traits::arithmetic<B>                                              \
  inline double name(A x, B y) {                                                                   \
    return __builtin_##name(static_cast<double>(x), static_cast<double>(y));                       \
  }

UWM_UNARY(sqrt)
UWM_UNARY(cbrt)
UWM_UNARY(exp)
UWM_UNARY(log)
UWM_UNARY(sin)
UWM_UNARY(cos)
UWM_UNARY(tan)
UWM_UNARY(asin)
UWM_UNARY(acos)
UWM_UNARY(atan)
UWM_UNARY(sinh)
UWM_UNARY(cosh)
UWM_UNARY(tanh)
UWM_UNARY(fabs)
UWM_UNARY(floor)
UWM_UNARY(ceil)
UWM_UNARY(round)
UWM_UNARY(trunc)
UWM_BINARY(pow)
UWM_BINARY(atan2)
UWM_BINARY(hypot)
UWM_BINARY(copysign)
UWM_BINARY(fmin)
UWM_BINARY(fmax)
#undef UWM_UNARY
#undef UWM_BINARY

inline double fma(double x, double y, double z) { return __builtin_fma(x, y, z); }
inline float fma(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
template <class A, class B, class C>
  requires traits::arithmetic<A> && traits::arithmetic<B> && traits::arithmetic<C>
inline double fma(A x, B y, C z) {
  return __builtin_fma(static_cast<double>(x), static_cast<double>(y), static_cast<double>(z));
}

/* min and max as std::min/std::max (the first argument when equal; no NaN rule: use fmin/fmax
 * for that); abs of an integer is that integer type, of a real number its fabs. */
inline double abs(double x) { return __builtin_fabs(x); }
inline float abs(float x) { return __builtin_fabsf(x); }
template <class I> requires traits::integral<I> inline I abs(I x) { return x < 0 ? -x : x; }
inline double min(double x, double y) { return y < x ? y : x; }
inline float min(float x, float y) { return y < x ? y : x; }
template <class I> requires traits::integral<I> inline I min(I x, I y) { return y < x ? y : x; }
inline double max(double x, double y) { return x < y ? y : x; }
inline float max(float x, float y) { return x < y ? y : x; }
template <class I> requires traits::integral<I> inline I max(I x, I y) { return x < y ? y : x; }
} /* namespace uwm */
