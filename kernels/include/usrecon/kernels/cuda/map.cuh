// The generic CUDA elementwise kernel behind Ufunc, templated on the op. Include this header in a
// .cu file to run a new op (a struct with a USRECON_HD operator(), or an __host__ __device__
// lambda with --extended-lambda) on device arrays; see usrecon/kernels/map.hpp.
//
// With a usrecon built without CUDA (-DUSRECON_CUDA=OFF, usrecon_HAVE_CUDA OFF) this header is
// map.hpp alone: its cuda_map throws CudaUnavailable ("... built without CUDA"), as every other CUDA
// request of such a build does, so one .cu file builds against either package and its device calls
// fail at run time, as on a machine without a GPU. (Defining the kernel here too would redefine
// map.hpp's cuda_map: "function template cuda_map has already been defined".)
#pragma once

#include "usrecon/kernels/config.hpp"

#if !defined(USRECON_HAVE_CUDA)
#include "usrecon/kernels/map.hpp"
#else
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/map.hpp"

namespace usrecon::kernels {
namespace cuda_map_detail {

// Each thread runs the host-device programs of map.hpp: contiguous calls map_contiguous_thread
// (map_unroll_v<Op> elements a grid-stride step, loads first), broadcast calls broadcast_offsets
// then apply_element over a grid-stride range.

// Contiguous (or broadcast-from-one-value) operands: no index math beyond i * {0, 1}. The grid
// has map_contiguous_threads(n) threads, so one pass usually covers the array.
template <class Op, class T, std::size_t NOut, std::size_t NIn>
__global__ void map_contiguous(Op op, MapArgs<T, NOut, NIn> a) {
  map_contiguous_thread(op, a, cuda::global_index_1d(), cuda::grid_stride_1d());
}

// General broadcasting: unravel the output index over the collapsed shape.
template <class Op, class T, std::size_t NOut, std::size_t NIn>
__global__ void map_strided(Op op, MapArgs<T, NOut, NIn> a) {
  const std::int64_t step = cuda::grid_stride_1d();
  for (std::int64_t i = cuda::global_index_1d(); i < a.n; i += step) {
    std::int64_t off[NIn];
    broadcast_offsets(a, i, off);
    apply_element(op, a, i, off, std::make_index_sequence<NIn>{});
  }
}

}  // namespace cuda_map_detail

template <class Op, class T, std::size_t NOut, std::size_t NIn>
void cuda_map(const Op& op, const MapArgs<T, NOut, NIn>& a, StreamView stream) {
  if (a.n == 0) return;
  constexpr int threads = 256;
  if (a.ndim == 1)
    cuda_map_detail::map_contiguous<Op, T, NOut, NIn>
        <<<cuda::grid_1d(map_contiguous_threads<Op>(a.n), threads), threads, 0, stream.get()>>>(op, a);
  else
    cuda_map_detail::map_strided<Op, T, NOut, NIn><<<cuda::grid_1d(a.n, threads), threads, 0, stream.get()>>>(op, a);
  USRECON_CUDA_CHECK_LAUNCH("elementwise map");
}

}  // namespace usrecon::kernels
#endif  // USRECON_HAVE_CUDA
