// An op of the consumer's own on device arrays, the documented route: a .cu file that includes
// usrecon/kernels/cuda/map.cuh (and cuda_check.hpp's and launch.cuh's helpers). Exits 0 when the results are right, or when there is no CUDA
// device (or the library was built without CUDA): the call throws CudaUnavailable, said here.
// With a device, CudaUnavailable is a failure: it also says that this program's kernel (map.cuh's,
// compiled here with the package's CUDA settings) has no code for this GPU
// (cudaErrorNoKernelImageForDevice), which is what this test is there to see.
#include <cstdio>
#include <vector>

#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda/map.cuh"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

// The consumer's own op: two inputs, broadcast (an array and a scalar).
struct Midpoint {
  template <class T>
  USRECON_HD T operator()(T a, T b) const { return (a + b) / T(2); }
};
constexpr uk::Ufunc<Midpoint, 2> midpoint{"midpoint"};

int main() {
  const uk::HostArray<float> a(uk::Shape{4}, std::vector<float>{0, 2, 4, 6});
  try {
    // The check macros and launch helpers for .cu files (README): they link against a package
    // built without CUDA too, and throw CudaUnavailable here without a device.
    int devices = 0;
    USRECON_CUDA_CHECK(cudaGetDeviceCount(&devices));
    std::printf("%d CUDA device(s), the first with %d SMs\n", devices, uk::cuda::sm_count());
    const uk::HostArray<float> m = midpoint(uk::to_device(a), 10.0f).copy_to_host();
    std::printf("midpoint on the GPU: %g %g %g %g\n", m[0], m[1], m[2], m[3]);
    return m[0] == 5 && m[1] == 6 && m[2] == 7 && m[3] == 8 ? 0 : 1;
  } catch (const usrecon::CudaUnavailable& e) {
    std::printf("CudaUnavailable: %s\n", e.what());
    const int devices = usrecon::cuda_device_count();
    if (devices > 0) std::printf("... with %d CUDA device(s) present: a failure\n", devices);
    return devices > 0 ? 1 : 0;
  }
}
