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

std::vector<std::int32_t> simulate_seed_channels(const SimulationOptions& o) {
  const seed::Problem& p = o.problem;
  if (p.channels <= 0 || p.samples <= 0) throw Error("simulate: channels and samples must be positive");
  if (!(o.center_mhz > 0) || !(o.cycles > 0) || !(o.peak > 0) || o.speckle < 0 || o.noise < 0)
    throw Error("simulate: frequency, cycles and peak must be positive; speckle and noise >= 0");
  if (o.peak > 1e9) throw Error("simulate: peak must stay within the 32-bit range (<= 1e9)");
  check_speckle_amplitude(o.speckle_amplitude);

  std::mt19937_64 rng(o.seed);
  std::vector<Scatterer> scatterers = o.points;
  std::uniform_real_distribution<double> x_dist(0.0, (p.nx - 1) * seed::Problem::kGridStepMm);
  std::uniform_real_distribution<double> z_dist(0.0, (p.nz - 1) * seed::Problem::kGridStepMm);
  std::uniform_real_distribution<double> a_dist(-o.speckle_amplitude, o.speckle_amplitude);
  for (int s = 0; s < o.speckle; ++s) scatterers.push_back({x_dist(rng), z_dist(rng), a_dist(rng)});

  // Pulse: cosine at the centre frequency under a Gaussian envelope, in samples.
  const double samples_per_us = seed::Problem::kSamplingMhz;
  const double omega = 2.0 * std::numbers::pi * o.center_mhz / samples_per_us;  // rad / sample
  const double fwhm = o.cycles * samples_per_us / o.center_mhz;                  // samples
  const double sigma = fwhm / (2.0 * std::sqrt(2.0 * std::log(2.0)));
  const int half_width = static_cast<int>(std::ceil(4.0 * sigma));
  const double samples_per_step =
      seed::Problem::kGridStepMm / seed::Problem::kSoundSpeedMmPerUs * seed::Problem::kSamplingMhz;

  std::vector<double> signal(std::size_t(p.channels) * p.samples, 0.0);
  kernels::parallel_for(std::size_t(p.channels), 1, 0, [&](std::size_t b, std::size_t e) {
    std::vector<double> d(p.channels);
    for (std::size_t k = b; k < e; ++k) {
      double* channel = signal.data() + k * p.samples;
      for (const Scatterer& sc : scatterers) {
        const double xg = sc.x_mm / seed::Problem::kGridStepMm;
        const double zg = sc.z_mm / seed::Problem::kGridStepMm;
        for (int n = 0; n < p.channels; ++n)
          d[n] = std::hypot(zg, xg - seed::Problem::kElementStep * n);
        for (int n = 0; n < p.channels; ++n) {
          const double t = (d[k] + d[n]) * samples_per_step;
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
