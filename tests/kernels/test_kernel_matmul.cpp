// matmul on the CPU: blocked (tiled) and OpenBLAS against the naive reference; exact on small
// integers, within a relative-error bound on random values; shape errors at the call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <sys/mman.h>

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

// A 2-D operand against a batch, on either side, in every algorithm, exactly against the plain
// loop (small integers: every sum is exact). Each batch entry must pair with the one 2-D matrix,
// not with a stride into memory past it; tiled against naive alone could not tell, since both
// read the operands through the same broadcast strides.
TYPED_TEST(KernelMatmul, ATwoDimensionalOperandAgainstABatchIsExact) {
  using T = TypeParam;
  const auto small_integers = [](Shape shape, int salt) {
    HostArray<T> x(shape);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(static_cast<int>((i * 7 + static_cast<std::size_t>(salt)) % 11) - 5);
    return x;
  };
  const std::int64_t batch = 3, m = 13, n = 33, k = 257;  // odd, past a micro-tile and KC
  const HostArray<T> a2 = small_integers(Shape{m, k}, 1), a3 = small_integers(Shape{batch, m, k}, 2);
  const HostArray<T> b2 = small_integers(Shape{k, n}, 3), b3 = small_integers(Shape{batch, k, n}, 4);
  for (const MatmulAlgo algo : {MatmulAlgo::naive, MatmulAlgo::tiled, MatmulAlgo::blas, MatmulAlgo::automatic}) {
    if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
    for (const bool a_is_2d : {true, false}) {
      const HostArray<T>& a = a_is_2d ? a2 : a3;
      const HostArray<T>& b = a_is_2d ? b3 : b2;
      SCOPED_TRACE(std::string(a_is_2d ? "2-D a, batched b" : "batched a, 2-D b") + ", algorithm " +
                   std::to_string(static_cast<int>(algo)));
      const HostArray<T> c = uk::matmul(a, b, algo);
      ASSERT_EQ(c.shape(), (Shape{batch, m, n}));
      const auto exact = uk::testing::reference_matmul(a, b, batch, m, n, k);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < c.size(); ++i) wrong += static_cast<long double>(c[i]) != exact[i];
      EXPECT_EQ(wrong, 0u) << "of " << c.size();
    }
  }
}

TEST(KernelMatmul, EmptyInnerDimensionGivesZeros) {
  for (MatmulAlgo algo : {MatmulAlgo::naive, MatmulAlgo::tiled, MatmulAlgo::blas, MatmulAlgo::automatic}) {
    if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
    SCOPED_TRACE(static_cast<int>(algo));
    // Each algorithm writes over what was there: a fresh output of 7s every time.
    HostArray<double> a(Shape{3, 0}), b(Shape{0, 4});
    HostArray<double> c(Shape{3, 4}, 7.0);
    uk::matmul(a, b, c, algo);
    for (double v : c) EXPECT_EQ(v, 0.0);
    HostArray<double> ab(Shape{2, 3, 0}), cb(Shape{2, 3, 4}, 7.0);
    uk::matmul(ab, b, cb, algo);
    for (double v : cb) EXPECT_EQ(v, 0.0);
  }
}

// A batch of 0 broadcasts like any other against a 2-D operand or a batch of 1, as NumPy has it:
// (0, 2, 3) @ (3, 4) is (0, 2, 4). (It was planned as batch 1, and read a[0] of an empty array.)
TEST(KernelMatmul, EmptyBatchAgainstABroadcastOperandIsEmpty) {
  for (MatmulAlgo algo : {MatmulAlgo::naive, MatmulAlgo::tiled, MatmulAlgo::blas, MatmulAlgo::automatic}) {
    if (algo == MatmulAlgo::blas && !uk::have_cpu_blas()) continue;
    SCOPED_TRACE(static_cast<int>(algo));
    const HostArray<float> a(Shape{0, 2, 3}), b(Shape{3, 4}), b1(Shape{1, 3, 4});
    EXPECT_EQ(uk::matmul(a, b, algo).shape(), (Shape{0, 2, 4}));
    EXPECT_EQ(uk::matmul(a, b1, algo).shape(), (Shape{0, 2, 4}));
    const HostArray<float> a1(Shape{1, 2, 3}), b0(Shape{0, 3, 4}), a2(Shape{2, 3});
    EXPECT_EQ(uk::matmul(a1, b0, algo).shape(), (Shape{0, 2, 4}));
    EXPECT_EQ(uk::matmul(a2, b0, algo).shape(), (Shape{0, 2, 4}));
  }
}

// The algorithms read a and b while writing c: an output over an operand is refused (naive and
// blas gave zeros for matmul(a, b, a)).
TEST(KernelMatmul, AnOutputOverAnOperandIsRefused) {
  HostArray<float> a(Shape{2, 2}, std::vector<float>{1, 2, 3, 4}), b(Shape{2, 2}, 1.0f);
  EXPECT_THROW(uk::matmul(a, b, a), usrecon::Error);
  EXPECT_THROW(uk::matmul(a, b, b), usrecon::Error);
  // A view of part of an operand overlaps too.
  HostArray<float> big(Shape{8}, 1.0f);
  const auto in = uk::In<float>::host(big.data(), Shape{2, 2});
  const auto out = uk::Out<float>::host(big.data() + 3, Shape{2, 2});
  EXPECT_THROW(uk::detail::matmul<float>(in, uk::In<float>(b), out, MatmulAlgo::naive, {}), usrecon::Error);
  // Side by side is fine.
  const auto apart = uk::Out<float>::host(big.data() + 4, Shape{2, 2});
  uk::detail::matmul<float>(in, uk::In<float>(b), apart, MatmulAlgo::naive, {});
  EXPECT_EQ(big[4], 2.0f);
  HostArray<float> c(Shape{2, 2});
  uk::matmul(a, b, c);
  EXPECT_EQ(c[0], 3.0f);
  EXPECT_EQ(c[3], 7.0f);
}

// OpenBLAS takes its dimensions as a 32-bit int: beyond it, blas is refused (it printed
// "illegal value" and left c as it was). The operands are untouched address space, never read.
TEST(KernelMatmul, BlasRefusesDimensionsBeyondItsInt) {
  if (!uk::have_cpu_blas()) GTEST_SKIP() << "built without OpenBLAS";
  const std::int64_t k = (std::int64_t(1) << 31) + 16;
  const std::size_t bytes = std::size_t(k) * sizeof(float);
  void* a = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* b = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(a, MAP_FAILED);
  ASSERT_NE(b, MAP_FAILED);
  float c = -7;
  try {
    uk::detail::matmul<float>(uk::In<float>::host(static_cast<const float*>(a), Shape{1, k}),
                              uk::In<float>::host(static_cast<const float*>(b), Shape{k, 1}),
                              uk::Out<float>::host(&c, Shape{1, 1}), MatmulAlgo::blas, {});
    ADD_FAILURE() << "blas took k = 2^31 + 16";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("use tiled"), std::string::npos) << e.what();
  }
  munmap(a, bytes);
  munmap(b, bytes);
}

TEST(KernelMatmul, AnUnknownAlgorithmIsRefused) {
  const auto a = random_array<float>({3, 3}, 1);
  HostArray<float> c(Shape{3, 3});
  EXPECT_THROW(uk::matmul(a, a, c, static_cast<MatmulAlgo>(42)), usrecon::Error);
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
