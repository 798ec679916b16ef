// Reductions: sum over all elements of an array, on CPU threads or CUDA.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "usrecon/kernels/array.hpp"

namespace usrecon::kernels {

/// The type a sum of T is returned in: int64_t for integers (exact, as long as the true sum fits),
/// T itself for floating point.
///
/// A class template, not a std::conditional_t on std::is_integral_v: sum_type_t<T> is in the
/// signatures of the library's exported templates (detail::sum, cpu_sum), and GCC and clang mangle
/// a variable template inside a dependent type differently, so a clang-compiled program could not
/// link against a GCC-built library. `sum_type<T>::type` mangles the same with both.
template <class T>
struct sum_type : std::conditional<std::is_integral<T>::value, std::int64_t, T> {};
template <class T>
using sum_type_t = typename sum_type<T>::type;

namespace detail {
template <class T>
sum_type_t<T> sum(const In<T>& x, const Exec& exec);  // instantiated for the supported types
template <class T>
void sum(const In<T>& x, const Out<sum_type_t<T>>& out, const Exec& exec);
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

/// The same sum written into `out`, a one-element array of sum_type_t<T> (any shape of size 1),
/// so that a loop of sums allocates nothing and, on the GPU, waits for nothing: with a device
/// input and a device output the sum is only enqueued on exec.stream and its result stays on the
/// device (like Numba's device arrays), for the next kernel or a later copy_to_host. A device
/// input with a host output waits, as sum() does; a host input needs a host output. Throws
/// Error for an output of another size or a host input with a device output.
template <class A, class O>
  requires(!std::same_as<std::remove_cvref_t<O>, Exec>)
void sum(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "sum: element types float, double, int32_t, int64_t");
  detail::sum<T>(In<T>(x), Out<sum_type_t<T>>(out), exec);
}

/// The CPU sum of n contiguous host elements (what sum() runs for host arrays).
template <class T>
sum_type_t<T> cpu_sum(const T* x, std::size_t n, int threads = 0);

}  // namespace usrecon::kernels
