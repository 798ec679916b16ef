#include "usrecon/recon/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/das_pipeline.hpp"

namespace usrecon::recon {

void check_speckle_amplitude(double amplitude) {
  if (!std::isfinite(amplitude) || amplitude < 0)
    throw Error("simulate: the speckle amplitude (--speckle-amplitude) must be a finite number >= 0, not " +
                number_text(amplitude));
}

namespace detail {

RecordCoverage::RecordCoverage(std::size_t points, int samples)
    : samples_(samples), first_(points, INFINITY), last_(points, -INFINITY), inside_(points, false),
      echoes_(points, 0), missed_(points, 0) {}

void RecordCoverage::echo(std::size_t p, double pos) {
  first_[p] = std::min(first_[p], pos);
  last_[p] = std::max(last_[p], pos);
  // The echo's centre in the record: its nearest sample, round(pos), one of [0, samples) (as the
  // seed's delays index). One whose pulse only reaches into the record (its tail, 4 sigma out, a
  // thousandth of its height) counted as recorded, without a word, and the data were then scaled
  // up to make that tail peak at 1.
  ++echoes_[p];
  if (pos >= -0.5 && pos < samples_ - 0.5) inside_[p] = true;
  else ++missed_[p];
}

PointsOutsideRecord RecordCoverage::result(const std::vector<std::array<double, 2>>& positions_mm,
                                           const std::string& record) const {
  PointsOutsideRecord out;
  std::string list;
  for (std::size_t p = 0; p < inside_.size(); ++p) {
    if (inside_[p]) continue;
    out.points.push_back(p);
    list += (list.empty() ? "" : ", ") + ("point " + std::to_string(p + 1) + " at (" + number_text(positions_mm[p][0]) +
                                          ", " + number_text(positions_mm[p][1]) + ") mm (echoes at samples " +
                                          number_text(std::round(first_[p])) + " to " +
                                          number_text(std::round(last_[p])) + ")");
  }
  if (!out.points.empty())
    out.message = list + (out.points.size() == 1 ? " lies" : " lie") + " outside the recorded time; " + record;
  list.clear();
  for (std::size_t p = 0; p < inside_.size(); ++p) {
    if (!inside_[p] || missed_[p] == 0) continue;
    out.partly.push_back(p);
    list += (list.empty() ? "" : ", ") + ("point " + std::to_string(p + 1) + " at (" + number_text(positions_mm[p][0]) +
                                          ", " + number_text(positions_mm[p][1]) + ") mm: " + std::to_string(missed_[p]) +
                                          " of its " + std::to_string(echoes_[p]) + " echoes, which arrive at samples " +
                                          number_text(std::round(first_[p])) + " to " +
                                          number_text(std::round(last_[p])) + " of 0 to " + std::to_string(samples_ - 1));
  }
  if (!out.partly.empty())
    out.partly_message = "some echoes miss the recorded time, so their channels hold none of the point: " + list +
                         "; " + record;
  return out;
}

double pulse_sigma(double fwhm_samples) { return fwhm_samples / (2.0 * std::sqrt(2.0 * std::log(2.0))); }

int pulse_reach(double sigma) { return static_cast<int>(std::min(std::ceil(4.0 * sigma), double(1 << 26))); }

void refuse_points_outside_record(const PointsOutsideRecord& outside, std::size_t points) {
  if (points > 0 && outside.points.size() == points)
    throw Error("simulate: no echo of any point lands in the record, so the data would hold none of them: " +
                outside.message);
}

}  // namespace detail

namespace {

void check_options(const SimulationOptions& o) {
  const seed::Problem& p = o.problem;
  if (p.channels <= 0 || p.samples <= 0) throw Error("simulate: channels and samples must be positive");
  if (!(o.center_mhz > 0) || !(o.cycles > 0) || !(o.peak > 0) || o.speckle < 0 || o.noise < 0)
    throw Error("simulate: frequency, cycles and peak must be positive; speckle and noise >= 0");
  if (o.peak > 1e9) throw Error("simulate: peak must stay within the 32-bit range (<= 1e9)");
  check_speckle_amplitude(o.speckle_amplitude);
  if (o.speckle > 0 && o.speckle_amplitude == 0 && o.points.empty())  // data of zeros
    throw Error("simulate: --speckle " + std::to_string(o.speckle) +
                " scatterers of --speckle-amplitude 0 echo nothing: give an amplitude > 0");
  // At or above fs / 2 the pulse aliases (at fs / 2 it is sampled at its zero crossings).
  if (!(o.center_mhz < seed::Problem::kSamplingMhz / 2))
    throw Error("simulate: the centre frequency " + number_text(o.center_mhz) +
                " MHz is not below the Nyquist frequency of the seed's sampling, " +
                number_text(seed::Problem::kSamplingMhz / 2) + " MHz (--center-mhz is in MHz)");
}

// The seed's sampling: samples per grid step of two-way path.
constexpr double kSamplesPerStep =
    seed::Problem::kGridStepMm / seed::Problem::kSoundSpeedMmPerUs * seed::Problem::kSamplingMhz;

// The pulse's Gaussian envelope: standard deviation in samples.
double pulse_sigma(const SimulationOptions& o) {
  return detail::pulse_sigma(o.cycles * seed::Problem::kSamplingMhz / o.center_mhz);  // FWHM in samples
}

// Scatterer s's distance from each element, in grid steps.
void element_distances(const Scatterer& s, std::vector<double>& d) {
  const double xg = s.x_mm / seed::Problem::kGridStepMm;
  const double zg = s.z_mm / seed::Problem::kGridStepMm;
  for (std::size_t n = 0; n < d.size(); ++n) d[n] = std::hypot(zg, xg - seed::Problem::kElementStep * double(n));
}

}  // namespace

PointsOutsideRecord points_outside_record(const SimulationOptions& o) {
  check_options(o);
  const seed::Problem& p = o.problem;
  detail::RecordCoverage coverage(o.points.size(), p.samples);
  std::vector<std::array<double, 2>> positions;
  std::vector<double> d(std::size_t(p.channels));
  for (std::size_t k = 0; k < o.points.size(); ++k) {
    positions.push_back({o.points[k].x_mm, o.points[k].z_mm});
    element_distances(o.points[k], d);
    for (double dk : d)
      for (double dn : d) coverage.echo(k, (dk + dn) * kSamplesPerStep);
  }
  const double last_depth_mm = (p.samples - 0.5) / kSamplesPerStep / 2 * seed::Problem::kGridStepMm;
  return coverage.result(positions, "the record (" + std::to_string(p.samples) + " samples at " +
                                        number_text(seed::Problem::kSamplingMhz) + " MHz from the firing) covers "
                                        "depths to about " + number_text(last_depth_mm) + " mm below the array");
}

std::vector<std::int32_t> simulate_seed_channels(const SimulationOptions& o) {
  detail::refuse_points_outside_record(points_outside_record(o), o.points.size());  // checks o too
  const seed::Problem& p = o.problem;

  std::mt19937_64 rng(o.seed);
  std::vector<Scatterer> scatterers = o.points;
  std::uniform_real_distribution<double> x_dist(0.0, (p.nx - 1) * seed::Problem::kGridStepMm);
  std::uniform_real_distribution<double> z_dist(0.0, (p.nz - 1) * seed::Problem::kGridStepMm);
  std::uniform_real_distribution<double> a_dist(-o.speckle_amplitude, o.speckle_amplitude);
  for (int s = 0; s < o.speckle; ++s) scatterers.push_back({x_dist(rng), z_dist(rng), a_dist(rng)});

  // Pulse: cosine at the centre frequency under a Gaussian envelope, in samples.
  const double omega = 2.0 * std::numbers::pi * o.center_mhz / seed::Problem::kSamplingMhz;  // rad / sample
  const double sigma = pulse_sigma(o);
  const int half_width = detail::pulse_reach(sigma);

  std::vector<double> signal(std::size_t(p.channels) * p.samples, 0.0);
  kernels::parallel_for(std::size_t(p.channels), 1, 0, [&](std::size_t b, std::size_t e) {
    std::vector<double> d(p.channels);
    for (std::size_t k = b; k < e; ++k) {
      double* channel = signal.data() + k * p.samples;
      for (const Scatterer& sc : scatterers) {
        element_distances(sc, d);
        for (int n = 0; n < p.channels; ++n) {
          const double t = (d[k] + d[n]) * kSamplesPerStep;
          if (t - half_width > p.samples) continue;  // and t fits an int
          const int s0 = std::max(0, static_cast<int>(std::floor(t)) - half_width);
          const int s1 = std::min(p.samples - 1, static_cast<int>(std::ceil(t)) + half_width);
          for (int s = s0; s <= s1; ++s) {
            const double u = s - t;
            channel[s] += sc.amplitude * std::exp(-0.5 * u * u / (sigma * sigma)) * std::cos(omega * u);
          }
        }
      }
    }
  });

  double max_abs = 0.0;
  for (double v : signal) max_abs = std::max(max_abs, std::abs(v));
  const double scale = max_abs > 0.0 ? o.peak / max_abs : 0.0;
  std::normal_distribution<double> noise(0.0, o.noise > 0 ? o.noise : 1.0);
  std::vector<std::int32_t> rf(signal.size());
  for (std::size_t idx = 0; idx < signal.size(); ++idx) {
    double v = signal[idx] * scale;
    if (o.noise > 0) v += noise(rng);
    rf[idx] = static_cast<std::int32_t>(std::lrint(std::clamp(v, -2147483648.0, 2147483647.0)));
  }
  return rf;
}

}  // namespace usrecon::recon
