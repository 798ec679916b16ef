// matmul on the CPU: blocked (tiled) and OpenBLAS against the naive reference; exact on small
// integers, within a relative-error bound on random values; shape errors at the call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel_test_util.hpp"
#include "usrecon/kernels/matmul.hpp"

namespace uk = usrecon::kernels;
using uk::HostArray;
using uk::MatmulAlgo;
using uk::Shape;
using uk::testing::random_array;

namespace {

struct Dims {
  std::int64_t batch, m, n, k;
};

// Sizes: 1, odd, micro-tile (4/6/12 × 8..32) ± 1, block (KC = 256, MC) ± 1, batch.
const Dims kDims[] = {{1, 1, 1, 1},    {1, 3, 5, 7},     {2, 11, 31, 13},  {1, 12, 32, 256},
                      {1, 13, 33, 257}, {3, 25, 17, 255}, {1, 289, 65, 300}, {1, 100, 2050, 20},
                      {2, 97, 130, 513}};

template <class T>
class KernelMatmul : public ::testing::Test {};
using MatmulTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelMatmul, MatmulTypes);

TYPED_TEST(KernelMatmul, SmallIntegersAreBitExactInEveryAlgorithm) {
  using T = TypeParam;
  for (const Dims& d : kDims) {
    HostArray<T> a = random_array<T>({d.batch, d.m, d.k}, 1, -4.0, 4.0);
    HostArray<T> b = random_array<T>({d.batch, d.k, d.n}, 2, -4.0, 4.0);
    for (T& v : a) v = std::round(v);
    for (T& v : b) v = std::round(v);
    const HostArray<T> ref = uk::matmul(a, b, MatmulAlgo::naive);
    const auto exact = uk::testing::reference_matmul(a, b, d.batch, d.m, d.n, d.k);
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(ref[i], static_cast<T>(exact[i]));
    for (MatmulAlgo algo : {MatmulAlgo::tiled, MatmulAlgo::blas, MatmulAlgo::automatic}) {
      if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
      const HostArray<T> c = uk::matmul(a, b, algo);
      ASSERT_EQ(c.shape(), (Shape{d.batch, d.m, d.n}));
      for (std::size_t i = 0; i < c.size(); ++i)
        ASSERT_EQ(c[i], ref[i]) << "algo " << static_cast<int>(algo) << " m=" << d.m
                                << " n=" << d.n << " k=" << d.k << " i=" << i;
    }
  }
}

TYPED_TEST(KernelMatmul, RandomValuesWithinRelativeErrorBound) {
  using T = TypeParam;
  const double eps = std::numeric_limits<T>::epsilon();
  for (const Dims& d : kDims) {
    const auto a = random_array<T>({d.batch, d.m, d.k}, 3 + d.m);
    const auto b = random_array<T>({d.batch, d.k, d.n}, 4 + d.n);
    const auto exact = uk::testing::reference_matmul(a, b, d.batch, d.m, d.n, d.k);
    for (MatmulAlgo algo : {MatmulAlgo::naive, MatmulAlgo::tiled, MatmulAlgo::blas}) {
      if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
      for (int threads : {1, 3}) {
        const HostArray<T> c = uk::matmul(a, b, algo, uk::Exec{threads});
        // |error| <= k·eps·sum|a||b|; inputs in [-1, 1] so sum|a||b| <= k.
        const double bound = 2.0 * eps * static_cast<double>(d.k) * std::sqrt(static_cast<double>(d.k));
        for (std::size_t i = 0; i < c.size(); ++i)
          ASSERT_NEAR(static_cast<double>(c[i]), static_cast<double>(exact[i]), bound)
              << "algo " << static_cast<int>(algo) << " m=" << d.m << " n=" << d.n << " k=" << d.k;
      }
    }
  }
}

TEST(KernelMatmul, TwoDimensionalAndBatchBroadcast) {
  // The tutorial's 2 × 3 by 3 × 2 example.
  HostArray<float> a(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  HostArray<float> b(Shape{3, 2}, std::vector<float>{7, 8, 9, 10, 11, 12});
  const HostArray<float> c = uk::matmul(a, b, MatmulAlgo::tiled);
  ASSERT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c[0], 58);
  EXPECT_EQ(c[1], 64);
  EXPECT_EQ(c[2], 139);
  EXPECT_EQ(c[3], 154);
  // One a for every b of a batch.
  const auto bb = random_array<float>({4, 3, 5}, 9);
  const HostArray<float> cb = uk::matmul(a, bb, MatmulAlgo::tiled);
  ASSERT_EQ(cb.shape(), (Shape{4, 2, 5}));
  const HostArray<float> cr = uk::matmul(a, bb, MatmulAlgo::naive);
  for (std::size_t i = 0; i < cb.size(); ++i) EXPECT_NEAR(cb[i], cr[i], 1e-5f);
}

TEST(KernelMatmul, EmptyInnerDimensionGivesZeros) {
  HostArray<double> a(Shape{3, 0}), b(Shape{0, 4});
  HostArray<double> c(Shape{3, 4}, 7.0);
  for (MatmulAlgo algo : {MatmulAlgo::naive, MatmulAlgo::tiled, MatmulAlgo::blas}) {
    if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
    uk::matmul(a, b, c, algo);
    for (double v : c) EXPECT_EQ(v, 0.0);
  }
}

TEST(KernelMatmul, ShapeErrorsThrowAtTheCall) {
  HostArray<float> a(Shape{2, 3}), b(Shape{4, 2}), c(Shape{2, 2});
  EXPECT_THROW(uk::matmul(a, b, c), usrecon::Error);  // 3 != 4
  HostArray<float> b2(Shape{3, 2}), wrong(Shape{2, 3});
  EXPECT_THROW(uk::matmul(a, b2, wrong), usrecon::Error);
  HostArray<float> v(Shape{3});
  EXPECT_THROW((void)uk::matmul(v, b2), usrecon::Error);
  HostArray<float> x(Shape{2, 2, 3}), y(Shape{3, 3, 2});
  EXPECT_THROW((void)uk::matmul(x, y), usrecon::Error);  // batch 2 vs 3
  try {
    uk::matmul(a, b, c);
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions differ"), std::string::npos);
  }
}

}  // namespace
