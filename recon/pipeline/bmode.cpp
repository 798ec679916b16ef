#include "usrecon/recon/bmode.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hilbert.hpp"
#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::recon {
namespace {

// Depth lines per task of the envelope: 16 lines of the seed's 1200 depths are 150 KB in and
// 150 KB of spectrum, which stay in L2 between the forward and the inverse transform (one
// whole-image call took OpenCV 6.0 ms a direction single-threaded on the 2-core machine, tasks
// of 16 lines 3.4). OpenCV's DFT itself runs on the calling thread.
constexpr std::size_t kEnvelopeLines = 16;
// Laterals per task of the log compression: its writes, pixels[z * nx + x], are then runs of
// 64 bytes, its reads 64 sequential streams.
constexpr std::size_t kCompressColumns = 64;

// |a + ib|: the plain square root where the squares can neither overflow nor underflow, std::hypot
// (over twice as slow: 17.5 against 8.1 ms for the seed image's envelope on one thread) only for
// values past 1e150 or all below 1e-150, as a user's NPY may hold.
inline double modulus(double a, double b) {
  const double larger = std::max(std::abs(a), std::abs(b));
  return larger < 1e150 && larger > 1e-150 ? std::sqrt(a * a + b * b) : std::hypot(a, b);
}

void check_size(std::size_t size, int nx, int nz, const char* what) {
  if (nx <= 0 || nz <= 0 || size != std::size_t(nx) * std::size_t(nz))
    throw Error(std::string(what) + ": image size does not match " + std::to_string(nx) + " x " +
                std::to_string(nz));
}

}  // namespace

std::vector<double> envelope_along_depth(std::span<const double> img, int nx, int nz, int threads) {
  check_size(img.size(), nx, nz, "envelope");
  std::vector<double> env(img.size());
  kernels::parallel_for(std::size_t(nx), kEnvelopeLines, threads, [&](std::size_t begin, std::size_t end) {
    const int lines = int(end - begin);
    const cv::Mat rf(lines, nz, CV_64F, const_cast<double*>(img.data()) + begin * nz);
    const cv::Mat hilbert = detail::hilbert_rows(rf);
    // The analytic signal is x + i H{x}; its modulus is the envelope.
    for (int l = 0; l < lines; ++l) {
      const double* x = rf.ptr<double>(l);
      const double* h = hilbert.ptr<double>(l);
      double* e = env.data() + (begin + l) * nz;
      for (int z = 0; z < nz; ++z) e[z] = modulus(x[z], h[z]);
    }
  });
  return env;
}

std::vector<double> envelope_of_iq(std::span<const std::complex<float>> iq, int threads) {
  std::vector<double> env(iq.size());
  kernels::parallel_for(iq.size(), std::size_t(1) << 16, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) env[i] = double(std::abs(iq[i]));
  });
  return env;
}

std::vector<std::uint8_t> log_compress(std::span<const double> env, int nx, int nz,
                                       double dynamic_range_db, double gain_db, int threads) {
  check_size(env.size(), nx, nz, "log compression");
  if (!(dynamic_range_db > 0.0) || !std::isfinite(dynamic_range_db))
    throw Error("log compression: the dynamic range must be a positive number of dB");
  const double peak = *std::max_element(env.begin(), env.end());
  std::vector<std::uint8_t> pixels(env.size(), 0);
  if (!(peak > 0.0) || !std::isfinite(peak)) return pixels;
  kernels::parallel_for(std::size_t(nx), kCompressColumns, threads, [&](std::size_t begin, std::size_t end) {
    for (int z = 0; z < nz; ++z) {
      for (std::size_t x = begin; x < end; ++x) {
        const double v = env[x * nz + z];
        const double db = v > 0.0 ? 20.0 * std::log10(v / peak) + gain_db : -INFINITY;
        const double y = std::clamp((db + dynamic_range_db) / dynamic_range_db, 0.0, 1.0) * 255.0;
        // std::lround(y) for y in [0, 255] (halves away from zero), without its library call:
        // y - int(y) is exact.
        const int whole = int(y);
        pixels[std::size_t(z) * nx + x] = static_cast<std::uint8_t>(whole + (y - whole >= 0.5 ? 1 : 0));
      }
    }
  });
  return pixels;
}

}  // namespace usrecon::recon
