// matmul on the GPU: the tutorial's shared-memory tiling done with register blocking (tiled; its
// block program is host-device, in usrecon/kernels/gemm_tiled.hpp), the untiled reference
// (naive), and cuBLAS strided-batched GEMM (blas).
//
// Row-major c = a · b is column-major cᵀ = bᵀ · aᵀ, so cuBLAS gets b first.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/kernels/gemm_tiled.hpp"

// Blocks of the tiled kernel a multiprocessor must hold at once: 2, so ptxas caps the float
// tiling at 128 registers (it spills 36 bytes, 9 local loads a slice) and two blocks of 256
// threads share a multiprocessor, hiding each other's barriers. Measured on an H200
// (tools/gpu-check.sh, 2026-12-04, SGEMM 4096, TF32 off): 38 720 GFLOP/s against 33 520 with plain
// __launch_bounds__(threads) (149 registers, no spills, one block), 1.155 times. gpu-check builds
// this file with 0 (plain bounds; an explicit 1 is not the same: ptxas then took 157 registers)
// and times both again on every run, so the choice stays measured.
#if !defined(USRECON_GEMM_MIN_BLOCKS_PER_SM)
#define USRECON_GEMM_MIN_BLOCKS_PER_SM 2
#endif
#if USRECON_GEMM_MIN_BLOCKS_PER_SM > 0
#define USRECON_GEMM_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, USRECON_GEMM_MIN_BLOCKS_PER_SM)
#else
#define USRECON_GEMM_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif

namespace usrecon::kernels::detail {
namespace {

// The block program (usrecon/kernels/gemm_tiled.hpp) with the device's block intrinsics; block
// (x, y, z) computes column tile x, row tile row_tile0 + y of batch entry z.
template <class Tiling, class T = typename Tiling::value_type>
__global__ void USRECON_GEMM_LAUNCH_BOUNDS(Tiling::kThreads)
    gemm_tiled(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int m, int n,
               int k, std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c,
               int row_tile0) {
  // 16-byte aligned: the block program reads them in 16-byte vectors (gemm::load_vector).
  __shared__ alignas(16) typename Tiling::SharedA a_t;
  __shared__ alignas(16) typename Tiling::SharedB b_s;
  const gemm::Operands<T> op{a + blockIdx.z * stride_a, b + blockIdx.z * stride_b,
                             c + blockIdx.z * stride_c, m, n, k};
  Tiling::block_program(op, row_tile0 + static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x),
                        static_cast<int>(threadIdx.x), a_t, b_s, cuda::DeviceBlock{});
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

template <class T>
void launch_tiled(const T* a, const T* b, T* c, const GemmShape& g, cudaStream_t stream) {
  using Tiling = gemm::TilingFor<T>;
  // gridDim.y is at most 65535: taller outputs take one launch per 65535 row tiles.
  const std::int64_t row_tiles = (g.m + Tiling::kRows - 1) / Tiling::kRows;
  for (std::int64_t row_tile0 = 0; row_tile0 < row_tiles; row_tile0 += 65535) {
    const dim3 grid(static_cast<unsigned>((g.n + Tiling::kCols - 1) / Tiling::kCols),
                    grid_y(row_tiles - row_tile0), static_cast<unsigned>(g.batch));
    gemm_tiled<Tiling><<<grid, Tiling::kThreads, 0, stream>>>(
        a, b, c, static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.stride_a,
        g.stride_b, g.stride_c, static_cast<int>(row_tile0));
    USRECON_CUDA_CHECK_LAUNCH("gemm_tiled");
  }
}

// One cuBLAS handle per host thread and device (a handle belongs to the device current when it
// was made), created on first use and deliberately never destroyed (destroying it at exit would
// race the CUDA runtime's own teardown).
cublasHandle_t thread_cublas_handle() {
  int device = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  thread_local std::vector<cublasHandle_t> handles;  // handles[device]
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cublasHandle_t& handle = handles[static_cast<std::size_t>(device)];
  if (!handle) {
    cublasHandle_t created = nullptr;
    USRECON_CUBLAS_CHECK(cublasCreate(&created));
    USRECON_CUBLAS_CHECK(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH));  // no TF32
    handle = created;
  }
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
  // The limits leave room for the tiled kernel's int row and column indices, which run up to a
  // tile (128) past the last row or column, and its sums k0 + (offset < 8) past the last slice.
  if (g.m > INT32_MAX - 256 || g.n > INT32_MAX - 256 || g.k > INT32_MAX - 64 || g.batch > 65535)
    throw Error("matmul: CUDA dimensions beyond 2^31 - 257 (k beyond 2^31 - 65, batch beyond 65535) "
                "are not supported");
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
      launch_tiled(a, b, c, g, stream.get());
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
