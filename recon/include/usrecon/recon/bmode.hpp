// B-mode post-processing: envelope detection along depth and log compression to 8 bits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace usrecon::recon {

/// Envelope |analytic signal| of every depth line of a lateral-major image img[x * nz + z]
/// (the layout of the seed's out[j][i]). The analytic signal comes from OpenCV's DFT: the
/// spectrum's negative frequencies are zeroed and the positive ones doubled (DC and Nyquist kept),
/// then transformed back — scipy.signal.hilbert's definition. Result has the same layout.
std::vector<double> envelope_along_depth(std::span<const double> img, int nx, int nz);

/// Log compression of an envelope env[x * nz + z] into an 8-bit picture with depth down the rows
/// and lateral across the columns: pixels[z * nx + x]. 0 dB is the envelope's maximum (plus
/// gain_db); values at or below -dynamic_range_db map to 0, the maximum to 255. An all-zero
/// envelope gives an all-black picture.
std::vector<std::uint8_t> log_compress(std::span<const double> env, int nx, int nz,
                                       double dynamic_range_db, double gain_db = 0.0);

}  // namespace usrecon::recon
