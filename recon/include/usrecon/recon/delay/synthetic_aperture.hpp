// The synthetic-aperture (full matrix capture) delay model (USRECON_HD: shared by all backends).
//
// Transmit t fires one element at (x_t, 0): a diverging wave reaches (x, z) over the distance
// receive_distance(x, z, x_t) and returns to element e over receive_distance(x, z, x_e). Sample 0
// is recorded t0 after the firing.
#pragma once

#include "usrecon/recon/delay/common.hpp"

namespace usrecon::recon::das {

/// Fractional sample of the echo from (x, z) on receive element xe when element xt transmits.
template <class T>
USRECON_HD inline T synthetic_aperture_sample(T x, T z, T xt, T xe, T inv_c_fs, T t0_fs) {
  return sample_position(receive_distance(x, z, xt) + receive_distance(x, z, xe), inv_c_fs, t0_fs);
}

}  // namespace usrecon::recon::das
