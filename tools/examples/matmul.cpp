// The tutorial's batched matrix multiply c[b] = a[b] @ b[b], (64, 512, 512) float32, tiled kernel
// against the BLAS reference (np.matmul in the tutorial), and its 2 × 3 by 3 × 2 example.
//   example_matmul [--cuda]
#include <random>

#include "example_common.hpp"

namespace uk = usrecon::kernels;

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  const std::int64_t batch = 64, n = 512;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  uk::HostArray<float> a(uk::Shape{batch, n, n}), b(uk::Shape{batch, n, n});
  for (float& v : a) v = u(gen);
  for (float& v : b) v = u(gen);

  example::Timer t0;
  const uk::HostArray<float> ref = uk::matmul(a, b, uk::MatmulAlgo::blas);
  std::printf("reference (%s) time: %.4f s\n", uk::have_cpu_blas() ? "OpenBLAS" : "blocked", t0.seconds());

  uk::HostArray<float> c(uk::Shape{batch, n, n});
  if (cuda) {
    const auto da = uk::to_device(a), db = uk::to_device(b);
    auto dc = uk::device_array<float>(c.shape());
    for (const char* label : {"(first call)", "(run only)"}) {
      uk::Event start, stop;
      start.record();
      uk::matmul(da, db, dc, uk::MatmulAlgo::tiled);
      stop.record();
      std::printf("tiled CUDA time %s: %.4f s\n", label, 1e-3 * uk::Event::elapsed_ms(start, stop));
    }
    dc.copy_to_host(c);
  } else {
    for (const char* label : {"(first call)", "(run only)"}) {
      example::Timer t;
      uk::matmul(a, b, c, uk::MatmulAlgo::tiled);
      std::printf("tiled CPU time %s: %.4f s\n", label, t.seconds());
    }
  }
  const bool same = example::allclose(c, ref);
  std::printf("results agree: %s\n", same ? "True" : "False");

  const uk::HostArray<float> s(uk::Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  const uk::HostArray<float> t(uk::Shape{3, 2}, std::vector<float>{9, 8, 7, 6, 5, 4});
  const uk::HostArray<float> st =
      cuda ? uk::matmul(uk::to_device(s), uk::to_device(t), uk::MatmulAlgo::tiled).copy_to_host()
           : uk::matmul(s, t, uk::MatmulAlgo::tiled);
  std::printf("[[%g %g]\n [%g %g]]\n", st[0], st[1], st[2], st[3]);
  return same && st[0] == 38 && st[3] == 86 ? 0 : 1;
}
