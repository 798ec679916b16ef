// sum() and monte_carlo_pi() on the CPU; Philox against the Random123 known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

#include "kernel_test_util.hpp"
#include "usrecon/kernels/random.hpp"
#include "usrecon/kernels/reduce.hpp"

namespace uk = usrecon::kernels;
using uk::HostArray;
using uk::Shape;
using uk::testing::random_array;

namespace {

TEST(KernelSum, IntegersAreExactBeyond32Bits) {
  const std::int64_t n = (1 << 20) + 5;
  HostArray<std::int32_t> a(Shape{n}, 2'000'000'000);
  a[7] = -5;
  const std::int64_t expected = (n - 1) * std::int64_t{2'000'000'000} - 5;
  EXPECT_EQ(uk::sum(a), expected);
  EXPECT_EQ(uk::sum(a, uk::Exec{1}), expected);
  const auto b = random_array<std::int64_t>({99'999}, 1, -(1LL << 40), 1LL << 40);
  std::int64_t ref = 0;
  for (auto v : b) ref += v;
  EXPECT_EQ(uk::sum(b), ref);
}

TEST(KernelSum, TutorialSumOfAMillionInt32) {
  HostArray<std::int32_t> a(Shape{1'000'000});
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int32_t>(i);
  EXPECT_EQ(uk::sum(a), std::int64_t{499'999'500'000});
}

TEST(KernelSum, IntoAPreallocatedOneElementOutput) {
  const auto a = random_array<std::int32_t>({4097}, 3, -1'000'000, 1'000'000);
  std::int64_t ref = 0;
  for (auto v : a) ref += v;
  HostArray<std::int64_t> out(Shape{1}, -1), out_2d(Shape{1, 1}, -1);
  uk::sum(a, out);
  uk::sum(a, out_2d, uk::Exec{1});
  EXPECT_EQ(out[0], ref);
  EXPECT_EQ(out_2d[0], ref);
  const auto f = random_array<float>({10'001}, 4, -1.0, 1.0);
  HostArray<float> f_out(Shape{1});
  uk::sum(f, f_out);
  EXPECT_EQ(f_out[0], uk::sum(f));  // the same pairwise sum, bit for bit
  // ... and within pairwise summation's bound (2 log2(n) eps sum|x|) of an independent sum.
  long double exact = 0, magnitude = 0;
  for (float v : f) exact += v, magnitude += std::fabs(v);
  EXPECT_NEAR(f_out[0], static_cast<double>(exact),
              2 * std::log2(10'001.0) * std::numeric_limits<float>::epsilon() * static_cast<double>(magnitude));
  HostArray<std::int64_t> two(Shape{2});
  try {
    uk::sum(a, two);
    ADD_FAILURE() << "a two-element output: accepted";
  } catch (const usrecon::Error& e) {
    EXPECT_STREQ(e.what(), "sum: the output must hold one element; it is (2,)");
  }
}

template <class T>
class KernelSumFloat : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelSumFloat, FloatTypes);

TYPED_TEST(KernelSumFloat, PairwiseIsAccurateAndIndependentOfThreads) {
  using T = TypeParam;
  for (std::int64_t n : {0, 1, 2047, 2048, 2049, 131'071, (1 << 22) + 7}) {
    const auto a = random_array<T>({n}, 10 + n, 0.0, 1.0);
    long double ref = 0;
    for (T v : a) ref += v;
    const T s1 = uk::sum(a, uk::Exec{1});
    // Pairwise error bound: about log2(n) roundings of the running magnitude.
    const double eps = std::numeric_limits<T>::epsilon();
    EXPECT_NEAR(static_cast<double>(s1), static_cast<double>(ref),
                2.0 * eps * (std::log2(static_cast<double>(n) + 1.0) + 16.0) * static_cast<double>(ref) + 1e-30)
        << "n=" << n;
    for (int threads : {2, 3, 8}) EXPECT_EQ(uk::sum(a, uk::Exec{threads}), s1) << "n=" << n;
  }
}

TEST(KernelSumFloat, BeatsNaiveAccumulationOnALongSum) {
  // Sixteen million 0.1f: a running float sum stalls at 2^21; pairwise stays within 1e-6.
  const std::int64_t n = 1 << 24;
  HostArray<float> a(Shape{n}, 0.1f);
  const double ref = static_cast<double>(0.1f) * static_cast<double>(n);
  EXPECT_NEAR(uk::sum(a), ref, 1e-6 * ref);
}

TEST(KernelPhilox, MatchesRandom123KnownAnswers) {
  const auto zero = uk::philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  const auto ones = uk::philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
                                      0xffffffffu, 0xffffffffu);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  const auto pi = uk::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                    0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

// Philox calls for n samples, two a call: at n = 2^64 - 1 too ((n + 1) / 2 wrapped to 0, and the
// count to no sample at all).
TEST(KernelMonteCarlo, CountersForEverySampleCount) {
  EXPECT_EQ(uk::monte_carlo_counters(0), 0u);
  EXPECT_EQ(uk::monte_carlo_counters(1), 1u);
  EXPECT_EQ(uk::monte_carlo_counters(2), 1u);
  EXPECT_EQ(uk::monte_carlo_counters(3), 2u);
  EXPECT_EQ(uk::monte_carlo_counters(UINT64_MAX), std::uint64_t(1) << 63);
  EXPECT_EQ(uk::monte_carlo_counters(UINT64_MAX - 1), (std::uint64_t(1) << 63) - 1);
}

TEST(KernelMonteCarlo, EstimatesPiWithinStatisticalError) {
  for (std::uint64_t n : {100ull, 10'000ull, 1'000'000ull, 10'000'001ull}) {
    const double est = uk::monte_carlo_pi(n, 42);
    const double sigma = 4.0 * std::sqrt(std::numbers::pi / 4 * (1 - std::numbers::pi / 4) / n);
    EXPECT_NEAR(est, std::numbers::pi, 5 * sigma) << "n=" << n;
  }
}

TEST(KernelMonteCarlo, DeterministicForSeedAndIndependentOfThreads) {
  const std::uint64_t n = 3'000'001;
  const std::uint64_t one = uk::monte_carlo_count(n, 7, uk::Backend::cpu, uk::Exec{1});
  EXPECT_EQ(uk::monte_carlo_count(n, 7, uk::Backend::cpu, uk::Exec{4}), one);
  EXPECT_NE(uk::monte_carlo_count(n, 8), one);
  // Counting by hand over the counters gives the same number (odd n: last counter counts once).
  std::uint64_t by_hand = 0;
  for (std::uint64_t c = 0; c < (n + 1) / 2; ++c) by_hand += uk::monte_carlo_inside(c, 7, 2 * c + 1 < n);
  EXPECT_EQ(by_hand, one);
  EXPECT_THROW((void)uk::monte_carlo_pi(0, 1), usrecon::Error);
}

// The seed is a 64-bit Philox key: both words count. Against a plain loop over Philox4x32-10 (held
// to Random123's answers above): counter c = (c lo, c hi, 0, 0), key = (seed lo, seed hi), each
// call two points (words 0, 1 and 2, 3) of 24-bit coordinates, the last point dropped for odd n.
TEST(KernelMonteCarlo, EverySeedBitCountsAndMatchesAPlainPhiloxLoop) {
  const auto reference = [](std::uint64_t n, std::uint64_t seed) {
    std::uint64_t inside = 0;
    for (std::uint64_t s = 0; s < n; ++s) {
      const std::uint64_t c = s / 2;
      const auto r = uk::philox4x32_10({{static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), 0u, 0u}},
                                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
      const std::uint64_t x = r.v[2 * (s % 2)] >> 8, y = r.v[2 * (s % 2) + 1] >> 8;
      inside += x * x + y * y < (std::uint64_t(1) << 48) ? 1 : 0;
    }
    return inside;
  };
  const std::uint64_t n = 200'001;
  for (std::uint64_t seed : {std::uint64_t{7}, std::uint64_t{7} + (std::uint64_t{1} << 32),
                             std::uint64_t{0xfedcba9876543210ull}})
    for (int threads : {1, 3})
      EXPECT_EQ(uk::monte_carlo_count(n, seed, uk::Backend::cpu, uk::Exec{threads}), reference(n, seed))
          << "seed " << seed << ", " << threads << " threads";
  EXPECT_NE(uk::monte_carlo_count(n, 7), uk::monte_carlo_count(n, 7 + (std::uint64_t{1} << 32)));
}

TEST(KernelMonteCarlo, CudaRequestWithoutDeviceThrowsCudaUnavailable) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW((void)uk::monte_carlo_pi(1000, 1, uk::Backend::cuda), usrecon::CudaUnavailable);
}

}  // namespace
