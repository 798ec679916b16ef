// Checks a few results through the installed headers and library; exits non-zero on a mismatch.
#include <cstdio>

#include "usrecon/kernels/kernels.hpp"

int main() {
  namespace uk = usrecon::kernels;
  const uk::HostArray<float> a(uk::Shape{4}, std::vector<float>{0, 1, 2, 3});
  const uk::HostArray<float> b(uk::Shape{4, 4}, 10.0f);
  const uk::HostArray<float> c = uk::add(a, b);  // broadcasting (4,) + (4, 4)
  const uk::HostArray<float> m = uk::matmul(b, b, uk::MatmulAlgo::tiled);
  const auto s = uk::sum(c);
  const double pi = uk::monte_carlo_pi(100000, 1);
  std::printf("sum %g, matmul[0] %g, pi %g, cuda %d\n", s, m[0], pi, usrecon::built_with_cuda());
  const bool ok = c.shape() == uk::Shape{4, 4} && s == 4 * (40.0f + 6.0f) && m[0] == 400.0f &&
                  pi > 3.0 && pi < 3.3;
  return ok ? 0 : 1;
}
