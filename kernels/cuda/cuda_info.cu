// Device discovery (USRECON_CUDA_CHECK's error helper is inline in cuda_check.hpp).
#include <string>

#include "usrecon/kernels/cuda_check.hpp"

namespace usrecon {

bool built_with_cuda() noexcept { return true; }

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver/no device" status
    return 0;
  }
  return count;
}

void require_cuda(const std::string& what) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    // The runtime says "driver version is insufficient" also when there is no driver at all.
    throw CudaUnavailable(what + ": no usable CUDA device (" +
                          (status == cudaErrorInsufficientDriver
                               ? std::string("no NVIDIA driver, or one older than this build's CUDA runtime needs")
                               : std::string(cudaGetErrorString(status))) +
                          ")");
  }
  if (count == 0) throw CudaUnavailable(what + ": no CUDA device found");
}

}  // namespace usrecon
