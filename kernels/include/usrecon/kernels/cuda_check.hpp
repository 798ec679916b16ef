// Throwing checks for CUDA runtime and cuBLAS calls. Include only from CUDA translation units
// (it includes the CUDA headers); CPU-only users never see it. throw_cuda_error is inline, so
// that a .cu file of a user's own links against a package built without CUDA too (the library
// then has no CUDA runtime to name an error with); throw_cublas_error names no CUDA type and is
// in both builds.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "usrecon/kernels/common.hpp"

namespace usrecon::cuda_detail {

/// Throws CudaUnavailable for what makes the device unusable (no device, no driver, out of
/// memory, no code for this GPU: --backend auto falls back to the CPU) and Error for anything
/// else, naming the statement, file:line and CUDA's name and message for `status`.
[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* statement, const char* file, int line) {
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
  const std::string message = unusable + "CUDA error in " + statement + " at " + file + ":" + std::to_string(line) +
                              ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorMemoryAllocation:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    // A device this build cannot run on (no sm_90 code for it, a driver older than the
    // toolkit): unusable.
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      throw CudaUnavailable(message);
    default:
      throw Error(message);
  }
}

/// Throws Error naming the statement, file:line and cuBLAS's message for `status` (a
/// cublasStatus_t; its number alone in a package built without CUDA).
[[noreturn]] void throw_cublas_error(int status, const char* statement, const char* file, int line);

/// USRECON_CUDA_CHECK_LAUNCH's body: throws when cudaGetLastError reports an error.
inline void check_launch(const char* kernel_name, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw_cuda_error(status, (std::string("launch of ") + kernel_name).c_str(), file, line);
}

}  // namespace usrecon::cuda_detail

/// Evaluates a CUDA runtime call and throws usrecon::CudaUnavailable (no device, no driver, out of
/// memory) or usrecon::Error (anything else) naming the statement, file:line and CUDA's message.
#define USRECON_CUDA_CHECK(statement)                                                     \
  do {                                                                                    \
    const cudaError_t usrecon_status_ = (statement);                                      \
    if (usrecon_status_ != cudaSuccess)                                                   \
      ::usrecon::cuda_detail::throw_cuda_error(usrecon_status_, #statement, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch that was just made (configuration errors are reported by cudaGetLastError);
/// kernel_name (a C string, e.g. "das_kernel") goes into the message as "launch of das_kernel",
/// with file:line and CUDA's message.
#define USRECON_CUDA_CHECK_LAUNCH(kernel_name) \
  ::usrecon::cuda_detail::check_launch(kernel_name, __FILE__, __LINE__)

/// Evaluates a cuBLAS call (returns cublasStatus_t) and throws naming the statement.
#define USRECON_CUBLAS_CHECK(statement)                                                    \
  do {                                                                                     \
    const int usrecon_status_ = static_cast<int>(statement);                               \
    if (usrecon_status_ != 0)                                                              \
      ::usrecon::cuda_detail::throw_cublas_error(usrecon_status_, #statement, __FILE__, __LINE__); \
  } while (0)
