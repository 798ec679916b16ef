// Compiled, not run, by KernelConsumer.HeadersCompileCleanUnderAConsumersStrictWarnings with
// -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror and no CMake (plain
// -I, so the headers are not SYSTEM includes and every warning in them reaches the consumer), by
// g++, clang++, and with a CUDA package by nvcc as CUDA.
// It includes every public header (cuda/ only as CUDA) and instantiates each template a consumer
// can reach: every ufunc (one and two outputs, scalars, broadcasting, outputs given, an Exec), a
// user op through vectorize, sum, min, max, mean and matmul in each form, the arrays, views and buffers, and the
// host-device block programs of the tiled GEMM, the reductions and Monte-Carlo π with a stand-in block.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "usrecon/kernels/block_reduce.hpp"
#include "usrecon/kernels/block_sum.hpp"  // the 0.2 name, still given
#include "usrecon/kernels/gemm_tiled.hpp"
#include "usrecon/kernels/kernels.hpp"
#if defined(__CUDACC__) && defined(USRECON_HAVE_CUDA)
// Compiled as CUDA too (nvcc -x cu, host pass under the same warnings): the .cu headers, whose
// kernels every ufunc call below then instantiates for its ops, and their launch helpers.
#include "usrecon/kernels/cuda/launch.cuh"
#include "usrecon/kernels/cuda/map.cuh"
#endif

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

// Scalars of every arithmetic type beside arrays of each element type (each conversion is
// checked: detail::scalar_as).
template <class T>
void scalars_of_every_type(const uk::HostArray<T>& a) {
  uk::HostArray<T> c = uk::add(a, 2);
  c = uk::add(a, 2.5);
  c = uk::add(a, 2.5f);
  c = uk::add(a, 3u);
  c = uk::add(a, std::int64_t{4});
  c = uk::add(a, std::uint64_t{5});
  c = uk::add(a, true);
  c = uk::add(a, 'x');
  c = uk::add(a, static_cast<short>(6));
  (void)c;
}

// The arrays, views and buffers in each form a consumer writes (never run: no device is needed).
template <class T>
void arrays_views_and_buffers() {
  uk::HostArray<T> h = uk::HostArray<T>::from_vector(std::vector<T>{T(1), T(2), T(3), T(4), T(5), T(6)});
  h.reshape(uk::Shape{2, 3});
  h.at({1, 2}) = T(7);
  const uk::HostArray<T>& ch = h;
  T value = ch.at({0, 1});
  uk::DeviceArray<T> d = uk::device_array<T>(uk::Shape{2, 3});
  d.copy_from_host(h);
  d.copy_to_host(h);
  const uk::In<T> in_host = uk::In<T>::host(h.data(), h.shape());
  const uk::In<T> in_device = uk::In<T>::device(d.data(), d.shape());
  uk::Out<T> out_host = uk::Out<T>::host(h.data(), h.shape());
  uk::Out<T> out_device = uk::Out<T>::device(d.data(), d.shape());
  uk::add(in_host, value, out_host);
  uk::add(in_device, value, out_device, uk::Exec{0, {}});
  if constexpr (std::is_floating_point_v<T>) {  // matmul is float and double
    uk::DeviceArray<T> dc = uk::device_array<T>(uk::Shape{2, 2});
    uk::matmul(d, uk::to_device(uk::HostArray<T>(uk::Shape{3, 2}, T(1))), dc, uk::MatmulAlgo::tiled);
  }
  uk::DeviceArray<uk::sum_type_t<T>> total = uk::device_array<uk::sum_type_t<T>>(uk::Shape{1});
  uk::sum(d, total);
  uk::DeviceArray<T> least = uk::device_array<T>(uk::Shape{1});
  uk::min(in_device, least, uk::Exec{0, {}});
  value = uk::max(d);
  (void)uk::mean(d);
  uk::DeviceBuffer<T> buffer(6);
  uk::PinnedBuffer<T> pinned(6);
  uk::Stream stream;
  uk::copy(buffer.span(), pinned.cspan());
  uk::copy_async(pinned.span(), buffer.cspan(), stream);
}

// A consumer's template that deduces the count of outputs (kernels/README.md: std::size_t N).
template <class T, std::size_t N>
constexpr std::size_t count_of(const uk::Outputs<T, N>&) {
  return N;
}
static_assert(count_of(uk::Outputs<float, 2>{}) == 2);

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
void block_reduce_programs() {
  namespace br = uk::block_reduce;
  using R = uk::sum_type_t<T>;
  const std::vector<T> x(8, T(1));
  R partials[1] = {}, out = {}, warp_results[br::kThreads / br::kWarp] = {};
  uk::block_sum::partials_program(x.data(), std::int64_t{8}, partials, 0, 1, 0, warp_results, OneThreadBlock{});
  uk::block_sum::final_program(partials, 1, &out, 0, warp_results, OneThreadBlock{});
  T extremes[1] = {}, extreme = {}, warp_extremes[br::kThreads / br::kWarp] = {};
  br::partials_program(x.data(), std::int64_t{8}, extremes, 0, 1, 0, warp_extremes, OneThreadBlock{}, br::Min<T>{});
  br::final_program(extremes, 1, &extreme, 0, warp_extremes, OneThreadBlock{}, br::Max<T>{});
  (void)uk::block_sum::tree(R(1), 0, warp_results, OneThreadBlock{});  // 0.2.0's call: a sum
}

// Unqualified min and max of plain values beside the library's reductions, by using-directives
// and by argument-dependent lookup on the library's own types: std's are found, as in 0.2.0,
// before the library had min and max.
namespace plain_min_max {
using namespace std;
using namespace usrecon::kernels;
inline int smaller_then_larger(int a, int b) { return min(a, b) + max(3, 4); }
}  // namespace plain_min_max
template <class It>
It later(It a, It b) {
  using std::max;
  return max(a, b);
}
inline uk::Backend greater_backend(uk::Backend a, uk::Backend b) {
  using std::max;
  return max(a, b);
}
inline void unqualified_min_max() {
  std::vector<uk::Shape> shapes(2);
  (void)later(shapes.begin(), shapes.end());
  (void)greater_backend(uk::Backend::cpu, uk::Backend::cuda);
  (void)plain_min_max::smaller_then_larger(1, 2);
}

}  // namespace

// Never called: the test compiles this file with -fsyntax-only.
void strict_warnings_instantiations() {
  unqualified_min_max();
  every_map(uk::HostArray<float>(uk::Shape{4, 4}, 1.0f), uk::HostArray<float>(uk::Shape{4}, 2.0f));
  every_map(uk::HostArray<double>(uk::Shape{2, 2}, 1.0), uk::HostArray<double>(uk::Shape{2, 2}, 2.0));
  scalars_of_every_type(uk::HostArray<float>(uk::Shape{2}, 1.0f));
  scalars_of_every_type(uk::HostArray<double>(uk::Shape{2}, 1.0));
  scalars_of_every_type(uk::HostArray<std::int32_t>(uk::Shape{2}, 1));
  scalars_of_every_type(uk::HostArray<std::int64_t>(uk::Shape{2}, 1));
  const uk::HostArray<std::int32_t> i32(uk::Shape{3}, std::vector<std::int32_t>{1, 2, 3});
  const uk::HostArray<std::int64_t> i64(uk::Shape{3}, 5);
  (void)uk::add(i32, i32);
  (void)uk::add(i64, std::int64_t{1});
  (void)uk::sum(i32);
  uk::HostArray<std::int64_t> total(uk::Shape{1});
  uk::sum(i32, total);
  (void)uk::cpu_sum(i64.data(), static_cast<std::size_t>(i64.size()));
  (void)uk::min(i32);
  (void)uk::max(i64, uk::Exec{2});
  uk::HostArray<std::int32_t> least(uk::Shape{1});
  uk::min(i32, least);
  uk::HostArray<double> greatest(uk::Shape{1, 1});
  uk::max(uk::HostArray<double>(uk::Shape{2}, 1.0), greatest);
  (void)uk::mean(i32);
  (void)uk::mean(uk::HostArray<float>(uk::Shape{2}, 1.0f));
  uk::HostArray<double> two_means(uk::Shape{1});
  uk::mean(i32, two_means);
  const uk::HostArray<double> grid(uk::Shape{2, 3}, 1.0);
  (void)uk::sum(grid, uk::Axis{0});
  (void)uk::min(grid, uk::Axis{-1}, uk::Exec{2});
  uk::HostArray<double> column_max(uk::Shape{2, 1});
  uk::max(grid, uk::Axis{1}, column_max);
  uk::HostArray<double> row_means(uk::Shape{3});
  uk::mean(grid, uk::Axis{0}, row_means);
  uk::reduce<uk::Reduction::sum>(grid, uk::Axis{0}, row_means);
  // 0.2.0's forms still compile: a braced Exec, a const Out view as the output.
  (void)uk::sum(i32, {2});
  (void)uk::sum(i32, {});
  const uk::Out<std::int64_t> total_view = uk::Out<std::int64_t>::host(total.data(), uk::Shape{1});
  uk::sum(i32, total_view);
  uk::DeviceArray<float> d = uk::to_device(uk::HostArray<float>(uk::Shape{2}, 1.0f));
  const uk::HostArray<float> back = d.copy_to_host();
  (void)back;
  (void)uk::monte_carlo_pi(1000, 1, uk::Backend::cpu);
  (void)uk::monte_carlo_count(1000, 1);
  (void)uk::philox4x32_10({{0, 1, 2, 3}}, 4, 5);
  tiled_gemm_program<uk::gemm::TilingFor<float>>();
  tiled_gemm_program<uk::gemm::TilingFor<double>>();
  arrays_views_and_buffers<float>();
  arrays_views_and_buffers<double>();
  arrays_views_and_buffers<std::int32_t>();
  block_reduce_programs<float>();
  block_reduce_programs<double>();
  block_reduce_programs<std::int32_t>();
  block_reduce_programs<std::int64_t>();
  unsigned long long inside = 0;
  uk::monte_carlo_block_program(std::uint64_t{100}, std::uint64_t{7}, 0u, 1u, 32, 0, &inside, OneThreadBlock{});
  uk::parallel_for(10, 2, 0, [](std::size_t, std::size_t) {});
#if defined(__CUDACC__) && defined(USRECON_HAVE_CUDA)
  uk::Stream stream;
  const uk::cuda::StreamScratch<double> scratch(16, stream.get());
  (void)scratch.data();
  (void)uk::cuda::grid_1d(1000, 256);
  (void)uk::cuda::sm_count();
#endif
}
