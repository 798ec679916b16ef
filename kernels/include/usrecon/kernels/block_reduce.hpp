// The GPU reductions' two passes (sum, min, max) as host-device block programs: cuda/reduce.cu
// runs them with __syncthreads and __shfl_down_sync (cuda::DeviceBlock); the tests run them on
// the host with one std::thread per CUDA thread (tests/kernels/block_emulator.hpp), so the tree,
// the grid-stride ranges and the barriers are checked without a GPU, and the GPU's results can be
// compared with the host's bit for bit (the same operations in the same order; no
// multiplications to fuse).
//
// Pass 1: block b of `blocks` folds x[i] for i = b·kThreads + tid + j·(blocks·kThreads), each
// thread in ascending i (Op::Accumulator: Kahan-compensated for float sums, exact for integers),
// then a fixed tree over the block (Op::combine) into partials[b]. Pass 2: one block folds the
// partials the same way into *out. The number of blocks depends only on n, so the result is
// deterministic.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/int128.hpp"

namespace usrecon::kernels::block_reduce {

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

/// Sums that are exact in any order: integers (wrapping past their range as unsigned ones do),
/// and Int128 (the integer means' sums, which do not wrap).
template <class R>
inline constexpr bool kExactSum = std::is_integral_v<R> || std::is_same_v<R, Int128>;

/// Adds values one at a time: exact for integers, Kahan-compensated for floats. Once the sum is
/// infinite (an infinite term, or an overflow) there is nothing to compensate: the carry would be
/// inf - inf, a NaN, so it is dropped, and the sum stays +-inf as the CPU's does (NaN where
/// infinities of both signs meet, as there).
template <class R>
struct Accumulator {
  R sum = R(0);
  R carry = R(0);
  USRECON_HD void add(R v) {
    if constexpr (kExactSum<R>) {
      sum = block_reduce::add(sum, v);
    } else {
      const R y = v - carry;
      const R t = sum + y;
      const bool finite = t - t >= R(0);  // t - t is 0, or NaN for +-inf and NaN
      carry = finite ? (t - sum) - y : R(0);
      sum = t;
    }
  }
  [[nodiscard]] USRECON_HD R value() const {
    if constexpr (kExactSum<R>) return sum;
    else return sum - carry;
  }
};

/// The reductions. Each gives its Accumulator (one thread's values, in order), combine (two
/// results: the tree's step) and identity (what a thread without values holds: the tree pads
/// with it).
template <class R>
struct Sum {
  using Accumulator = block_reduce::Accumulator<R>;
  USRECON_HD static R identity() { return R(0); }
  USRECON_HD static R combine(R a, R b) { return add(a, b); }
};

/// What a mean of T adds in: Int128 for integers (exact, never wrapping), T for floats.
template <class T>
using mean_sum_t = std::conditional_t<std::is_integral_v<T>, Int128, T>;

/// A mean from its sum (mean_sum_t) and its count, in M (mean_type_t): an Int128 sum divided
/// exactly and rounded once (quotient_to_double), a float sum divided in M; a count of 0 gives
/// NaN. The CPU's and the GPU's means both end here.
template <class M, class S>
USRECON_HD M mean_from_sum(S sum, std::int64_t count) {
  if constexpr (std::is_same_v<S, Int128>) return quotient_to_double(sum, count);
  else return static_cast<M>(static_cast<M>(sum) / static_cast<M>(count));
}

/// The greatest and least values of R: +-inf for floats.
template <class R>
inline constexpr R kGreatest = std::numeric_limits<R>::has_infinity ? std::numeric_limits<R>::infinity()
                                                                    : std::numeric_limits<R>::max();
template <class R>
inline constexpr R kLeast = std::numeric_limits<R>::has_infinity ? -std::numeric_limits<R>::infinity()
                                                                 : std::numeric_limits<R>::lowest();

/// min (kLeast = true) and max as NumPy's: a NaN anywhere is the result. Which NaN, and which
/// zero where -0 and +0 tie, is the first one met, so the GPU's may differ from the CPU's.
template <class R, bool kLeastWanted>
struct Extreme {
  static constexpr bool kIsMin = kLeastWanted;  // min, not max
  /// a is kept over b
  USRECON_HD static bool before(R a, R b) { return kLeastWanted ? a < b : b < a; }
  USRECON_HD static R identity() { return kLeastWanted ? kGreatest<R> : kLeast<R>; }
  USRECON_HD static R combine(R a, R b) {
    if constexpr (!std::is_integral_v<R>) {
      if (a != a) return a;  // NaN
      if (b != b) return b;
    }
    return before(b, a) ? b : a;
  }
  struct Accumulator {
    R kept = identity();
    USRECON_HD void add(R v) { kept = combine(kept, v); }
    [[nodiscard]] USRECON_HD R value() const { return kept; }
  };
};
template <class R>
using Min = Extreme<R, true>;
template <class R>
using Max = Extreme<R, false>;

/// The block's tree over one value a thread: shuffle-down within each warp, the warps' results
/// through `warp_sums` (shared, kThreads / kWarp values), then warp 0 the same way. The total is
/// valid in thread 0. `block` gives sync() (the block's barrier) and shfl_down(v, offset) (lane
/// + offset's value, the caller's own past the warp's end).
USRECON_EXEC_CHECK_DISABLE
template <class R, class Block, class Op = Sum<R>>
USRECON_HD R tree(R v, int tid, R* warp_sums, const Block& block, Op = {}) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = Op::combine(v, block.shfl_down(v, offset));
  const int lane = tid % kWarp, warp = tid / kWarp;
  if (lane == 0) warp_sums[warp] = v;
  block.sync();
  v = tid < kThreads / kWarp ? warp_sums[tid] : Op::identity();
  if (warp == 0)
    for (int offset = kWarp / 2; offset > 0; offset /= 2) v = Op::combine(v, block.shfl_down(v, offset));
  return v;
}

/// Pass 1, thread `tid` of block `b` of `blocks`: the block's Op (Sum<R> unless given) over its
/// grid-stride ranges of x[0, n) into partials[b].
USRECON_EXEC_CHECK_DISABLE
template <class T, class R, class Block, class Op = Sum<R>>
USRECON_HD void partials_program(const T* x, std::int64_t n, R* partials, int b, int blocks, int tid,
                                 R* warp_sums, const Block& block, Op = {}) {
  typename Op::Accumulator acc;
  const std::int64_t step = std::int64_t(blocks) * kThreads;
  std::int64_t i = std::int64_t(b) * kThreads + tid;
  for (; i + (kUnroll - 1) * step < n; i += kUnroll * step) {  // kUnroll loads, then their folds
    R v[kUnroll];
    USRECON_UNROLL
    for (int u = 0; u < kUnroll; ++u) v[u] = static_cast<R>(x[i + u * step]);
    USRECON_UNROLL
    for (int u = 0; u < kUnroll; ++u) acc.add(v[u]);
  }
  for (; i < n; i += step) acc.add(static_cast<R>(x[i]));
  const R total = tree(acc.value(), tid, warp_sums, block, Op{});
  if (tid == 0) partials[b] = total;
}

/// Pass 2, thread `tid` of the one block: the Op over partials[0, count) into *out.
USRECON_EXEC_CHECK_DISABLE
template <class R, class Block, class Op = Sum<R>>
USRECON_HD void final_program(const R* partials, int count, R* out, int tid, R* warp_sums, const Block& block,
                              Op = {}) {
  typename Op::Accumulator acc;
  for (int i = tid; i < count; i += kThreads) acc.add(partials[i]);
  const R total = tree(acc.value(), tid, warp_sums, block, Op{});
  if (tid == 0) *out = total;
}

// ---- Strided lines: reductions along an axis that is not the last ----
// x as [outer][length][inner], row-major; line o * inner + j is x[(o * length + k) * inner + j]
// for k < length. A block takes a tile of kWarp neighbouring columns (lane -> column, so a warp
// reads kWarp neighbouring values of a row: one coalesced stretch) and a chunk of rows (warp w
// takes rows w, w + kRowsAtOnce, ... of the chunk, each lane in order by Op::Accumulator); the
// warps' results are combined in warp order in shared memory. A shape with few tiles splits its
// rows into chunks, so that the grid has about kMaxBlocks blocks, whose results a second pass
// folds in chunk order (Op::Accumulator). (One thread a whole line left a (4096, 4096) array
// along axis 0 with 4096 threads: a few SMs of a GPU that holds ~270,000.) The grid depends on
// the shape only, so the result is deterministic.

inline constexpr int kRowsAtOnce = kThreads / kWarp;  // rows a block reads at once: one a warp
inline constexpr std::int64_t kLeastRowsAWarp = 32;   // a chunk gives each warp at least these

/// The strided lines' grid: tiles of kWarp columns (tiles_per_outer to an outer index), chunks
/// of chunk_rows rows (the last may be shorter; none empty, but one chunk of no rows where the
/// length is 0). inner >= 1.
struct ColumnsGrid {
  std::int64_t tiles_per_outer = 1;
  std::int64_t tiles = 1;
  std::int64_t chunks = 1;
  std::int64_t chunk_rows = 0;
  /// Fewer than kWarp columns and tiles enough for the GPU: a thread a line (column_line) instead,
  /// as a tile would leave most of its lanes idle ((10^6, 64, 2) along axis 1: 10^6 blocks with
  /// 16 threads at work of 256).
  bool line_per_thread = false;
};

USRECON_HD inline ColumnsGrid columns_grid(std::int64_t outer, std::int64_t length, std::int64_t inner) {
  ColumnsGrid g;
  g.tiles_per_outer = (inner + kWarp - 1) / kWarp;
  g.tiles = outer * g.tiles_per_outer;
  if (inner < kWarp && g.tiles >= kMaxBlocks) {
    g.line_per_thread = true;
    g.chunk_rows = length;
    return g;
  }
  std::int64_t chunks = g.tiles >= kMaxBlocks ? 1 : (kMaxBlocks + g.tiles - 1) / g.tiles;
  const std::int64_t most = length / (kRowsAtOnce * kLeastRowsAWarp);
  if (chunks > most) chunks = most;
  if (chunks < 1) chunks = 1;
  g.chunk_rows = (length + chunks - 1) / chunks;
  g.chunks = g.chunk_rows == 0 ? 1 : (length + g.chunk_rows - 1) / g.chunk_rows;
  return g;
}

/// Pass 1 of the strided lines, thread `tid` of the block for (tile, chunk): Op over the chunk's
/// rows of the tile's columns into out[chunk * lines + line] (lines = outer * inner: with one
/// chunk, the result itself). `shared` holds kThreads values.
USRECON_EXEC_CHECK_DISABLE
template <class T, class R, class Block, class Op = Sum<R>>
USRECON_HD void columns_program(const T* x, std::int64_t length, std::int64_t inner, std::int64_t lines,
                                const ColumnsGrid& g, std::int64_t tile, std::int64_t chunk, R* out, int tid, R* shared,
                                const Block& block, Op = {}) {
  const std::int64_t o = tile / g.tiles_per_outer;
  const int lane = tid % kWarp, warp = tid / kWarp;
  const std::int64_t column = (tile % g.tiles_per_outer) * kWarp + lane;
  const std::int64_t first = chunk * g.chunk_rows;
  const std::int64_t end = first + g.chunk_rows < length ? first + g.chunk_rows : length;
  typename Op::Accumulator acc;
  if (column < inner) {
    const T* p = x + o * length * inner + column;
    constexpr std::int64_t step = kRowsAtOnce;
    std::int64_t k = first + warp;
    for (; k + (kUnroll - 1) * step < end; k += kUnroll * step) {  // kUnroll loads, then their folds
      R v[kUnroll];
      USRECON_UNROLL
      for (int u = 0; u < kUnroll; ++u) v[u] = static_cast<R>(p[(k + u * step) * inner]);
      USRECON_UNROLL
      for (int u = 0; u < kUnroll; ++u) acc.add(v[u]);
    }
    for (; k < end; k += step) acc.add(static_cast<R>(p[k * inner]));
  }
  shared[tid] = acc.value();  // [warp][lane]
  block.sync();
  if (warp == 0 && column < inner) {
    R v = shared[lane];
    for (int w = 1; w < kRowsAtOnce; ++w) v = Op::combine(v, shared[w * kWarp + lane]);
    out[chunk * lines + o * inner + column] = v;
  }
}

/// The strided line `line` (of outer * inner) by one thread, its rows in order (grids with
/// line_per_thread).
template <class T, class R, class Op = Sum<R>>
USRECON_HD R column_line(const T* x, std::int64_t length, std::int64_t inner, std::int64_t line, Op = {}) {
  const T* p = x + (line / inner) * length * inner + line % inner;
  typename Op::Accumulator acc;
  for (std::int64_t k = 0; k < length; ++k) acc.add(static_cast<R>(p[k * inner]));
  return acc.value();
}

/// Pass 2 of the strided lines (more than one chunk): line `line`'s chunk results folded in
/// chunk order.
template <class R, class Op = Sum<R>>
USRECON_HD R columns_final(const R* partials, std::int64_t chunks, std::int64_t lines, std::int64_t line, Op = {}) {
  typename Op::Accumulator acc;
  for (std::int64_t c = 0; c < chunks; ++c) acc.add(partials[c * lines + line]);
  return acc.value();
}

}  // namespace usrecon::kernels::block_reduce
