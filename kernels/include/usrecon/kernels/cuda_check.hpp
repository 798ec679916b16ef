// Throwing checks for CUDA runtime and cuBLAS calls. Include only from CUDA translation units
// (it includes the CUDA headers); CPU-only users never see it.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "usrecon/kernels/common.hpp"

namespace usrecon::cuda_detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* statement, const char* file,
                                   int line);
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
