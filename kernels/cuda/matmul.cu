// matmul on the GPU: the tutorial's shared-memory tiling done with register blocking (tiled), the
// untiled reference (naive), and cuBLAS strided-batched GEMM (blas).
//
// Row-major c = a · b is column-major cᵀ = bᵀ · aᵀ, so cuBLAS gets b first.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels::detail {
namespace {

__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }

// A block computes a BM × BN tile of c with NT = (BM/TM)·(BN/TN) threads, each owning TM × TN
// outputs in registers. Per BK-deep slice of k, the block stages a (transposed, padded against
// bank conflicts) and b in shared memory with coalesced loads; the next slice is fetched into
// registers while the current one is multiplied. Thread (tr, tc) owns rows tr + i·(BM/TM) and
// columns tc + j·(BN/TN), so shared-memory reads are conflict-free and stores coalesced. Edges
// are zero-padded on load and bounds-checked on store, so any m, n, k work.
template <class T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemm_tiled(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int m, int n,
               int k, std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c,
               int row_tile0) {
  constexpr int RT = BM / TM, CT = BN / TN, NT = RT * CT;
  constexpr int LA = BM * BK / NT, LB = BK * BN / NT;  // loads per thread and slice
  static_assert(BM * BK % NT == 0 && BK * BN % NT == 0, "tile loads must divide evenly");
  __shared__ T as[BK][BM + 4];
  __shared__ T bs[BK][BN];

  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;
  const int row0 = (row_tile0 + static_cast<int>(blockIdx.y)) * BM, col0 = blockIdx.x * BN;
  const int tid = threadIdx.x, tr = tid / CT, tc = tid % CT;

  T ra[LA], rb[LB];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {  // consecutive threads: consecutive k of a row
      const int e = tid + l * NT, r = e / BK, kk = e % BK;
      const int gr = row0 + r, gk = k0 + kk;
      ra[l] = (gr < m && gk < k) ? a[static_cast<std::int64_t>(gr) * k + gk] : T(0);
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {  // consecutive threads: consecutive columns
      const int e = tid + l * NT, kk = e / BN, cc = e % BN;
      const int gk = k0 + kk, gc = col0 + cc;
      rb[l] = (gk < k && gc < n) ? b[static_cast<std::int64_t>(gk) * n + gc] : T(0);
    }
  };
  auto stage = [&] {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      const int e = tid + l * NT;
      as[e % BK][e / BK] = ra[l];
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      const int e = tid + l * NT;
      bs[e / BN][e % BN] = rb[l];
    }
  };

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  fetch(0);
  stage();
  __syncthreads();
  for (int k0 = 0; k0 < k; k0 += BK) {
    const bool more = k0 + BK < k;
    if (more) fetch(k0 + BK);  // in flight while this slice is multiplied
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T va[TM], vb[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) va[i] = as[kk][tr + i * RT];
#pragma unroll
      for (int j = 0; j < TN; ++j) vb[j] = bs[kk][tc + j * CT];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fma_rn(va[i], vb[j], acc[i][j]);
    }
    __syncthreads();
    if (more) {
      stage();
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gr = row0 + tr + i * RT;
    if (gr >= m) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gc = col0 + tc + j * CT;
      if (gc < n) c[static_cast<std::int64_t>(gr) * n + gc] = acc[i][j];
    }
  }
}

// The tutorial's untiled kernel: one thread per output, k in ascending order, separate multiply
// and add (so it matches the CPU naive reference bit for bit on exact inputs).
template <class T>
__global__ void gemm_naive(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                           int m, int n, int k, std::int64_t stride_a, std::int64_t stride_b,
                           std::int64_t stride_c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= n) return;
  b += blockIdx.z * stride_b + col;
  // gridDim.y is capped at 65535: rows beyond the grid are looped over.
  for (std::int64_t row = blockIdx.y * blockDim.y + threadIdx.y; row < m;
       row += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    const T* ar = a + blockIdx.z * stride_a + row * k;
    T s = T(0);
    for (int p = 0; p < k; ++p) s += ar[p] * b[static_cast<std::int64_t>(p) * n];
    c[blockIdx.z * stride_c + row * n + col] = s;
  }
}

// Blocks along y (rows): at most 65535, the limit of gridDim.y.
unsigned grid_y(std::int64_t row_blocks) {
  return static_cast<unsigned>(row_blocks < 65535 ? row_blocks : 65535);
}

template <class T, int BM, int BN, int BK, int TM, int TN>
void launch_tiled(const T* a, const T* b, T* c, const GemmShape& g, cudaStream_t stream) {
  // gridDim.y is at most 65535: taller outputs take one launch per 65535 row tiles.
  const std::int64_t row_tiles = (g.m + BM - 1) / BM;
  for (std::int64_t row_tile0 = 0; row_tile0 < row_tiles; row_tile0 += 65535) {
    const dim3 grid(static_cast<unsigned>((g.n + BN - 1) / BN), grid_y(row_tiles - row_tile0),
                    static_cast<unsigned>(g.batch));
    gemm_tiled<T, BM, BN, BK, TM, TN><<<grid, (BM / TM) * (BN / TN), 0, stream>>>(
        a, b, c, static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.stride_a,
        g.stride_b, g.stride_c, static_cast<int>(row_tile0));
    USRECON_CUDA_CHECK_LAUNCH("gemm_tiled");
  }
}

// One cuBLAS handle per host thread, created on first use and deliberately never destroyed
// (destroying it at exit would race the CUDA runtime's own teardown).
cublasHandle_t thread_cublas_handle() {
  thread_local cublasHandle_t handle = [] {
    cublasHandle_t created = nullptr;
    USRECON_CUBLAS_CHECK(cublasCreate(&created));
    USRECON_CUBLAS_CHECK(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH));  // no TF32
    return created;
  }();
  return handle;
}

template <class T>
void cublas_gemm(const T* a, const T* b, T* c, const GemmShape& g, cudaStream_t stream) {
  cublasHandle_t h = thread_cublas_handle();
  USRECON_CUBLAS_CHECK(cublasSetStream(h, stream));
  const T one = 1, zero = 0;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  if constexpr (std::is_same_v<T, float>)
    USRECON_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n,
                                                   g.stride_b, a, k, g.stride_a, &zero, c, n,
                                                   g.stride_c, static_cast<int>(g.batch)));
  else
    USRECON_CUBLAS_CHECK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n,
                                                   g.stride_b, a, k, g.stride_a, &zero, c, n,
                                                   g.stride_c, static_cast<int>(g.batch)));
}

}  // namespace

template <class T>
void cuda_gemm(const T* a, const T* b, T* c, const GemmShape& g, MatmulAlgo algo,
               StreamView stream) {
  require_cuda("matmul on device arrays");
  if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX || g.batch > 65535)
    throw Error("matmul: CUDA dimensions beyond 2^31 - 1 (or batch beyond 65535) are not supported");
  if (g.k == 0) {
    USRECON_CUDA_CHECK(cudaMemsetAsync(c, 0, g.batch * g.stride_c * sizeof(T), stream.get()));
    return;
  }
  switch (algo) {
    case MatmulAlgo::naive: {
      const dim3 block(16, 16);
      const dim3 grid(static_cast<unsigned>((g.n + 15) / 16), grid_y((g.m + 15) / 16),
                      static_cast<unsigned>(g.batch));
      gemm_naive<T><<<grid, block, 0, stream.get()>>>(a, b, c, static_cast<int>(g.m),
                                                     static_cast<int>(g.n), static_cast<int>(g.k),
                                                     g.stride_a, g.stride_b, g.stride_c);
      USRECON_CUDA_CHECK_LAUNCH("gemm_naive");
      return;
    }
    case MatmulAlgo::tiled:
      if constexpr (std::is_same_v<T, float>)
        launch_tiled<float, 128, 128, 8, 8, 8>(a, b, c, g, stream.get());
      else
        launch_tiled<double, 64, 64, 8, 4, 4>(a, b, c, g, stream.get());
      return;
    case MatmulAlgo::blas:
    case MatmulAlgo::automatic:
      cublas_gemm(a, b, c, g, stream.get());
      return;
  }
}

template void cuda_gemm<float>(const float*, const float*, float*, const GemmShape&, MatmulAlgo,
                               StreamView);
template void cuda_gemm<double>(const double*, const double*, double*, const GemmShape&, MatmulAlgo,
                                StreamView);

}  // namespace usrecon::kernels::detail
