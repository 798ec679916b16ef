// Compiled, not run, by KernelConsumer.HeadersCompileCleanUnderAConsumersStrictWarnings with
// -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror and no CMake (plain
// -I, so the headers are not SYSTEM includes and every warning in them reaches the consumer).
// It includes every public C++ header (cuda_check.hpp and cuda/ are for .cu files) and instantiates each template a consumer can reach: every
// ufunc (one and two outputs, scalars, broadcasting, outputs given, an Exec), a user op through
// vectorize, sum and matmul in each form, the arrays and views, and the host-device block
// programs of the tiled GEMM, the sum and Monte-Carlo π with a stand-in block.
#include <cstdint>
#include <vector>

#include "usrecon/kernels/block_sum.hpp"
#include "usrecon/kernels/gemm_tiled.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

struct Clamp01 {
  template <class T>
  USRECON_HD T operator()(T x) const {
    return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
  }
};
inline constexpr auto clamp01 = uk::vectorize<1>(Clamp01{}, "clamp01");

struct SumAndDifference {
  template <class T>
  USRECON_HD uk::Outputs<T, 2> operator()(T a, T b) const {
    return {{a + b, a - b}};
  }
};
inline constexpr auto sum_and_difference = uk::vectorize<2>(SumAndDifference{}, "sum_and_difference");

// A one-thread block: what the block programs ask of cuda::DeviceBlock.
struct OneThreadBlock {
  void sync() const {}
  template <class V>
  V shfl_down(V v, int) const {
    return v;
  }
  void atomic_add(unsigned long long* p, unsigned long long v) const { *p += v; }
};

template <class T>
void every_map(const uk::HostArray<T>& a, const uk::HostArray<T>& b) {
  uk::HostArray<T> c = uk::add(a, b);
  uk::add(a, T(2), c, uk::Exec{1, {}});
  c = uk::hypot(a, b);
  c = uk::sqrt(c);
  c = uk::gaussian_pdf(a, T(0), T(1));
  const auto xy = uk::polar_to_cartesian(a, b);
  c = uk::polar_distance(a, b, xy[0], xy[1]);
  c = clamp01(c);
  auto sd = sum_and_difference(a, b);
  sum_and_difference(a, b, sd[0], sd[1]);
  uk::HostArray<T> m = uk::matmul(a, b);
  uk::matmul(a, b, m, uk::MatmulAlgo::naive);
  (void)uk::sum(m);
  (void)uk::sum(uk::In<T>(m), uk::Exec{});
}

template <class Tiling>
void tiled_gemm_program() {
  using T = typename Tiling::value_type;
  alignas(16) static typename Tiling::SharedA a_t;
  alignas(16) static typename Tiling::SharedB b_s;
  std::vector<T> a(16, T(1)), b(16, T(1)), c(16);
  const uk::gemm::Operands<T> op{a.data(), b.data(), c.data(), 4, 4, 4};
  Tiling::block_program(op, 0, 0, 0, a_t, b_s, OneThreadBlock{});
}

template <class T>
void block_sum_programs() {
  using R = uk::sum_type_t<T>;
  const std::vector<T> x(8, T(1));
  R partials[1] = {}, out = {}, warp_sums[uk::block_sum::kThreads / uk::block_sum::kWarp] = {};
  uk::block_sum::partials_program(x.data(), std::int64_t{8}, partials, 0, 1, 0, warp_sums, OneThreadBlock{});
  uk::block_sum::final_program(partials, 1, &out, 0, warp_sums, OneThreadBlock{});
}

}  // namespace

// Never called: the test compiles this file with -fsyntax-only.
void strict_warnings_instantiations() {
  every_map(uk::HostArray<float>(uk::Shape{4, 4}, 1.0f), uk::HostArray<float>(uk::Shape{4}, 2.0f));
  every_map(uk::HostArray<double>(uk::Shape{2, 2}, 1.0), uk::HostArray<double>(uk::Shape{2, 2}, 2.0));
  const uk::HostArray<std::int32_t> i32(uk::Shape{3}, std::vector<std::int32_t>{1, 2, 3});
  const uk::HostArray<std::int64_t> i64(uk::Shape{3}, 5);
  (void)uk::add(i32, i32);
  (void)uk::add(i64, std::int64_t{1});
  (void)uk::sum(i32);
  uk::HostArray<std::int64_t> total(uk::Shape{1});
  uk::sum(i32, total);
  (void)uk::cpu_sum(i64.data(), static_cast<std::size_t>(i64.size()));
  uk::DeviceArray<float> d = uk::to_device(uk::HostArray<float>(uk::Shape{2}, 1.0f));
  const uk::HostArray<float> back = d.copy_to_host();
  (void)back;
  (void)uk::monte_carlo_pi(1000, 1, uk::Backend::cpu);
  (void)uk::monte_carlo_count(1000, 1);
  (void)uk::philox4x32_10({{0, 1, 2, 3}}, 4, 5);
  tiled_gemm_program<uk::gemm::TilingFor<float>>();
  tiled_gemm_program<uk::gemm::TilingFor<double>>();
  block_sum_programs<float>();
  block_sum_programs<double>();
  block_sum_programs<std::int32_t>();
  unsigned long long inside = 0;
  uk::monte_carlo_block_program(std::uint64_t{100}, std::uint64_t{7}, 0u, 1u, 32, 0, &inside, OneThreadBlock{});
  uk::parallel_for(10, 2, 0, [](std::size_t, std::size_t) {});
}
