// The tutorial's loop examples: adding two (1 000 000, 1) float32 arrays and summing a
// 1 000 000-element int32 array, plain loop vs the library (first call and run only).
//   example_add_and_sum [--cuda]
#include <random>

#include "example_common.hpp"

namespace uk = usrecon::kernels;

int main(int argc, char** argv) {
  const bool cuda = example::want_cuda(argc, argv);
  const std::int64_t n = 1'000'000;
  std::mt19937 gen(0);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  uk::HostArray<float> x(uk::Shape{n, 1}), y(uk::Shape{n, 1});
  for (float& v : x) v = u(gen);
  for (float& v : y) v = u(gen);

  example::Timer t0;
  uk::HostArray<float> loop(uk::Shape{n, 1});
  for (std::int64_t i = 0; i < n; ++i) loop[i] = x[i] + y[i];
  std::printf("loop time: %.6f s\n", t0.seconds());

  uk::HostArray<float> result(uk::Shape{n, 1});
  const char* where = cuda ? "cuda" : "cpu";
  for (const char* label : {"(first call)", "(run only)"}) {
    example::Timer t;
    if (cuda) {
      result = uk::add(uk::to_device(x), uk::to_device(y)).copy_to_host();  // includes transfers
    } else {
      uk::add(x, y, result);
    }
    std::printf("usrecon add [%s] time %s: %.6f s\n", where, label, t.seconds());
  }
  const bool same = example::allclose(result, loop);
  std::printf("results agree: %s\n", same ? "True" : "False");

  uk::HostArray<std::int32_t> ints(uk::Shape{n});
  for (std::int64_t i = 0; i < n; ++i) ints[i] = static_cast<std::int32_t>(i);
  example::Timer t1;
  std::int64_t loop_sum = 0;
  for (std::int64_t i = 0; i < n; ++i) loop_sum += ints[i];
  std::printf("sum_array loop: %lld in %.6f s\n", (long long)loop_sum, t1.seconds());
  example::Timer t2;
  const std::int64_t s = cuda ? uk::sum(uk::to_device(ints)) : uk::sum(ints);
  std::printf("usrecon sum [%s]: %lld in %.6f s\n", where, (long long)s, t2.seconds());
  return same && s == loop_sum ? 0 : 1;
}
