// sum(), min(), max(), mean() and monte_carlo_pi() on the CPU; Philox against the Random123 known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

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

// min and max against a plain loop, exactly: sizes 1, a lane group (16) +- 1, a leaf (2048) +- 1,
// several leaves, and more than one thread's chunk (256 leaves); 1 to 3 threads; the extreme
// placed first, last, on a leaf's edge, and where random data put it.
template <class T>
class KernelMinMax : public ::testing::Test {};
using ReductionTypes = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(KernelMinMax, ReductionTypes);

TYPED_TEST(KernelMinMax, EqualAPlainLoopForEverySizeThreadCountAndPlace) {
  using T = TypeParam;
  for (const std::int64_t n : {1, 15, 16, 17, 2047, 2048, 2049, 5 * 2048 + 3, 256 * 2048 + 4099}) {
    auto a = random_array<T>({n}, 40 + std::uint64_t(n), -1e6, 1e6);
    const auto size = static_cast<std::size_t>(n);
    for (const std::size_t place : {std::size_t(0), size - 1, std::min<std::size_t>(2048, size - 1), size / 2, size}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", extremes at " + std::to_string(place));
      std::vector<T> kept(a.begin(), a.end());
      if (place < size) {  // a value beyond the others' range at `place` (and, for max, at place / 3)
        a[static_cast<std::int64_t>(place)] = T(-3e6);
        a[static_cast<std::int64_t>(place / 3)] = T(3e6);
      }
      T least = a[0], greatest = a[0];
      for (const T v : a) {
        least = v < least ? v : least;
        greatest = greatest < v ? v : greatest;
      }
      for (const int threads : {1, 2, 3}) {
        EXPECT_EQ(uk::min(a, uk::Exec{threads}), least) << threads << " threads";
        EXPECT_EQ(uk::max(a, uk::Exec{threads}), greatest) << threads << " threads";
      }
      std::copy(kept.begin(), kept.end(), a.begin());
    }
  }
}

TYPED_TEST(KernelMinMax, TheTypesOwnExtremesAndOneElementAndScalars) {
  using T = TypeParam;
  const T lowest = std::numeric_limits<T>::lowest(), highest = std::numeric_limits<T>::max();
  HostArray<T> a(Shape{3, 1000}, T(7));
  a[1234] = lowest;
  a[2999] = highest;
  EXPECT_EQ(uk::min(a), lowest);
  EXPECT_EQ(uk::max(a), highest);
  HostArray<T> same(Shape{4099}, highest);  // every lane and leaf the same: it, not an identity
  EXPECT_EQ(uk::min(same), highest);
  same = HostArray<T>(Shape{4099}, lowest);
  EXPECT_EQ(uk::max(same), lowest);
  EXPECT_EQ(uk::min(HostArray<T>(Shape{1}, T(-5))), T(-5));
  EXPECT_EQ(uk::max(uk::In<T>(T(9))), T(9));  // a scalar operand is its own extreme
}

template <class T>
class KernelMinMaxFloat : public ::testing::Test {};
TYPED_TEST_SUITE(KernelMinMaxFloat, FloatTypes);

// NumPy's rule: a NaN anywhere is the result, wherever it lies (a lane, a leaf's edge, another
// thread's chunk); infinities are values like any other.
TYPED_TEST(KernelMinMaxFloat, ANanAnywhereIsTheResultAndInfinitiesAreValues) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (const std::int64_t n : {1, 17, 2049, 256 * 2048 + 4099}) {
    auto a = random_array<T>({n}, 60 + std::uint64_t(n));
    for (const std::int64_t place : {std::int64_t(0), n / 2, n - 1, std::min<std::int64_t>(2048, n - 1)}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", at " + std::to_string(place));
      const T was = a[place];
      a[place] = nan;
      for (const int threads : {1, 3}) {
        EXPECT_TRUE(std::isnan(uk::min(a, uk::Exec{threads})));
        EXPECT_TRUE(std::isnan(uk::max(a, uk::Exec{threads})));
      }
      a[place] = -inf;
      EXPECT_EQ(uk::min(a), -inf);
      T greatest = -inf;  // a plain loop: the other values are finite
      for (const T v : a) greatest = greatest < v ? v : greatest;
      EXPECT_EQ(uk::max(a), greatest);
      a[place] = inf;
      EXPECT_EQ(uk::max(a), inf);
      a[place] = was;
    }
  }
  HostArray<T> all_inf(Shape{40}, inf);
  EXPECT_EQ(uk::min(all_inf), inf);
}

TEST(KernelMinMax, EmptyArraysAreRefusedAndOutputsHoldOneElement) {
  for (const bool least : {true, false}) {
    const std::string name = least ? "min" : "max";
    try {
      const HostArray<float> empty(Shape{2, 0});
      (void)(least ? uk::min(empty) : uk::max(empty));
      ADD_FAILURE() << name << " of an empty array: accepted";
    } catch (const usrecon::Error& e) {
      EXPECT_EQ(std::string(e.what()), name + ": the array is empty (shape (2, 0)): it has no " +
                                           (least ? "least" : "greatest") + " element");
    }
    const auto a = random_array<std::int32_t>({5000}, 70, -100, 100);
    HostArray<std::int32_t> out(Shape{1, 1}, 0);
    if (least) uk::min(a, out, uk::Exec{2});
    else uk::max(a, out);
    EXPECT_EQ(out[0], least ? uk::min(a) : uk::max(a));
    HostArray<std::int32_t> two(Shape{2});
    try {
      if (least) uk::min(a, two);
      else uk::max(a, two);
      ADD_FAILURE() << "a two-element output: accepted";
    } catch (const usrecon::Error& e) {
      EXPECT_EQ(std::string(e.what()), name + ": the output must hold one element; it is (2,)");
    }
  }
}

// Without a device, device min and max say so (CudaUnavailable) and never touch the pointer.
TEST(KernelMinMax, DeviceArraysWithoutADeviceThrowCudaUnavailable) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const float* fake = reinterpret_cast<const float*>(std::uintptr_t{0x1000});
  EXPECT_THROW((void)uk::min(uk::In<float>::device(fake, Shape{4})), usrecon::CudaUnavailable);
  EXPECT_THROW((void)uk::max(uk::In<float>::device(fake, Shape{4})), usrecon::CudaUnavailable);
  EXPECT_THROW((void)uk::mean(uk::In<float>::device(fake, Shape{4})), usrecon::CudaUnavailable);
  // An empty device array is refused as a host one is, before any CUDA call.
  try {
    (void)uk::min(uk::In<float>::device(nullptr, Shape{0}));
    ADD_FAILURE() << "min of an empty device array: accepted";
  } catch (const usrecon::CudaUnavailable& e) {
    ADD_FAILURE() << "asked for a device: " << e.what();
  } catch (const usrecon::Error& e) {
    EXPECT_EQ(std::string(e.what()), "min: the array is empty (shape (0,)): it has no least element");
  }
}

// mean = sum / size in NumPy's result type: double for integers (exact sums), T for floats.
TEST(KernelMean, IsTheSumOverTheSizeInNumpysType) {
  const auto i = random_array<std::int32_t>({100'001}, 80, -2'000'000'000, 2'000'000'000);
  static_assert(std::is_same_v<decltype(uk::mean(i)), double>);
  std::int64_t total = 0;
  for (const std::int32_t v : i) total += v;
  EXPECT_EQ(uk::mean(i), double(total) / 100'001.0);
  const auto f = random_array<float>({4099}, 81, 0.0, 1.0);
  static_assert(std::is_same_v<decltype(uk::mean(f)), float>);
  EXPECT_EQ(uk::mean(f, uk::Exec{2}), uk::sum(f) / 4099.0f);
  double plain = 0;
  for (const float v : f) plain += v;
  EXPECT_NEAR(uk::mean(f), plain / 4099, 1e-6);
  HostArray<std::int64_t> big(Shape{4}, std::int64_t(1) << 61);  // three 2^61 and one -2^61: 2^62 / 4
  big[3] = -(std::int64_t(1) << 61);
  EXPECT_EQ(uk::mean(big), double(std::int64_t(1) << 60));
  EXPECT_TRUE(std::isnan(uk::mean(HostArray<double>(Shape{0}))));  // as NumPy's (which also warns)
  EXPECT_TRUE(std::isnan(uk::mean(HostArray<std::int32_t>(Shape{3, 0}))));
  EXPECT_EQ(uk::mean(uk::In<double>(2.5)), 2.5);
  HostArray<double> out(Shape{1, 1});  // into an output, as sum's
  uk::mean(i, out, uk::Exec{2});
  EXPECT_EQ(out[0], uk::mean(i));
  HostArray<double> two(Shape{2});
  try {
    uk::mean(i, two);
    ADD_FAILURE() << "a two-element output: accepted";
  } catch (const usrecon::Error& e) {
    EXPECT_STREQ(e.what(), "mean: the output must hold one element; it is (2,)");
  }
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
