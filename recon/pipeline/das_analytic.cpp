// Analytic signal of RF channel data, per channel, by FFT (scipy.signal.hilbert's definition).
#include <opencv2/core.hpp>

#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/das.hpp"

namespace usrecon::recon {

AnalyticData analytic_signal(const ChannelData& rf, int threads) {
  if (rf.samples <= 0 || rf.elements <= 0 || rf.transmits <= 0 || rf.data.size() != rf.size())
    throw Error("analytic signal: channel data size does not match its shape");
  AnalyticData out = AnalyticData::zeros(rf.samples, rf.elements, rf.transmits);
  const int n = rf.samples;
  const int channels = rf.elements * rf.transmits;
  const int half = n / 2;
  // Chunks of channels, one cv::dft over rows per chunk.
  constexpr int kRows = 16;
  kernels::parallel_for(std::size_t(channels + kRows - 1) / kRows, 1, threads,
                        [&](std::size_t begin, std::size_t end) {
    for (std::size_t chunk = begin; chunk < end; ++chunk) {
      const int c0 = static_cast<int>(chunk) * kRows;
      const int rows = std::min(kRows, channels - c0);
      cv::Mat lines(rows, n, CV_32F);
      for (int r = 0; r < rows; ++r) {
        const float* src = rf.data.data() + std::size_t(c0 + r) * n;
        std::copy(src, src + n, lines.ptr<float>(r));
      }
      cv::Mat spectrum;
      cv::dft(lines, spectrum, cv::DFT_ROWS | cv::DFT_COMPLEX_OUTPUT);
      for (int r = 0; r < rows; ++r) {
        auto* row = spectrum.ptr<cv::Vec2f>(r);
        for (int f = 1; f < n; ++f) {
          const bool nyquist = (n % 2 == 0) && f == half;
          row[f] *= nyquist ? 1.f : (f < (n + 1) / 2 ? 2.f : 0.f);
        }
      }
      cv::Mat analytic;
      cv::idft(spectrum, analytic, cv::DFT_ROWS | cv::DFT_COMPLEX_OUTPUT | cv::DFT_SCALE);
      for (int r = 0; r < rows; ++r) {
        const int c = c0 + r;
        const auto* row = analytic.ptr<cv::Vec2f>(r);
        float* I = out.i.data() + std::size_t(c) * out.stride + AnalyticData::kFront;
        float* Q = out.q.data() + std::size_t(c) * out.stride + AnalyticData::kFront;
        for (int s = 0; s < n; ++s) {
          I[s] = row[s][0];
          Q[s] = row[s][1];
        }
      }
    }
  });
  return out;
}

}  // namespace usrecon::recon
