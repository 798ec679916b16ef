#include "usrecon/recon/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "usrecon/recon/bmode.hpp"

namespace usrecon::recon {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double to_db(double v, double peak) { return 20.0 * std::log10(std::max(v, 1e-300) / peak); }

// Distance (in samples, fractional) from the peak to where the 10x-interpolated dB profile first
// drops below -6 dB, walking in direction `dir`; NaN if it never does.
double half_width(std::span<const double> profile, int peak, int dir) {
  constexpr int kUp = 10;
  const double top = profile[peak];
  const int n = static_cast<int>(profile.size());
  for (int k = peak; k + dir >= 0 && k + dir < n; k += dir) {
    const double a = to_db(profile[k], top), b = to_db(profile[k + dir], top);
    for (int u = 1; u <= kUp; ++u) {
      const double f = double(u) / kUp;
      if (a + f * (b - a) < -6.0) {
        // Linear crossing between the previous and this interpolated point.
        const double prev = a + (f - 1.0 / kUp) * (b - a), cur = a + f * (b - a);
        const double frac = (f - 1.0 / kUp) + (prev + 6.0) / (prev - cur) / kUp;
        return std::abs(k - peak) + frac;
      }
    }
  }
  return kNaN;
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
  double best = -1;
  const int ix0 = std::max(0, clamped_index(std::floor((x - search_radius - g.x0) / g.dx), g.nx));
  const int ix1 = std::min(g.nx - 1, clamped_index(std::ceil((x + search_radius - g.x0) / g.dx), g.nx));
  const int iz0 = std::max(0, clamped_index(std::floor((z - search_radius - g.z0) / g.dz), g.nz));
  const int iz1 = std::min(g.nz - 1, clamped_index(std::ceil((z + search_radius - g.z0) / g.dz), g.nz));
  for (int ix = ix0; ix <= ix1; ++ix)
    for (int iz = iz0; iz <= iz1; ++iz) {
      if (std::hypot(g.x(ix) - x, g.z(iz) - z) > search_radius) continue;
      const double v = env[std::size_t(ix) * g.nz + iz];
      if (v > best) {
        best = v;
        best_x = ix;
        best_z = iz;
      }
    }
  if (best_x < 0)
    throw Error("metrics: no pixel within " + std::to_string(search_radius) + " m of (" +
                std::to_string(x) + ", " + std::to_string(z) + ")");
  m.x = g.x(best_x);
  m.z = g.z(best_z);
  m.error = std::hypot(m.x - x, m.z - z);
  m.peak = best;
  const std::span<const double> axial = env.subspan(std::size_t(best_x) * g.nz, g.nz);
  std::vector<double> lateral(g.nx);
  for (int ix = 0; ix < g.nx; ++ix) lateral[ix] = env[std::size_t(ix) * g.nz + best_z];
  m.fwhm_axial = fwhm_samples(axial, best_z) * g.dz;
  m.fwhm_lateral = fwhm_samples(lateral, best_x) * g.dx;
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
  std::vector<double> in, out;
  double peak = 0;
  for (double v : env) peak = std::max(peak, v);
  if (!(peak > 0)) throw Error("metrics: the image is all zero");
  for (int ix = 0; ix < g.nx; ++ix)
    for (int iz = 0; iz < g.nz; ++iz) {
      const double r = std::hypot(g.x(ix) - x, g.z(iz) - z);
      const double v = env[std::size_t(ix) * g.nz + iz];
      if (r <= inner * radius) in.push_back(v);
      else if (r >= 1.25 * radius && r <= 1.6 * radius) out.push_back(v);
    }
  m.inside_pixels = in.size();
  m.background_pixels = out.size();
  if (in.size() < 2 || out.size() < 2)
    throw Error("metrics: the cyst at (" + std::to_string(x) + ", " + std::to_string(z) +
                ") has too few pixels inside the image");
  const auto stats = [&](const std::vector<double>& v) {
    double s = 0, s2 = 0;
    for (double e : v) {
      const double d = to_db(e, peak);
      s += d;
      s2 += d * d;
    }
    const double mean = s / v.size();
    return std::pair{mean, std::max(0.0, s2 / v.size() - mean * mean)};
  };
  const auto [mi, vi] = stats(in);
  const auto [mo, vo] = stats(out);
  m.contrast_db = mi - mo;
  m.cnr = std::abs(mi - mo) / std::sqrt((vi + vo) / 2);
  m.cnr_db = 20 * std::log10(m.cnr);
  // gCNR on 256 bins spanning both sets.
  const double lo = std::min(*std::min_element(in.begin(), in.end()), *std::min_element(out.begin(), out.end()));
  const double hi = std::max(*std::max_element(in.begin(), in.end()), *std::max_element(out.begin(), out.end()));
  constexpr int kBins = 256;
  std::vector<double> hin(kBins, 0), hout(kBins, 0);
  const auto bin = [&](double v) {
    return hi > lo ? std::min(kBins - 1, int((v - lo) / (hi - lo) * kBins)) : 0;
  };
  for (double v : in) hin[bin(v)] += 1.0 / in.size();
  for (double v : out) hout[bin(v)] += 1.0 / out.size();
  double overlap = 0;
  for (int b = 0; b < kBins; ++b) overlap += std::min(hin[b], hout[b]);
  m.gcnr = 1 - overlap;
  return m;
}

nlohmann::json to_json(const PointMetrics& m) {
  const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"true_x", m.true_x}, {"true_z", m.true_z}, {"x", m.x}, {"z", m.z},
          {"error", m.error}, {"fwhm_axial", num(m.fwhm_axial)}, {"fwhm_lateral", num(m.fwhm_lateral)},
          {"peak", m.peak}};
}

nlohmann::json to_json(const CystMetrics& m) {
  return {{"x", m.x}, {"z", m.z}, {"radius", m.radius}, {"cnr_db", m.cnr_db}, {"cnr", m.cnr},
          {"contrast_db", m.contrast_db}, {"gcnr", m.gcnr}, {"inside_pixels", m.inside_pixels},
          {"background_pixels", m.background_pixels}};
}

}  // namespace usrecon::recon
