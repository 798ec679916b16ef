// Definitions every part of usrecon shares: the host-device marker and the error types.
// This header never includes CUDA headers, so CPU-only users can include it anywhere.
#pragma once

// The headers use C++20 (std::span, concepts): an older standard is said in one line rather than
// in a hundred errors about std::span.
#if __cplusplus < 202002L
#error "usrecon::kernels needs C++20: compile with -std=c++20 (CMake: target_link_libraries(... usrecon::kernels) sets it)"
#endif

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "usrecon/kernels/config.hpp"

// USRECON_HD marks functions that both the CPU backends and CUDA kernels call. With a plain C++
// compiler it is empty, so CPU tests exercise exactly the code the GPU kernels run.
#if defined(__CUDACC__)
#define USRECON_HD __host__ __device__
#else
#define USRECON_HD
#endif

// USRECON_EXEC_CHECK_DISABLE before a USRECON_HD template that calls an argument's functions
// (a block program's barrier: __syncthreads on the device, a host barrier in the tests' emulator):
// nvcc then checks each instantiation where it is used instead of warning that an HD function
// calls a host-only (or device-only) one.
#if defined(__CUDACC__)
#define USRECON_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define USRECON_EXEC_CHECK_DISABLE
#endif

// USRECON_UNROLL before a loop of constant trip count in a USRECON_HD function: nvcc unrolls it
// (so that an array indexed by its counter stays in registers); plain C++ leaves it to -O3.
// Only in nvcc's device pass: its host pass hands the pragma to g++, which warns of it
// (-Wunknown-pragmas, in a consumer's .cu files built with -Xcompiler=-Wall).
#if defined(__CUDA_ARCH__)
#define USRECON_UNROLL _Pragma("unroll")
#else
#define USRECON_UNROLL
#endif

namespace usrecon {

/// A trivially copyable value moved through `word` (an exchange of one 8-byte word, as a warp
/// shuffle) in 8-byte pieces: how a block's shfl_down carries a type its intrinsic does not take
/// (kernels::Int128). cuda::DeviceBlock and the tests' block emulator both call it, so the CPU
/// suite runs the splitting that the GPU runs.
USRECON_EXEC_CHECK_DISABLE
template <class R, class Word>
USRECON_HD R exchange_by_words(R v, Word word) {
  static_assert(std::is_trivially_copyable_v<R> && sizeof(R) % sizeof(unsigned long long) == 0,
                "a trivially copyable type of whole 8-byte words");
  unsigned long long words[sizeof(R) / sizeof(unsigned long long)];
  memcpy(words, &v, sizeof v);
  for (unsigned long long& w : words) w = word(w);
  memcpy(&v, words, sizeof v);
  return v;
}

/// Base of every error usrecon throws on purpose; the message is meant for the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
  ~Error() override;  // defined in the library: one vtable there, not one per translation unit
};

/// A CUDA request that cannot be served: built without CUDA, no driver, no device, out of memory.
class CudaUnavailable : public Error {
 public:
  using Error::Error;
  CudaUnavailable(const CudaUnavailable&) = default;
  CudaUnavailable& operator=(const CudaUnavailable&) = default;
  ~CudaUnavailable() override;
};

/// True when this build contains the CUDA backends (it may still find no device at run time).
bool built_with_cuda() noexcept;

/// Number of usable CUDA devices; 0 when built without CUDA or when no driver/device is present.
int cuda_device_count() noexcept;

/// Throws CudaUnavailable with a message naming `what` when no CUDA device can be used.
void require_cuda(const std::string& what);

}  // namespace usrecon
