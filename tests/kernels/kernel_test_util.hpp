// Helpers shared by the kernel tests: seeded random arrays and plain reference loops.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "usrecon/kernels/array.hpp"

namespace usrecon::kernels::testing {

/// Random values: floats uniform in [lo, hi), integers uniform in [lo, hi].
template <class T>
HostArray<T> random_array(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  HostArray<T> a(shape);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<std::int64_t> d(static_cast<std::int64_t>(lo),
                                                  static_cast<std::int64_t>(hi));
    for (T& v : a) v = static_cast<T>(d(gen));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (T& v : a) v = static_cast<T>(d(gen));
  }
  return a;
}

/// Row-major offset of output index i in an operand of shape `s` broadcast to `out`.
inline std::int64_t broadcast_offset(const Shape& s, const Shape& out, std::int64_t i) {
  std::int64_t off = 0, stride = 1;
  for (int d = out.ndim() - 1; d >= 0; --d) {
    const std::int64_t idx = i % out[d];
    i /= out[d];
    const int sd = d - (out.ndim() - s.ndim());
    if (sd >= 0) {
      if (s[sd] != 1) off += idx * stride;
      stride *= s[sd];
    }
  }
  return off;
}

/// c = a · b with a long double accumulator: the reference for random inputs.
template <class T>
std::vector<long double> reference_matmul(const HostArray<T>& a, const HostArray<T>& b,
                                          std::int64_t batch, std::int64_t m, std::int64_t n,
                                          std::int64_t k) {
  std::vector<long double> c(static_cast<std::size_t>(batch * m * n), 0.0L);
  const std::int64_t sa = a.ndim() == 3 && a.shape()[0] > 1 ? m * k : 0;
  const std::int64_t sb = b.ndim() == 3 && b.shape()[0] > 1 ? k * n : 0;
  for (std::int64_t bi = 0; bi < batch; ++bi)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) {
        const long double aip = a[static_cast<std::size_t>(bi * sa + i * k + p)];
        for (std::int64_t j = 0; j < n; ++j)
          c[static_cast<std::size_t>((bi * m + i) * n + j)] +=
              aip * static_cast<long double>(b[static_cast<std::size_t>(bi * sb + p * n + j)]);
      }
  return c;
}

}  // namespace usrecon::kernels::testing
