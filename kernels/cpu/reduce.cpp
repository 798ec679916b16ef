// sum(): the deterministic pairwise CPU sum and the host/device dispatch.
#include "usrecon/kernels/reduce.hpp"

#include <cstdint>
#include <vector>

#include "../internal/cuda_entry.hpp"
#include "usrecon/kernels/parallel.hpp"

namespace usrecon::kernels {
namespace {

constexpr std::size_t leaf = 2048;  // elements summed by one leaf of the tree

// One leaf: 16 independent accumulators (the compiler keeps them in vector registers), then
// combined pairwise. Integers accumulate in 64 bits (unsigned, so int64 wrap-around is defined).
template <class T>
sum_type_t<T> leaf_sum(const T* x, std::size_t n) {
  using R = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;
  constexpr std::size_t lanes = 16;
  R acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t k = 0; i + k < n; ++k) acc[k] += static_cast<R>(x[i + k]);
  for (std::size_t w = lanes / 2; w >= 1; w /= 2)
    for (std::size_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return static_cast<sum_type_t<T>>(acc[0]);
}

template <class R>
R pairwise(const R* p, std::size_t n) {
  if (n == 1) return p[0];
  const std::size_t half = n / 2;
  return pairwise(p, half) + pairwise(p + half, n - half);
}

}  // namespace

template <class T>
sum_type_t<T> cpu_sum(const T* x, std::size_t n, int threads) {
  using R = sum_type_t<T>;
  if (n == 0) return R(0);
  const std::size_t leaves = (n + leaf - 1) / leaf;
  if (leaves == 1) return leaf_sum(x, n);
  std::vector<R> partial(leaves);
  // 256 leaves (2^19 elements, some 0.1 ms) a chunk: a thread is started for every call, some
  // 30-40 us each, which cost more than it saved below that (2^18 floats took 58 us on 2 threads
  // against 21 us on 1, on the 2-core development machine).
  parallel_for(leaves, 256, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t l = begin; l < end; ++l) {
      const std::size_t first = l * leaf;
      partial[l] = leaf_sum(x + first, (n - first < leaf ? n - first : leaf));
    }
  });
  if constexpr (std::is_integral_v<T>) {
    std::uint64_t total = 0;  // exact in any order
    for (R v : partial) total += static_cast<std::uint64_t>(v);
    return static_cast<R>(total);
  } else {
    return pairwise(partial.data(), leaves);
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
  if (out.shape.size() != 1)
    throw Error("sum: the output must hold one element; it is " + out.shape.to_string());
  if (x.location == Location::device && out.location == Location::device) {
    cuda_sum_to_device(x.data, static_cast<std::size_t>(x.shape.size()), out.data, exec.stream);
    return;
  }
  if (out.location == Location::device)
    throw Error("sum: a host input sums into a host output (copy the input to the device for a device one)");
  *out.data = sum(x, exec);
}
}  // namespace detail

#define USRECON_INSTANTIATE_SUM(T)                                    \
  template sum_type_t<T> cpu_sum<T>(const T*, std::size_t, int);      \
  template sum_type_t<T> detail::sum<T>(const In<T>&, const Exec&);   \
  template void detail::sum<T>(const In<T>&, const Out<sum_type_t<T>>&, const Exec&);
USRECON_INSTANTIATE_SUM(float)
USRECON_INSTANTIATE_SUM(double)
USRECON_INSTANTIATE_SUM(std::int32_t)
USRECON_INSTANTIATE_SUM(std::int64_t)
#undef USRECON_INSTANTIATE_SUM

}  // namespace usrecon::kernels
