#include "usrecon/recon/bmode.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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

// The definition of a pixel's level: 20 log10(v / peak) + gain dB, mapped from
// [-range, 0] dB onto [0, 255], clamped, rounded half up (std::lround on [0, 255]; y - int(y)
// is exact, so no library call is needed).
std::uint8_t level_by_definition(double v, double peak, double range_db, double gain_db) {
  const double db = v > 0.0 ? 20.0 * std::log10(v / peak) + gain_db : -INFINITY;
  const double y = std::clamp((db + range_db) / range_db, 0.0, 1.0) * 255.0;
  const int whole = int(y);
  return static_cast<std::uint8_t>(whole + (y - whole >= 0.5 ? 1 : 0));
}

// The level of an envelope value without std::log10 a pixel (13 ns a pixel here, most of the
// compression's time). The level rises with v: it reaches k at the threshold
// t_k = peak 10^(((k - 1/2) range / 255 - range - gain) / 20). A candidate k comes from a cheap
// log2 (the exponent, and the mantissa's from a 256-entry table and a short series: error below
// 1e-9, where a level is range / 1535 wide in log2), moved until t_k <= v < t_(k+1). Where v lies
// within a relative 1e-9 of either threshold the floating-point definition may round either
// way, so it decides (level_by_definition); elsewhere its errors (a few ulps of y, where the
// margin is at least 255 * 20 / (range ln 10) * 1e-9 in y) cannot move it across a level, and
// the candidate is its value. Values that are not positive finite normal numbers (zeros,
// subnormals, infinities, NaN) go through the definition, and so does everything when a
// threshold or its ratio to the peak is not a normal number (ranges of hundreds of dB, a peak
// near the ends of the double range) or the range is absurd (below 1e-300 or past 1e6 dB).
class LevelTable {
 public:
  LevelTable(double peak, double range_db, double gain_db) : peak_(peak), range_db_(range_db), gain_db_(gain_db) {
    constexpr double kMargin = 1e-9;
    constexpr double kMin = std::numeric_limits<double>::min(), kMax = std::numeric_limits<double>::max();
    // The definition works on v / peak: where that ratio, or a threshold, is not a normal number
    // its rounding is not the table's. Ranges and gains past 1e6 dB are refused too: there the
    // definition's own error in y nears the band's margin.
    usable_ = range_db + std::abs(gain_db) <= 1e6;
    for (int k = 1; k < 256; ++k) {
      const double db = (k - 0.5) * range_db / 255.0 - range_db - gain_db;
      const double ratio = std::pow(10.0, db / 20.0);
      threshold_[k] = peak * ratio;
      if (!(ratio >= kMin * 1e3 && ratio <= kMax / 1e3)) usable_ = false;  // also NaN
      if (!(threshold_[k] >= kMin * 1e3 && threshold_[k] <= kMax / 1e3)) usable_ = false;
    }
    threshold_[0] = -INFINITY;
    threshold_[256] = INFINITY;
    // Thresholds that round to one value (a huge range) leave no certain band: the definition
    // decides near them.
    for (int k = 0; k < 256; ++k) {
      low_[k] = k == 0 ? -INFINITY : threshold_[k] * (1.0 + kMargin);
      high_[k] = k == 255 ? INFINITY : threshold_[k + 1] * (1.0 - kMargin);
    }
    // y = slope log2(v) + offset is the level before rounding: 255 (20 log10(v / peak) + gain +
    // range) / range.
    slope_ = 255.0 * 20.0 * std::log10(2.0) / range_db;
    offset_ = 255.0 * (gain_db + range_db - 20.0 * std::log10(peak)) / range_db;
    // y must be finite for its conversion to int (a range of 1e-305 dB overflows both).
    if (!(std::abs(slope_) * 1100.0 <= kMax && std::abs(offset_) <= kMax / 2)) usable_ = false;
    for (int i = 0; i < 256; ++i) {
      const double centre = 1.0 + (i + 0.5) / 256.0;
      inverse_centre_[i] = 1.0 / centre;
      log2_centre_[i] = std::log2(centre);
    }
  }

  std::uint8_t level(double v) const {
    if (!usable_ || !(v >= std::numeric_limits<double>::min() && v <= std::numeric_limits<double>::max()))
      return level_by_definition(v, peak_, range_db_, gain_db_);
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(v);
    const int exponent = int(bits >> 52) - 1023;  // v is positive and normal
    const int i = int((bits >> 44) & 0xFF);       // the mantissa's top 8 bits
    const double mantissa = std::bit_cast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
    const double r = mantissa * inverse_centre_[i] - 1.0;  // |r| < 1/512
    constexpr double kInvLn2 = 1.4426950408889634;
    const double log2_v = exponent + log2_centre_[i] + r * kInvLn2 * (1.0 - r * (0.5 - r / 3.0));
    const double y = slope_ * log2_v + offset_;
    int k = int(std::clamp(y + 0.5, 0.0, 255.0));
    while (v >= threshold_[k + 1]) ++k;
    while (v < threshold_[k]) --k;
    if (low_[k] <= v && v < high_[k]) return static_cast<std::uint8_t>(k);
    return level_by_definition(v, peak_, range_db_, gain_db_);
  }

 private:
  double peak_, range_db_, gain_db_;
  bool usable_ = true;  // false: every value goes through the definition
  // threshold_[k], k = 1..255: the least v of level k; threshold_[0] = -inf, threshold_[256] =
  // +inf end the search. low_[k], high_[k]: where level k is certain.
  double threshold_[257], low_[256], high_[256];
  double slope_ = 0.0, offset_ = 0.0;
  double inverse_centre_[256], log2_centre_[256];  // 1 / c_i and log2 c_i, c_i = 1 + (i + 1/2) / 256
};

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
  const LevelTable table(peak, dynamic_range_db, gain_db);
  kernels::parallel_for(std::size_t(nx), kCompressColumns, threads, [&](std::size_t begin, std::size_t end) {
    for (int z = 0; z < nz; ++z)
      for (std::size_t x = begin; x < end; ++x) pixels[std::size_t(z) * nx + x] = table.level(env[x * nz + z]);
  });
  return pixels;
}

}  // namespace usrecon::recon
