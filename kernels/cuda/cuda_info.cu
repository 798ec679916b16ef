// Device discovery and the error helpers behind USRECON_CUDA_CHECK.
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

namespace cuda_detail {

void throw_cuda_error(cudaError_t status, const char* statement, const char* file, int line) {
  // A call's failure is also left as the thread's last error; cleared here (for errors that do
  // not stick to the context, such as out of memory), so that the next launch check, which reads
  // cudaGetLastError(), does not report this error again as the launch's.
  (void)cudaGetLastError();
  // No device or no driver is said in words first, as require_cuda says it (the runtime's
  // "insufficient driver" is also what a machine without any driver gets).
  const std::string unusable =
      status == cudaErrorInsufficientDriver || status == cudaErrorStubLibrary
          ? "no usable CUDA device (no NVIDIA driver, or one older than this build's CUDA runtime needs): "
      : status == cudaErrorNoDevice ? "no CUDA device found: "
                                    : "";
  const std::string message = unusable + "CUDA error in " + statement + " at " + file + ":" +
                              std::to_string(line) + ": " + cudaGetErrorName(status) + " (" +
                              cudaGetErrorString(status) + ")";
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorMemoryAllocation:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    // A device this build cannot run on (no sm_90 code for it, a driver older than the
    // toolkit): unusable, so --backend auto falls back to the CPU.
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      throw CudaUnavailable(message);
    default:
      throw Error(message);
  }
}

}  // namespace cuda_detail
}  // namespace usrecon
