// The tutorial's Monte-Carlo estimate of pi over 100 ... 100 000 000 samples. Counter-based
// random numbers (Philox): the CPU and the GPU print the same estimates for the same seed.
//   example_monte_carlo_pi [--cuda] [--seed N]
#include <cstdlib>
#include <numbers>

#include "example_common.hpp"

namespace uk = usrecon::kernels;

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv, {"--seed"});
  std::uint64_t seed = 2024;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
  std::printf("numpy pi:%.15f\n", std::numbers::pi);
  for (std::uint64_t n : {100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 5000000ull, 100000000ull}) {
    const double pi = uk::monte_carlo_pi(n, seed, cuda ? uk::Backend::cuda : uk::Backend::cpu);
    std::printf("number of sample:%10llu, pi:%.8f, diff:%.10f\n", (unsigned long long)n, pi,
                std::abs(pi - std::numbers::pi));
  }
  return 0;
}
