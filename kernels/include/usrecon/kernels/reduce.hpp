// Reductions over all elements of an array (sum, min, max, mean), on CPU threads or CUDA.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
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

namespace detail {
enum class Extremum { min, max };
template <class T>
T extreme(const In<T>& x, Extremum which, const Exec& exec);  // instantiated for the supported types
template <class T>
void extreme(const In<T>& x, const Out<T>& out, Extremum which, const Exec& exec);
}  // namespace detail

/// The least element of a host or device array (or In<T> view), as NumPy's min: a NaN anywhere
/// is the result (on the GPU, whichever NaN is met first; where -0 and +0 are both least, either
/// may be returned). Throws Error for an empty array (no minimum, as NumPy raises). Exact in any
/// order, so the CPU and the GPU agree; device inputs are reduced on exec.stream, and this call
/// waits for the result.
template <class A>
[[nodiscard]] auto min(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "min: element types float, double, int32_t, int64_t");
  return detail::extreme<T>(In<T>(x), detail::Extremum::min, exec);
}
/// The greatest element, as min() (NaN the result where there is one; an empty array refused).
template <class A>
[[nodiscard]] auto max(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "max: element types float, double, int32_t, int64_t");
  return detail::extreme<T>(In<T>(x), detail::Extremum::max, exec);
}

/// min and max into `out`, a one-element array of T, as sum(x, out): a device input with a
/// device output is only enqueued on exec.stream (nothing waits); a device input with a host
/// output waits; a host input needs a host output. An empty device input is refused when the
/// call is made, before anything is enqueued.
template <class A, class O>
  requires(!std::same_as<std::remove_cvref_t<O>, Exec>)
void min(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "min: element types float, double, int32_t, int64_t");
  detail::extreme<T>(In<T>(x), Out<T>(out), detail::Extremum::min, exec);
}
template <class A, class O>
  requires(!std::same_as<std::remove_cvref_t<O>, Exec>)
void max(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "max: element types float, double, int32_t, int64_t");
  detail::extreme<T>(In<T>(x), Out<T>(out), detail::Extremum::max, exec);
}

/// The type a mean of T is returned in: double for integers (as NumPy's), T itself for floats.
template <class T>
struct mean_type : std::conditional<std::is_integral<T>::value, double, T> {};
template <class T>
using mean_type_t = typename mean_type<T>::type;

/// The mean of all elements: sum(x) / size, the sum as sum() forms it (integers exact in int64,
/// as long as the total fits; floats pairwise on the CPU, compensated on the GPU) and divided in
/// mean_type_t<T> (float32 data: a float32 mean, as NumPy's). NaN for an empty array (as NumPy's,
/// which also warns). A device input waits for the result.
template <class A>
[[nodiscard]] auto mean(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "mean: element types float, double, int32_t, int64_t");
  using M = mean_type_t<T>;
  const In<T> in(x);
  const std::int64_t n = in.shape.size();
  if (n == 0) return std::numeric_limits<M>::quiet_NaN();
  return static_cast<M>(static_cast<M>(detail::sum<T>(in, exec)) / static_cast<M>(n));
}

}  // namespace usrecon::kernels
