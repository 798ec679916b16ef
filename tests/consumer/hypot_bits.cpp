// usrecon::kernels::math::hypot as a consumer compiles it, with its own flags (the test builds
// this file with and without fused multiply-adds): prints "x y hypot" per line, each double as
// its bits in hex, for pairs over the whole range, whole right triangles and the edges. The test
// compares every line with its own build's hypot, bit for bit.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "usrecon/kernels/math.hpp"

namespace {

std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void print(double x, double y) {
  std::printf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %08" PRIx32 "\n", bits(x), bits(y),
              bits(usrecon::kernels::math::hypot(x, y)), [&] {
                const float f = usrecon::kernels::math::hypot(static_cast<float>(x), static_cast<float>(y));
                std::uint32_t b = 0;
                std::memcpy(&b, &f, sizeof b);
                return b;
              }());
}

}  // namespace

int main() {
  std::mt19937_64 gen(2026);
  std::uniform_int_distribution<int> exponent(-1074, 1023), near(-30, 30);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  for (int i = 0; i < 20000; ++i) {
    const int ex = exponent(gen), ey = i % 2 == 0 ? std::max(-1074, std::min(1023, ex + near(gen))) : exponent(gen);
    print(std::ldexp(significand(gen), ex), std::ldexp(significand(gen), ey));
  }
  for (int m = 2; m < 40; ++m)
    for (int n = 1; n < m; ++n) print(double(m * m - n * n), double(2 * m * n));
  print(0.1, 8.4);
  print(3.5, 5.9);
  print(6.1, 0.4);
  return 0;
}
