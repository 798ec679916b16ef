// The generic CUDA elementwise kernel behind Ufunc, templated on the op. Include this header in a
// .cu file to run a new op (a struct with a USRECON_HD operator(), or an __host__ __device__
// lambda with --extended-lambda) on device arrays; see usrecon/kernels/map.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/map.hpp"

namespace usrecon::kernels {
namespace cuda_map_detail {

template <class Op, class T, int NOut, int NIn, std::size_t... K>
__device__ __forceinline__ void apply(const Op& op, const MapArgs<T, NOut, NIn>& a, std::int64_t i,
                                      const std::int64_t (&off)[NIn], std::index_sequence<K...>) {
  const auto r = op((a.in[K] ? a.in[K][off[K]] : a.scalar[K])...);
  if constexpr (NOut == 1) {
    a.out[0][i] = r;
  } else {
#pragma unroll
    for (int j = 0; j < NOut; ++j) a.out[j][i] = r.value[j];
  }
}

// Contiguous (or broadcast-from-one-value) operands: no index math beyond i * {0, 1}.
template <class Op, class T, int NOut, int NIn>
__global__ void map_contiguous(Op op, MapArgs<T, NOut, NIn> a) {
  const std::int64_t step = cuda::grid_stride_1d();
  for (std::int64_t i = cuda::global_index_1d(); i < a.n; i += step) {
    std::int64_t off[NIn];
#pragma unroll
    for (int k = 0; k < NIn; ++k) off[k] = i * a.stride[k][0];
    apply(op, a, i, off, std::make_index_sequence<NIn>{});
  }
}

// General broadcasting: unravel the output index over the collapsed shape.
template <class Op, class T, int NOut, int NIn>
__global__ void map_strided(Op op, MapArgs<T, NOut, NIn> a) {
  const std::int64_t step = cuda::grid_stride_1d();
  for (std::int64_t i = cuda::global_index_1d(); i < a.n; i += step) {
    std::int64_t off[NIn] = {};
    std::int64_t rem = i;
    for (int d = a.ndim - 1; d >= 0; --d) {
      const std::int64_t idx = rem % a.shape[d];
      rem /= a.shape[d];
#pragma unroll
      for (int k = 0; k < NIn; ++k) off[k] += idx * a.stride[k][d];
    }
    apply(op, a, i, off, std::make_index_sequence<NIn>{});
  }
}

}  // namespace cuda_map_detail

template <class Op, class T, int NOut, int NIn>
void cuda_map(const Op& op, const MapArgs<T, NOut, NIn>& a, StreamView stream) {
  if (a.n == 0) return;
  constexpr int threads = 256;
  const unsigned blocks = cuda::grid_1d(a.n, threads);
  if (a.ndim == 1)
    cuda_map_detail::map_contiguous<Op, T, NOut, NIn><<<blocks, threads, 0, stream.get()>>>(op, a);
  else
    cuda_map_detail::map_strided<Op, T, NOut, NIn><<<blocks, threads, 0, stream.get()>>>(op, a);
  USRECON_CUDA_CHECK_LAUNCH("elementwise map");
}

}  // namespace usrecon::kernels
