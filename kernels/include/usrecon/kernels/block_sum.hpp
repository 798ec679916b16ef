// sum()'s two GPU passes as host-device block programs: cuda/reduce.cu runs them with
// __syncthreads and __shfl_down_sync (cuda::DeviceBlock); the tests run them on the host with one
// std::thread per CUDA thread (tests/kernels/block_emulator.hpp), so the tree, the grid-stride
// ranges and the barriers are checked without a GPU, and the GPU's sum can be compared with the
// host's bit for bit (the same additions in the same order; no multiplications to fuse).
//
// Pass 1: block b of `blocks` sums x[i] for i = b·kThreads + tid + j·(blocks·kThreads), each
// thread in ascending i (Kahan-compensated for floats, exact for integers), then a fixed tree over
// the block into partials[b]. Pass 2: one block sums the partials the same way into *out. The
// number of blocks depends only on n, so the result is deterministic.
#pragma once

#include <cstdint>
#include <type_traits>

#include "usrecon/kernels/common.hpp"

namespace usrecon::kernels::block_sum {

inline constexpr int kThreads = 256;     // threads a block, both passes
inline constexpr int kWarp = 32;         // lanes a warp
inline constexpr int kMaxBlocks = 2048;  // blocks of pass 1 at most
inline constexpr int kUnroll = 4;        // loads in flight a thread, pass 1

/// Pass 1's block count for n elements: one block per kThreads · kUnroll, at most kMaxBlocks.
USRECON_HD inline int blocks_for(std::int64_t n) {
  const std::int64_t per_block = std::int64_t(kThreads) * kUnroll;
  const std::int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : static_cast<int>(b));
}

/// a + b: for integers in unsigned arithmetic, so that a partial sum that overflows wraps around
/// (defined, and undone by later terms when the total fits) rather than being undefined.
template <class R>
USRECON_HD inline R add(R a, R b) {
  if constexpr (std::is_integral_v<R>) {
    using U = std::make_unsigned_t<R>;
    return static_cast<R>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

/// Adds values one at a time: exact for integers, Kahan-compensated for floats. Once the sum is
/// infinite (an infinite term, or an overflow) there is nothing to compensate: the carry would be
/// inf - inf, a NaN, so it is dropped, and the sum stays +-inf as the CPU's does (NaN where
/// infinities of both signs meet, as there).
template <class R>
struct Accumulator {
  R sum = R(0);
  R carry = R(0);
  USRECON_HD void add(R v) {
    if constexpr (std::is_integral_v<R>) {
      sum = block_sum::add(sum, v);
    } else {
      const R y = v - carry;
      const R t = sum + y;
      const bool finite = t - t == R(0);  // false for +-inf and NaN
      carry = finite ? (t - sum) - y : R(0);
      sum = t;
    }
  }
  [[nodiscard]] USRECON_HD R value() const { return sum - carry; }
};

/// The block's tree over one value a thread: shuffle-down within each warp, the warps' results
/// through `warp_sums` (shared, kThreads / kWarp values), then warp 0 the same way. The total is
/// valid in thread 0. `block` gives sync() (the block's barrier) and shfl_down(v, offset) (lane
/// + offset's value, the caller's own past the warp's end).
USRECON_EXEC_CHECK_DISABLE
template <class R, class Block>
USRECON_HD R tree(R v, int tid, R* warp_sums, const Block& block) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = add(v, block.shfl_down(v, offset));
  const int lane = tid % kWarp, warp = tid / kWarp;
  if (lane == 0) warp_sums[warp] = v;
  block.sync();
  v = tid < kThreads / kWarp ? warp_sums[tid] : R(0);
  if (warp == 0)
    for (int offset = kWarp / 2; offset > 0; offset /= 2) v = add(v, block.shfl_down(v, offset));
  return v;
}

/// Pass 1, thread `tid` of block `b` of `blocks`: the block's sum of its grid-stride ranges of
/// x[0, n) into partials[b].
USRECON_EXEC_CHECK_DISABLE
template <class T, class R, class Block>
USRECON_HD void partials_program(const T* x, std::int64_t n, R* partials, int b, int blocks,
                                 int tid, R* warp_sums, const Block& block) {
  Accumulator<R> acc;
  const std::int64_t step = std::int64_t(blocks) * kThreads;
  std::int64_t i = std::int64_t(b) * kThreads + tid;
  for (; i + (kUnroll - 1) * step < n; i += kUnroll * step) {  // kUnroll loads, then their adds
    R v[kUnroll];
    USRECON_UNROLL
    for (int u = 0; u < kUnroll; ++u) v[u] = static_cast<R>(x[i + u * step]);
    USRECON_UNROLL
    for (int u = 0; u < kUnroll; ++u) acc.add(v[u]);
  }
  for (; i < n; i += step) acc.add(static_cast<R>(x[i]));
  const R total = tree(acc.value(), tid, warp_sums, block);
  if (tid == 0) partials[b] = total;
}

/// Pass 2, thread `tid` of the one block: the sum of partials[0, count) into *out.
USRECON_EXEC_CHECK_DISABLE
template <class R, class Block>
USRECON_HD void final_program(const R* partials, int count, R* out, int tid, R* warp_sums,
                              const Block& block) {
  Accumulator<R> acc;
  for (int i = tid; i < count; i += kThreads) acc.add(partials[i]);
  const R total = tree(acc.value(), tid, warp_sums, block);
  if (tid == 0) *out = total;
}

}  // namespace usrecon::kernels::block_sum
