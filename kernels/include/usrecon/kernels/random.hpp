// Counter-based random numbers (Philox4x32-10) and the tutorial's Monte-Carlo estimate of pi.
// Philox maps (counter, key) to random bits with no state, so every sample can be computed
// independently, in any order, on any thread or GPU: CPU and CUDA give identical results.
#pragma once

#include <cstdint>

#include "usrecon/kernels/backend.hpp"
#include "usrecon/kernels/common.hpp"

namespace usrecon::kernels {

/// Four 32-bit words: a Philox counter or its output.
struct Philox4x32Block {
  std::uint32_t v[4];
};

/// Philox4x32 with 10 rounds (Salmon et al., SC'11; the Random123 reference algorithm).
USRECON_HD inline Philox4x32Block philox4x32_10(Philox4x32Block ctr, std::uint32_t key0,
                                                std::uint32_t key1) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(m0) * ctr.v[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(m1) * ctr.v[2];
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    ctr = {{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += w0;
    key1 += w1;
  }
  return ctr;
}

/// The Monte-Carlo samples in counter c (two points, from the four words): how many of them fall
/// inside the quarter circle. Coordinates are 24-bit integers, so the test x² + y² < 2^48 is exact
/// on every device. `both` = false counts only the first point (odd sample counts).
USRECON_HD inline unsigned monte_carlo_inside(std::uint64_t c, std::uint64_t seed, bool both) {
  const Philox4x32Block r = philox4x32_10(
      {{static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), 0u, 0u}},
      static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  constexpr std::uint64_t one = std::uint64_t(1) << 48;
  unsigned inside = 0;
  for (int p = 0; p < (both ? 2 : 1); ++p) {
    const std::uint64_t x = r.v[2 * p] >> 8, y = r.v[2 * p + 1] >> 8;
    inside += x * x + y * y < one ? 1u : 0u;
  }
  return inside;
}

/// Philox calls for n samples, two a call: ⌈n/2⌉, without the overflow of (n + 1) / 2 at n = 2^64 - 1.
USRECON_HD constexpr std::uint64_t monte_carlo_counters(std::uint64_t n) { return n / 2 + (n & 1); }

/// The CUDA kernel's block program (cuda/random.cu; the tests run it on the host): thread `tid`
/// of block `b` of `blocks`, `threads` a block (whole warps), counts the counters
/// c = b·threads + tid + j·blocks·threads below ⌈n/2⌉; the warp adds its lanes' counts by
/// shuffles, and lane 0 adds the warp's to *inside (integers: the order does not matter).
USRECON_EXEC_CHECK_DISABLE
template <class Block>
USRECON_HD void monte_carlo_block_program(std::uint64_t n, std::uint64_t seed, unsigned b,
                                          unsigned blocks, int threads, int tid,
                                          unsigned long long* inside, const Block& block) {
  const std::uint64_t counters = monte_carlo_counters(n);
  const std::uint64_t step = std::uint64_t(blocks) * std::uint64_t(threads);
  unsigned long long local = 0;
  for (std::uint64_t c = std::uint64_t(b) * std::uint64_t(threads) + std::uint64_t(tid);
       c < counters; c += step)
    local += monte_carlo_inside(c, seed, 2 * c + 1 < n);
  for (int offset = 16; offset > 0; offset /= 2) local += block.shfl_down(local, offset);
  if (tid % 32 == 0 && local) block.atomic_add(inside, local);
}

/// Number of the first n samples (for `seed`) inside the quarter circle.
std::uint64_t monte_carlo_count(std::uint64_t n, std::uint64_t seed, Backend backend = Backend::cpu,
                                const Exec& exec = {});

/// The tutorial's estimate 4 · inside / n. Same n and seed give the same value on CPU and CUDA.
double monte_carlo_pi(std::uint64_t n, std::uint64_t seed, Backend backend = Backend::cpu,
                      const Exec& exec = {});

}  // namespace usrecon::kernels
