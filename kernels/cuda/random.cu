// monte_carlo_pi on the GPU: one Philox counter (two samples) per loop step, integer counts. The
// block program is host-device, in usrecon/kernels/random.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/random.hpp"

namespace usrecon::kernels::detail {
namespace {

constexpr int threads = 256;

__global__ void __launch_bounds__(threads) monte_carlo_kernel(std::uint64_t n, std::uint64_t seed,
                                                              unsigned long long* inside) {
  monte_carlo_block_program(n, seed, blockIdx.x, gridDim.x, threads, static_cast<int>(threadIdx.x), inside,
                            cuda::DeviceBlock{});
}

}  // namespace

std::uint64_t cuda_monte_carlo_count(std::uint64_t n, std::uint64_t seed, StreamView stream) {
  require_cuda("monte_carlo_count (and monte_carlo_pi) on CUDA");
  if (n == 0) return 0;
  // Only the grid's size: at most 2^63 - 1 (n = 2^64 - 1 has 2^63 counters, past int64).
  const auto counters = static_cast<std::int64_t>(std::min<std::uint64_t>(monte_carlo_counters(n), INT64_MAX));
  const unsigned blocks = cuda::grid_1d(counters, threads, 32 * cuda::sm_count());
  unsigned long long inside = 0;
  {
    const cuda::StreamScratch<unsigned long long> d_inside(1, stream.get());
    USRECON_CUDA_CHECK(cudaMemsetAsync(d_inside.data(), 0, sizeof(unsigned long long), stream.get()));
    monte_carlo_kernel<<<blocks, threads, 0, stream.get()>>>(n, seed, d_inside.data());
    USRECON_CUDA_CHECK_LAUNCH("monte_carlo_kernel");
    USRECON_CUDA_CHECK(cudaMemcpyAsync(&inside, d_inside.data(), sizeof inside, cudaMemcpyDeviceToHost,
                                       stream.get()));
  }  // freed on the stream, after the copy
  USRECON_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return inside;
}

}  // namespace usrecon::kernels::detail
