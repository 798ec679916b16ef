// Reductions (sum, min, max, mean) over all elements of an array or along one axis, on CPU
// threads or CUDA.
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

/// An axis of an array, as NumPy's `axis=`: 0 the outermost; negative counts from the last (-1).
struct Axis {
  int index = 0;
};

/// What the reductions take as an array or an output: HostArray, DeviceArray, In<T>, Out<T>.
/// Nothing else (plain numbers, iterators, the library's other types) matches them, so that an
/// unqualified min(a, b) or max(a, b) of plain values, by a using-directive or by argument-
/// dependent lookup on a library type, finds std::min and std::max as before.
template <class A>
concept ArrayLike = !std::is_void_v<element_type_t<A>>;

/// An output the reductions can write: a non-const array, or an Out<T> view (const or not: a view
/// of writable memory).
template <class O>
inline constexpr bool is_writable_output_v =
    !std::is_const_v<std::remove_reference_t<O>> || std::is_same_v<std::remove_cvref_t<O>, Out<element_type_t<O>>>;

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
  requires ArrayLike<A>
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
  requires ArrayLike<A> && ArrayLike<O>
void sum(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "sum: element types float, double, int32_t, int64_t");
  static_assert(std::is_same_v<element_type_t<O>, sum_type_t<T>>,
                "sum: the output's element type is sum_type_t<T> (int64_t for integer data)");
  static_assert(is_writable_output_v<O>, "sum: the output must be writable");
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
/// order, so the CPU and the GPU agree (but for which NaN, the data's own or the standard quiet
/// NaN, and which zero where -0 and +0 tie); device inputs are reduced on exec.stream, and this
/// call waits for the result.
template <class A>
  requires ArrayLike<A>
[[nodiscard]] auto min(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "min: element types float, double, int32_t, int64_t");
  return detail::extreme<T>(In<T>(x), detail::Extremum::min, exec);
}
/// The greatest element, as min() (NaN the result where there is one; an empty array refused).
template <class A>
  requires ArrayLike<A>
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
  requires ArrayLike<A> && ArrayLike<O>
void min(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "min: element types float, double, int32_t, int64_t");
  static_assert(std::is_same_v<element_type_t<O>, T>, "min: the output's element type is the input's");
  static_assert(is_writable_output_v<O>, "min: the output must be writable");
  detail::extreme<T>(In<T>(x), Out<T>(out), detail::Extremum::min, exec);
}
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void max(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "max: element types float, double, int32_t, int64_t");
  static_assert(std::is_same_v<element_type_t<O>, T>, "max: the output's element type is the input's");
  static_assert(is_writable_output_v<O>, "max: the output must be writable");
  detail::extreme<T>(In<T>(x), Out<T>(out), detail::Extremum::max, exec);
}

/// The type a mean of T is returned in: double for integers (as NumPy's), T itself for floats.
template <class T>
struct mean_type : std::conditional<std::is_integral<T>::value, double, T> {};
template <class T>
using mean_type_t = typename mean_type<T>::type;

namespace detail {
template <class T>
mean_type_t<T> mean(const In<T>& x, const Exec& exec);
template <class T>
void mean(const In<T>& x, const Out<mean_type_t<T>>& out, const Exec& exec);
}  // namespace detail

/// The mean of all elements. Integers: the exact sum (128-bit, Int128: it never wraps, where
/// sum()'s int64 does past 2^63) divided by the size and rounded once to double, the nearest
/// double to the true mean, on the CPU and the GPU alike (NumPy adds in float64, rounding each
/// addend past 2^53). Floats: sum(x) / size in T (float32 data: a float32 mean, as NumPy's).
/// NaN for an empty array (as NumPy's, which also warns). A device input waits for the result.
template <class A>
  requires ArrayLike<A>
[[nodiscard]] auto mean(const A& x, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "mean: element types float, double, int32_t, int64_t");
  return detail::mean<T>(In<T>(x), exec);
}
/// The mean into `out`, a one-element array of mean_type_t<T>, as sum(x, out): a device input
/// with a device output is only enqueued.
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void mean(const A& x, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "mean: element types float, double, int32_t, int64_t");
  static_assert(std::is_same_v<element_type_t<O>, mean_type_t<T>>,
                "mean: the output's element type is mean_type_t<T> (double for integer data)");
  static_assert(is_writable_output_v<O>, "mean: the output must be writable");
  detail::mean<T>(In<T>(x), Out<mean_type_t<T>>(out), exec);
}

/// What a reduction along an axis computes (the whole-array reductions' meanings, per line).
enum class Reduction { sum, min, max, mean };

/// The element type of a reduction's result: sum_type_t for sum, T for min and max,
/// mean_type_t for mean.
template <Reduction kind, class T>
using reduction_type_t =
    std::conditional_t<kind == Reduction::sum, sum_type_t<T>,
                       std::conditional_t<kind == Reduction::mean, mean_type_t<T>, T>>;

namespace detail {
/// x's shape less `axis`; Error for an axis out of range, and for min and max along an axis of
/// length 0.
Shape reduced_shape(const Shape& x, Axis axis, Reduction kind);
template <class T, class R>
void reduce_axis(const In<T>& x, Axis axis, const Out<R>& out, Reduction kind, const Exec& exec);
/// The (T, R) pairs of the reductions along an axis, R the result's type: X(T, R) for each.
#define USRECON_AXIS_REDUCTION_TYPES(X)                                                        \
  X(float, float)               /* float sum, min, max, mean */                                 \
  X(double, double)                                                                             \
  X(std::int32_t, std::int32_t) /* min, max */                                                  \
  X(std::int32_t, std::int64_t) /* sum */                                                       \
  X(std::int32_t, double)       /* mean */                                                      \
  X(std::int64_t, std::int64_t) /* sum, min, max */                                             \
  X(std::int64_t, double)       /* mean */

template <Reduction kind, class A>
auto reduce_axis_new(const A& x, Axis axis, const Exec& exec) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "axis reductions: element types float, double, int32_t, int64_t");
  static_assert(!std::is_same_v<std::remove_cvref_t<A>, In<T>>,
                "an In<T> view says where it lives only at run time: give an output array (sum(x, axis, out))");
  using R = reduction_type_t<kind, T>;
  using Result = std::conditional_t<is_device_array_v<std::remove_cvref_t<A>>, DeviceArray<R>, HostArray<R>>;
  Result result(reduced_shape(x.shape(), axis, kind));  // checked before anything is allocated
  reduce_axis<T, R>(In<T>(x), axis, Out<R>(result), kind, exec);
  return result;
}
}  // namespace detail

/// Reductions along one axis, as NumPy's sum(x, axis=k) and the like: the result has x's shape
/// less that axis (a 1-D array's is a 0-d array of one element), in a new array where x lives
/// (a HostArray or a DeviceArray), or written into `out`, which has that shape or x's with the
/// axis kept as 1 (NumPy's keepdims), and may not overlap x (Error: NumPy's out=x is not taken,
/// as the lines are read while results are written). Each line is reduced as the whole arrays
/// are: sums of integers exact in int64; of floats pairwise on the CPU (contiguous lines shorter
/// than 16: in order; strided lines: blocks of 128 rows in order, then pairwise), compensated on
/// the GPU (strided lines: each of 8 warps a block takes every 8th row of a chunk of rows,
/// compensated; the warps' and the chunks' results added); min and max exact, NaN where a line
/// holds one; mean = sum / length in mean_type_t. The CPU's result does not depend on the thread
/// count. Lines of length 0 sum to 0 and have a NaN mean; min and max along an axis of length 0
/// are refused (Error), as NumPy refuses them.
/// Device arrays are reduced on exec.stream: with a device output the call only enqueues.
/// Sums of floats along an axis may differ in the last bits between CPU and GPU (other orders).
template <class A, std::same_as<Axis> AxisT>  // deduced: a braced {2} is an Exec, as in 0.2.0
  requires ArrayLike<A>
[[nodiscard]] auto sum(const A& x, AxisT axis, const Exec& exec = {}) {
  return detail::reduce_axis_new<Reduction::sum>(x, axis, exec);
}
template <class A, std::same_as<Axis> AxisT>  // deduced: a braced {2} is an Exec, as in 0.2.0
  requires ArrayLike<A>
[[nodiscard]] auto min(const A& x, AxisT axis, const Exec& exec = {}) {
  return detail::reduce_axis_new<Reduction::min>(x, axis, exec);
}
template <class A, std::same_as<Axis> AxisT>  // deduced: a braced {2} is an Exec, as in 0.2.0
  requires ArrayLike<A>
[[nodiscard]] auto max(const A& x, AxisT axis, const Exec& exec = {}) {
  return detail::reduce_axis_new<Reduction::max>(x, axis, exec);
}
template <class A, std::same_as<Axis> AxisT>  // deduced: a braced {2} is an Exec, as in 0.2.0
  requires ArrayLike<A>
[[nodiscard]] auto mean(const A& x, AxisT axis, const Exec& exec = {}) {
  return detail::reduce_axis_new<Reduction::mean>(x, axis, exec);
}
/// The same into `out`, an array (or Out<R> view) of reduction_type_t<kind, T>.
template <Reduction kind, class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void reduce(const A& x, Axis axis, O&& out, const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(is_supported_type_v<T>, "axis reductions: element types float, double, int32_t, int64_t");
  using R = reduction_type_t<kind, T>;
  static_assert(std::is_same_v<element_type_t<O>, R>,
                "the output's element type is the reduction's: sum_type_t<T>, T (min, max), mean_type_t<T>");
  static_assert(is_writable_output_v<O>, "the output must be writable");
  detail::reduce_axis<T, R>(In<T>(x), axis, Out<R>(out), kind, exec);
}
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void sum(const A& x, Axis axis, O&& out, const Exec& exec = {}) {
  reduce<Reduction::sum>(x, axis, out, exec);
}
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void min(const A& x, Axis axis, O&& out, const Exec& exec = {}) {
  reduce<Reduction::min>(x, axis, out, exec);
}
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void max(const A& x, Axis axis, O&& out, const Exec& exec = {}) {
  reduce<Reduction::max>(x, axis, out, exec);
}
template <class A, class O>
  requires ArrayLike<A> && ArrayLike<O>
void mean(const A& x, Axis axis, O&& out, const Exec& exec = {}) {
  reduce<Reduction::mean>(x, axis, out, exec);
}

// The library's own instantiations (internal: the macros work inside namespace usrecon::kernels
// only), listed once: kernels/cpu/reduce.cpp defines them (PREFIX
// empty); here they are declared (PREFIX extern), so that a consumer's translation units neither
// look for definitions they cannot see (clang's -Wundefined-func-template) nor make their own.
#define USRECON_REDUCTION_INSTANTIATIONS(PREFIX, T)                                                        \
  PREFIX template sum_type_t<T> cpu_sum<T>(const T*, std::size_t, int);                                    \
  PREFIX template sum_type_t<T> detail::sum<T>(const In<T>&, const Exec&);                                 \
  PREFIX template void detail::sum<T>(const In<T>&, const Out<sum_type_t<T>>&, const Exec&);               \
  PREFIX template T detail::extreme<T>(const In<T>&, detail::Extremum, const Exec&);                       \
  PREFIX template void detail::extreme<T>(const In<T>&, const Out<T>&, detail::Extremum, const Exec&);     \
  PREFIX template mean_type_t<T> detail::mean<T>(const In<T>&, const Exec&);                               \
  PREFIX template void detail::mean<T>(const In<T>&, const Out<mean_type_t<T>>&, const Exec&);
#define USRECON_AXIS_REDUCTION_INSTANTIATION(PREFIX, T, R) \
  PREFIX template void detail::reduce_axis<T, R>(const In<T>&, Axis, const Out<R>&, Reduction, const Exec&);
#define USRECON_EXTERN_AXIS_REDUCTION(T, R) USRECON_AXIS_REDUCTION_INSTANTIATION(extern, T, R)
USRECON_REDUCTION_INSTANTIATIONS(extern, float)
USRECON_REDUCTION_INSTANTIATIONS(extern, double)
USRECON_REDUCTION_INSTANTIATIONS(extern, std::int32_t)
USRECON_REDUCTION_INSTANTIATIONS(extern, std::int64_t)
USRECON_AXIS_REDUCTION_TYPES(USRECON_EXTERN_AXIS_REDUCTION)
#undef USRECON_EXTERN_AXIS_REDUCTION

}  // namespace usrecon::kernels
