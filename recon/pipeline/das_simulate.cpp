#include "usrecon/recon/das_simulate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"
#include "usrecon/recon/das_pipeline.hpp"

namespace usrecon::recon {

namespace {

void check_options(const DasSimulationOptions& o) {
  o.acquisition.validate(-1);
  if (o.samples < 1 || o.speckle < 0 || !(o.center_frequency > 0) || !(o.cycles > 0) ||
      o.noise < 0)
    throw Error("simulate: samples, frequency and cycles must be positive; speckle and noise >= 0");
  // Noise is relative to the data's peak of 1 and added in float: 1e300 gave infinite samples.
  if (!(o.noise <= 1e9))
    throw Error("simulate: the noise (--noise) is relative to the data's peak of 1, and must be at most 1e9, not " +
                number_text(o.noise));
  for (const PointTarget& p : o.points)
    if (!std::isfinite(p.amplitude)) throw Error("simulate: a point's amplitude must be finite");
  // Speckle of amplitude 0 echoes nothing: data of zeros without points, and cysts (listed in the
  // truth for metrics) with nothing to be seen against. Beside points alone it is no speckle.
  if (o.speckle > 0 && o.speckle_amplitude == 0 && (o.points.empty() || !o.cysts.empty()))
    throw Error("simulate: --speckle " + std::to_string(o.speckle) + " scatterers of --speckle-amplitude 0 echo nothing" +
                (o.cysts.empty() ? "" : ", so a --cyst has no speckle to be seen against") + ": give an amplitude > 0");
  check_speckle_amplitude(o.speckle_amplitude);
  // At or above fs / 2 the pulse aliases (and is sampled at its zero crossings at fs / 2): a
  // frequency given in Hz for --center-mhz, or --fs in MHz, gave all-zero data.
  if (!(o.center_frequency < o.acquisition.fs / 2))
    throw Error("simulate: the centre frequency " + number_text(o.center_frequency * 1e-6) +
                " MHz is not below the Nyquist frequency fs / 2 = " + number_text(o.acquisition.fs / 2e6) +
                " MHz (--center-mhz is in MHz, --fs in Hz)");
  for (double edge : {o.x_min, o.x_max, o.z_min, o.z_max})
    if (!std::isfinite(edge) || std::fabs(edge) > 1e3)
      throw Error("simulate: the speckle region must lie within 1 km of the array");
  // Scatterers behind the array (z < 0) echoed into the image as if in front of it.
  if (o.z_max > o.z_min && !(o.z_min > 0))
    throw Error("simulate: the speckle region's depths (--speckle-z-range) lie below the array, at z > 0, not from " +
                number_text(o.z_min * 1e3) + " mm");
}

}  // namespace

SpeckleRegion speckle_region(const DasSimulationOptions& o) {
  const Acquisition& acq = o.acquisition;
  const double half_span = 0.5 * (acq.probe.elements - 1) * acq.probe.pitch;
  const double last_depth = (acq.t0 + (o.samples - 1) / acq.fs) * acq.sound_speed / 2;  // the last sample's depth
  SpeckleRegion r{o.x_max > o.x_min ? o.x_min : -half_span, o.x_max > o.x_min ? o.x_max : half_span,
                  o.z_max > o.z_min ? o.z_min : 2e-3, o.z_max > o.z_min ? o.z_max : last_depth};
  r.z_max = std::max(r.z_min, r.z_max);
  return r;
}

namespace {

/// Where the echoes of a scatterer arrive: the sample (fractional, 0 = t0) at which transmit t's
/// wave, scattered at (x, z), reaches element e. The delays of delay/*.hpp, as reconstruct's.
class EchoTiming {
 public:
  explicit EchoTiming(const Acquisition& acq)
      : acq_(acq), ex_(acq.probe.positions()), inv_c_fs_(acq.fs / acq.sound_speed), t0_fs_(acq.t0 * acq.fs) {
    for (std::size_t t = 0; t < acq.source_x.size(); ++t)  // diverging and focused waves
      r0_.push_back(das::virtual_source_reference_distance(acq.source_x[t], acq.source_z[t], ex_, acq.time_zero));
  }

  double sample(double x, double z, int t, int e) const {
    if (acq_.model == Model::PlaneWave) {
      const double a = acq_.angles[t];
      return das::planewave_sample(x, z, ex_[e], std::cos(a), std::sin(a),
                                   das::planewave_x_reference(a, ex_.front(), ex_.back(), acq_.time_zero),
                                   inv_c_fs_, t0_fs_);
    }
    if (has_virtual_sources(acq_.model))
      return das::virtual_source_sample(x, z, acq_.source_x[t], acq_.source_z[t], r0_[t], ex_[e], inv_c_fs_, t0_fs_);
    const int te = acq_.tx_elements.empty() ? t : acq_.tx_elements[t];
    return das::synthetic_aperture_sample(x, z, ex_[te], ex_[e], inv_c_fs_, t0_fs_);
  }

 private:
  const Acquisition& acq_;
  std::vector<double> ex_;
  double inv_c_fs_, t0_fs_;
  std::vector<double> r0_;  // each virtual source's reference distance
};

/// The pulse env(u) cos(omega u), u in samples: a Gaussian envelope of standard deviation sigma,
/// taken to reach 4 sigma either side of the echo.
struct Pulse {
  double omega, sigma;
  int reach;
};

Pulse pulse_of(const DasSimulationOptions& o) {
  const double sigma = detail::pulse_sigma(o.cycles * o.acquisition.fs / o.center_frequency);  // FWHM in samples
  return {2 * std::numbers::pi * o.center_frequency / o.acquisition.fs, sigma, detail::pulse_reach(sigma)};
}

/// Simulates o's (checked) echoes channel by channel: trace(ch, re, im) receives channel ch's
/// (ch = t * elements + e) trace over o.samples, each scatterer's echo the pulse
/// env(u) cos(omega u) at u samples from its arrival in re and, when kAnalytic, env(u) sin(omega u)
/// in im (null otherwise). `rng` has drawn the speckle when this returns.
template <bool kAnalytic, class Trace>
void simulate_traces(const DasSimulationOptions& o, std::mt19937_64& rng, Trace trace) {
  const Acquisition& acq = o.acquisition;
  std::vector<PointTarget> scatterers = o.points;
  const SpeckleRegion region = speckle_region(o);
  std::uniform_real_distribution<double> xd(region.x_min, region.x_max), zd(region.z_min, region.z_max);
  std::normal_distribution<double> ad(0.0, o.speckle_amplitude);
  // Draws falling in a cyst are drawn again: cysts that cover the whole region drew for ever
  // (a probe's --cyst 0,20,100). A million misses in a row (0.05 s a cyst) end it; a region
  // 1e-4 of which the cysts leave free misses that often with a probability of e^-100.
  constexpr int kMostMissesInARow = 1000000;
  int misses = 0;
  for (int n = 0; n < o.speckle;) {
    if (misses == kMostMissesInARow)
      throw Error("simulate: the cysts cover (nearly) all of the speckle region: " + std::to_string(n) + " of " +
                  std::to_string(o.speckle) + " speckle scatterers fell outside them, then none in " +
                  std::to_string(kMostMissesInARow) + " draws (--speckle-x-range and --speckle-z-range set the "
                  "region, in mm)");
    const PointTarget s{xd(rng), zd(rng), ad(rng)};
    const bool in_cyst = std::any_of(o.cysts.begin(), o.cysts.end(), [&](const Cyst& c) {
      return std::hypot(s.x - c.x, s.z - c.z) < c.radius;
    });
    if (in_cyst) {
      ++misses;
      continue;
    }
    misses = 0;
    scatterers.push_back(s);
    ++n;
  }
  // The data are scaled to peak at 1 after the traces are formed in double and stored as float:
  // amplitudes past float's range (a point of amplitude 1e39) gave NaN and infinite samples, and
  // tiny ones subnormal floats. A power of two brings the largest to [0.5, 1) first, which scales
  // every value exactly, so the data of amplitudes within range are the same bits as before.
  double largest = 0;
  for (const PointTarget& s : scatterers) largest = std::max(largest, std::fabs(s.amplitude));
  if (largest > 0 && std::isfinite(largest)) {
    int exponent = 0;
    (void)std::frexp(largest, &exponent);
    for (PointTarget& s : scatterers) s.amplitude = std::ldexp(s.amplitude, -exponent);
  }

  // Fields named, not bound: clang before 16 cannot capture structured bindings in the lambda.
  const Pulse pulse = pulse_of(o);
  const double omega = pulse.omega, sigma = pulse.sigma;
  const int reach = pulse.reach;
  const EchoTiming timing(acq);

  const int elements = acq.probe.elements;
  const int channels = elements * acq.transmits();
  kernels::parallel_for(std::size_t(channels), 1, 0, [&](std::size_t b, std::size_t e_end) {
    std::vector<double> re(std::size_t(o.samples)), im(kAnalytic ? std::size_t(o.samples) : 0);
    for (std::size_t ch = b; ch < e_end; ++ch) {
      const int t = static_cast<int>(ch) / elements, e = static_cast<int>(ch) % elements;
      std::fill(re.begin(), re.end(), 0.0);
      std::fill(im.begin(), im.end(), 0.0);
      for (const PointTarget& s : scatterers) {
        const double pos = timing.sample(s.x, s.z, t, e);
        if (pos + reach < 0 || pos - reach > o.samples) continue;  // and pos fits an int
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

/// check_options, and refuses points that all lie outside the record.
void check_simulation(const DasSimulationOptions& o) {
  detail::refuse_points_outside_record(points_outside_record(o), o.points.size());
}

/// 1 / the largest |value| of `data` (0 when all are 0).
float inverse_peak(const std::vector<float>& data) {
  float peak = 0.f;
  for (float v : data) peak = std::max(peak, std::fabs(v));
  return peak > 0 ? 1.f / peak : 0.f;
}

}  // namespace

PointsOutsideRecord points_outside_record(const DasSimulationOptions& o) {
  check_options(o);
  const Acquisition& acq = o.acquisition;
  const EchoTiming timing(acq);
  detail::RecordCoverage coverage(o.points.size(), o.samples);
  std::vector<std::array<double, 2>> positions;
  for (std::size_t k = 0; k < o.points.size(); ++k) {
    positions.push_back({o.points[k].x * 1e3, o.points[k].z * 1e3});
    for (int t = 0; t < acq.transmits(); ++t)
      for (int e = 0; e < acq.probe.elements; ++e) coverage.echo(k, timing.sample(o.points[k].x, o.points[k].z, t, e));
  }
  const double half_c = acq.sound_speed / 2;
  return coverage.result(positions, "the record (" + std::to_string(o.samples) + " samples at " +
                                        number_text(acq.fs * 1e-6) + " MHz from t0 = " + number_text(acq.t0) +
                                        " s) covers depths of about " + number_text(std::max(0.0, acq.t0 * half_c) * 1e3) +
                                        " to " + number_text((acq.t0 + (o.samples - 1) / acq.fs) * half_c * 1e3) +
                                        " mm below the array (c = " + number_text(acq.sound_speed) + " m/s)");
}

ChannelData simulate_das_channels(const DasSimulationOptions& o) {
  check_simulation(o);
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
  check_simulation(o);
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
