// Batched matrix multiply c[b] = a[b] · b[b] (row-major, float or double), on CPU or CUDA.
//
//   HostArray<float> a({64, 512, 512}), b({64, 512, 512});
//   HostArray<float> c = matmul(a, b);                       // library default (BLAS)
//   matmul(a, b, c, MatmulAlgo::tiled);                      // our cache-blocked CPU kernel
//   auto dc = matmul(to_device(a), to_device(b), MatmulAlgo::tiled);   // shared-memory CUDA kernel
#pragma once

#include <concepts>
#include <type_traits>

#include "usrecon/kernels/array.hpp"

namespace usrecon::kernels {

/// Which implementation runs. The backend (CPU or CUDA) follows from where the arrays live.
enum class MatmulAlgo {
  automatic,  ///< blas when available (and every dimension fits its int), else tiled
  naive,      ///< one output at a time, k ascending: the reference
  tiled,      ///< ours: CPU cache-blocked packed micro-kernel (threads, AVX2/AVX-512 dispatch);
              ///< CUDA shared-memory tiles with register blocking
  blas,       ///< the vendor library: OpenBLAS cblas_?gemm on CPU (its thread count is the
              ///< process's: concurrent CPU blas calls run one after another), cuBLAS
              ///< strided-batched GEMM on CUDA (TF32 off)
};

/// True when the CPU `blas` algorithm is available (built with OpenBLAS).
bool have_cpu_blas() noexcept;

namespace detail {
template <class T>
void matmul(const In<T>& a, const In<T>& b, const Out<T>& c, MatmulAlgo algo, const Exec& exec);
/// The shape of matmul(a, b): (M, N), or (batch, M, N) when either operand has a batch.
Shape matmul_shape(const Shape& a, const Shape& b);
// Defined in kernels/cpu/matmul.cpp for these two types (a consumer's compiler is told so).
extern template void matmul<float>(const In<float>&, const In<float>&, const Out<float>&, MatmulAlgo,
                                   const Exec&);
extern template void matmul<double>(const In<double>&, const In<double>&, const Out<double>&, MatmulAlgo,
                                    const Exec&);
}  // namespace detail

/// c = a · b into a preallocated c. a: (M, K) or (batch, M, K); b: (K, N) or (batch, K, N); a
/// 2-D operand (or batch 1) is used for every batch entry (batch 0 included); c: (M, N) or
/// (batch, M, N), and must not overlap a or b. Shapes and overlaps are checked here and throw
/// usrecon::Error.
template <class A, class B, class C>
  requires(!std::same_as<std::remove_cvref_t<C>, MatmulAlgo>)
void matmul(const A& a, const B& b, C&& c, MatmulAlgo algo = MatmulAlgo::automatic,
            const Exec& exec = {}) {
  using T = element_type_t<A>;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "matmul: float or double arrays");
  static_assert(std::is_same_v<element_type_t<B>, T> && std::is_same_v<element_type_t<C>, T>,
                "matmul: all arrays need the same element type");
  detail::matmul<T>(In<T>(a), In<T>(b), Out<T>(c), algo, exec);
}

/// c = a · b into a new array (on the device when a is a DeviceArray).
template <class A, class B>
[[nodiscard]] auto matmul(const A& a, const B& b, MatmulAlgo algo = MatmulAlgo::automatic,
                          const Exec& exec = {}) {
  using T = element_type_t<A>;
  using R = std::conditional_t<is_device_array_v<std::remove_cvref_t<A>>, DeviceArray<T>,
                               HostArray<T>>;
  // Where c lives is decided at compile time by a's type: an In<T>::device view says it only at
  // run time.
  if (std::is_same_v<R, HostArray<T>> && In<T>(a).location == Location::device)
    throw Error("matmul: a is an In<T>::device view, not a DeviceArray, so this form would return a host "
                "array; pass c (Out<T>::device), with b on the device too");
  if (std::is_same_v<R, HostArray<T>> && In<T>(b).location == Location::device)
    throw Error("matmul: a is on the host and b on the device; the operands of one product live in one place "
                "(copy one of them)");
  R c(detail::matmul_shape(In<T>(a).shape, In<T>(b).shape));
  matmul(a, b, c, algo, exec);
  return c;
}

}  // namespace usrecon::kernels
