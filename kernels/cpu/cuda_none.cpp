// Built instead of the cuda/*.cu entry points without CUDA: every CUDA request throws
// CudaUnavailable ("... built without CUDA").
#include <string>

#include "../internal/cuda_entry.hpp"

namespace usrecon::cuda_detail {

// USRECON_CUBLAS_CHECK's message in a user's .cu file linked against this build, which has no
// cuBLAS to name the status with.
[[noreturn]] void throw_cublas_error(int status, const char* statement, const char* file, int line) {
  throw Error(std::string("cuBLAS error in ") + statement + " at " + file + ":" + std::to_string(line) +
              ": cublasStatus_t " + std::to_string(status));
}

}  // namespace usrecon::cuda_detail

namespace usrecon::kernels::detail {

template <class T>
sum_type_t<T> cuda_sum(const T*, std::size_t, StreamView) {
  require_cuda("sum on device arrays");
  return {};
}
template sum_type_t<float> cuda_sum<float>(const float*, std::size_t, StreamView);
template sum_type_t<double> cuda_sum<double>(const double*, std::size_t, StreamView);
template sum_type_t<std::int32_t> cuda_sum<std::int32_t>(const std::int32_t*, std::size_t, StreamView);
template sum_type_t<std::int64_t> cuda_sum<std::int64_t>(const std::int64_t*, std::size_t, StreamView);

template <class T>
void cuda_sum_to_device(const T*, std::size_t, sum_type_t<T>*, StreamView) {
  require_cuda("sum on device arrays");
}
template void cuda_sum_to_device<float>(const float*, std::size_t, float*, StreamView);
template void cuda_sum_to_device<double>(const double*, std::size_t, double*, StreamView);
template void cuda_sum_to_device<std::int32_t>(const std::int32_t*, std::size_t, std::int64_t*, StreamView);
template void cuda_sum_to_device<std::int64_t>(const std::int64_t*, std::size_t, std::int64_t*, StreamView);

template <class T>
T cuda_extreme(const T*, std::size_t, Extremum which, StreamView) {
  require_cuda(which == Extremum::min ? "min on device arrays" : "max on device arrays");
  return {};
}
template <class T>
void cuda_extreme_to_device(const T*, std::size_t, T*, Extremum which, StreamView) {
  require_cuda(which == Extremum::min ? "min on device arrays" : "max on device arrays");
}
#define USRECON_INSTANTIATE_EXTREME(T)                                                 \
  template T cuda_extreme<T>(const T*, std::size_t, Extremum, StreamView);             \
  template void cuda_extreme_to_device<T>(const T*, std::size_t, T*, Extremum, StreamView);
USRECON_INSTANTIATE_EXTREME(float)
USRECON_INSTANTIATE_EXTREME(double)
USRECON_INSTANTIATE_EXTREME(std::int32_t)
USRECON_INSTANTIATE_EXTREME(std::int64_t)
#undef USRECON_INSTANTIATE_EXTREME

template <class T>
void cuda_mean_to_device(const T*, std::size_t, mean_type_t<T>*, StreamView) {
  require_cuda("mean on device arrays");
}
template void cuda_mean_to_device<float>(const float*, std::size_t, float*, StreamView);
template void cuda_mean_to_device<double>(const double*, std::size_t, double*, StreamView);
template void cuda_mean_to_device<std::int32_t>(const std::int32_t*, std::size_t, double*, StreamView);
template void cuda_mean_to_device<std::int64_t>(const std::int64_t*, std::size_t, double*, StreamView);

template <class T, class R>
void cuda_reduce_axis(const T*, std::size_t, std::size_t, std::size_t, R*, Reduction, StreamView) {
  require_cuda("reductions along an axis of device arrays");
}
#define USRECON_INSTANTIATE_AXIS(T, R) \
  template void cuda_reduce_axis<T, R>(const T*, std::size_t, std::size_t, std::size_t, R*, Reduction, StreamView);
USRECON_AXIS_REDUCTION_TYPES(USRECON_INSTANTIATE_AXIS)
#undef USRECON_INSTANTIATE_AXIS

std::uint64_t cuda_monte_carlo_count(std::uint64_t, std::uint64_t, StreamView) {
  require_cuda("monte_carlo_count (and monte_carlo_pi) on CUDA");
  return 0;
}

template <class T>
void cuda_gemm(const T*, const T*, T*, const GemmShape&, MatmulAlgo, StreamView) {
  require_cuda("matmul on device arrays");
}
template void cuda_gemm<float>(const float*, const float*, float*, const GemmShape&, MatmulAlgo, StreamView);
template void cuda_gemm<double>(const double*, const double*, double*, const GemmShape&, MatmulAlgo, StreamView);

}  // namespace usrecon::kernels::detail
