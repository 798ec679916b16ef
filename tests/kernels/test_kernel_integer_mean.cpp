// The means of integer arrays: exact 128-bit sums (Int128), divided and rounded once
// (quotient_to_double), on the CPU and in the GPU's block programs (emulated). References: sums
// in __int128 by plain loops, and exact integer checks of the rounding (exact_sum.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "block_emulator.hpp"
#include "exact_sum.hpp"
#include "kernel_test_util.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;
namespace br = usrecon::kernels::block_reduce;
using uk::Axis;
using uk::HostArray;
using uk::Int128;
using uk::Shape;
using uk::testing::Exact;
using uk::testing::exact;
using uk::testing::int128_of;
using uk::testing::is_nearest_double;

namespace {

constexpr std::int64_t kMost = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kLeast = std::numeric_limits<std::int64_t>::min();

TEST(KernelInt128, AddsAsAPlainWideIntegerAcrossTheCarry) {
  std::mt19937_64 gen(5);
  for (int i = 0; i < 20'000; ++i) {
    const Exact a = Exact(static_cast<std::int64_t>(gen())) * (Exact(1) << 40) + Exact(gen() >> 1);
    const Exact b = Exact(static_cast<std::int64_t>(gen())) * (Exact(1) << 40) - Exact(gen() >> 3);
    ASSERT_EQ(exact(int128_of(a) + int128_of(b)), a + b) << i;
  }
  for (const std::int64_t v : {std::int64_t(0), std::int64_t(-1), kMost, kLeast, std::int64_t(12345)})
    EXPECT_EQ(exact(Int128(v)), Exact(v)) << v;
  EXPECT_EQ(exact(Int128(kMost) + Int128(kMost) + Int128(2)), Exact(1) << 64) << "the carry into the high word";
  EXPECT_EQ(exact(Int128(kLeast) + Int128(kLeast)), -(Exact(1) << 64));
}

// quotient_to_double rounds sum / count once: ties to even, the sticky bits from the remainder
// and from the dividend's bits not yet brought down, both signs, the fast path's edge.
TEST(KernelInt128, QuotientIsRoundedOnceToTheNearestDouble) {
  const auto q = [](Exact sum, std::int64_t count) { return uk::quotient_to_double(int128_of(sum), count); };
  const Exact two54 = Exact(1) << 54;  // doubles there are 4 apart
  EXPECT_EQ(q(two54 + 1, 1), 0x1p54);
  EXPECT_EQ(q(two54 + 2, 1), 0x1p54) << "a tie: to the even mantissa";
  EXPECT_EQ(q(two54 + 6, 1), 0x1p54 + 8) << "a tie: to the even mantissa";
  EXPECT_EQ(q(two54 + 3, 1), 0x1p54 + 4);
  EXPECT_EQ(q(-(two54 + 6), 1), -(0x1p54 + 8));
  // 2^100 + 2^47 is a tie (doubles 2^48 apart there); one more, far below, breaks it upwards
  const Exact two100 = Exact(1) << 100;
  EXPECT_EQ(q(two100 + (Exact(1) << 47), 1), 0x1p100);
  EXPECT_EQ(q(two100 + (Exact(1) << 47) + 1, 1), 0x1p100 + 0x1p48) << "the last bit of the dividend counts";
  EXPECT_EQ(q(3 * two100 + 1, 3), 0x1p100) << "the remainder below half an ulp";
  EXPECT_EQ(q(-(Exact(1) << 126) * 2, 1), -0x1p127) << "the least Int128";
  EXPECT_EQ(q(Exact(1), kMost), 1.0 / 9223372036854775807.0);
  EXPECT_EQ(q(Exact(7), 2), 3.5) << "the fast path";
  EXPECT_EQ(q(Exact(1) << 53, 1), 0x1p53);
  EXPECT_EQ(q((Exact(1) << 53) + 1, 1), 0x1p53) << "just past the fast path: a tie to even";
  EXPECT_EQ(q(0, 5), 0.0);
  EXPECT_EQ(q(0, kMost), 0.0);
  EXPECT_TRUE(std::isnan(q(0, 0))) << "0 / 0";
  EXPECT_TRUE(std::isnan(q(10, 0)));

  std::mt19937_64 gen(17);
  for (int i = 0; i < 200'000; ++i) {
    // sums of random widths up to 2^119 and both signs, counts from 1 to 2^59
    const int bits = 1 + int(gen() % 119);
    Exact sum = (Exact(gen()) << 64 | Exact(gen())) & ((Exact(1) << bits) - 1);
    if (gen() & 1) sum = -sum;
    const auto count = static_cast<std::int64_t>(1 + (gen() >> (5 + gen() % 59)));
    ASSERT_TRUE(is_nearest_double(q(sum, count), sum, count)) << "case " << i;
  }
}

template <class T>
Exact exact_sum(const HostArray<T>& x, std::size_t first, std::size_t count, std::size_t stride) {
  Exact s = 0;
  for (std::size_t k = 0; k < count; ++k) s += x[first + k * stride];
  return s;
}

// Values near the ends of int64, so that sums of a few of them pass 2^63.
HostArray<std::int64_t> large_values(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  HostArray<std::int64_t> x(shape);
  for (std::int64_t& v : x) {
    const auto r = static_cast<std::int64_t>(gen() >> 2);  // up to 2^62
    v = (gen() % 4 == 0) ? -r : (gen() % 2 ? kMost - r / 1024 : r);  // mostly positive: sums grow
  }
  return x;
}

// An int64 sum wrapped past 2^63 and took the mean with it: the mean of six nanosecond
// timestamps of 2026 (1.8e18 each; 1.08e19 in all) came out negative.
TEST(KernelMean, OfInt64IsTheExactSumRoundedOnceWhereTheSumPasses2To63) {
  HostArray<std::int64_t> stamps(Shape{6});
  for (std::int64_t i = 0; i < 6; ++i) stamps[std::size_t(i)] = 1'796'083'200'000'000'000 + i * 1'000'000'007;
  EXPECT_EQ(uk::mean(stamps), 1'796'083'202'500'000'000.0);  // the nearest double to ...2'500'000'017.5
  EXPECT_TRUE(is_nearest_double(uk::mean(stamps), exact_sum(stamps, 0, 6, 1), 6));

  for (const std::int64_t n : {1, 7, 2047, 2048, 2049, 33'001, 100'003}) {
    const auto x = large_values(Shape{n}, std::uint64_t(n));
    const Exact want = exact_sum(x, 0, std::size_t(n), 1);
    for (const int threads : {1, 2}) {
      const double got = uk::mean(x, uk::Exec{threads});
      EXPECT_TRUE(is_nearest_double(got, want, n)) << "n = " << n << ", " << threads << " threads";
      HostArray<double> into(Shape{1});
      uk::mean(x, into, uk::Exec{threads});
      EXPECT_EQ(into[0], got);
    }
  }
  HostArray<std::int64_t> extremes(Shape{4}, kLeast);  // the least sum there is a mean of
  EXPECT_EQ(uk::mean(extremes), double(kLeast));
  EXPECT_EQ(uk::mean(HostArray<std::int64_t>(Shape{4}, kMost)), double(kMost));
  EXPECT_EQ(uk::mean(uk::In<std::int64_t>(kMost)), double(kMost)) << "a scalar";
}

TEST(KernelMean, OfInt32IsTheExactSumRoundedOnce) {
  for (const std::int64_t n : {1, 4097, 1'000'003}) {
    const auto x = uk::testing::random_array<std::int32_t>(Shape{n}, 3, 1'000'000'000, 2'147'483'647);
    Exact want = 0;
    for (const std::int32_t v : x) want += v;
    EXPECT_TRUE(is_nearest_double(uk::mean(x), want, n)) << "n = " << n;
  }
}

// Along every axis of shapes with short and long contiguous lines and strided ones (more than
// one block of 128 rows), on 1 and 2 threads: each line's mean is its exact sum rounded once.
template <class T>
void expect_exact_means_along_axes(std::uint64_t seed) {
  const Shape shapes[] = {Shape{5, 2049, 3}, Shape{3, 9}, Shape{40'000, 2}, Shape{2, 3, 300}};
  for (const Shape& shape : shapes)
    for (int axis = 0; axis < shape.ndim(); ++axis) {
      ++seed;
      HostArray<T> x(shape);
      if constexpr (sizeof(T) == 8) x = large_values(shape, seed);
      else x = uk::testing::random_array<T>(shape, seed, -2'147'483'648.0, 2'147'483'647);
      std::size_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= std::size_t(shape[d]);
      for (int d = axis + 1; d < shape.ndim(); ++d) inner *= std::size_t(shape[d]);
      const auto length = std::size_t(shape[axis]);
      for (const int threads : {1, 2}) {
        const HostArray<double> got = uk::mean(x, Axis{axis}, uk::Exec{threads});
        for (std::size_t o = 0; o < outer; ++o)
          for (std::size_t j = 0; j < inner; ++j) {
            const Exact want = exact_sum(x, o * length * inner + j, length, inner);
            ASSERT_TRUE(is_nearest_double(got[o * inner + j], want, std::int64_t(length)))
                << shape.to_string() << " along axis " << axis << ", line " << o * inner + j << ", " << threads
                << " threads";
          }
      }
    }
}

TEST(KernelMean, OfIntegersAlongAnAxisIsEachLinesExactSumRoundedOnce) {
  expect_exact_means_along_axes<std::int64_t>(90);
  expect_exact_means_along_axes<std::int32_t>(190);
}

// The GPU's programs on Int128 (br::Sum<Int128>, the shuffles of two words each): pass 1 and 2
// over whole arrays and the strided lines' tiles and chunks, against the exact sums, and the
// plain-loop model of the strided kernels that the GPU test compares the device with.
TEST(KernelBlockSumProgram, Int128SumsOfInt64NeverWrap) {
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(1025), std::int64_t(20'011)}) {
    const auto x = large_values(Shape{n}, std::uint64_t(n) + 7);
    const Exact want = exact_sum(x, 0, std::size_t(n), 1);
    for (const int blocks : {1, 3, br::blocks_for(n)}) {
      const Int128 got = uk::testing::emulate_reduce<br::Sum<Int128>, std::int64_t, Int128>(x.data(), n, blocks);
      EXPECT_EQ(exact(got), want) << "n = " << n << ", " << blocks << " blocks";
    }
  }
  for (const Shape& shape : {Shape{2, 600, 33}, Shape{1, 5000, 3}}) {
    const std::int64_t outer = shape[0], length = shape[1], inner = shape[2];
    const auto x = large_values(shape, 44);
    const br::ColumnsGrid grid = br::columns_grid(outer, length, inner);
    std::vector<Int128> sums(std::size_t(outer * inner)), model(sums.size());
    uk::testing::emulate_columns<br::Sum<Int128>>(x.data(), outer, length, inner, grid, sums.data());
    uk::testing::model_columns<br::Sum<Int128>>(x.data(), outer, length, inner, model.data(), grid);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < inner; ++j) {
        const auto line = std::size_t(o * inner + j);
        EXPECT_EQ(exact(sums[line]), exact_sum(x, std::size_t(o * length * inner + j), std::size_t(length),
                                                std::size_t(inner)))
            << shape.to_string() << " line " << line << " (" << grid.chunks << " chunks)";
        EXPECT_EQ(exact(model[line]), exact(sums[line]));
      }
  }
}

}  // namespace
