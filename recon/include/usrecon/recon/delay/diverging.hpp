// The diverging-wave delay model (USRECON_HD: shared by all backends).
//
// Transmit t is a spherical wave from a virtual source (xs, zs) behind the array (zs <= 0; the
// elements fire as the wave from that point would reach them). It reaches (x, z) over
// |(x, z) - (xs, zs)| and returns to element e over receive_distance(x, z, x_e). Time zero is
// when the wave reaches a reference distance r0 from its source: the nearest element, which fires
// first (TimeZero::FirstElement), or the array centre (TimeZero::Center, USTB's convention), so
// the transmit path counted from time zero is |(x, z) - (xs, zs)| - r0. Sample 0 is recorded t0
// after time zero. A source on an element (zs = 0, r0 = 0) is the synthetic-aperture model.
#pragma once

#include <cmath>
#include <vector>

#include "usrecon/recon/delay/common.hpp"
#include "usrecon/recon/delay/planewave.hpp"

namespace usrecon::recon::das {

/// Transmit path (metres) from time zero to (x, z) of the wave from (xs, zs) with reference
/// distance r0 (see diverging_reference_distance).
template <class T>
USRECON_HD inline T diverging_transmit_distance(T x, T z, T xs, T zs, T r0) {
  const T dx = x - xs, dz = z - zs;
  return hd_sqrt(dx * dx + dz * dz) - r0;
}

/// Fractional sample of the echo from (x, z) on the element at xe for the wave from (xs, zs).
template <class T>
USRECON_HD inline T diverging_sample(T x, T z, T xs, T zs, T r0, T xe, T inv_c_fs, T t0_fs) {
  return sample_position(diverging_transmit_distance(x, z, xs, zs, r0) + receive_distance(x, z, xe), inv_c_fs,
                         t0_fs);
}

/// r0 of a source (xs, zs) over elements at `element_x` (z = 0): the distance to the nearest
/// element (FirstElement) or to the array centre, the origin (Center). Host only (set-up).
inline double diverging_reference_distance(double xs, double zs, const std::vector<double>& element_x,
                                           TimeZero time_zero) {
  if (time_zero == TimeZero::Center) return std::hypot(xs, zs);
  double nearest = INFINITY;
  for (double xe : element_x) nearest = std::fmin(nearest, std::hypot(xs - xe, zs));
  return nearest;
}

}  // namespace usrecon::recon::das
