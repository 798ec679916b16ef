// The tutorial's polar_distance ufunc calling the device function polar_to_cartesian (two return
// values), over 1 000 000 float32 points. The op is defined here, in user code; in a CUDA build
// this file is compiled by nvcc, so the same op also runs as a CUDA kernel (--cuda).
//   example_polar_distance [--cuda]
#include <random>

#include "example_common.hpp"
#if defined(__CUDACC__)
#include "usrecon/kernels/cuda/map.cuh"
#endif

namespace uk = usrecon::kernels;

// A host-device function with two results, like @cuda.jit(device=True).
template <class T>
USRECON_HD uk::Outputs<T, 2> polar_to_cartesian(T rho, T theta) {
  return {{rho * uk::math::cos(theta), rho * uk::math::sin(theta)}};
}

struct PolarDistance {
  template <class T>
  USRECON_HD T operator()(T rho1, T theta1, T rho2, T theta2) const {
    const auto p = polar_to_cartesian(rho1, theta1);  // device functions inside the ufunc
    const auto q = polar_to_cartesian(rho2, theta2);
    return uk::math::sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]));
  }
};
constexpr uk::Ufunc<PolarDistance, 4> polar_distance{"polar_distance"};

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  const std::int64_t n = 1'000'000;
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  uk::HostArray<float> rho1(uk::Shape{n}), theta1(uk::Shape{n}), rho2(uk::Shape{n}), theta2(uk::Shape{n});
  for (auto* a : {&rho1, &theta1, &rho2, &theta2})
    for (float& v : *a) v = u(gen);

  uk::HostArray<float> distances;
  if (cuda) {
    const auto r1 = uk::to_device(rho1), t1 = uk::to_device(theta1);
    const auto r2 = uk::to_device(rho2), t2 = uk::to_device(theta2);
    const uk::DeviceArray<float> d = polar_distance(r1, t1, r2, t2);
    std::printf("<DeviceArray shape=%s dtype=float32 at %p>\n", d.shape().to_string().c_str(),
                static_cast<const void*>(d.data()));  // print(distances)
    distances = d.copy_to_host();
  } else {
    distances = polar_distance(rho1, theta1, rho2, theta2);
  }
  example::print_array(distances);  // print(distances.copy_to_host())
  const uk::HostArray<float> library = uk::polar_distance(rho1, theta1, rho2, theta2);
  const bool same = example::allclose(distances, library, 1e-5, 1e-6);
  std::printf("matches usrecon::kernels::polar_distance: %s\n", same ? "True" : "False");
  return same ? 0 : 1;
}
