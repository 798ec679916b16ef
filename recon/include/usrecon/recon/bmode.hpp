// B-mode post-processing: envelope detection along depth and log compression to 8 bits.
#pragma once

#include <complex>
#include <cstdint>
#include <span>
#include <vector>

namespace usrecon::recon {

/// Envelope |analytic signal| of every depth line of a lateral-major image img[x * nz + z]
/// (the layout of the seed's out[j][i]), on `threads` CPU threads (0 = all). The analytic signal
/// is scipy.signal.hilbert's (the spectrum's negative frequencies zeroed, the positive ones
/// doubled, DC and Nyquist kept), formed as x + i H{x} with the Hilbert transform H from two real
/// DFTs of OpenCV's. Result has the same layout; each line's envelope is the same whatever the
/// thread count.
std::vector<double> envelope_along_depth(std::span<const double> img, int nx, int nz, int threads = 0);

/// Envelope of a beamformed analytic (IQ) image: |iq[i]| in double, same layout.
std::vector<double> envelope_of_iq(std::span<const std::complex<float>> iq, int threads = 0);

/// Log compression of an envelope env[x * nz + z] into an 8-bit picture with depth down the rows
/// and lateral across the columns: pixels[z * nx + x]. 0 dB is the envelope's maximum (plus
/// gain_db); values at or below -dynamic_range_db map to 0, the maximum to 255. An all-zero
/// envelope gives an all-black picture. On `threads` CPU threads (0 = all); the picture is the
/// same whatever the count.
std::vector<std::uint8_t> log_compress(std::span<const double> env, int nx, int nz,
                                       double dynamic_range_db, double gain_db = 0.0, int threads = 0);

}  // namespace usrecon::recon
