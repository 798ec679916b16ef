// Delay-and-sum pieces shared by every general model (plane wave, synthetic aperture) and by every
// backend: USRECON_HD functions that the CPU kernels and CUDA kernels call alike. Single
// precision on purpose: it is what the fast kernels compute in; the reference loop calls the same
// functions with double.
#pragma once

#include <cmath>

#include "usrecon/kernels/common.hpp"

namespace usrecon::recon::das {

// Square root and floor in the argument's own precision, on the host and in device code.
USRECON_HD inline float hd_sqrt(float v) { return sqrtf(v); }
USRECON_HD inline double hd_sqrt(double v) { return sqrt(v); }
USRECON_HD inline float hd_floor(float v) { return floorf(v); }
USRECON_HD inline double hd_floor(double v) { return floor(v); }
/// a * b + c rounded once (a fused multiply-add): libm's fmaf on the host, FFMA on the device,
/// the same value on both (IEEE 754 defines it), whatever the build's contraction flags
/// (--fmad=false, -ffp-contract=off) do with a plain a * b + c.
USRECON_HD inline float hd_fma(float a, float b, float c) { return fmaf(a, b, c); }
USRECON_HD inline double hd_fma(double a, double b, double c) { return fma(a, b, c); }
/// v limited to [lo, hi]; NaN gives lo (fmax returns its other operand).
USRECON_HD inline float hd_clamp(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }
USRECON_HD inline double hd_clamp(double v, double lo, double hi) { return fmin(fmax(v, lo), hi); }

/// One-way distance from an element at (xe, 0) to the pixel (x, z).
template <class T>
USRECON_HD inline T receive_distance(T x, T z, T xe) {
  const T dx = x - xe;
  return hd_sqrt(dx * dx + z * z);
}

/// cos(pi/2 * u)^2 for u in [0, 1] by a polynomial (max error 1e-7), the same on CPU and GPU:
/// the Hann taper without a libm call in the inner loops. u outside [0, 1] is clamped.
template <class T>
USRECON_HD inline T hann_taper(T u) {
  u = u < T(0) ? T(0) : (u > T(1) ? T(1) : u);
  // cos^2(pi u / 2) = (1 + cos(pi u)) / 2; cos(pi u) = -cos(pi (1 - u)) folds u into [0, 1/2].
  const bool fold = u > T(0.5);
  const T v = fold ? T(1) - u : u;
  const T y = T(3.14159265358979323846) * v;
  const T y2 = y * y;
  // Taylor series of cos up to y^12 on [0, pi/2]: error below 5e-9.
  T c = T(1.0 / 479001600.0);
  c = c * y2 - T(1.0 / 3628800.0);
  c = c * y2 + T(1.0 / 40320.0);
  c = c * y2 - T(1.0 / 720.0);
  c = c * y2 + T(1.0 / 24.0);
  c = c * y2 - T(0.5);
  c = c * y2 + T(1);
  const T cos_pi_u = fold ? -c : c;
  return T(0.5) * (T(1) + cos_pi_u);
}

/// Window codes for device code (the enum recon::Window converted to an int).
enum WindowCode : int { kRect = 0, kHann = 1, kTukey = 2 };

/// How far past 1 a computed r = |x - xe| / (half aperture) still lies on the aperture's edge. A
/// pixel and an element exactly half an aperture apart, as grids of half-pitch steps put many,
/// compute r a few float roundings of |x|, |xe| (not of |x - xe|) either side of 1: float kept
/// some such edge elements and dropped others (rect: 2 to 8 % of an image against a double
/// reference). With the slack every one counts, as |x - xe| <= z / (2F) says, wherever |x| + |xe|
/// is under about 800 half-widths; one that far outside is 1e-4 of the half-width past the edge
/// (a micrometre in 10 mm). A compare against a constant, as before: no register more in the
/// CUDA kernels.
inline constexpr float kApertureEdgeSlack = 1e-4f;

/// Window value at r = |x - xe| / (half aperture), r in [0, 1] inside the aperture (up to 1 +
/// kApertureEdgeSlack: the edge), 0 outside. Hann is 1 at the centre and 0 at the edge; Tukey is
/// flat over 1 - alpha and tapers with a Hann half over the outer alpha (both weigh the edge 0:
/// hann_taper clamps r).
template <class T>
USRECON_HD inline T window_weight(int window, T r, T tukey_alpha) {
  if (!(r <= T(1) + T(kApertureEdgeSlack))) return T(0);
  if (window == kRect) return T(1);
  if (window == kHann) return hann_taper(r);
  const T flat = T(1) - tukey_alpha;
  if (r <= flat) return T(1);
  return hann_taper((r - flat) / tukey_alpha);
}

/// Receive apodization of element xe for pixel (x, z) by F-number: the aperture at depth z is
/// z / F wide, centred on x (none at z <= 0). F = 0 means the full aperture with weight 1.
template <class T>
USRECON_HD inline T receive_apodization(T x, T z, T xe, T fnumber, int window, T tukey_alpha) {
  if (fnumber <= T(0)) return T(1);
  const T half = z / (T(2) * fnumber);
  if (!(half > T(0))) return T(0);
  const T dx = x - xe;
  return window_weight(window, (dx < T(0) ? -dx : dx) / half, tukey_alpha);
}

/// Sample position (fractional index) of a two-way path of `distance` metres: distance / c * fs
/// - t0 * fs, written as distance * inv_c_fs - t0_fs so that kernels can hoist the factors.
template <class T>
USRECON_HD inline T sample_position(T distance, T inv_c_fs, T t0_fs) {
  return distance * inv_c_fs - t0_fs;
}

/// Linear interpolation of channel[0, n) at fractional position s; samples outside read as 0.
template <class T, class V>
USRECON_HD inline T interp_linear(const V* channel, int n, T s) {
  const T f = hd_floor(s);
  if (!(f >= T(-1)) || !(f < T(n))) return T(0);
  const int i = static_cast<int>(f);
  const T w = s - f;
  const T a = i >= 0 ? T(channel[i]) : T(0);
  const T b = i + 1 < n ? T(channel[i + 1]) : T(0);
  return a + w * (b - a);
}

/// Nearest-sample interpolation (round half up); outside [0, n) reads 0.
template <class T, class V>
USRECON_HD inline T interp_nearest(const V* channel, int n, T s) {
  const T f = hd_floor(s + T(0.5));
  if (!(f >= T(0)) || !(f < T(n))) return T(0);
  return T(channel[static_cast<int>(f)]);
}

/// interp_linear of two channels stored interleaved (P has members x and y, as CUDA's float2 for
/// I and Q): one load fetches both values of a sample. The arithmetic of each component is
/// interp_linear's, so a kernel using it agrees sample for sample with one using interp_linear.
template <class T, class P>
USRECON_HD inline void interp_linear_pair(const P* channel, int n, T s, T& out_x, T& out_y) {
  const T f = hd_floor(s);
  if (!(f >= T(-1)) || !(f < T(n))) {
    out_x = out_y = T(0);
    return;
  }
  const int i = static_cast<int>(f);
  const T w = s - f;
  const T ax = i >= 0 ? T(channel[i].x) : T(0), ay = i >= 0 ? T(channel[i].y) : T(0);
  const T bx = i + 1 < n ? T(channel[i + 1].x) : T(0), by = i + 1 < n ? T(channel[i + 1].y) : T(0);
  out_x = ax + w * (bx - ax);
  out_y = ay + w * (by - ay);
}

/// interp_nearest of two interleaved channels (see interp_linear_pair).
template <class T, class P>
USRECON_HD inline void interp_nearest_pair(const P* channel, int n, T s, T& out_x, T& out_y) {
  const T f = hd_floor(s + T(0.5));
  if (!(f >= T(0)) || !(f < T(n))) {
    out_x = out_y = T(0);
    return;
  }
  out_x = T(channel[static_cast<int>(f)].x);
  out_y = T(channel[static_cast<int>(f)].y);
}

// The same interpolations without a branch, for channels padded with zeros: at least two samples
// (pairs) before the channel's first and two after its last (AnalyticData has kFront and kBack),
// and n <= 2^24 samples (n exact in float). The position is clamped into [-2, n] (nearest: its
// rounded sample into [-1, n]), where a position the functions above refuse reads padding zeros
// only and comes out as exactly +0, as their early return does (NaN too: it clamps to the low
// end), whatever the channel's own samples hold. So each gives its unpadded counterpart's value
// bit for bit, for every s (ReconDasDelay.PaddedInterpolationIsTheUnpaddedOneBitForBit). The channel is data[channel],
// data[channel + 1], ...: a 32-bit index, so that a GPU kernel adds it to the sample's in one
// integer add and forms one address. Why: sm_90 SASS of the plane-wave kernels with the checked
// functions showed a convergence barrier around every sample, its position and floor computed
// twice, and 64-bit address arithmetic per sample; with these, none of that (docs/performance.md).
constexpr int kPaddedFront = 2;  ///< zero samples the padded interpolations read before a channel
constexpr int kPaddedBack = 2;   ///< and after it

/// The linear padded interpolations' first step: s clamped into [-2, n], the index in data of the
/// sample at its floor (channel + floor), and the weight w of the next sample (s - floor, in [0, 1)).
template <class T>
USRECON_HD inline int padded_linear_index(int channel, int n, T s, T& w) {
  const T c = hd_clamp(s, T(-2), T(n));
  const T f = hd_floor(c);
  w = c - f;
  return channel + static_cast<int>(f);
}

template <class T, class V>
USRECON_HD inline T interp_linear_padded(const V* data, int channel, int n, T s) {
  T w;
  const int k = padded_linear_index(channel, n, s, w);
  const T a = T(data[k]), b = T(data[k + 1]);
  return a + w * (b - a);
}

template <class T, class V>
USRECON_HD inline T interp_nearest_padded(const V* data, int channel, int n, T s) {
  return T(data[channel + static_cast<int>(hd_clamp(hd_floor(s + T(0.5)), T(-1), T(n)))]);
}

template <class T, class P>
USRECON_HD inline void interp_linear_pair_padded(const P* data, int channel, int n, T s, T& out_x, T& out_y) {
  T w;
  const int k = padded_linear_index(channel, n, s, w);
  const P a = data[k], b = data[k + 1];
  out_x = T(a.x) + w * (T(b.x) - T(a.x));
  out_y = T(a.y) + w * (T(b.y) - T(a.y));
}

// The plane-wave GPU programs' linear interpolation: interp_linear_pair_padded with the blend
// a + w (b - a) rounded once, as hd_fma(w, b - a, a), per component. An instruction fewer per
// component in a kernel built without contraction (--fmad=false), and a value within two ulps of
// the larger of the two samples from the unfused one (one rounding of the product fewer; near
// cancellation that can be more than an ulp of the result itself); out-of-range positions still
// give exactly +0 (the blend of two padding zeros).
// The sample position itself is not fused: a rounding step there moves the image by about 1e-4
// in relative L2 on white noise (docs/performance.md), where the blend's moves a value by a few
// 2^-24 of the samples at most.
template <class T, class P>
USRECON_HD inline void interp_linear_pair_padded_fma(const P* data, int channel, int n, T s, T& out_x, T& out_y) {
  T w;
  const int k = padded_linear_index(channel, n, s, w);
  const P a = data[k], b = data[k + 1];
  out_x = hd_fma(w, T(b.x) - T(a.x), T(a.x));
  out_y = hd_fma(w, T(b.y) - T(a.y), T(a.y));
}

template <class T, class P>
USRECON_HD inline void interp_nearest_pair_padded(const P* data, int channel, int n, T s, T& out_x, T& out_y) {
  const P v = data[channel + static_cast<int>(hd_clamp(hd_floor(s + T(0.5)), T(-1), T(n)))];
  out_x = T(v.x);
  out_y = T(v.y);
}

}  // namespace usrecon::recon::das
