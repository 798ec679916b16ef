// The plane-wave delay model (USRECON_HD: shared by the CPU and CUDA kernels).
//
// A plane wave steered by angle a leaves the array so that the first element to fire is at
// x_first (angle > 0: element 0, the most negative x; angle < 0: the last element). Its wavefront
// reaches (x, z) after (z cos a + (x - x_first) sin a) / c. The echo then returns to element e
// over receive_distance(x, z, x_e). Sample 0 is recorded t0 after the first element fired.
// With TimeZero::Center (USTB's and PICMUS's convention) time zero is instead when the wavefront
// crosses the array centre x = 0: the same formula with x_first replaced by 0.
#pragma once

#include <cmath>

#include "usrecon/recon/delay/common.hpp"

namespace usrecon::recon::das {

/// x of the first element to fire for steering angle `angle` (radians) on an array spanning
/// [x_min, x_max]; angle 0 fires all at once, and either end gives the same delays.
template <class T>
USRECON_HD inline T planewave_x_first(T angle, T x_min, T x_max) {
  return angle >= T(0) ? x_min : x_max;
}

/// Where a plane wave's time zero lies: when its first element fires (this project's default)
/// or when its wavefront crosses the array centre (USTB, PICMUS).
enum class TimeZero { FirstElement, Center };

/// The x at which the wavefront is at z = 0 at time zero: x_first, or 0 for TimeZero::Center.
template <class T>
USRECON_HD inline T planewave_x_reference(T angle, T x_min, T x_max, TimeZero time_zero) {
  return time_zero == TimeZero::Center ? T(0) : planewave_x_first(angle, x_min, x_max);
}

/// Transmit path length (metres) of the plane wave to (x, z): z cos a + (x - x_first) sin a,
/// with cos a and sin a precomputed.
template <class T>
USRECON_HD inline T planewave_transmit_distance(T x, T z, T cos_a, T sin_a, T x_first) {
  return z * cos_a + (x - x_first) * sin_a;
}

/// Fractional sample of the echo from (x, z) on the element at xe for one plane wave.
template <class T>
USRECON_HD inline T planewave_sample(T x, T z, T xe, T cos_a, T sin_a, T x_first, T inv_c_fs,
                                     T t0_fs) {
  return sample_position(planewave_transmit_distance(x, z, cos_a, sin_a, x_first) +
                             receive_distance(x, z, xe),
                         inv_c_fs, t0_fs);
}

}  // namespace usrecon::recon::das
