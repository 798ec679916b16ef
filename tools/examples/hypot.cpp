// The tutorial's first @jit example: hypot(3.0, 4.0) with abs/min/max/sqrt, written once as a
// USRECON_HD function (usrecon::kernels::math::hypot) and also applied as a ufunc.
//   example_hypot [--cuda]
#include "example_common.hpp"

namespace uk = usrecon::kernels;

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  std::printf("%.1f\n", uk::math::hypot(3.0, 4.0));  // print(hypot(3.0, 4.0))

  // %timeit hypot(3.0, 4.0): the scalar function costs a few nanoseconds.
  const int calls = 10'000'000;
  double acc = 0;
  example::Timer t;
  for (int i = 0; i < calls; ++i) acc += uk::math::hypot(3.0 + 1e-9 * (i & 7), 4.0);
  std::printf("%.1f ns per call (checksum %.1f)\n", 1e9 * t.seconds() / calls, acc / calls);

  // The same function over arrays (a ufunc), on the CPU or the GPU.
  const uk::HostArray<double> x(uk::Shape{3}, std::vector<double>{3, 5, 8});
  const uk::HostArray<double> y(uk::Shape{3}, std::vector<double>{4, 12, 15});
  const uk::HostArray<double> h =
      cuda ? uk::hypot(uk::to_device(x), uk::to_device(y)).copy_to_host() : uk::hypot(x, y);
  std::printf("hypot(%s):  ", cuda ? "cuda" : "cpu");
  example::print_array(h);
  return h[0] == 5 && h[1] == 13 && h[2] == 17 ? 0 : 1;
}
