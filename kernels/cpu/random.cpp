// monte_carlo_pi on CPU threads, and the backend dispatch.
#include "usrecon/kernels/random.hpp"

#include <atomic>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::kernels {

std::uint64_t monte_carlo_count(std::uint64_t n, std::uint64_t seed, Backend backend,
                                const Exec& exec) {
  if (backend == Backend::cuda) return detail::cuda_monte_carlo_count(n, seed, exec.stream);
  // A value outside the enum (a cast integer) once ran on the CPU without a word.
  if (backend != Backend::cpu)
    throw Error("monte_carlo: backend " + std::to_string(static_cast<int>(backend)) +
                " is neither Backend::cpu nor Backend::cuda");
  const std::uint64_t counters = monte_carlo_counters(n);
  std::atomic<std::uint64_t> inside{0};
  parallel_for(counters, 1 << 16, counters < (1 << 17) ? 1 : exec.threads,
               [&](std::size_t begin, std::size_t end) {
                 std::uint64_t local = 0;
                 for (std::uint64_t c = begin; c < end; ++c)
                   local += monte_carlo_inside(c, seed, 2 * c + 1 < n);
                 inside += local;
               });
  return inside;
}

double monte_carlo_pi(std::uint64_t n, std::uint64_t seed, Backend backend, const Exec& exec) {
  if (n == 0) throw Error("monte_carlo_pi: n must be positive");
  return 4.0 * static_cast<double>(monte_carlo_count(n, seed, backend, exec)) /
         static_cast<double>(n);
}

}  // namespace usrecon::kernels
