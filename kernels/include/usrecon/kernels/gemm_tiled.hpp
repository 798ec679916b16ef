// The tiled GEMM's block program, host-device: the CUDA kernel gemm_tiled (cuda/matmul.cu) runs
// it with __syncthreads as the barrier (cuda::DeviceBlock); the tests run it on the host with one
// std::thread per CUDA thread and a real barrier (tests/kernels/block_emulator.hpp), so that the
// tiling's index math, edge padding and barriers are checked without a GPU.
//
// Every output is fma_rn(a[i][p], b[p][j], acc) for p = 0, 1, …, k − 1 in order, starting from 0:
// the result equals a sequential fused dot product bit for bit, on the host and on the device.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "usrecon/kernels/common.hpp"

namespace usrecon::kernels::gemm {

/// a · b + c rounded once: __fma_rn on the device, std::fma on the host (the same IEEE result).
template <class T>
USRECON_HD T fma_rn(T a, T b, T c) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __fmaf_rn(a, b, c);
  else
    return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// One batch entry, row-major: a is m × k (row stride k), b is k × n, c is m × n.
template <class T>
struct Operands {
  const T* a;
  const T* b;
  T* c;
  int m, n, k;
};

/// kVec consecutive values from p (16 bytes): one 16-byte shared-memory load (LDS.128) on the
/// device, where p is 16-byte aligned; plain loads on the host.
template <int kVec, class T>
USRECON_HD void load_vector(const T* p, T* v) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    static_assert(kVec == 4);
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    static_assert(kVec == 2);
    const double2 x = *reinterpret_cast<const double2*>(p);
    v[0] = x.x, v[1] = x.y;
  }
#else
  for (int i = 0; i < kVec; ++i) v[i] = p[i];
#endif
}

/// A block computes a BM × BN tile of c with kThreads = (BM/TM)·(BN/TN) threads, each owning
/// TM × TN outputs in registers. Per BK-deep slice of k, the block stages a (transposed, padded
/// against bank conflicts) and b in shared memory with coalesced loads; the next slice is fetched
/// into registers while the current one is multiplied. Thread (tr, tc) owns rows and columns in
/// runs of kVec (16 bytes: 4 floats or 2 doubles), so each run comes from shared memory in one
/// 16-byte load: row i is (i / kVec)·kVec·(BM/TM) + tr·kVec + i % kVec, column j likewise. Per
/// k step a float thread then issues 4 shared loads for its 64 multiply-adds instead of 16, and a
/// warp's loads are broadcasts (a: the warp's two tr) or one contiguous 256-byte run (b): 6
/// shared-memory wavefronts a warp per k step instead of 16, against 64 multiply-adds (counted
/// from the access pattern, not yet timed on a GPU; docs/performance.md). Edges are zero-padded on load and
/// bounds-checked on store, so any m, n, k work. The shared arrays must be 16-byte aligned.
template <class T, int BM, int BN, int BK, int TM, int TN>
struct Tiling {
  using value_type = T;
  static constexpr int kRows = BM, kCols = BN, kDepth = BK;
  static constexpr int kRowThreads = BM / TM, kColThreads = BN / TN;
  static constexpr int kThreads = kRowThreads * kColThreads;
  static constexpr int kLoadsA = BM * BK / kThreads, kLoadsB = BK * BN / kThreads;  // per thread
  static constexpr int kVec = 16 / int(sizeof(T));  // values per 16-byte shared-memory load
  static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must divide the block tile");
  static_assert(BM * BK % kThreads == 0 && BK * BN % kThreads == 0, "tile loads must divide evenly");
  static_assert(TM % kVec == 0 && TN % kVec == 0, "thread tiles are runs of 16 bytes");
  static_assert((BM + 4) * sizeof(T) % 16 == 0 && BN * sizeof(T) % 16 == 0,
                "every shared row starts 16-byte aligned");

  /// The block-tile row of thread row tr's output row i (< TM), and likewise for columns.
  USRECON_HD static constexpr int row_of(int tr, int i) {
    return (i / kVec) * (kVec * kRowThreads) + tr * kVec + i % kVec;
  }
  USRECON_HD static constexpr int col_of(int tc, int j) {
    return (j / kVec) * (kVec * kColThreads) + tc * kVec + j % kVec;
  }

  /// The block's shared memory: a's slice transposed, a_t[kk][row] (rows padded by 4), and b's
  /// slice b[kk][col]. Two arrays, not one struct: nvcc then folds every shared address into the
  /// load's immediate offset (with a struct, ptxas used 175 registers instead of 158).
  /// (Array extents are written std::size_t{N}: an int extent draws -Wsign-conversion in a
  /// consumer's build, and a brace conversion of a constant is checked at compile time.)
  using SharedA = T[std::size_t{BK}][std::size_t{BM + 4}];
  using SharedB = T[std::size_t{BK}][std::size_t{BN}];

  /// What one thread keeps in registers: the next slice's loads, and its TM × TN outputs.
  using LoadsA = T[std::size_t{kLoadsA}];
  using LoadsB = T[std::size_t{kLoadsB}];
  using Accumulators = T[std::size_t{TM}][std::size_t{TN}];

  /// Where thread tid's loads come from, worked out once per tile so that a slice's load costs an
  /// address add, a compare and the load (recomputing row · k + kk in 64 bits for every load and
  /// slice took about 14 instructions a load in the SASS). Consecutive threads load consecutive k
  /// of a row of a and consecutive columns of b: element e = tid + l · kThreads of a slice is a's
  /// row e / BK, column e % BK = tid % BK, and b's row e / BN = tid / BN + l · kThreads / BN,
  /// column e % BN = tid % BN.
  static_assert(kThreads % BK == 0 && kThreads % BN == 0, "a thread keeps its k column of a and its column of b");
  static constexpr int kRowStepA = kThreads / BK, kRowStepB = kThreads / BN;
  struct Sources {
    const T* a[std::size_t{kLoadsA}];  ///< &a[row][tid % BK] of the thread's rows (a itself for a row past m: never read)
    bool a_row[std::size_t{kLoadsA}];  ///< row < m
    int a_kk;                          ///< tid % BK: the thread's column of each slice of a
    const T* b[std::size_t{kLoadsB}];  ///< &b[tid / BN + l · kRowStepB][col] (b itself for a column past n: never read)
    bool b_col;                        ///< col < n
    int b_kk;                          ///< tid / BN: the thread's first row of each slice of b
  };
  USRECON_HD static Sources sources(const Operands<T>& op, int row0, int col0, int tid) {
    Sources src;
    src.a_kk = tid % BK;
    USRECON_UNROLL
    for (int l = 0; l < kLoadsA; ++l) {
      const int row = row0 + tid / BK + l * kRowStepA;
      src.a_row[l] = row < op.m;
      src.a[l] = src.a_row[l] ? op.a + static_cast<std::int64_t>(row) * op.k + src.a_kk : op.a;
    }
    const int col = col0 + tid % BN;
    src.b_kk = tid / BN;
    src.b_col = col < op.n;
    USRECON_UNROLL
    for (int l = 0; l < kLoadsB; ++l)
      src.b[l] = src.b_col ? op.b + static_cast<std::int64_t>(src.b_kk + l * kRowStepB) * op.n + col : op.b;
    return src;
  }

  /// Loads slice k0 of the block's rows of a and columns of b into registers, zero past the edges.
  USRECON_HD static void fetch(const Operands<T>& op, const Sources& src, int k0, LoadsA& ra, LoadsB& rb) {
    const bool a_in_k = k0 + src.a_kk < op.k;
    USRECON_UNROLL
    for (int l = 0; l < kLoadsA; ++l) ra[l] = (a_in_k && src.a_row[l]) ? src.a[l][k0] : T(0);
    const std::int64_t b_slice = static_cast<std::int64_t>(k0) * op.n;  // one multiply a slice
    USRECON_UNROLL
    for (int l = 0; l < kLoadsB; ++l)
      rb[l] = (src.b_col && k0 + src.b_kk + l * kRowStepB < op.k) ? src.b[l][b_slice] : T(0);
  }

  /// Stores the fetched slice into shared memory.
  USRECON_HD static void stage(int tid, const LoadsA& ra, const LoadsB& rb, SharedA& a_t, SharedB& b_s) {
    USRECON_UNROLL
    for (int l = 0; l < kLoadsA; ++l) {
      const int e = tid + l * kThreads;
      a_t[e % BK][e / BK] = ra[l];
    }
    USRECON_UNROLL
    for (int l = 0; l < kLoadsB; ++l) {
      const int e = tid + l * kThreads;
      b_s[e / BN][e % BN] = rb[l];
    }
  }

  /// Accumulates the staged slice into the thread's outputs, kk in ascending order.
  USRECON_HD static void multiply(int tid, const SharedA& a_t, const SharedB& b_s, Accumulators& acc) {
    const int tr = tid / kColThreads, tc = tid % kColThreads;
    USRECON_UNROLL
    for (int kk = 0; kk < BK; ++kk) {
      T va[std::size_t{TM}], vb[std::size_t{TN}];
      USRECON_UNROLL
      for (int i = 0; i < TM; i += kVec) load_vector<kVec>(&a_t[kk][row_of(tr, i)], va + i);
      USRECON_UNROLL
      for (int j = 0; j < TN; j += kVec) load_vector<kVec>(&b_s[kk][col_of(tc, j)], vb + j);
      USRECON_UNROLL
      for (int i = 0; i < TM; ++i)
        USRECON_UNROLL
        for (int j = 0; j < TN; ++j) acc[i][j] = fma_rn(va[i], vb[j], acc[i][j]);
    }
  }

  /// The whole program of thread `tid` (< kThreads) of the block that computes the tile at row
  /// tile `row_tile`, column tile `col_tile`; op.k >= 1 (the host entry turns k = 0 into a
  /// memset). `block.sync()` is the block's barrier (__syncthreads on the device): every thread
  /// of the block calls it equally often.
  USRECON_EXEC_CHECK_DISABLE
  template <class Block>
  USRECON_HD static void block_program(const Operands<T>& op, int row_tile, int col_tile, int tid,
                                       SharedA& a_t, SharedB& b_s, const Block& block) {
    const int row0 = row_tile * BM, col0 = col_tile * BN;
    LoadsA ra;
    LoadsB rb;
    Accumulators acc;
    USRECON_UNROLL
    for (int i = 0; i < TM; ++i)
      USRECON_UNROLL
      for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

    const Sources src = sources(op, row0, col0, tid);
    fetch(op, src, 0, ra, rb);
    stage(tid, ra, rb, a_t, b_s);
    block.sync();
    for (int k0 = 0;; k0 += BK) {  // k >= 1: at least one slice
      const bool more = k0 + BK < op.k;
      if (more) fetch(op, src, k0 + BK, ra, rb);  // in flight while this slice is multiplied
      multiply(tid, a_t, b_s, acc);
      block.sync();  // every thread has read the slice before it is overwritten
      if (!more) break;
      stage(tid, ra, rb, a_t, b_s);
      block.sync();
    }
    const int tr = tid / kColThreads, tc = tid % kColThreads;
    USRECON_UNROLL
    for (int i = 0; i < TM; ++i) {
      const int row = row0 + row_of(tr, i);
      if (row >= op.m) continue;
      USRECON_UNROLL
      for (int j = 0; j < TN; ++j) {
        const int col = col0 + col_of(tc, j);
        if (col < op.n) op.c[static_cast<std::int64_t>(row) * op.n + col] = acc[i][j];
      }
    }
  }
};

/// The tilings the library launches: float 128 × 128 (8 × 8 per thread), double 64 × 64 (4 × 4);
/// 256 threads a block either way.
template <class T>
using TilingFor = std::conditional_t<std::is_same_v<T, float>, Tiling<float, 128, 128, 8, 8, 8>,
                                     Tiling<double, 64, 64, 8, 4, 4>>;

}  // namespace usrecon::kernels::gemm
