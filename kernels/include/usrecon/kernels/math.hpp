// Scalar math shared by the CPU and CUDA backends: each function is defined once, USRECON_HD, so
// the CPU tests run exactly the arithmetic the GPU kernels run (up to the last bit of library
// functions such as exp and sin, which CUDA and libm round differently).
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "usrecon/kernels/common.hpp"

namespace usrecon::kernels {

/// Several results of one elementwise function (polar_to_cartesian returns two). An op returning
/// Outputs<T, N> makes a ufunc with N outputs.
template <class T, std::size_t N>
struct Outputs {
  static_assert(N >= 1, "at least one output");
  T value[N];
  USRECON_HD constexpr T& operator[](std::size_t i) { return value[i]; }
  USRECON_HD constexpr const T& operator[](std::size_t i) const { return value[i]; }
};

namespace math {

// Overloads that resolve to CUDA's device functions in device code and to <cmath> on the host.
#if defined(__CUDA_ARCH__)
#define USRECON_MATH_FN(name, fname)                                    \
  USRECON_HD inline float name(float x) { return ::fname(x); }          \
  USRECON_HD inline double name(double x) { return ::name(x); }
#else
#define USRECON_MATH_FN(name, fname)                                    \
  USRECON_HD inline float name(float x) { return std::name(x); }       \
  USRECON_HD inline double name(double x) { return std::name(x); }
#endif
USRECON_MATH_FN(sqrt, sqrtf)
USRECON_MATH_FN(exp, expf)
USRECON_MATH_FN(sin, sinf)
USRECON_MATH_FN(cos, cosf)
USRECON_MATH_FN(fabs, fabsf)
#undef USRECON_MATH_FN

/// A quiet NaN (positive, raising no floating-point exception), on the host and the device.
template <std::floating_point T>
USRECON_HD inline T quiet_nan() {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(float)) return ::nanf("");
  else return ::nan("");
#else
  return std::numeric_limits<T>::quiet_NaN();
#endif
}

template <class T>
USRECON_HD constexpr T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
USRECON_HD constexpr T max(T a, T b) {
  return a < b ? b : a;
}

/// The largest finite float or double (constexpr scalars are usable in device code).
template <std::floating_point T>
inline constexpr T kMaxFinite = sizeof(T) == sizeof(float) ? T(3.40282346638528859811704183484516925e+38F)
                                                            : T(1.79769313486231570814527423731704357e+308);

/// a² = hi + lo exactly (Dekker's product on Veltkamp's split halves; |a| <= 2^996, lo exact
/// where it is not below the smallest normal double). Plain operations, the same on the CPU and
/// the GPU: std::fma is a library call on a CPU build without FMA instructions, and hypot with
/// four of them took 3.3x the tutorial formula's time, this 1.3x.
///
/// Where the compiler may fuse a multiply and an add (a consumer's -march=haswell, nvcc's default
/// --fmad=true), the split below would be fused too and lose exactness: there the error term is
/// the FMA itself, a² - hi rounded once, which is exact: the same lo.
USRECON_HD inline void exact_square(double a, double& hi, double& lo) {
#if defined(__CUDA_ARCH__)
  hi = __dmul_rn(a, a);  // never fused
  lo = __fma_rn(a, a, -hi);
#elif defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(FP_FAST_FMA)
  hi = a * a;
  lo = std::fma(a, a, -hi);  // one instruction
#else
  constexpr double kSplit = 134217729.0;  // 2^27 + 1
  const double c = kSplit * a;
  const double a_hi = c - (c - a), a_lo = a - a_hi;  // 26 bits each
  hi = a * a;
  lo = ((a_hi * a_hi - hi) + 2.0 * a_hi * a_lo) + a_lo * a_lo;
#endif
}

/// sqrt(x² + y²) without overflow or underflow, within about half an ulp: float's squares and
/// their sum in double (exact squares, one rounding); double's on squares scaled by a power of
/// two where they would overflow or vanish, then corrected by one Newton step whose residual
/// h² - x² - y² comes from exact squares (as Borges' "An improved algorithm for hypot(a, b)",
/// 2019, with Dekker's products for his fma). Sides of a right triangle in whole numbers give
/// their hypotenuse exactly (hypot(99, 20) is 101, as std::hypot's; the tutorial's x·sqrt(1 +
/// (y/x)²) was 1-2 ulp off in a third of the values). IEEE 754's (and std::hypot's) special
/// values: an infinite argument gives +inf even beside a NaN, and otherwise a NaN gives NaN. Only
/// + - × / and sqrt, correctly rounded on the CPU and the GPU (nvcc --fmad=false), so their
/// results are equal bit for bit.
template <std::floating_point T>
USRECON_HD T hypot(T x, T y) {
  x = fabs(x);
  y = fabs(y);
  if (x > kMaxFinite<T>) return x;
  if (y > kMaxFinite<T>) return y;
  if (x != x || y != y) return x + y;  // NaN
  const T big = max(x, y), small = min(x, y);
  if constexpr (sizeof(T) == sizeof(float)) {
    // 24-bit significands: their squares are exact in double (fused or not)
    const double b = static_cast<double>(big), s = static_cast<double>(small);
    return static_cast<float>(sqrt(b * b + s * s));
  } else {
    // Squares of [2^-450, 2^450] neither overflow nor underflow where they matter (a small side
    // whose square underflows is below 2^-87 of the big one's); outside, scale by 2^∓600 (exact).
    constexpr double kHigh = 0x1p450, kLow = 0x1p-450, kDown = 0x1p-600, kUp = 0x1p600;
    const double scale = big > kHigh ? kDown : (big < kLow ? kUp : 1.0);
    const double unscale = big > kHigh ? kUp : (big < kLow ? kDown : 1.0);
    const double b = big * scale, s = small * scale;
    if (b == 0.0) return 0.0;
    double b_hi, b_lo, s_hi, s_lo, h_hi, h_lo;
    exact_square(b, b_hi, b_lo);
    exact_square(s, s_hi, s_lo);
    const double h = sqrt(b_hi + s_hi);
    exact_square(h, h_hi, h_lo);
    // h² - b² - s²: h_hi - b_hi is exact (b >= s, so b² is at least about half of h²), the rest
    // is a few ulp of h², added in order of size.
    const double excess = ((h_hi - b_hi) - s_hi) + ((h_lo - b_lo) - s_lo);
    return (h - excess / (2.0 * h)) * unscale;  // Newton: sqrt(h² - e) = h - e / 2h
  }
}

/// Normal probability density at x; NaN where sigma is not > 0.
template <std::floating_point T>
USRECON_HD T gaussian_pdf(T x, T mean, T sigma) {
  constexpr T inv_sqrt_2pi = T(0.3989422804014327);
  if (!(sigma > T(0))) return quiet_nan<T>();  // as scipy.stats.norm.pdf's for a scale <= 0 (was a negative density)
  const T z = (x - mean) / sigma;
  return exp(T(-0.5) * z * z) * inv_sqrt_2pi / sigma;
}

/// (rho, theta) -> (x, y): the tutorial's device function with two return values.
template <std::floating_point T>
USRECON_HD Outputs<T, 2> polar_to_cartesian(T rho, T theta) {
  return {{rho * cos(theta), rho * sin(theta)}};
}

/// Distance between two points given in polar coordinates, through polar_to_cartesian.
template <std::floating_point T>
USRECON_HD T polar_distance(T rho1, T theta1, T rho2, T theta2) {
  const Outputs<T, 2> p = polar_to_cartesian(rho1, theta1);
  const Outputs<T, 2> q = polar_to_cartesian(rho2, theta2);
  return hypot(p[0] - q[0], p[1] - q[1]);
}

}  // namespace math

/// The elementwise operations behind the ready-made ufuncs (usable in user ops too).
namespace ops {

struct Add {
  template <class T>
  USRECON_HD T operator()(T a, T b) const {
    // Signed integers wrap around, as NumPy's do (and as sum's do): their overflow would be
    // undefined behaviour in C++. C++20 defines the conversion back as modular.
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
    else
      return a + b;
  }
};
struct Hypot {
  template <std::floating_point T>
  USRECON_HD T operator()(T x, T y) const {
    return math::hypot(x, y);
  }
};
struct Sqrt {
  template <std::floating_point T>
  USRECON_HD T operator()(T x) const {
    return math::sqrt(x);
  }
};
struct GaussianPdf {
  template <std::floating_point T>
  USRECON_HD T operator()(T x, T mean, T sigma) const {
    return math::gaussian_pdf(x, mean, sigma);
  }
};
struct PolarToCartesian {
  static constexpr int map_unroll = 1;  // trigonometric, not memory-bound: one element a CUDA thread (map.hpp)
  template <std::floating_point T>
  USRECON_HD Outputs<T, 2> operator()(T rho, T theta) const {
    return math::polar_to_cartesian(rho, theta);
  }
};
struct PolarDistance {
  static constexpr int map_unroll = 1;  // trigonometric, not memory-bound: one element a CUDA thread (map.hpp)
  template <std::floating_point T>
  USRECON_HD T operator()(T rho1, T theta1, T rho2, T theta2) const {
    return math::polar_distance(rho1, theta1, rho2, theta2);
  }
};

}  // namespace ops
}  // namespace usrecon::kernels
