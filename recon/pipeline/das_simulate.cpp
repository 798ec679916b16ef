#include "usrecon/recon/das_simulate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"

namespace usrecon::recon {

ChannelData simulate_das_channels(const DasSimulationOptions& o) {
  const Acquisition& acq = o.acquisition;
  acq.validate(-1);
  if (o.samples < 1 || o.speckle < 0 || !(o.center_frequency > 0) || !(o.cycles > 0) ||
      o.noise < 0)
    throw Error("simulate: samples, frequency and cycles must be positive; speckle and noise >= 0");
  const std::vector<double> ex = acq.probe.positions();
  std::mt19937_64 rng(o.seed);
  std::vector<PointTarget> scatterers = o.points;
  const double x_lo = o.x_max > o.x_min ? o.x_min : ex.front();
  const double x_hi = o.x_max > o.x_min ? o.x_max : ex.back();
  const double z_lo = o.z_max > o.z_min ? o.z_min : 2e-3;
  const double z_hi = o.z_max > o.z_min ? o.z_max
                                        : acq.t0 * acq.sound_speed / 2 +
                                              o.samples / acq.fs * acq.sound_speed / 2;
  std::uniform_real_distribution<double> xd(x_lo, x_hi), zd(z_lo, std::max(z_lo, z_hi));
  std::normal_distribution<double> ad(0.0, o.speckle_amplitude);
  for (int n = 0; n < o.speckle;) {
    const PointTarget s{xd(rng), zd(rng), ad(rng)};
    const bool in_cyst = std::any_of(o.cysts.begin(), o.cysts.end(), [&](const Cyst& c) {
      return std::hypot(s.x - c.x, s.z - c.z) < c.radius;
    });
    if (in_cyst) continue;
    scatterers.push_back(s);
    ++n;
  }

  const double omega = 2 * std::numbers::pi * o.center_frequency / acq.fs;  // rad per sample
  const double fwhm = o.cycles * acq.fs / o.center_frequency;             // samples
  const double sigma = fwhm / (2 * std::sqrt(2 * std::log(2.0)));
  const int reach = static_cast<int>(std::ceil(4 * sigma));
  const double inv_c_fs = acq.fs / acq.sound_speed, t0_fs = acq.t0 * acq.fs;
  std::vector<double> r0;  // diverging and focused waves: each source's reference distance
  for (std::size_t t = 0; t < acq.source_x.size(); ++t)
    r0.push_back(das::virtual_source_reference_distance(acq.source_x[t], acq.source_z[t], ex, acq.time_zero));

  ChannelData rf;
  rf.samples = o.samples;
  rf.elements = acq.probe.elements;
  rf.transmits = acq.transmits();
  rf.data.assign(rf.size(), 0.f);
  const int channels = rf.elements * rf.transmits;
  kernels::parallel_for(std::size_t(channels), 1, 0, [&](std::size_t b, std::size_t e_end) {
    std::vector<double> trace(std::size_t(o.samples));
    for (std::size_t ch = b; ch < e_end; ++ch) {
      const int t = static_cast<int>(ch) / rf.elements, e = static_cast<int>(ch) % rf.elements;
      std::fill(trace.begin(), trace.end(), 0.0);
      for (const PointTarget& s : scatterers) {
        double pos;
        if (acq.model == Model::PlaneWave) {
          const double a = acq.angles[t];
          pos = das::planewave_sample(s.x, s.z, ex[e], std::cos(a), std::sin(a),
                                      das::planewave_x_reference(a, ex.front(), ex.back(), acq.time_zero), inv_c_fs,
                                      t0_fs);
        } else if (has_virtual_sources(acq.model)) {
          pos = das::virtual_source_sample(s.x, s.z, acq.source_x[t], acq.source_z[t], r0[t], ex[e], inv_c_fs, t0_fs);
        } else {
          const int te = acq.tx_elements.empty() ? t : acq.tx_elements[t];
          pos = das::synthetic_aperture_sample(s.x, s.z, ex[te], ex[e], inv_c_fs, t0_fs);
        }
        const int s0 = std::max(0, static_cast<int>(std::floor(pos)) - reach);
        const int s1 = std::min(o.samples - 1, static_cast<int>(std::ceil(pos)) + reach);
        for (int k = s0; k <= s1; ++k) {
          const double u = k - pos;
          trace[k] += s.amplitude * std::exp(-0.5 * u * u / (sigma * sigma)) * std::cos(omega * u);
        }
      }
      float* out = rf.data.data() + ch * o.samples;
      for (int k = 0; k < o.samples; ++k) out[k] = static_cast<float>(trace[k]);
    }
  });
  float peak = 0.f;
  for (float v : rf.data) peak = std::max(peak, std::fabs(v));
  const float scale = peak > 0 ? 1.f / peak : 0.f;
  std::normal_distribution<double> nd(0.0, o.noise);
  for (float& v : rf.data) v = v * scale + (o.noise > 0 ? static_cast<float>(nd(rng)) : 0.f);
  return rf;
}

}  // namespace usrecon::recon
