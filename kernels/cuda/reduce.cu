// sum() on the GPU: per-thread compensated sums over a grid-stride range, a deterministic tree
// in each block, then one block combines the per-block partials the same way. The block programs
// are host-device, in usrecon/kernels/block_sum.hpp; this file launches them.
#include <cuda_runtime.h>

#include <cstdint>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/block_sum.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"

namespace usrecon::kernels::detail {
namespace {

namespace bs = block_sum;

template <class T, class R>
__global__ void __launch_bounds__(bs::kThreads) sum_partials(const T* __restrict__ x, std::int64_t n,
                                                            R* __restrict__ partials) {
  __shared__ R warp_sums[bs::kThreads / bs::kWarp];
  bs::partials_program(x, n, partials, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x),
                       static_cast<int>(threadIdx.x), warp_sums, cuda::DeviceBlock{});
}

template <class R>
__global__ void __launch_bounds__(bs::kThreads) sum_final(const R* __restrict__ partials, int count,
                                                         R* __restrict__ out) {
  __shared__ R warp_sums[bs::kThreads / bs::kWarp];
  bs::final_program(partials, count, out, static_cast<int>(threadIdx.x), warp_sums, cuda::DeviceBlock{});
}

}  // namespace

namespace {

/// Enqueues the two passes: partials into `partials` (room for `blocks` = bs::blocks_for(n)
/// values), then their sum into *out. n > 0.
template <class T, class R>
void enqueue_sum(const T* x, std::int64_t n, R* partials, unsigned blocks, R* out, StreamView stream) {
  sum_partials<T, R><<<blocks, bs::kThreads, 0, stream.get()>>>(x, n, partials);
  USRECON_CUDA_CHECK_LAUNCH("sum_partials");
  sum_final<R><<<1, bs::kThreads, 0, stream.get()>>>(partials, static_cast<int>(blocks), out);
  USRECON_CUDA_CHECK_LAUNCH("sum_final");
}

}  // namespace

template <class T>
sum_type_t<T> cuda_sum(const T* x, std::size_t n, StreamView stream) {
  using R = sum_type_t<T>;
  if (n == 0) return R(0);
  const auto ni = static_cast<std::int64_t>(n);
  const auto blocks = static_cast<unsigned>(bs::blocks_for(ni));
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
  const auto blocks = static_cast<unsigned>(bs::blocks_for(ni));
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
