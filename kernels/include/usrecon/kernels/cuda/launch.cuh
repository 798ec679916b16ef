// Launch helpers for CUDA kernels. Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

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

/// The block intrinsics that the host-device block programs (gemm_tiled.hpp, block_reduce.hpp,
/// random.hpp) call through their `block` argument; the tests' emulator
/// (tests/kernels/block_emulator.hpp) gives the same three on the host.
struct DeviceBlock {
  __device__ void sync() const { __syncthreads(); }
  /// Lane + offset's value within the warp (the caller's own past the warp's end); every lane calls.
  /// A type the intrinsic does not take (Int128) goes as its 8-byte words.
  template <class R>
  __device__ R shfl_down(R v, int offset) const {
    if constexpr (std::is_arithmetic_v<R>) {
      return __shfl_down_sync(0xffffffffu, v, offset);
    } else {
      return exchange_by_words(v, [offset](unsigned long long w) { return __shfl_down_sync(0xffffffffu, w, offset); });
    }
  }
  template <class R>
  __device__ void atomic_add(R* target, R v) const {
    atomicAdd(target, v);
  }
};

/// Number of streaming multiprocessors of the current device.
inline int sm_count() {
  int device = 0, sms = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  USRECON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

/// The current device's memory pool for StreamScratch: the library's own, created on first use
/// and never destroyed (as the cuBLAS handles: destroying it at exit would race the runtime's
/// teardown). Its release threshold keeps up to 64 MiB mapped across synchronizations: the
/// device's default pool keeps none, so a sum() that returns to the host (and synchronizes)
/// would map its few kilobytes of scratch anew on every call. The user's own default pool is
/// left as it is.
inline cudaMemPool_t scratch_pool() {
  int device = 0;
  USRECON_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;  // by device ordinal; null until made
  const std::lock_guard lock(mutex);
  const auto ordinal = static_cast<std::size_t>(device);
  if (pools.size() <= ordinal) pools.resize(ordinal + 1, nullptr);
  cudaMemPool_t& pool = pools[ordinal];
  if (!pool) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t made = nullptr;
    USRECON_CUDA_CHECK(cudaMemPoolCreate(&made, &props));
    std::uint64_t keep = std::uint64_t(64) << 20;  // bytes
    if (const cudaError_t e = cudaMemPoolSetAttribute(made, cudaMemPoolAttrReleaseThreshold, &keep);
        e != cudaSuccess) {
      (void)cudaMemPoolDestroy(made);
      USRECON_CUDA_CHECK(e);
    }
    pool = made;
  }
  return pool;
}

/// Scratch memory from the library's stream-ordered pool (scratch_pool()): after the first call a
/// reuse of pooled memory, not a cudaMalloc, also across synchronizations. Freed on the same
/// stream (cudaFreeAsync) when it goes out of scope, also when a later check throws, so an error
/// leaks nothing; work enqueued before the free still sees the memory. Move-only.
template <class T>
class StreamScratch {
 public:
  StreamScratch(std::size_t count, cudaStream_t stream) : stream_(stream) {
    USRECON_CUDA_CHECK(
        cudaMallocFromPoolAsync(reinterpret_cast<void**>(&data_), count * sizeof(T), scratch_pool(), stream));
  }
  ~StreamScratch() {
    // Errors cannot be reported from a destructor; clear the one a failed free leaves, so that
    // the next launch check does not blame it on an unrelated kernel.
    if (data_ && cudaFreeAsync(data_, stream_) != cudaSuccess) (void)cudaGetLastError();
  }
  StreamScratch(StreamScratch&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), stream_(other.stream_) {}
  StreamScratch& operator=(StreamScratch&&) = delete;
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  [[nodiscard]] T* data() const noexcept { return data_; }

 private:
  T* data_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace usrecon::kernels::cuda
