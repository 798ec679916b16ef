// The virtual-source delay model of diverging and focused waves (USRECON_HD: shared by all
// backends).
//
// Transmit t is a spherical wave tied to a virtual source (xs, zs). Diverging wave: the source
// lies behind the array (zs <= 0) and the elements fire as the wave from it would reach them.
// Focused wave: the source is a focal point in front of the array (zs > 0); the wave converges
// on it and diverges beyond it. Either way the wavefront reaches (x, z) when it has travelled
// |(x, z) - (xs, zs)| past the source, counted negative before a focal point (zs > 0 and
// z < zs, as USTB's das.m counts it: the sign flips at the focal depth). Which side of the focal
// depth a pixel lies on is decided in float precision in every backend (the reference loop's
// double included), so that they all put a pixel on the focal row on the same side. The wave
// returns to element e over receive_distance(x, z, x_e).
//
// Time zero is when the wave is a distance r0 past its source, so the transmit path from time
// zero is sign |(x, z) - (xs, zs)| - r0:
//   diverging, FirstElement: r0 = the nearest element's distance (it fires first);
//   focused, FirstElement:   r0 = -(the farthest element's distance) (it fires first);
//   Center (USTB's convention, the wave crossing the origin): r0 = |(xs, zs)| behind the array,
//   -|(xs, zs)| in front of it.
// Sample 0 is recorded t0 after time zero. A source on an element (zs = 0, r0 = 0) is the
// synthetic-aperture model.
#pragma once

#include <cmath>
#include <vector>

#include "usrecon/recon/delay/common.hpp"
#include "usrecon/recon/delay/planewave.hpp"

namespace usrecon::recon::das {

/// Transmit path (metres) from time zero to (x, z) of the wave of the source (xs, zs) with
/// reference distance r0 (see virtual_source_reference_distance).
template <class T>
USRECON_HD inline T virtual_source_transmit_distance(T x, T z, T xs, T zs, T r0) {
  const T dx = x - xs, dz = z - zs;
  const T distance = hd_sqrt(dx * dx + dz * dz);
  const bool before_focus = static_cast<float>(zs) > 0.f && static_cast<float>(z) < static_cast<float>(zs);
  return (before_focus ? -distance : distance) - r0;
}

/// Fractional sample of the echo from (x, z) on the element at xe for the wave of (xs, zs).
template <class T>
USRECON_HD inline T virtual_source_sample(T x, T z, T xs, T zs, T r0, T xe, T inv_c_fs, T t0_fs) {
  return sample_position(virtual_source_transmit_distance(x, z, xs, zs, r0) + receive_distance(x, z, xe), inv_c_fs,
                         t0_fs);
}

/// Transmit apodization by F-number of the wave of (xs, zs) at (x, z): the wave's cone of opening
/// 1 / F around the vertical through its source (for a focused wave, the hourglass through the
/// focal point), weighted by `window` across as receive_apodization weighs an element's aperture:
/// half-width |z - zs| / (2F) at depth z, but never below `waist_half` (see
/// virtual_source_waists), so that the rows at a focal depth are not left blank. F = 0 gives 1
/// everywhere.
template <class T>
USRECON_HD inline T virtual_source_apodization(T x, T z, T xs, T zs, T fnumber, T waist_half, int window,
                                               T tukey_alpha) {
  if (fnumber <= T(0)) return T(1);
  const T dz = z - zs;
  T half = (dz < T(0) ? -dz : dz) / (T(2) * fnumber);
  if (half < waist_half) half = waist_half;
  if (!(half > T(0))) return T(0);
  const T dx = x - xs;
  return window_weight(window, (dx < T(0) ? -dx : dx) / half, tukey_alpha);
}

/// The cones' smallest half-widths for virtual_source_apodization: the lateral distance from each
/// source to the nearest other one, and at least half the element pitch. At a focal depth every
/// pixel between two focal points then lies within both their waists, and evenly spaced Hann
/// waists of that half-width add up to exactly one there (a rect window's to two). Host only.
inline std::vector<double> virtual_source_waists(const std::vector<double>& source_x, double pitch) {
  std::vector<double> waist(source_x.size(), 0.5 * pitch);
  for (std::size_t t = 0; t < source_x.size(); ++t) {
    double nearest = INFINITY;
    for (std::size_t u = 0; u < source_x.size(); ++u)
      if (u != t && source_x[u] != source_x[t]) nearest = std::fmin(nearest, std::fabs(source_x[u] - source_x[t]));
    if (std::isfinite(nearest)) waist[t] = std::fmax(waist[t], nearest);
  }
  return waist;
}

/// r0 of a source (xs, zs) over elements at `element_x` (z = 0), see above. Host only (set-up).
inline double virtual_source_reference_distance(double xs, double zs, const std::vector<double>& element_x,
                                                TimeZero time_zero) {
  const bool focused = zs > 0;
  if (time_zero == TimeZero::Center) return focused ? -std::hypot(xs, zs) : std::hypot(xs, zs);
  double nearest = INFINITY, farthest = 0;
  for (double xe : element_x) {
    nearest = std::fmin(nearest, std::hypot(xs - xe, zs));
    farthest = std::fmax(farthest, std::hypot(xs - xe, zs));
  }
  return focused ? -farthest : nearest;
}

}  // namespace usrecon::recon::das
