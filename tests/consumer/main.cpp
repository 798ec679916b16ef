// Checks a few results through the installed headers and library; exits non-zero on a mismatch.
#include <cstdint>
#include <cstdio>
#include <string>

#include "usrecon/kernels/kernels.hpp"

// The version's parts as numbers, for a consumer's #if (0.2.3 added them).
#if !defined(USRECON_VERSION_NUMBER) || USRECON_VERSION_NUMBER < 203
#error "the installed package's USRECON_VERSION_NUMBER is missing or below 0.2.3's 203"
#endif

int main() {
  namespace uk = usrecon::kernels;
  const uk::HostArray<float> a(uk::Shape{4}, std::vector<float>{0, 1, 2, 3});
  const uk::HostArray<float> b(uk::Shape{4, 4}, 10.0f);
  const uk::HostArray<float> c = uk::add(a, b);  // broadcasting (4,) + (4, 4)
  const uk::HostArray<float> m = uk::matmul(b, b, uk::MatmulAlgo::tiled);
  // sum's three exported entry points (their return and output types are sum_type_t<T>).
  const auto s = uk::sum(c);
  uk::HostArray<std::int64_t> si(uk::Shape{1});
  uk::sum(uk::HostArray<std::int32_t>(uk::Shape{3}, 7), si);
  const double sd = uk::cpu_sum(m.data(), m.size());
  const double pi = uk::monte_carlo_pi(100000, 1);
  std::printf("sum %g %lld %g, matmul[0] %g, pi %g, cuda %d\n", s, static_cast<long long>(si[0]),
              sd, m[0], pi, usrecon::built_with_cuda());
  char version[32];
  std::snprintf(version, sizeof version, "%d.%d.%d", USRECON_VERSION_MAJOR, USRECON_VERSION_MINOR,
                USRECON_VERSION_PATCH);
  const bool version_ok = std::string(version) == USRECON_VERSION &&
                          USRECON_VERSION_NUMBER == USRECON_VERSION_MAJOR * 10000 + USRECON_VERSION_MINOR * 100 + USRECON_VERSION_PATCH;
  if (!version_ok) std::printf("version macros %s disagree with USRECON_VERSION %s\n", version, USRECON_VERSION);
  const bool ok = version_ok && c.shape() == uk::Shape{4, 4} && s == 4 * (40.0f + 6.0f) && si[0] == 21 &&
                  sd == 16 * 400.0 && m[0] == 400.0f && pi > 3.0 && pi < 3.3;
  return ok ? 0 : 1;
}
