// The tutorial's loop examples: adding two (1 000 000, 1) float32 arrays and summing a
// 1 000 000-element int32 array, plain loop vs the library (first call and run only); then the
// array's min, max and mean, which a NumPy user would ask for next.
//   example_add_and_sum [--cuda]
#include <cmath>
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
  const auto on = [&](auto reduce) { return cuda ? reduce(uk::to_device(x)) : reduce(x); };
  const float least = on([](const auto& a) { return uk::min(a); });
  const float greatest = on([](const auto& a) { return uk::max(a); });
  const float mean = on([](const auto& a) { return uk::mean(a); });
  float loop_least = x[0], loop_greatest = x[0];
  double loop_total = 0;
  for (const float v : x) {
    loop_least = v < loop_least ? v : loop_least;
    loop_greatest = loop_greatest < v ? v : loop_greatest;
    loop_total += v;
  }
  const bool extremes_agree = least == loop_least && greatest == loop_greatest &&
                              std::abs(double(mean) - loop_total / double(n)) <= 1e-6;
  std::printf("x: min %.9g, max %.9g, mean %.7f [%s]; loop agrees: %s\n", double(least), double(greatest),
              double(mean), where, extremes_agree ? "True" : "False");
  return same && s == loop_sum && extremes_agree ? 0 : 1;
}
