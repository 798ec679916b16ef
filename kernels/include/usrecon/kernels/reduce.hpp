// Reductions: sum over all elements of an array, on CPU threads or CUDA.
#pragma once

#include <cstdint>
#include <type_traits>

#include "usrecon/kernels/array.hpp"

namespace usrecon::kernels {

/// The type a sum of T is returned in: int64_t for integers (exact, as long as the true sum fits),
/// T itself for floating point.
template <class T>
using sum_type_t = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;

namespace detail {
template <class T>
sum_type_t<T> sum(const In<T>& x, const Exec& exec);  // instantiated for the supported types
}  // namespace detail

/// Sum of all elements of a host or device array (or In<T> view).
///  - integers: exact (64-bit accumulation).
///  - floats, CPU: pairwise over fixed 2048-element leaves; the result depends only on the data,
///    not on the thread count.
///  - floats, CUDA: per-thread compensated (Kahan) sums combined by a fixed tree; deterministic
///    for a given size.
/// Device sums are enqueued on exec.stream and this call waits for the result.
template <class A>
[[nodiscard]] auto sum(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "sum: element types float, double, int32_t, int64_t");
  return detail::sum<T>(In<T>(x), exec);
}

/// The CPU sum of n contiguous host elements (what sum() runs for host arrays).
template <class T>
sum_type_t<T> cpu_sum(const T* x, std::size_t n, int threads = 0);

}  // namespace usrecon::kernels
