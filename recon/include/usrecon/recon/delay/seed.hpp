// The seed's delay model (../shared/docs/seed-digest.md), bit-exact, shared by every backend.
//
// Geometry in grid steps of 0.05 mm: pixel (i, j) is i steps deep and j steps across; element k
// sits at lateral step 6 k on the surface. For channel k and element n the seed takes the sample
//
//   order = round(((sqrt(i^2 + (j - 6k)^2) + sqrt(i^2 + (j - 6n)^2)) * 0.05) / 1.54 * 30)
//
// with Python's round (half to even) and IEEE float64 in exactly this operation order, and adds
// rf[k * samples + order] when order < samples. These functions are that formula split at the one
// point where precomputation is exact: the distance sqrt(i^2 + dj^2) is the same double however
// often it is recomputed, and (d_k + d_n) is commutative in IEEE arithmetic, so
// order(k, n) == order(n, k) bit for bit.
#pragma once

#include <cmath>

#include "usrecon/kernels/common.hpp"

namespace usrecon::recon::seed {

/// Sizes of the seed's problem. Defaults are the seed's: a 1200 (depth) x 762 (lateral) grid,
/// 128 channels of 2000 samples, elements every 6 grid steps.
struct Problem {
  int nz = 1200;       ///< depth samples of the grid (the seed's i)
  int nx = 762;        ///< lateral samples of the grid (the seed's j)
  int channels = 128;  ///< receive channels = elements (the seed's k and n)
  int samples = 2000;  ///< samples per channel; `order < samples` is the seed's `order < 2000`
  static constexpr int kElementStep = 6;      ///< element pitch in grid steps (0.3 mm)
  static constexpr double kGridStepMm = 0.05;  ///< grid step in mm (axial and lateral)
  static constexpr double kSoundSpeedMmPerUs = 1.54;
  static constexpr double kSamplingMhz = 30.0;
};

/// A rectangle of the grid: depths [i0, i0 + ni), laterals [j0, j0 + nj).
struct Window {
  int i0 = 0, ni = 0, j0 = 0, nj = 0;
};

/// Distance in grid steps from pixel depth i to an element dj lateral steps away: the seed's
/// `(i*i + dj*dj) ** 0.5`. The integer sum is formed in 64 bits (Python's ints never overflow)
/// and is exact in double (far below 2^53); IEEE sqrt is correctly rounded, so this equals the
/// seed's value: Numba's x ** 0.5 gave the correctly rounded square root for every integer
/// 0 <= x < 4e6 (checked exhaustively against numpy.sqrt when this was written).
USRECON_HD inline double distance(int i, int dj) {
  const long long sum = static_cast<long long>(i) * i + static_cast<long long>(dj) * dj;
  return sqrt(static_cast<double>(sum));
}

/// The seed's sample index from the two one-way distances (grid steps), round half to even.
/// `rint` rounds in the current rounding mode, which is round-to-nearest-even by default and is
/// what Python's round() does.
USRECON_HD inline int sample_index(double d_receive, double d_transmit) {
  const double t = ((d_receive + d_transmit) * Problem::kGridStepMm) / Problem::kSoundSpeedMmPerUs *
                   Problem::kSamplingMhz;
  return static_cast<int>(rint(t));
}

/// The seed's sample index for pixel (i, j), channel k, element n, straight from the formula.
USRECON_HD inline int sample_index(int i, int j, int k, int n) {
  return sample_index(distance(i, j - Problem::kElementStep * k),
                      distance(i, j - Problem::kElementStep * n));
}

}  // namespace usrecon::recon::seed
