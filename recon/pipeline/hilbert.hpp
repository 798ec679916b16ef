// The Hilbert transform's multiplier on a real line's spectrum in OpenCV's packed (CCS) layout,
// shared by the B-mode envelope (double) and the general models' analytic signal (float).
#pragma once

namespace usrecon::recon::detail {

/// A real DFT of n samples (cv::dft without DFT_COMPLEX_OUTPUT) packs X(0), then Re X(f), Im X(f)
/// for 0 < f < (n + 1) / 2, then, for even n, X(n / 2). Multiplies it by -i sign(f): DC and
/// Nyquist go to 0, a positive frequency's a + ib becomes b - ia; the negative frequencies follow
/// by symmetry, so the result is the packed spectrum of the real line H{x}, and x + i H{x} is the
/// analytic signal of scipy.signal.hilbert (negative frequencies zeroed, positive ones doubled).
template <class Real>
void hilbert_multiplier_ccs(Real* spectrum, int n) {
  spectrum[0] = 0;
  for (int f = 1; f < (n + 1) / 2; ++f) {
    const Real re = spectrum[2 * f - 1], im = spectrum[2 * f];
    spectrum[2 * f - 1] = im;
    spectrum[2 * f] = -re;
  }
  if (n % 2 == 0) spectrum[n - 1] = 0;
}

}  // namespace usrecon::recon::detail
