#include "usrecon/recon/bmode.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>

#include "usrecon/kernels/common.hpp"

namespace usrecon::recon {

std::vector<double> envelope_along_depth(std::span<const double> img, int nx, int nz) {
  if (nx <= 0 || nz <= 0 || img.size() != std::size_t(nx) * nz)
    throw Error("envelope: image size does not match " + std::to_string(nx) + " x " +
                std::to_string(nz));
  // One row per depth line; cv::dft with DFT_ROWS transforms every row independently.
  const cv::Mat lines(nx, nz, CV_64F, const_cast<double*>(img.data()));
  cv::Mat spectrum;
  cv::dft(lines, spectrum, cv::DFT_ROWS | cv::DFT_COMPLEX_OUTPUT);
  // Analytic-signal filter h: 1 at DC (and Nyquist for even lengths), 2 for positive
  // frequencies, 0 for negative ones.
  const int half = nz / 2;
  for (int x = 0; x < nx; ++x) {
    auto* row = spectrum.ptr<cv::Vec2d>(x);
    for (int f = 1; f < nz; ++f) {
      const bool nyquist = (nz % 2 == 0) && f == half;
      const double h = nyquist ? 1.0 : (f < (nz + 1) / 2 ? 2.0 : 0.0);
      row[f] *= h;
    }
  }
  cv::Mat analytic;
  cv::idft(spectrum, analytic, cv::DFT_ROWS | cv::DFT_COMPLEX_OUTPUT | cv::DFT_SCALE);
  std::vector<double> env(img.size());
  for (int x = 0; x < nx; ++x) {
    const auto* row = analytic.ptr<cv::Vec2d>(x);
    for (int z = 0; z < nz; ++z) env[std::size_t(x) * nz + z] = std::hypot(row[z][0], row[z][1]);
  }
  return env;
}

std::vector<std::uint8_t> log_compress(std::span<const double> env, int nx, int nz,
                                       double dynamic_range_db, double gain_db) {
  if (nx <= 0 || nz <= 0 || env.size() != std::size_t(nx) * nz)
    throw Error("log compression: image size does not match " + std::to_string(nx) + " x " +
                std::to_string(nz));
  if (!(dynamic_range_db > 0.0) || !std::isfinite(dynamic_range_db))
    throw Error("log compression: the dynamic range must be a positive number of dB");
  const double peak = *std::max_element(env.begin(), env.end());
  std::vector<std::uint8_t> pixels(env.size(), 0);
  if (!(peak > 0.0) || !std::isfinite(peak)) return pixels;
  for (int x = 0; x < nx; ++x) {
    for (int z = 0; z < nz; ++z) {
      const double v = env[std::size_t(x) * nz + z];
      const double db = v > 0.0 ? 20.0 * std::log10(v / peak) + gain_db : -INFINITY;
      const double level = std::clamp((db + dynamic_range_db) / dynamic_range_db, 0.0, 1.0);
      pixels[std::size_t(z) * nx + x] = static_cast<std::uint8_t>(std::lround(level * 255.0));
    }
  }
  return pixels;
}

}  // namespace usrecon::recon
