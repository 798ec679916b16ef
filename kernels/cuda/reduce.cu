// sum(), min(), max() and mean() on the GPU, over whole arrays and along an axis. Whole arrays: each thread folds a grid-stride range (compensated sums
// for floats), a deterministic tree in each block, then one block combines the per-block partials
// the same way. The block programs are host-device, in usrecon/kernels/block_reduce.hpp; this
// file launches them.
#include <cuda_runtime.h>

#include <algorithm>
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

// ---- Along an axis: x as [outer][length][inner], row-major ----

/// Contiguous lines (inner 1): a block a line, each by pass 1's program as one block of one
/// (the whole-array rule: per-thread folds, then the block's tree); blocks stride over the lines.
template <class Op, class T, class R>
__global__ void __launch_bounds__(br::kThreads) reduce_rows(const T* __restrict__ x, std::int64_t rows,
                                                           std::int64_t length, R* __restrict__ out) {
  __shared__ R warp_results[br::kThreads / br::kWarp];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    br::partials_program(x + row * length, length, out + row, 0, 1, static_cast<int>(threadIdx.x), warp_results,
                         cuda::DeviceBlock{}, Op{});
    __syncthreads();  // warp_results is the next line's
  }
}

/// Strided lines (inner > 1), pass 1: a block a (tile of kWarp columns, chunk of rows), by
/// br::columns_program; blocks stride over the tiles (blockIdx.x), one chunk each (blockIdx.y).
template <class Op, class T, class R>
__global__ void __launch_bounds__(br::kThreads) reduce_columns(const T* __restrict__ x, std::int64_t length,
                                                              std::int64_t inner, std::int64_t lines,
                                                              br::ColumnsGrid grid, R* __restrict__ out) {
  __shared__ R shared[br::kThreads];
  for (std::int64_t tile = blockIdx.x; tile < grid.tiles; tile += gridDim.x) {
    br::columns_program(x, length, inner, lines, grid, tile, std::int64_t(blockIdx.y), out,
                        static_cast<int>(threadIdx.x), shared, cuda::DeviceBlock{}, Op{});
    __syncthreads();  // shared is the next tile's
  }
}

/// Strided lines of grids with line_per_thread: a thread a line, its rows in order.
template <class Op, class T, class R>
__global__ void reduce_column_lines(const T* __restrict__ x, std::int64_t length, std::int64_t inner,
                                    std::int64_t lines, R* __restrict__ out) {
  for (std::int64_t line = cuda::global_index_1d(); line < lines; line += cuda::grid_stride_1d())
    out[line] = br::column_line<T, R>(x, length, inner, line, Op{});
}

/// Strided lines, pass 2 (more than one chunk): a thread a line, its chunks in order.
template <class Op, class R>
__global__ void fold_column_chunks(const R* __restrict__ partials, std::int64_t chunks, std::int64_t lines,
                                   R* __restrict__ out) {
  for (std::int64_t line = cuda::global_index_1d(); line < lines; line += cuda::grid_stride_1d())
    out[line] = br::columns_final(partials, chunks, lines, line, Op{});
}

/// mean = sum / length by br::mean_from_sum, the CPU's function (a length of 0: NaN).
template <class S, class M>
__global__ void divide_by_length(const S* __restrict__ sums, std::int64_t count, std::int64_t length,
                                 M* __restrict__ out) {
  for (std::int64_t i = cuda::global_index_1d(); i < count; i += cuda::grid_stride_1d())
    out[i] = br::mean_from_sum<M>(sums[i], length);
}

template <class Op, class T, class R>
void enqueue_lines(const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner, R* out,
                   StreamView stream) {
  if (inner == 1) {
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(outer, std::int64_t(1) << 20));
    reduce_rows<Op, T, R><<<blocks, br::kThreads, 0, stream.get()>>>(x, outer, length, out);
    USRECON_CUDA_CHECK_LAUNCH("reduce_rows");
  } else {  // the host entry returned already where there are no lines
    const br::ColumnsGrid grid = br::columns_grid(outer, length, inner);
    const std::int64_t lines = outer * inner;
    if (grid.line_per_thread) {
      constexpr int threads = 256;
      reduce_column_lines<Op, T, R><<<cuda::grid_1d(lines, threads), threads, 0, stream.get()>>>(x, length, inner,
                                                                                              lines, out);
      USRECON_CUDA_CHECK_LAUNCH("reduce_column_lines");
      return;
    }
    const dim3 blocks(static_cast<unsigned>(std::min<std::int64_t>(grid.tiles, std::int64_t(1) << 20)),
                      static_cast<unsigned>(grid.chunks));  // chunks <= br::kMaxBlocks
    if (grid.chunks == 1) {
      reduce_columns<Op, T, R><<<blocks, br::kThreads, 0, stream.get()>>>(x, length, inner, lines, grid, out);
      USRECON_CUDA_CHECK_LAUNCH("reduce_columns");
      return;
    }
    const cuda::StreamScratch<R> partials(static_cast<std::size_t>(grid.chunks * lines), stream.get());
    reduce_columns<Op, T, R><<<blocks, br::kThreads, 0, stream.get()>>>(x, length, inner, lines, grid,
                                                                        partials.data());
    USRECON_CUDA_CHECK_LAUNCH("reduce_columns");
    constexpr int threads = 256;
    fold_column_chunks<Op, R><<<cuda::grid_1d(lines, threads), threads, 0, stream.get()>>>(partials.data(),
                                                                                           grid.chunks, lines, out);
    USRECON_CUDA_CHECK_LAUNCH("fold_column_chunks");
  }
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

template <class T>
void cuda_mean_to_device(const T* x, std::size_t n, mean_type_t<T>* out, StreamView stream) {
  using S = br::mean_sum_t<T>;  // Int128 for integers: exact
  const cuda::StreamScratch<S> total(1, stream.get());  // freed on the stream, after the division
  if (n == 0) USRECON_CUDA_CHECK(cudaMemsetAsync(total.data(), 0, sizeof(S), stream.get()));  // 0 in every S
  else reduce_to_device<br::Sum<S>>(x, n, total.data(), stream);
  divide_by_length<S, mean_type_t<T>><<<1, 32, 0, stream.get()>>>(total.data(), 1, static_cast<std::int64_t>(n), out);
  USRECON_CUDA_CHECK_LAUNCH("divide_by_length");
}

template <class T, class R>
void cuda_reduce_axis(const T* x, std::size_t outer, std::size_t length, std::size_t inner, R* out, Reduction kind,
                      StreamView stream) {
  const auto o = static_cast<std::int64_t>(outer), n = static_cast<std::int64_t>(length),
             i = static_cast<std::int64_t>(inner);
  using S = sum_type_t<T>;
  if constexpr (std::is_same_v<R, S>)
    if (kind == Reduction::sum) return enqueue_lines<br::Sum<S>>(x, o, n, i, out, stream);
  if constexpr (std::is_same_v<R, T>) {
    if (kind == Reduction::min) return enqueue_lines<br::Min<T>>(x, o, n, i, out, stream);
    if (kind == Reduction::max) return enqueue_lines<br::Max<T>>(x, o, n, i, out, stream);
  }
  if constexpr (std::is_same_v<R, mean_type_t<T>>) {
    if (kind == Reduction::mean) {
      using M = br::mean_sum_t<T>;  // Int128 for integers: exact
      const cuda::StreamScratch<M> sums(outer * inner, stream.get());
      enqueue_lines<br::Sum<M>>(x, o, n, i, sums.data(), stream);
      constexpr int threads = 256;
      divide_by_length<M, R><<<cuda::grid_1d(o * i, threads), threads, 0, stream.get()>>>(sums.data(), o * i, n, out);
      USRECON_CUDA_CHECK_LAUNCH("divide_by_length");
      return;
    }
  }
  throw Error("reductions along an axis: the output's element type is not the reduction's");  // the host checked
}

#define USRECON_INSTANTIATE_CUDA_AXIS(T, R) \
  template void cuda_reduce_axis<T, R>(const T*, std::size_t, std::size_t, std::size_t, R*, Reduction, StreamView);
USRECON_AXIS_REDUCTION_TYPES(USRECON_INSTANTIATE_CUDA_AXIS)
#undef USRECON_INSTANTIATE_CUDA_AXIS

#define USRECON_INSTANTIATE_CUDA_REDUCTIONS(T)                                                 \
  template sum_type_t<T> cuda_sum<T>(const T*, std::size_t, StreamView);                      \
  template void cuda_sum_to_device<T>(const T*, std::size_t, sum_type_t<T>*, StreamView);      \
  template T cuda_extreme<T>(const T*, std::size_t, Extremum, StreamView);                     \
  template void cuda_extreme_to_device<T>(const T*, std::size_t, T*, Extremum, StreamView);             \
  template void cuda_mean_to_device<T>(const T*, std::size_t, mean_type_t<T>*, StreamView);
USRECON_INSTANTIATE_CUDA_REDUCTIONS(float)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(double)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(std::int32_t)
USRECON_INSTANTIATE_CUDA_REDUCTIONS(std::int64_t)
#undef USRECON_INSTANTIATE_CUDA_REDUCTIONS

}  // namespace usrecon::kernels::detail
