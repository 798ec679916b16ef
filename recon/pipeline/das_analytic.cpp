// Analytic signal of RF channel data, per channel, by FFT (scipy.signal.hilbert's definition), and
// of baseband IQ data by FFT interpolation and remodulation.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <opencv2/core.hpp>

#include "hilbert.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/das.hpp"

namespace usrecon::recon {

namespace {

/// Calls chunk(first channel, rows) over every channel in chunks of 16 (one cv::dft over rows
/// per chunk), the chunks spread over `threads`.
template <class Chunk>
void for_channel_chunks(int channels, int threads, Chunk chunk) {
  constexpr int kRows = 16;
  kernels::parallel_for(std::size_t(channels + kRows - 1) / kRows, 1, threads,
                        [&](std::size_t begin, std::size_t end) {
                          for (std::size_t c = begin; c < end; ++c) {
                            const int c0 = static_cast<int>(c) * kRows;
                            chunk(c0, std::min(kRows, channels - c0));
                          }
                        });
}

}  // namespace

AnalyticData analytic_signal(const ChannelData& rf, int threads, int upsample) {
  if (rf.samples <= 0 || rf.elements <= 0 || rf.transmits <= 0 || rf.data.size() != rf.size())
    throw Error("analytic signal: channel data size does not match its shape");
  if (upsample < 1 || upsample > 64) throw Error("analytic signal: upsample must be 1 to 64");
  if (std::int64_t(rf.samples) * upsample > std::numeric_limits<int>::max() / 2)
    throw Error("analytic signal: " + std::to_string(rf.samples) + " samples upsampled " + std::to_string(upsample) +
                "x are too many for one channel");
  const int n = rf.samples;
  const int channels = rf.elements * rf.transmits;
  if (upsample > 1) {
    // The analytic spectrum (DC and, for even n, Nyquist once; positive frequencies doubled)
    // zero-padded to m = n k bins; the Nyquist bin, a real cosine, is split between bins n/2 and
    // m - n/2 (+ and - fs/2) so that I stays the data's band-limited interpolation.
    const int m = n * upsample, positive = (n + 1) / 2;
    AnalyticData out = AnalyticData::zeros(m, rf.elements, rf.transmits);
    for_channel_chunks(channels, threads, [&](int c0, int rows) {
      const cv::Mat lines(rows, n, CV_32F, const_cast<float*>(rf.data.data()) + std::size_t(c0) * n);
      cv::Mat spectrum, padded = cv::Mat::zeros(rows, m, CV_32FC2), interpolated;
      cv::dft(lines, spectrum, cv::DFT_ROWS | cv::DFT_COMPLEX_OUTPUT);
      for (int r = 0; r < rows; ++r) {
        const auto* from = spectrum.ptr<cv::Vec2f>(r);
        auto* to = padded.ptr<cv::Vec2f>(r);
        to[0] = from[0];
        for (int f = 1; f < positive; ++f) to[f] = from[f] * 2.0f;
        if (n % 2 == 0) {
          to[n / 2] = from[n / 2] * 0.5f;
          to[m - n / 2] = from[n / 2] * 0.5f;
        }
      }
      cv::idft(padded, interpolated, cv::DFT_ROWS | cv::DFT_SCALE);  // 1/m: times upsample below
      for (int r = 0; r < rows; ++r) {
        const auto* row = interpolated.ptr<cv::Vec2f>(r);
        float* I = out.i.data() + std::size_t(c0 + r) * out.stride + AnalyticData::kFront;
        float* Q = out.q.data() + std::size_t(c0 + r) * out.stride + AnalyticData::kFront;
        for (int k = 0; k < m; ++k) {
          I[k] = row[k][0] * float(upsample);
          Q[k] = row[k][1] * float(upsample);
        }
      }
    });
    return out;
  }
  AnalyticData out = AnalyticData::zeros(rf.samples, rf.elements, rf.transmits);
  // The analytic signal is x + i H{x}: I is the data itself, Q its Hilbert transform.
  for_channel_chunks(channels, threads, [&](int c0, int rows) {
    // A header over the chunk's channels (cv::Mat wants a mutable pointer; the DFT only reads).
    const cv::Mat lines(rows, n, CV_32F, const_cast<float*>(rf.data.data()) + std::size_t(c0) * n);
    const cv::Mat hilbert = detail::hilbert_rows(lines);
    for (int r = 0; r < rows; ++r) {
      const int c = c0 + r;
      const float* x = lines.ptr<float>(r);
      const float* h = hilbert.ptr<float>(r);
      std::copy(x, x + n, out.i.data() + std::size_t(c) * out.stride + AnalyticData::kFront);
      std::copy(h, h + n, out.q.data() + std::size_t(c) * out.stride + AnalyticData::kFront);
    }
  });
  return out;
}

double mean_phase_step(const AnalyticData& data) {
  // The sum of a[k+1] conj(a[k]) |a[k]|^4 over the channels: its angle is the mean step weighted
  // by the square of the power, so that the echoes decide it rather than the noise between them
  // (weighted by the power alone, white noise at a tenth of the peak pulled 8 samples a cycle to
  // 4.7). At most 64 channels, spread over all: an estimate, not worth a second pass over a
  // frame's data (tens of millions of samples for 75 plane waves).
  std::complex<double> sum = 0;
  const std::size_t channels = std::size_t(data.elements) * data.transmits;
  const std::size_t step = (channels + 63) / 64;
  for (std::size_t c = 0; c < channels; c += step) {
    const float* I = data.i.data() + c * data.stride + AnalyticData::kFront;
    const float* Q = data.q.data() + c * data.stride + AnalyticData::kFront;
    for (int k = 0; k + 1 < data.samples; ++k) {
      const std::complex<double> a(I[k], Q[k]), b(I[k + 1], Q[k + 1]);
      sum += b * std::conj(a) * (std::norm(a) * std::norm(a));
    }
  }
  return sum == 0.0 ? 0.0 : std::fabs(std::arg(sum));
}

std::optional<InterpolationLoss> interpolation_loss(Interp interp, double samples_per_cycle, int upsample) {
  constexpr double kEnough = 8 * 0.95;  // 8 samples a cycle, within the estimate's 5 %
  if (!(samples_per_cycle > 2) || samples_per_cycle >= kEnough) return std::nullopt;
  // Said for the nearest whole number of samples a cycle (3 to 7), so that a cine's frames, whose
  // estimates differ in the second digit, say the same words (said once, with the frames that
  // repeat it), and the loss and K follow from that number.
  const double shown = std::clamp(std::round(samples_per_cycle), 3.0, 7.0);
  char what[200];
  if (interp == Interp::Linear)
    std::snprintf(what, sizeof what,
                  "linear interpolation at about %.0f samples a cycle dips each channel's envelope by up to %.2g dB "
                  "between samples (the image loses amplitude unevenly and its speckle and points scallop)",
                  shown, -20 * std::log10(std::cos(std::numbers::pi / shown)));
  else
    std::snprintf(what, sizeof what,
                  "nearest-sample interpolation at about %.0f samples a cycle rounds each channel's delay by up to "
                  "%.2g degrees of phase (the sum over the aperture loses focus)",
                  shown, 180 / shown);
  return InterpolationLoss{what, std::max(1, upsample) * static_cast<int>(std::ceil(8 / shown))};
}

int iq_upsampling(double modulation_frequency, double fs) {
  if (!(fs > 0) || !std::isfinite(modulation_frequency))
    throw Error("IQ data: the sampling frequency must be positive and the modulation frequency finite");
  const double k = std::ceil(4 * std::fabs(modulation_frequency) / fs - 1e-9);
  if (k > 64) throw Error("IQ data: a modulation frequency of " + std::to_string(modulation_frequency) +
                          " Hz sampled at " + std::to_string(fs) + " Hz would need more than 64x upsampling");
  return std::max(1, static_cast<int>(k));
}

AnalyticData analytic_from_baseband(const ChannelData& iq, double fs, int upsample, int threads) {
  if (iq.samples <= 0 || iq.elements <= 0 || iq.transmits <= 0 || iq.data.size() != iq.size() ||
      iq.imag.size() != iq.size())
    throw Error("analytic signal of IQ data: I and Q must both match the data's shape");
  if (upsample < 1 || !(fs > 0)) throw Error("analytic signal of IQ data: upsample >= 1 and fs > 0 are needed");
  // The upsampled channel's length is an int everywhere downstream (AnalyticData, cv::Mat).
  if (std::int64_t(iq.samples) * upsample > std::numeric_limits<int>::max() / 2)
    throw Error("analytic signal of IQ data: " + std::to_string(iq.samples) + " samples upsampled " +
                std::to_string(upsample) + "x are too many for one channel");
  const int n = iq.samples, m = n * upsample;
  AnalyticData out = AnalyticData::zeros(m, iq.elements, iq.transmits);
  const int channels = iq.elements * iq.transmits;
  // The carrier at the output's sample times, once for all channels (double: the phase of a
  // 10 MHz carrier over 100 us needs it).
  std::vector<std::complex<float>> carrier(static_cast<std::size_t>(m));
  for (int k = 0; k < m; ++k) {
    const double t = iq.iq_time0 + k / (fs * upsample);
    const double phase = 2 * std::numbers::pi * std::fmod(iq.modulation_frequency * t, 1.0);
    carrier[std::size_t(k)] = {float(std::cos(phase)), float(std::sin(phase))};
  }
  const int positive = (n + 1) / 2;  // bins 0 .. positive-1 are the non-negative frequencies
  for_channel_chunks(channels, threads, [&](int c0, int rows) {
    cv::Mat lines(rows, n, CV_32FC2);
    for (int r = 0; r < rows; ++r) {
      const float* I = iq.data.data() + std::size_t(c0 + r) * n;
      const float* Q = iq.imag.data() + std::size_t(c0 + r) * n;
      auto* row = lines.ptr<cv::Vec2f>(r);
      for (int s = 0; s < n; ++s) row[s] = {I[s], Q[s]};
    }
    cv::Mat spectrum, padded = cv::Mat::zeros(rows, m, CV_32FC2), interpolated;
    cv::dft(lines, spectrum, cv::DFT_ROWS);
    for (int r = 0; r < rows; ++r) {
      const auto* from = spectrum.ptr<cv::Vec2f>(r);
      auto* to = padded.ptr<cv::Vec2f>(r);
      for (int f = 0; f < positive; ++f) to[f] = from[f];
      for (int f = positive; f < n; ++f) to[m - (n - f)] = from[f];
      if (n % 2 == 0 && upsample > 1) {  // the Nyquist bin is shared by +fs/2 and -fs/2
        to[n / 2] = from[n / 2] * 0.5f;
        to[m - n / 2] = from[n / 2] * 0.5f;
      }
    }
    cv::idft(padded, interpolated, cv::DFT_ROWS | cv::DFT_SCALE);  // 1/m: times upsample below
    for (int r = 0; r < rows; ++r) {
      const int c = c0 + r;
      const auto* row = interpolated.ptr<cv::Vec2f>(r);
      float* I = out.i.data() + std::size_t(c) * out.stride + AnalyticData::kFront;
      float* Q = out.q.data() + std::size_t(c) * out.stride + AnalyticData::kFront;
      for (int k = 0; k < m; ++k) {
        const std::complex<float> v =
            std::complex<float>(row[k][0], row[k][1]) * float(upsample) * carrier[std::size_t(k)];
        I[k] = v.real();
        Q[k] = v.imag();
      }
    }
  });
  return out;
}

AnalyticData delay_transmits(const AnalyticData& data, const std::vector<double>& delay_samples, int extra,
                             int threads) {
  if (delay_samples.size() != std::size_t(data.transmits) || extra < 0)
    throw Error("delay_transmits: one delay per transmit and extra >= 0 are needed");
  for (double d : delay_samples)
    if (!(d >= 0 && d <= extra)) throw Error("delay_transmits: a delay is outside [0, extra] samples");
  const int n = data.samples, m = n + extra;
  AnalyticData out = AnalyticData::zeros(m, data.elements, data.transmits);
  for_channel_chunks(data.elements * data.transmits, threads, [&](int c0, int rows) {
    // Each channel zero-padded to m samples, so the delayed signal does not wrap around.
    cv::Mat lines = cv::Mat::zeros(rows, m, CV_32FC2), spectrum, delayed;
    for (int r = 0; r < rows; ++r) {
      const std::size_t at = std::size_t(c0 + r) * data.stride + AnalyticData::kFront;
      auto* row = lines.ptr<cv::Vec2f>(r);
      for (int s = 0; s < n; ++s) row[s] = {data.i[at + s], data.q[at + s]};
    }
    cv::dft(lines, spectrum, cv::DFT_ROWS);
    for (int r = 0; r < rows; ++r) {
      const double d = delay_samples[std::size_t((c0 + r) / data.elements)];
      auto* row = spectrum.ptr<cv::Vec2f>(r);
      for (int f = 0; f < m; ++f) {
        const int signed_f = f <= m / 2 ? f : f - m;  // frequency in cycles per m samples
        const double phase = -2 * std::numbers::pi * signed_f * d / m;
        const std::complex<float> v = std::complex<float>(row[f][0], row[f][1]) *
                                      std::complex<float>(float(std::cos(phase)), float(std::sin(phase)));
        row[f] = {v.real(), v.imag()};
      }
    }
    cv::idft(spectrum, delayed, cv::DFT_ROWS | cv::DFT_SCALE);
    for (int r = 0; r < rows; ++r) {
      const std::size_t at = std::size_t(c0 + r) * out.stride + AnalyticData::kFront;
      const auto* row = delayed.ptr<cv::Vec2f>(r);
      for (int s = 0; s < m; ++s) {
        out.i[at + s] = row[s][0];
        out.q[at + s] = row[s][1];
      }
    }
  });
  return out;
}

}  // namespace usrecon::recon
