// Test data and comparisons shared by the kernel benchmarks (bench_kernels_cpu.cpp,
// bench_kernels_cuda.cu) and the nvcc-only kernels_cuda_check.cu. No Google Benchmark here, so the
// check builds on a machine without it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>

#include "usrecon/kernels/array.hpp"

namespace usrecon_bench {

/// n floats uniform in [-1, 1), reproducible for a seed.
inline usrecon::kernels::HostArray<float> random_floats(std::int64_t n, unsigned seed) {
  usrecon::kernels::HostArray<float> a(usrecon::kernels::Shape{n});
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& v : a) v = d(gen);
  return a;
}

/// Worst |c[i][j] - exact| / sum_p |a[i][p] b[p][j]| over `samples` random entries of c = a b
/// (n x n, row-major), `exact` the dot product in double. A float32 dot product accumulated in
/// order is within about 2.1e-7 of it at n = 4096 (inputs uniform in [-1, 1)); TF32 inputs give
/// 2.6e-5, so kSgemmSampleBound tells them apart. NaN, once met, is the result.
inline constexpr double kSgemmSampleBound = 1e-6;
template <class A, class B, class C>
double sgemm_sample_error(const A& a, const B& b, const C& c, std::int64_t n, int samples = 256) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> index(0, n - 1);
  double worst = 0;
  for (int s = 0; s < samples; ++s) {
    const std::int64_t i = index(rng), j = index(rng);
    double exact = 0, scale = 0;
    for (std::int64_t p = 0; p < n; ++p) {
      const double prod = double(a[i * n + p]) * double(b[p * n + j]);
      exact += prod;
      scale += std::abs(prod);
    }
    const double e = std::abs(double(c[i * n + j]) - exact) / scale;
    if (std::isnan(e) || e > worst) worst = e;
    if (std::isnan(worst)) break;
  }
  return worst;
}

}  // namespace usrecon_bench
