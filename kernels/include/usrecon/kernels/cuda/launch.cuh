// Launch helpers for CUDA kernels. Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "usrecon/kernels/cuda_check.hpp"

namespace usrecon::kernels::cuda {

/// Blocks for a 1-D grid-stride loop over n items with `threads` per block (at least 1, capped so
/// the grid stays within CUDA's limits; kernels loop over the rest).
inline unsigned grid_1d(std::int64_t n, int threads, std::int64_t max_blocks = std::int64_t(1) << 30) {
  std::int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<unsigned>(blocks);
}

/// Index of this thread in a 1-D grid, and the grid-stride step, as 64-bit values.
__device__ inline std::int64_t global_index_1d() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride_1d() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

/// Number of streaming multiprocessors of the current device.
inline int sm_count() {
  int device = 0, sms = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace usrecon::kernels::cuda
