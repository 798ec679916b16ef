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

}  // namespace usrecon::cuda_detail

/// Evaluates a CUDA runtime call and throws usrecon::CudaUnavailable (no device, no driver, out of
/// memory) or usrecon::Error (anything else) naming the statement, file:line and CUDA's message.
#define USRECON_CUDA_CHECK(statement)                                                     \
  do {                                                                                    \
    const cudaError_t usrecon_status_ = (statement);                                      \
    if (usrecon_status_ != cudaSuccess)                                                   \
      ::usrecon::cuda_detail::throw_cuda_error(usrecon_status_, #statement, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch that was just made (configuration errors are reported by cudaGetLastError).
#define USRECON_CUDA_CHECK_LAUNCH(kernel_name) USRECON_CUDA_CHECK(cudaGetLastError())

/// Evaluates a cuBLAS call (returns cublasStatus_t) and throws naming the statement.
#define USRECON_CUBLAS_CHECK(statement)                                                    \
  do {                                                                                     \
    const int usrecon_status_ = static_cast<int>(statement);                               \
    if (usrecon_status_ != 0)                                                              \
      ::usrecon::cuda_detail::throw_cublas_error(usrecon_status_, #statement, __FILE__, __LINE__); \
  } while (0)
