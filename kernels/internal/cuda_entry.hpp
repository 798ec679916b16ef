// Private to the kernels library: the CUDA entry points the host dispatchers call. Defined in
// cuda/*.cu, or in cpu/cuda_none.cpp (throwing CudaUnavailable) in a build without CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm_shape.hpp"
#include "usrecon/kernels/matmul.hpp"
#include "usrecon/kernels/reduce.hpp"

namespace usrecon::kernels::detail {

template <class T>
sum_type_t<T> cuda_sum(const T* x, std::size_t n, StreamView stream);
/// The sum of n device elements written to device memory `out`, enqueued on `stream` (no wait).
template <class T>
void cuda_sum_to_device(const T* x, std::size_t n, sum_type_t<T>* out, StreamView stream);

/// min or max of n > 0 device elements, returned (waits) or written to device memory `out`
/// (enqueued only).
template <class T>
T cuda_extreme(const T* x, std::size_t n, Extremum which, StreamView stream);
template <class T>
void cuda_extreme_to_device(const T* x, std::size_t n, T* out, Extremum which, StreamView stream);

/// The mean of n >= 0 device elements into device memory *out (0 / 0, NaN, for n = 0): enqueued only.
template <class T>
void cuda_mean_to_device(const T* x, std::size_t n, mean_type_t<T>* out, StreamView stream);

/// A reduction of the lines of device x, viewed as [outer][length][inner] (outer, inner > 0), into
/// device memory out[outer * inner]: enqueued only. R is the reduction's type (the host checks).
template <class T, class R>
void cuda_reduce_axis(const T* x, std::size_t outer, std::size_t length, std::size_t inner, R* out, Reduction kind,
                      StreamView stream);
// USRECON_AXIS_REDUCTION_TYPES (reduce.hpp) lists the (T, R) pairs its instantiations take.

std::uint64_t cuda_monte_carlo_count(std::uint64_t n, std::uint64_t seed, StreamView stream);

template <class T>
void cuda_gemm(const T* a, const T* b, T* c, const GemmShape& shape, MatmulAlgo algo,
               StreamView stream);

}  // namespace usrecon::kernels::detail
