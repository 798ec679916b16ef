// sum(), min(), max(): the CPU reductions and the host/device dispatch.
#include "usrecon/kernels/reduce.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/block_reduce.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::kernels {
namespace {

constexpr std::size_t leaf = 2048;  // elements one leaf of a CPU reduction takes
constexpr std::size_t lanes = 16;   // accumulators a leaf (the compiler keeps them in vector registers)

// One leaf's sum: 16 independent accumulators, then combined pairwise. Integers accumulate in 64
// bits (unsigned, so int64 wrap-around is defined).
template <class T>
sum_type_t<T> leaf_sum(const T* x, std::size_t n) {
  using R = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;
  R acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t k = 0; i + k < n; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t w = lanes / 2; w >= 1; w /= 2)
    for (std::size_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return static_cast<sum_type_t<T>>(acc[0]);
}

// One leaf's min or max (Op: block_reduce::Min<T> or Max<T>, whose order and NaN rule the GPU
// shares): 16 lanes of plain compares, which a NaN never wins, and beside them 16 flags of
// whether a lane met a NaN, which is then the result. The flags are integers as wide as T so that
// the loop vectorizes: a lane that took a NaN in place (compare | isnan) did not, at 2.4 times the
// time (2^24 floats on the 2-core development machine: 8.3 ms against 3.5 ms; sum 1.4-1.6 ms).
template <class T, class Op>
T leaf_extreme(const T* x, std::size_t n) {
  using Flag = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  T acc[lanes];
  Flag nan[lanes] = {};
  for (T& a : acc) a = Op::identity();
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) {
      const T v = x[i + k];
      if constexpr (!std::is_integral_v<T>) nan[k] |= static_cast<Flag>(v != v);
      acc[k] = Op::before(v, acc[k]) ? v : acc[k];
    }
  for (std::size_t k = 0; i + k < n; ++k) {
    const T v = x[i + k];
    if constexpr (!std::is_integral_v<T>) nan[k] |= static_cast<Flag>(v != v);
    acc[k] = Op::before(v, acc[k]) ? v : acc[k];
  }
  Flag any_nan = 0;
  for (const Flag f : nan) any_nan |= f;
  if (any_nan) return std::numeric_limits<T>::quiet_NaN();
  T kept = acc[0];
  for (std::size_t k = 1; k < lanes; ++k) kept = Op::combine(kept, acc[k]);
  return kept;
}

// leaf_of(first, count) for every leaf of x[0, n), in order; n > leaf. 256 leaves (2^19
// elements, some 0.1 ms) a chunk: a thread is started for every call, some 30-40 us each, which
// cost more than it saved below that (2^18 floats took 58 us on 2 threads against 21 us on 1, on
// the 2-core development machine).
template <class R, class T, class LeafOf>
std::vector<R> leaf_results(const T* x, std::size_t n, int threads, LeafOf leaf_of) {
  const std::size_t leaves = (n + leaf - 1) / leaf;
  std::vector<R> partial(leaves);
  parallel_for(leaves, 256, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t l = begin; l < end; ++l) {
      const std::size_t first = l * leaf;
      partial[l] = leaf_of(x + first, (n - first < leaf ? n - first : leaf));
    }
  });
  return partial;
}

template <class R>
R pairwise(const R* p, std::size_t n) {
  if (n == 1) return p[0];
  const std::size_t half = n / 2;
  return pairwise(p, half) + pairwise(p + half, n - half);
}

template <class T, class Op>
T cpu_extreme(const T* x, std::size_t n, int threads) {
  if (n <= leaf) return leaf_extreme<T, Op>(x, n);
  const std::vector<T> partial = leaf_results<T>(x, n, threads, leaf_extreme<T, Op>);
  T kept = partial[0];
  for (std::size_t l = 1; l < partial.size(); ++l) kept = Op::combine(kept, partial[l]);
  return kept;
}

const char* name_of(detail::Extremum which) { return which == detail::Extremum::min ? "min" : "max"; }

[[noreturn]] void throw_empty(detail::Extremum which, const Shape& shape) {
  throw Error(std::string(name_of(which)) + ": the array is empty (shape " + shape.to_string() + "): it has no " +
              (which == detail::Extremum::min ? "least" : "greatest") + " element");
}

// What a reduction into `out` needs of it: one element, and a host one for a host input.
template <class T, class R>
void check_output(const char* name, const In<T>& x, const Out<R>& out) {
  if (out.shape.size() != 1)
    throw Error(std::string(name) + ": the output must hold one element; it is " + out.shape.to_string());
  if (x.location != Location::device && out.location == Location::device)
    throw Error(std::string(name) +
                ": a host input reduces into a host output (copy the input to the device for a device one)");
}

}  // namespace

template <class T>
sum_type_t<T> cpu_sum(const T* x, std::size_t n, int threads) {
  using R = sum_type_t<T>;
  if (n == 0) return R(0);
  if (n <= leaf) return leaf_sum(x, n);
  const std::vector<R> partial = leaf_results<R>(x, n, threads, leaf_sum<T>);
  if constexpr (std::is_integral_v<T>) {
    std::uint64_t total = 0;  // exact in any order
    for (R v : partial) total += static_cast<std::uint64_t>(v);
    return static_cast<R>(total);
  } else {
    return pairwise(partial.data(), partial.size());
  }
}

namespace detail {
template <class T>
sum_type_t<T> sum(const In<T>& x, const Exec& exec) {
  const auto n = static_cast<std::size_t>(x.shape.size());
  switch (x.location) {
    case Location::scalar:
      return static_cast<sum_type_t<T>>(x.value);
    case Location::host:
      return cpu_sum(x.data, n, exec.threads);
    case Location::device:
      // An empty array holds nothing on a device and needs none, with or without CUDA.
      return n == 0 ? sum_type_t<T>(0) : cuda_sum(x.data, n, exec.stream);
  }
  return {};
}

template <class T>
void sum(const In<T>& x, const Out<sum_type_t<T>>& out, const Exec& exec) {
  check_output("sum", x, out);
  if (x.location == Location::device && out.location == Location::device) {
    cuda_sum_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, exec.stream);
    return;
  }
  *out.data = sum(x, exec);
}

template <class T>
T extreme(const In<T>& x, Extremum which, const Exec& exec) {
  const auto n = static_cast<std::size_t>(x.shape.size());
  if (x.location == Location::scalar) return x.value;
  if (n == 0) throw_empty(which, x.shape);
  if (x.location == Location::device) return cuda_extreme(x.data, n, which, exec.stream);
  return which == Extremum::min ? cpu_extreme<T, block_reduce::Min<T>>(x.data, n, exec.threads)
                                : cpu_extreme<T, block_reduce::Max<T>>(x.data, n, exec.threads);
}

template <class T>
void extreme(const In<T>& x, const Out<T>& out, Extremum which, const Exec& exec) {
  check_output(name_of(which), x, out);
  if (x.location == Location::device && out.location == Location::device) {
    if (x.shape.size() == 0) throw_empty(which, x.shape);
    cuda_extreme_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, which, exec.stream);
    return;
  }
  *out.data = extreme(x, which, exec);
}
}  // namespace detail

#define USRECON_INSTANTIATE_REDUCTIONS(T)                                                   \
  template sum_type_t<T> cpu_sum<T>(const T*, std::size_t, int);                            \
  template sum_type_t<T> detail::sum<T>(const In<T>&, const Exec&);                         \
  template void detail::sum<T>(const In<T>&, const Out<sum_type_t<T>>&, const Exec&);       \
  template T detail::extreme<T>(const In<T>&, detail::Extremum, const Exec&);               \
  template void detail::extreme<T>(const In<T>&, const Out<T>&, detail::Extremum, const Exec&);
USRECON_INSTANTIATE_REDUCTIONS(float)
USRECON_INSTANTIATE_REDUCTIONS(double)
USRECON_INSTANTIATE_REDUCTIONS(std::int32_t)
USRECON_INSTANTIATE_REDUCTIONS(std::int64_t)
#undef USRECON_INSTANTIATE_REDUCTIONS

}  // namespace usrecon::kernels
