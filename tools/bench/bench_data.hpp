// Test data and comparisons shared by the kernel benchmarks (bench_kernels_cpu.cpp,
// bench_kernels_cuda.cu) and the nvcc-only kernels_cuda_check.cu. No Google Benchmark here, so the
// check builds on a machine without it.
#pragma once

#include <algorithm>
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

/// Largest |a[i] - b[i]|.
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

}  // namespace usrecon_bench
