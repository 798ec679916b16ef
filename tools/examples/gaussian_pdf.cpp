// The tutorial's gaussian_pdf ufunc over 1 000 000 float32 in [-3, 3), against a plain loop (the
// tutorial compares with scipy.stats.norm.pdf).
//   example_gaussian_pdf [--cuda]
#include <random>

#include "example_common.hpp"

namespace uk = usrecon::kernels;

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  const std::int64_t n = 1'000'000;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  uk::HostArray<float> x(uk::Shape{n});
  for (float& v : x) v = u(gen);
  const float mean = 0.0f, sigma = 1.0f;

  std::printf("gaussian_pdf(x[0], 0.0, 1.0) = %.8g\n", uk::math::gaussian_pdf(x[0], 0.0f, 1.0f));

  uk::HostArray<float> ref(uk::Shape{n});
  example::Timer t0;
  for (std::int64_t i = 0; i < n; ++i)
    ref[i] = std::exp(-0.5f * ((x[i] - mean) / sigma) * ((x[i] - mean) / sigma)) /
             (sigma * std::sqrt(2.0f * float(M_PI)));
  const double loop_s = t0.seconds();

  uk::HostArray<float> y(uk::Shape{n});
  double best = 1e30;
  if (cuda) {
    const auto dx = uk::to_device(x);
    auto dy = uk::device_array<float>(x.shape());
    for (int rep = 0; rep < 7; ++rep) {  // device arrays, preallocated output: kernel time
      uk::Event start, stop;
      start.record();
      uk::gaussian_pdf(dx, mean, sigma, dy);
      stop.record();
      best = std::min(best, 1e-3 * uk::Event::elapsed_ms(start, stop));
    }
    dy.copy_to_host(y);
  } else {
    for (int rep = 0; rep < 7; ++rep) {
      example::Timer t;
      uk::gaussian_pdf(x, mean, sigma, y);
      best = std::min(best, t.seconds());
    }
  }
  std::printf("gaussian_pdf [%s]: %.3f ms per call (best of 7)\n", cuda ? "cuda" : "cpu", 1e3 * best);
  std::printf("plain loop (the scipy stand-in): %.3f ms\n", 1e3 * loop_s);
  const bool same = example::allclose(y, ref);
  std::printf("results agree: %s\n", same ? "True" : "False");
  return same ? 0 : 1;
}
