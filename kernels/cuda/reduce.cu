// sum() on the GPU: per-thread compensated sums over a grid-stride range, a deterministic tree
// in each block, then one block combines the per-block partials the same way.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"

namespace usrecon::kernels::detail {
namespace {

constexpr int threads = 256;
constexpr int max_blocks = 2048;  // fixed: the partials' layout depends only on n
constexpr int unroll = 4;

// Adds values one at a time: exact for integers, Kahan-compensated for floats.
template <class R>
struct Accumulator {
  R sum = R(0);
  R carry = R(0);
  __device__ void add(R v) {
    if constexpr (std::is_integral_v<R>) {
      sum += v;
    } else {
      const R y = v - carry;
      const R t = sum + y;
      carry = (t - sum) - y;
      sum = t;
    }
  }
};

// Tree over the block in a fixed order (warp shuffles, then the warps' results).
template <class R>
__device__ R block_sum(R v) {
  __shared__ R warp_sums[threads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < threads / 32 ? warp_sums[threadIdx.x] : R(0);
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <class T, class R>
__global__ void __launch_bounds__(threads) sum_partials(const T* __restrict__ x, std::int64_t n,
                                                        R* __restrict__ partials) {
  Accumulator<R> acc;
  const std::int64_t step = cuda::grid_stride_1d();
  std::int64_t i = cuda::global_index_1d();
  for (; i + (unroll - 1) * step < n; i += unroll * step) {
    R v[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) v[u] = static_cast<R>(x[i + u * step]);
#pragma unroll
    for (int u = 0; u < unroll; ++u) acc.add(v[u]);
  }
  for (; i < n; i += step) acc.add(static_cast<R>(x[i]));
  const R total = block_sum<R>(acc.sum - acc.carry);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <class R>
__global__ void __launch_bounds__(threads) sum_final(const R* __restrict__ partials, int count,
                                                     R* __restrict__ out) {
  Accumulator<R> acc;
  for (int i = threadIdx.x; i < count; i += threads) acc.add(partials[i]);
  const R total = block_sum<R>(acc.sum - acc.carry);
  if (threadIdx.x == 0) *out = total;
}

}  // namespace

namespace {

/// Enqueues the two passes: partials into `partials` (room for the returned block count, at most
/// max_blocks), then their sum into *out. n > 0.
template <class T, class R>
void enqueue_sum(const T* x, std::int64_t n, R* partials, unsigned blocks, R* out, StreamView stream) {
  sum_partials<T, R><<<blocks, threads, 0, stream.get()>>>(x, n, partials);
  USRECON_CUDA_CHECK_LAUNCH("sum_partials");
  sum_final<R><<<1, threads, 0, stream.get()>>>(partials, static_cast<int>(blocks), out);
  USRECON_CUDA_CHECK_LAUNCH("sum_final");
}

}  // namespace

template <class T>
sum_type_t<T> cuda_sum(const T* x, std::size_t n, StreamView stream) {
  using R = sum_type_t<T>;
  if (n == 0) return R(0);
  const auto ni = static_cast<std::int64_t>(n);
  const unsigned blocks = cuda::grid_1d(ni, threads * unroll, max_blocks);
  R result{};
  {
    const cuda::StreamScratch<R> scratch(blocks + 1, stream.get());  // partials, then the result
    enqueue_sum(x, ni, scratch.data(), blocks, scratch.data() + blocks, stream);
    USRECON_CUDA_CHECK(
        cudaMemcpyAsync(&result, scratch.data() + blocks, sizeof(R), cudaMemcpyDeviceToHost, stream.get()));
  }  // freed on the stream, after the copy
  USRECON_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return result;
}

template <class T>
void cuda_sum_to_device(const T* x, std::size_t n, sum_type_t<T>* out, StreamView stream) {
  using R = sum_type_t<T>;
  if (n == 0) {
    USRECON_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(R), stream.get()));  // 0 in every sum type
    return;
  }
  const auto ni = static_cast<std::int64_t>(n);
  const unsigned blocks = cuda::grid_1d(ni, threads * unroll, max_blocks);
  const cuda::StreamScratch<R> partials(blocks, stream.get());
  enqueue_sum(x, ni, partials.data(), blocks, out, stream);
}

template sum_type_t<float> cuda_sum<float>(const float*, std::size_t, StreamView);
template sum_type_t<double> cuda_sum<double>(const double*, std::size_t, StreamView);
template sum_type_t<std::int32_t> cuda_sum<std::int32_t>(const std::int32_t*, std::size_t, StreamView);
template sum_type_t<std::int64_t> cuda_sum<std::int64_t>(const std::int64_t*, std::size_t, StreamView);
template void cuda_sum_to_device<float>(const float*, std::size_t, float*, StreamView);
template void cuda_sum_to_device<double>(const double*, std::size_t, double*, StreamView);
template void cuda_sum_to_device<std::int32_t>(const std::int32_t*, std::size_t, std::int64_t*, StreamView);
template void cuda_sum_to_device<std::int64_t>(const std::int64_t*, std::size_t, std::int64_t*, StreamView);

}  // namespace usrecon::kernels::detail
