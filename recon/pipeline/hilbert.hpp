// The Hilbert transform of real lines by OpenCV's real DFT, shared by the B-mode envelope
// (double) and the general models' analytic signal (float): x + i H{x} is the analytic signal of
// scipy.signal.hilbert (negative frequencies zeroed, positive ones doubled, DC and Nyquist kept),
// from a real DFT and its real inverse, half the arithmetic of a complex spectrum and inverse.
#pragma once

#include <opencv2/core.hpp>

namespace usrecon::recon::detail {

/// A real DFT of n samples (cv::dft without DFT_COMPLEX_OUTPUT) packs X(0), then Re X(f), Im X(f)
/// for 0 < f < (n + 1) / 2, then, for even n, X(n / 2). Multiplies it by -i sign(f): DC and
/// Nyquist go to 0, a positive frequency's a + ib becomes b - ia; the negative frequencies follow
/// by symmetry, so the result is the packed spectrum of the real line H{x}.
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

/// H{x} of every row of `lines` (CV_32F or CV_64F, one real line a row), same type and size.
inline cv::Mat hilbert_rows(const cv::Mat& lines) {
  cv::Mat spectrum;
  cv::dft(lines, spectrum, cv::DFT_ROWS);
  for (int r = 0; r < spectrum.rows; ++r) {
    if (spectrum.depth() == CV_64F) hilbert_multiplier_ccs(spectrum.ptr<double>(r), spectrum.cols);
    else hilbert_multiplier_ccs(spectrum.ptr<float>(r), spectrum.cols);
  }
  cv::Mat hilbert;
  cv::idft(spectrum, hilbert, cv::DFT_ROWS | cv::DFT_REAL_OUTPUT | cv::DFT_SCALE);
  return hilbert;
}

}  // namespace usrecon::recon::detail
