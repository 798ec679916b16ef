#include "usrecon/recon/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "usrecon/recon/bmode.hpp"
#include "usrecon/recon/das_pipeline.hpp"  // number_text

namespace usrecon::recon {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A pixel with data: a positive, finite envelope. 0 is no data (no aperture reached it, past the
// last sample); NaN and infinities are no level at all, and one infinite pixel would otherwise
// be every target's maximum and the image's peak (every dB value -inf).
bool has_data(double v) { return v > 0 && v < std::numeric_limits<double>::infinity(); }

double to_db(double v, double peak) { return 20.0 * std::log10(std::max(v, 1e-300) / peak); }

// Distance (in samples, fractional) from the peak to where the dB profile, linearly interpolated
// between samples, first drops below -6 dB, walking in direction `dir`; NaN if it never does
// before the profile's end or a pixel without data (whose "level" of 0 would close any width).
// PICMUS interpolates the dB profile linearly at 10x (interp1) and keeps the sub-samples above
// -6 dB; the crossing of the same line is taken here exactly rather than to a tenth of a sample.
double half_width(std::span<const double> profile, int peak, int dir) {
  const double top = profile[peak];
  const int n = static_cast<int>(profile.size());
  for (int k = peak; k + dir >= 0 && k + dir < n; k += dir) {
    if (!has_data(profile[k + dir])) return kNaN;
    const double a = to_db(profile[k], top), b = to_db(profile[k + dir], top);
    if (b < -6.0) return std::abs(k - peak) + (a + 6.0) / (a - b);  // a >= -6 > b
  }
  return kNaN;
}

// The largest envelope value with data (0 when no pixel has any).
double peak_of(std::span<const double> env) {
  double peak = 0;
  for (double v : env)
    if (has_data(v)) peak = std::max(peak, v);
  return peak;
}

// A pixel index bound (floor or ceil of a position in steps), clamped to [-1, n] before the cast:
// a search region far beyond the image (a huge radius, a distant point) would not fit an int.
int clamped_index(double v, int n) { return static_cast<int>(std::clamp(v, -1.0, double(n))); }

}  // namespace

std::vector<double> envelope(const Image& image) { return envelope_of_iq(image.data); }

double fwhm_samples(std::span<const double> profile, int peak) {
  if (peak < 0 || peak >= int(profile.size()) || !(profile[peak] > 0)) return kNaN;
  return half_width(profile, peak, -1) + half_width(profile, peak, +1);
}

PointMetrics measure_point(std::span<const double> env, const Grid& g, double x, double z,
                           double search_radius) {
  if (env.size() != g.pixels()) throw Error("metrics: image size does not match its grid");
  if (!(g.dx > 0) || !(g.dz > 0) || !std::isfinite(g.x0) || !std::isfinite(g.z0))
    throw Error("metrics: the grid needs finite x0, z0 and positive dx, dz");
  if (!(search_radius > 0) || !std::isfinite(search_radius))
    throw Error("metrics: the search radius must be a positive finite number of metres, not " +
                std::to_string(search_radius));
  if (!std::isfinite(x) || !std::isfinite(z))
    throw Error("metrics: the point (" + std::to_string(x) + ", " + std::to_string(z) + ") is not finite");
  PointMetrics m;
  m.true_x = x;
  m.true_z = z;
  int best_x = -1, best_z = -1;
  bool searched_any = false;
  double best = -1;
  const int ix0 = std::max(0, clamped_index(std::floor((x - search_radius - g.x0) / g.dx), g.nx));
  const int ix1 = std::min(g.nx - 1, clamped_index(std::ceil((x + search_radius - g.x0) / g.dx), g.nx));
  const int iz0 = std::max(0, clamped_index(std::floor((z - search_radius - g.z0) / g.dz), g.nz));
  const int iz1 = std::min(g.nz - 1, clamped_index(std::ceil((z + search_radius - g.z0) / g.dz), g.nz));
  for (int ix = ix0; ix <= ix1; ++ix)
    for (int iz = iz0; iz <= iz1; ++iz) {
      if (std::hypot(g.x(ix) - x, g.z(iz) - z) > search_radius) continue;
      searched_any = true;
      const double v = env[std::size_t(ix) * g.nz + iz];
      if (has_data(v) && v > best) {
        best = v;
        best_x = ix;
        best_z = iz;
      }
    }
  if (!searched_any)
    throw Error("metrics: no pixel within " + number_text(search_radius) + " m of (" + number_text(x) + ", " +
                number_text(z) + ") m: the image spans x " + number_text(g.x0) + " to " + number_text(g.x(g.nx - 1)) +
                " m, z " + number_text(g.z0) + " to " + number_text(g.z(g.nz - 1)) + " m (points are in metres)");
  // An envelope of 0 there holds no echo (an all-zero image, or no data there): any of its
  // pixels would do as the maximum, at a made-up position of peak 0.
  if (!(best > 0))
    throw Error("metrics: no echo within " + number_text(search_radius) + " m of (" + number_text(x) + ", " +
                number_text(z) + "): no pixel there has data (an envelope above 0 and finite)" +
                (peak_of(env) > 0 ? "" : "; none in the whole image does"));
  m.x = g.x(best_x);
  m.z = g.z(best_z);
  m.error = std::hypot(m.x - x, m.z - z);
  m.peak = best;
  // A maximum on the search region's edge (the disk's or the image's) may be the flank of
  // something outside it: a point found there is flagged, not trusted.
  const auto searched = [&](int ix, int iz) {
    return ix >= 0 && ix < g.nx && iz >= 0 && iz < g.nz && std::hypot(g.x(ix) - x, g.z(iz) - z) <= search_radius;
  };
  m.at_region_edge = !searched(best_x - 1, best_z) || !searched(best_x + 1, best_z) ||
                     !searched(best_x, best_z - 1) || !searched(best_x, best_z + 1);
  const std::span<const double> axial = env.subspan(std::size_t(best_x) * g.nz, g.nz);
  std::vector<double> lateral(g.nx);
  for (int ix = 0; ix < g.nx; ++ix) lateral[ix] = env[std::size_t(ix) * g.nz + best_z];
  m.fwhm_axial = fwhm_samples(axial, best_z) * g.dz;
  m.fwhm_lateral = fwhm_samples(lateral, best_x) * g.dx;
  m.fwhm_axial_coarse = m.fwhm_axial < kFinestWidthSteps * g.dz;  // false for NaN (not measured)
  m.fwhm_lateral_coarse = m.fwhm_lateral < kFinestWidthSteps * g.dx;
  return m;
}

CystMetrics measure_cyst(std::span<const double> env, const Grid& g, double x, double z,
                         double radius, double inner) {
  if (env.size() != g.pixels()) throw Error("metrics: image size does not match its grid");
  if (!(radius > 0)) throw Error("metrics: a cyst needs a positive radius");
  CystMetrics m;
  m.x = x;
  m.z = z;
  m.radius = radius;
  const double peak = peak_of(env);
  if (!(peak > 0)) throw Error("metrics: no pixel of the image has data (an envelope above 0 and finite)");
  // dB values of the two regions. A pixel of envelope 0 holds no data (no element's aperture
  // reached it, or it lies past the last sample): as a level it would be -6000 dB (PICMUS's
  // eps: -313 dB) and swamp both statistics, so it is left out and counted.
  std::vector<double> in, out;
  for (int ix = 0; ix < g.nx; ++ix)
    for (int iz = 0; iz < g.nz; ++iz) {
      const double r = std::hypot(g.x(ix) - x, g.z(iz) - z);
      const double v = env[std::size_t(ix) * g.nz + iz];
      const bool inside = r <= inner * radius, background = !inside && r >= 1.25 * radius && r <= 1.6 * radius;
      if (!inside && !background) continue;
      if (!has_data(v)) {
        ++(inside ? m.inside_no_data : m.background_no_data);
        continue;
      }
      (inside ? in : out).push_back(to_db(v, peak));
    }
  m.inside_pixels = in.size();
  m.background_pixels = out.size();
  if (in.size() < 2 || out.size() < 2)
    throw Error("metrics: the cyst at (" + number_text(x) + ", " + number_text(z) + ") m, radius " + number_text(radius) +
                " m, has too few pixels with data inside the image (" + std::to_string(in.size()) + " inside, " +
                std::to_string(out.size()) + " in the background ring); the image spans x " + number_text(g.x0) +
                " to " + number_text(g.x(g.nx - 1)) + " m, z " + number_text(g.z0) + " to " +
                number_text(g.z(g.nz - 1)) + " m (cysts are in metres)");
  // Mean and sample variance (n - 1, as MATLAB's var in PICMUS's script).
  const auto stats = [](const std::vector<double>& v) {
    double mean = 0;
    for (double d : v) mean += d;
    mean /= double(v.size());
    double ss = 0;
    for (double d : v) ss += (d - mean) * (d - mean);
    return std::pair{mean, ss / double(v.size() - 1)};
  };
  const auto [mi, vi] = stats(in);
  const auto [mo, vo] = stats(out);
  if (mi == mo && !(vi + vo > 0))
    throw Error("metrics: the cyst at (" + number_text(x) + ", " + number_text(z) + ") and its background ring hold "
                "one and the same level (a constant image?): no contrast to measure, CNR is 0 / 0");
  // Regions cut by the image's edge are measured on what lies inside, and said to be.
  m.cut_by_image_edge = x - 1.6 * radius < g.x0 || x + 1.6 * radius > g.x(g.nx - 1) || z - 1.6 * radius < g.z0 ||
                        z + 1.6 * radius > g.z(g.nz - 1);
  m.contrast_db = mi - mo;
  m.cnr = std::abs(mi - mo) / std::sqrt((vi + vo) / 2);
  m.cnr_db = 20 * std::log10(m.cnr);
  // gCNR = 1 - the overlap of the two regions' histograms on 256 bins spanning both sets, binned
  // in dB: the measure is the same under any monotonic map of the levels, its histogram
  // estimate is not, and on the linear envelope one bright pixel (a wire in the ring) stretches
  // the bins until the speckle of both regions shares the first few.
  const auto [in_lo, in_hi] = std::minmax_element(in.begin(), in.end());
  const auto [out_lo, out_hi] = std::minmax_element(out.begin(), out.end());
  const double lo = std::min(*in_lo, *out_lo), hi = std::max(*in_hi, *out_hi);
  constexpr int kBins = 256;
  std::vector<double> hin(kBins, 0), hout(kBins, 0);
  const auto bin = [&](double v) { return hi > lo ? std::min(kBins - 1, int((v - lo) / (hi - lo) * kBins)) : 0; };
  for (double v : in) hin[bin(v)] += 1.0 / double(in.size());
  for (double v : out) hout[bin(v)] += 1.0 / double(out.size());
  double overlap = 0;
  for (int b = 0; b < kBins; ++b) overlap += std::min(hin[b], hout[b]);
  m.gcnr = std::clamp(1 - overlap, 0.0, 1.0);  // the bins' fractions may sum to 1 +- an ulp
  return m;
}

nlohmann::json to_json(const PointMetrics& m) {
  const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"true_x", m.true_x}, {"true_z", m.true_z}, {"x", m.x}, {"z", m.z},
                      {"error", m.error}, {"fwhm_axial", num(m.fwhm_axial)}, {"fwhm_lateral", num(m.fwhm_lateral)},
                      {"peak", m.peak}, {"at_region_edge", m.at_region_edge}};
  // A null width says why; one narrower than the grid measures well says so.
  for (const auto& [key, width, coarse, step] :
       {std::tuple{"fwhm_axial", m.fwhm_axial, m.fwhm_axial_coarse, "dz"},
        std::tuple{"fwhm_lateral", m.fwhm_lateral, m.fwhm_lateral_coarse, "dx"}}) {
    if (!std::isfinite(width))
      j[std::string(key) + "_not_measured"] = "the profile through the maximum does not fall 6 dB below it on both "
                                              "sides before the image's edge or a pixel without data";
    if (coarse)
      j[std::string(key) + "_coarse"] = "the width spans fewer than " + number_text(kFinestWidthSteps) +
                                        " grid steps (" + step +
                                        "): the grid decides it (a Gaussian spot's is up to 25 % off at 1.5 "
                                        "steps, 50 % at 1)";
  }
  return j;
}

nlohmann::json to_json(const CystMetrics& m) {
  nlohmann::json j = {{"x", m.x}, {"z", m.z}, {"radius", m.radius}, {"cnr_db", m.cnr_db}, {"cnr", m.cnr},
                      {"contrast_db", m.contrast_db}, {"gcnr", m.gcnr}, {"inside_pixels", m.inside_pixels},
                      {"background_pixels", m.background_pixels}, {"inside_no_data", m.inside_no_data},
                      {"background_no_data", m.background_no_data}, {"cut_by_image_edge", m.cut_by_image_edge}};
  // Two regions of one level each but different levels (a two-level phantom): contrast and gCNR
  // are measured, CNR is infinite, which JSON cannot hold.
  if (std::isinf(m.cnr)) {
    j["cnr"] = j["cnr_db"] = nullptr;
    j["cnr_not_measured"] = "each region holds one level (no spread): the CNR is infinite";
  }
  return j;
}

}  // namespace usrecon::recon
