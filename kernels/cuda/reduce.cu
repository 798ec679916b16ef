// sum(), min() and max() on the GPU: each thread folds a grid-stride range (compensated sums
// for floats), a deterministic tree in each block, then one block combines the per-block partials
// the same way. The block programs are host-device, in usrecon/kernels/block_reduce.hpp; this
// file launches them.
#include <cuda_runtime.h>

#include <cstdint>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/block_reduce.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"

namespace usrecon::kernels::detail {
namespace {

namespace br = block_reduce;

template <class Op, class T, class R>
__global__ void __launch_bounds__(br::kThreads) reduce_partials(const T* __restrict__ x, std::int64_t n,
                                                               R* __restrict__ partials) {
  __shared__ R warp_results[br::kThreads / br::kWarp];
  br::partials_program(x, n, partials, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x),
                       static_cast<int>(threadIdx.x), warp_results, cuda::DeviceBlock{}, Op{});
}

template <class Op, class R>
__global__ void __launch_bounds__(br::kThreads) reduce_final(const R* __restrict__ partials, int count,
                                                            R* __restrict__ out) {
  __shared__ R warp_results[br::kThreads / br::kWarp];
  br::final_program(partials, count, out, static_cast<int>(threadIdx.x), warp_results, cuda::DeviceBlock{}, Op{});
}

/// Enqueues the two passes of Op over x[0, n): partials into `partials` (room for `blocks` =
/// br::blocks_for(n) values), then their fold into *out. n > 0.
template <class Op, class T, class R>
void enqueue_reduce(const T* x, std::int64_t n, R* partials, unsigned blocks, R* out, StreamView stream) {
  reduce_partials<Op, T, R><<<blocks, br::kThreads, 0, stream.get()>>>(x, n, partials);
  USRECON_CUDA_CHECK_LAUNCH("reduce_partials");
  reduce_final<Op, R><<<1, br::kThreads, 0, stream.get()>>>(partials, static_cast<int>(blocks), out);
  USRECON_CUDA_CHECK_LAUNCH("reduce_final");
}

/// Op over x[0, n), n > 0, returned to the host (waits for the stream).
template <class Op, class T, class R>
R reduce_to_host(const T* x, std::size_t n, StreamView stream) {
  const auto ni = static_cast<std::int64_t>(n);
  const auto blocks = static_cast<unsigned>(br::blocks_for(ni));
  R result{};
  {
    const cuda::StreamScratch<R> scratch(blocks + 1, stream.get());  // partials, then the result
    enqueue_reduce<Op>(x, ni, scratch.data(), blocks, scratch.data() + blocks, stream);
    USRECON_CUDA_CHECK(
        cudaMemcpyAsync(&result, scratch.data() + blocks, sizeof(R), cudaMemcpyDeviceToHost, stream.get()));
  }  // freed on the stream, after the copy
  USRECON_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return result;
}

/// Op over x[0, n), n > 0, into device memory *out: enqueued only.
template <class Op, class T, class R>
void reduce_to_device(const T* x, std::size_t n, R* out, StreamView stream) {
  const auto ni = static_cast<std::int64_t>(n);
  const auto blocks = static_cast<unsigned>(br::blocks_for(ni));
  const cuda::StreamScratch<R> partials(blocks, stream.get());
  enqueue_reduce<Op>(x, ni, partials.data(), blocks, out, stream);
}

}  // namespace

template <class T>
sum_type_t<T> cuda_sum(const T* x, std::size_t n, StreamView stream) {
  using R = sum_type_t<T>;
  return n == 0 ? R(0) : reduce_to_host<br::Sum<R>, T, R>(x, n, stream);
}

template <class T>
void cuda_sum_to_device(const T* x, std::size_t n, sum_type_t<T>* out, StreamView stream) {
  using R = sum_type_t<T>;
  if (n == 0) {
    USRECON_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(R), stream.get()));  // 0 in every sum type
    return;
  }
  reduce_to_device<br::Sum<R>>(x, n, out, stream);
}

template <class T>
T cuda_extreme(const T* x, std::size_t n, Extremum which, StreamView stream) {
  return which == Extremum::min ? reduce_to_host<br::Min<T>, T, T>(x, n, stream)
                                : reduce_to_host<br::Max<T>, T, T>(x, n, stream);
}

template <class T>
void cuda_extreme_to_device(const T* x, std::size_t n, T* out, Extremum which, StreamView stream) {
  if (which == Extremum::min) reduce_to_device<br::Min<T>>(x, n, out, stream);
  else reduce_to_device<br::Max<T>>(x, n, out, stream);
}

#define USRECON_INSTANTIATE_CUDA_REDUCTIONS(T)                                                 \
  template sum_type_t<T> cuda_sum<T>(const T*, std::size_t, StreamView);                      \
  template void cuda_sum_to_device<T>(const T*, std::size_t, sum_type_t<T>*, StreamView);      \
  template T cuda_extreme<T>(const T*, std::size_t, Extremum, StreamView);                     \
  template void cuda_extreme_to_device<T>(const T*, std::size_t, T*, Extremum, StreamView);
USRECON_INSTANTIATE_CUDA_REDUCTIONS(float)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(double)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(std::int32_t)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(std::int64_t)
#undef USRECON_INSTANTIATE_CUDA_REDUCTIONS

}  // namespace usrecon::kernels::detail
