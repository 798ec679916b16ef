#include "usrecon/recon/das_simulate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"
#include "usrecon/recon/simulate.hpp"

namespace usrecon::recon {

namespace {

void check_options(const DasSimulationOptions& o) {
  o.acquisition.validate(-1);
  if (o.samples < 1 || o.speckle < 0 || !(o.center_frequency > 0) || !(o.cycles > 0) ||
      o.noise < 0)
    throw Error("simulate: samples, frequency and cycles must be positive; speckle and noise >= 0");
  check_speckle_amplitude(o.speckle_amplitude);
  for (double edge : {o.x_min, o.x_max, o.z_min, o.z_max})
    if (!std::isfinite(edge) || std::fabs(edge) > 1e3)
      throw Error("simulate: the speckle region must lie within 1 km of the array");
}

}  // namespace

SpeckleRegion speckle_region(const DasSimulationOptions& o) {
  const Acquisition& acq = o.acquisition;
  const double half_span = 0.5 * (acq.probe.elements - 1) * acq.probe.pitch;
  const double last_depth = acq.t0 * acq.sound_speed / 2 + o.samples / acq.fs * acq.sound_speed / 2;
  SpeckleRegion r{o.x_max > o.x_min ? o.x_min : -half_span, o.x_max > o.x_min ? o.x_max : half_span,
                  o.z_max > o.z_min ? o.z_min : 2e-3, o.z_max > o.z_min ? o.z_max : last_depth};
  r.z_max = std::max(r.z_min, r.z_max);
  return r;
}

namespace {

/// Simulates o's (checked) echoes channel by channel: trace(ch, re, im) receives channel ch's
/// (ch = t * elements + e) trace over o.samples, each scatterer's echo the pulse
/// env(u) cos(omega u) at u samples from its arrival in re and, when kAnalytic, env(u) sin(omega u)
/// in im (null otherwise). `rng` has drawn the speckle when this returns.
template <bool kAnalytic, class Trace>
void simulate_traces(const DasSimulationOptions& o, std::mt19937_64& rng, Trace trace) {
  const Acquisition& acq = o.acquisition;
  const std::vector<double> ex = acq.probe.positions();
  std::vector<PointTarget> scatterers = o.points;
  const SpeckleRegion region = speckle_region(o);
  std::uniform_real_distribution<double> xd(region.x_min, region.x_max), zd(region.z_min, region.z_max);
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

  const int elements = acq.probe.elements;
  const int channels = elements * acq.transmits();
  kernels::parallel_for(std::size_t(channels), 1, 0, [&](std::size_t b, std::size_t e_end) {
    std::vector<double> re(std::size_t(o.samples)), im(kAnalytic ? std::size_t(o.samples) : 0);
    for (std::size_t ch = b; ch < e_end; ++ch) {
      const int t = static_cast<int>(ch) / elements, e = static_cast<int>(ch) % elements;
      std::fill(re.begin(), re.end(), 0.0);
      std::fill(im.begin(), im.end(), 0.0);
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
          const double envelope = s.amplitude * std::exp(-0.5 * u * u / (sigma * sigma));
          re[k] += envelope * std::cos(omega * u);
          if constexpr (kAnalytic) im[k] += envelope * std::sin(omega * u);
        }
      }
      trace(ch, re.data(), kAnalytic ? im.data() : nullptr);
    }
  });
}

/// 1 / the largest |value| of `data` (0 when all are 0).
float inverse_peak(const std::vector<float>& data) {
  float peak = 0.f;
  for (float v : data) peak = std::max(peak, std::fabs(v));
  return peak > 0 ? 1.f / peak : 0.f;
}

}  // namespace

ChannelData simulate_das_channels(const DasSimulationOptions& o) {
  check_options(o);
  ChannelData rf;
  rf.samples = o.samples;
  rf.elements = o.acquisition.probe.elements;
  rf.transmits = o.acquisition.transmits();
  rf.data.assign(rf.size(), 0.f);
  std::mt19937_64 rng(o.seed);
  simulate_traces<false>(o, rng, [&](std::size_t ch, const double* re, const double*) {
    float* out = rf.data.data() + ch * o.samples;
    for (int k = 0; k < o.samples; ++k) out[k] = static_cast<float>(re[k]);
  });
  const float scale = inverse_peak(rf.data);
  std::normal_distribution<double> nd(0.0, o.noise);
  for (float& v : rf.data) v = v * scale + (o.noise > 0 ? static_cast<float>(nd(rng)) : 0.f);
  return rf;
}

AnalyticData simulate_das_analytic(const DasSimulationOptions& o) {
  check_options(o);
  AnalyticData out =
      AnalyticData::zeros(o.samples, o.acquisition.probe.elements, o.acquisition.transmits());
  const std::size_t channels = std::size_t(out.elements) * out.transmits;
  // Channel ch's first sample in I or Q (the padding around it stays zero).
  auto first = [&](std::vector<float>& iq, std::size_t ch) {
    return iq.data() + ch * out.stride + AnalyticData::kFront;
  };
  std::mt19937_64 rng(o.seed);
  simulate_traces<true>(o, rng, [&](std::size_t ch, const double* re, const double* im) {
    float* i = first(out.i, ch);
    float* q = first(out.q, ch);
    for (int k = 0; k < o.samples; ++k) {
      i[k] = static_cast<float>(re[k]);
      q[k] = static_cast<float>(im[k]);
    }
  });
  // Scaled by I's peak, with I's noise drawn in the same order, as simulate_das_channels does its
  // RF: I is that RF exactly. Q's noise, drawn after, is independent of I's.
  const float scale = inverse_peak(out.i);
  std::normal_distribution<double> nd(0.0, o.noise);
  for (std::vector<float>* part : {&out.i, &out.q})
    for (std::size_t ch = 0; ch < channels; ++ch) {
      float* v = first(*part, ch);
      for (int k = 0; k < o.samples; ++k)
        v[k] = v[k] * scale + (o.noise > 0 ? static_cast<float>(nd(rng)) : 0.f);
    }
  return out;
}

}  // namespace usrecon::recon
