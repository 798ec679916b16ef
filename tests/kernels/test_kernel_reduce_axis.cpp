// sum, min, max and mean along one axis on the CPU, against plain reference loops: every axis
// (and its negative name) of shapes whose lines are contiguous (shorter and longer than 16),
// strided, longer than a strided block's 128 rows and a slab's 256; column groups of 16384 and
// slabs together; the output with the axis dropped or kept; and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "usrecon/kernels/reduce.hpp"

namespace uk = usrecon::kernels;
using uk::Axis;
using uk::HostArray;
using uk::Reduction;
using uk::Shape;
using uk::testing::random_array;

namespace {

// The reference: each line of x (as [outer][length][inner]) reduced by a plain loop, sums in long
// double (integers exactly), min and max with NaN taking over as NumPy's.
template <class T>
std::vector<long double> reference(const HostArray<T>& x, int axis, Reduction kind) {
  std::int64_t outer = 1, length = x.shape()[axis], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.shape().ndim(); ++d) inner *= x.shape()[d];
  std::vector<long double> r(static_cast<std::size_t>(outer * inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      long double acc = kind == Reduction::min   ? std::numeric_limits<long double>::infinity()
                        : kind == Reduction::max ? -std::numeric_limits<long double>::infinity()
                                                 : 0;
      bool nan = false;
      for (std::int64_t k = 0; k < length; ++k) {
        const long double v = x[(o * length + k) * inner + i];
        nan |= std::isnan(v);
        if (kind == Reduction::min) acc = v < acc ? v : acc;
        else if (kind == Reduction::max) acc = v > acc ? v : acc;
        else acc += v;
      }
      if (kind == Reduction::mean) acc /= static_cast<long double>(length);
      if (nan && (kind == Reduction::min || kind == Reduction::max)) acc = std::numeric_limits<long double>::quiet_NaN();
      r[static_cast<std::size_t>(o * inner + i)] = acc;
    }
  return r;
}

template <Reduction kind, class T>
void expect_reduction(const HostArray<T>& x, int axis, int threads) {
  using R = uk::reduction_type_t<kind, T>;
  const int negative = axis - x.shape().ndim();
  const HostArray<R> got = [&] {  // the axis by its index and by its negative name, in turn
    if constexpr (kind == Reduction::sum) return uk::sum(x, Axis{axis}, uk::Exec{threads});
    else if constexpr (kind == Reduction::min) return uk::min(x, Axis{negative}, uk::Exec{threads});
    else if constexpr (kind == Reduction::max) return uk::max(x, Axis{axis}, uk::Exec{threads});
    else return uk::mean(x, Axis{negative}, uk::Exec{threads});
  }();
  std::vector<std::int64_t> dims;
  for (int d = 0; d < x.shape().ndim(); ++d)
    if (d != axis) dims.push_back(x.shape()[d]);
  ASSERT_EQ(got.shape(), Shape(std::span<const std::int64_t>(dims)));
  const std::vector<long double> want = reference(x, axis, kind);
  // Sums of floats: pairwise within a contiguous line, blocks of 128 rows then pairwise across a
  // strided one: (128 + log2 n) roundings of the running magnitude at most.
  std::int64_t length = x.shape()[axis];
  const long double eps = std::numeric_limits<T>::epsilon() * (128.0L + std::log2(double(length) + 1));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const long double g = got[static_cast<std::int64_t>(i)];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << "line " << i;
    } else if (std::is_integral_v<T> || kind == Reduction::min || kind == Reduction::max) {
      EXPECT_EQ(g, static_cast<long double>(static_cast<R>(want[i]))) << "line " << i;
    } else {
      // |x| < 1: the magnitude a line's sum runs through is at most its length.
      const long double scale = kind == Reduction::mean ? 1 : static_cast<long double>(length);
      EXPECT_NEAR(double(g), double(want[i]), double(eps * scale + 1e-30L)) << "line " << i;
    }
  }
}

template <class T>
class KernelAxisReduction : public ::testing::Test {};
using AxisTypes = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(KernelAxisReduction, AxisTypes);

TYPED_TEST(KernelAxisReduction, EveryAxisOfEveryShapeEqualsAPlainLoop) {
  using T = TypeParam;
  const std::vector<Shape> shapes = {Shape{1},       Shape{7},       Shape{3, 4},         Shape{2, 3, 5},
                                     Shape{4, 2049}, Shape{2049, 3}, Shape{3, 300, 257},  Shape{1, 70'001},
                                     Shape{2, 1, 3}, Shape{5, 0, 2}, Shape{100'003, 2},   Shape{40'001, 3},
                                     Shape{3, 5001, 7},  // rows of 1, 2, 4 vectors (min and max: one stretch), 3:
                                     Shape{20'001, 8},   Shape{10'001, 4},    Shape{5'001, 16},   Shape{6'001, 2, 6},
                                     Shape{3, 5'001, 8}, Shape{2, 4'001, 2, 4}};
  std::uint64_t seed = 200;
  for (const Shape& shape : shapes) {
    const auto x = random_array<T>(shape, seed++, -1000, 1000);
    for (int axis = 0; axis < shape.ndim(); ++axis) {
      if (shape[axis] == 0) continue;  // below
      for (const int threads : {1, 2}) {
        SCOPED_TRACE("shape " + shape.to_string() + ", axis " + std::to_string(axis) + ", " + std::to_string(threads) +
                     " threads");
        if constexpr (std::is_floating_point_v<T>) {  // |x| < 1 for the sums' bound
          HostArray<T> unit = x;
          for (T& v : unit) v /= T(1000);
          expect_reduction<Reduction::sum>(unit, axis, threads);
          expect_reduction<Reduction::mean>(unit, axis, threads);
        } else {
          expect_reduction<Reduction::sum>(x, axis, threads);
          expect_reduction<Reduction::mean>(x, axis, threads);
        }
        expect_reduction<Reduction::min>(x, axis, threads);
        expect_reduction<Reduction::max>(x, axis, threads);
      }
    }
  }
}

// The result does not depend on the thread count, bit for bit (every line is reduced by one
// thread, or, a single contiguous line, by the whole-array sum, which does not depend on it either).
TYPED_TEST(KernelAxisReduction, ThreadCountChangesNoBit) {
  using T = TypeParam;
  const auto x = random_array<T>(Shape{6, 1000, 300}, 300, -1000, 1000);
  for (const int axis : {0, 1, 2}) {
    const auto one = uk::sum(x, Axis{axis}, uk::Exec{1});
    for (const int threads : {2, 3}) {
      const auto more = uk::sum(x, Axis{axis}, uk::Exec{threads});
      for (std::int64_t i = 0; i < one.shape().size(); ++i) ASSERT_EQ(more[i], one[i]) << "axis " << axis << ", line " << i;
    }
  }
}

// Strided lines go by slabs of 256 rows or more and groups of 16384 columns, each a task,
// the slabs then combined in a fixed tree: where both meet (3 slabs x 2 groups), against a
// plain loop, integers exactly; and floats bit for bit on any thread count.
TEST(KernelAxisReduction, SlabsAndColumnGroupsMeet) {
  const std::int64_t rows = 2100, columns = 16390;
  const auto x = random_array<std::int32_t>(Shape{rows, columns}, 304, -1'000'000, 1'000'000);
  const auto sums = uk::sum(x, Axis{0}, uk::Exec{2});
  const auto least = uk::min(x, Axis{0}, uk::Exec{3});
  const auto greatest = uk::max(x, Axis{-2});
  for (std::int64_t c = 0; c < columns; ++c) {
    std::int64_t total = 0;
    std::int32_t lo = x[c], hi = x[c];
    for (std::int64_t k = 0; k < rows; ++k) {
      const std::int32_t v = x[k * columns + c];
      total += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    ASSERT_EQ(sums[c], total) << "column " << c;
    ASSERT_EQ(least[c], lo) << "column " << c;
    ASSERT_EQ(greatest[c], hi) << "column " << c;
  }
  const auto f = random_array<float>(Shape{2100, 5}, 305);
  const auto one = uk::sum(f, Axis{0}, uk::Exec{1});
  for (const int threads : {2, 3})
    for (std::int64_t c = 0; c < 5; ++c) EXPECT_EQ(uk::sum(f, Axis{0}, uk::Exec{threads})[c], one[c]) << c;
}

// A NaN rules its own line only: rows (contiguous), and columns (strided: in vectors of 16 bytes,
// the odd last column after them), for float and double.
template <class T>
void expect_nan_in_its_line_only() {
  const std::int64_t columns = 3001;  // no whole number of vectors: the last column after them
  auto x = random_array<T>(Shape{4, columns}, 301);
  x[1 * columns + 2047] = std::numeric_limits<T>::quiet_NaN();  // row 1, at a leaf's edge
  x[2 * columns + 3000] = std::numeric_limits<T>::quiet_NaN();  // row 2, the last column
  const auto rows_min = uk::min(x, Axis{1});
  const auto rows_max = uk::max(x, Axis{-1}, uk::Exec{2});
  const auto columns_min = uk::min(x, Axis{0});
  const auto columns_max = uk::max(x, Axis{0}, uk::Exec{2});
  for (std::int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(std::isnan(rows_min[r]), r == 1 || r == 2) << r;
    EXPECT_EQ(std::isnan(rows_max[r]), r == 1 || r == 2) << r;
  }
  for (std::int64_t c = 0; c < columns; ++c) {
    EXPECT_EQ(std::isnan(columns_min[c]), c == 2047 || c == 3000) << c;
    EXPECT_EQ(std::isnan(columns_max[c]), c == 2047 || c == 3000) << c;
  }
}
// The same where the rows are narrower than 16 values (narrow_sum's and narrow_extreme's lanes,
// m rows a step) or 1, 2 or 4 vectors wide (min and max: stream_extreme's 4 vectors a step): a
// NaN in each lane position of a step, and in the last rows, after the steps.
template <class T>
void expect_nan_in_its_narrow_column_only(std::int64_t columns) {
  const std::int64_t rows = 70'001;  // several slabs; not a whole number of steps
  for (std::int64_t c = 0; c < columns; ++c) {
    auto x = random_array<T>(Shape{rows, columns}, 306 + std::uint64_t(c));
    const std::int64_t row = c % 2 == 0 ? 31 * c + 1 : rows - 1;  // an early step, or the last row
    x[row * columns + c] = std::numeric_limits<T>::quiet_NaN();
    for (const int threads : {1, 2}) {
      const auto least = uk::min(x, Axis{0}, uk::Exec{threads}), greatest = uk::max(x, Axis{0}, uk::Exec{threads});
      for (std::int64_t j = 0; j < columns; ++j) {
        EXPECT_EQ(std::isnan(least[j]), j == c) << columns << " columns, NaN in column " << c << ", column " << j;
        EXPECT_EQ(std::isnan(greatest[j]), j == c) << columns << " columns, NaN in column " << c << ", column " << j;
      }
    }
  }
}

TEST(KernelAxisReduction, ANanRulesItsOwnLineOnly) {
  expect_nan_in_its_line_only<float>();
  expect_nan_in_its_line_only<double>();
  for (const std::int64_t columns : {1, 2, 3, 4, 5, 7, 8, 9, 16}) {
    expect_nan_in_its_narrow_column_only<float>(columns);
    expect_nan_in_its_narrow_column_only<double>(columns);
  }
}

// Few long contiguous lines (fewer than the threads) are reduced one after another by every
// thread: the same bits as one thread.
TEST(KernelAxisReduction, FewLongLinesGiveTheSameBitsOnAnyThreadCount) {
  const auto x = random_array<float>(Shape{2, 1'000'003}, 303);
  const auto one = uk::sum(x, Axis{1}, uk::Exec{1});
  const auto one_max = uk::max(x, Axis{1}, uk::Exec{1});
  for (const int threads : {2, 3, 8}) {
    const auto more = uk::sum(x, Axis{1}, uk::Exec{threads});
    const auto more_max = uk::max(x, Axis{1}, uk::Exec{threads});
    for (std::int64_t r = 0; r < 2; ++r) {
      EXPECT_EQ(more[r], one[r]) << threads << " threads, row " << r;
      EXPECT_EQ(more_max[r], one_max[r]) << threads << " threads, row " << r;
    }
  }
}

// A strided float sum keeps its accuracy over many rows: 2^20 rows of 0.1f in 3 columns. A plain
// running float sum stalls near 2^21 (0.1f is below half an ulp of it); the blocked pairwise sum
// stays within 1e-6 relative.
TEST(KernelAxisReduction, ALongStridedFloatSumStaysAccurate) {
  const std::int64_t rows = std::int64_t(1) << 20;
  const HostArray<float> x(Shape{rows, 3}, 0.1f);
  const auto s = uk::sum(x, Axis{0});
  const double want = double(0.1f) * double(rows);
  for (std::int64_t c = 0; c < 3; ++c) EXPECT_NEAR(s[c], want, 1e-6 * want) << c;
}

TEST(KernelAxisReduction, OutputsWithTheAxisDroppedOrKeptAndWhatIsRefused) {
  const auto x = random_array<std::int32_t>(Shape{3, 4, 5}, 302, -9, 9);
  HostArray<std::int64_t> dropped(Shape{3, 5}), kept(Shape{3, 1, 5});
  uk::sum(x, Axis{1}, dropped);
  uk::sum(x, Axis{-2}, kept, uk::Exec{2});
  const auto returned = uk::sum(x, Axis{1});
  for (std::int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ(dropped[i], returned[i]);
    EXPECT_EQ(kept[i], returned[i]);
  }
  HostArray<double> means(Shape{4, 5});
  uk::mean(x, Axis{0}, means);
  EXPECT_EQ(means[0], double(x[0] + x[20] + x[40]) / 3);
  HostArray<std::int32_t> least(Shape{3, 4});
  uk::reduce<Reduction::min>(x, Axis{2}, least);
  EXPECT_EQ(least[0], std::min({x[0], x[1], x[2], x[3], x[4]}));

  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const usrecon::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  HostArray<std::int64_t> wrong(Shape{5, 3});
  EXPECT_EQ(message([&] { uk::sum(x, Axis{1}, wrong); }),
            "sum: the output's shape is (5, 3); along axis 1 of (3, 4, 5) it is (3, 5) (or (3, 1, 5), the axis kept)");
  EXPECT_EQ(message([&] { (void)uk::max(x, Axis{3}); }),
            "max: axis 3 is out of range for a 3-dimensional array (shape (3, 4, 5)): 0 to 2, or -3 to -1");
  EXPECT_EQ(message([&] { (void)uk::mean(x, Axis{-4}); }),
            "mean: axis -4 is out of range for a 3-dimensional array (shape (3, 4, 5)): 0 to 2, or -3 to -1");
  // An output within the input (a NumPy out= of the input itself) is refused: the lines are read
  // while the results are written.
  HostArray<float> grid(Shape{4, 3}, 1.0f);
  EXPECT_EQ(message([&] { uk::sum(grid, Axis{0}, uk::Out<float>::host(grid.data() + 3, Shape{3})); }),
            "sum: the output overlaps the input, which is read while the output is written: write to an array of its own");
  EXPECT_EQ(message([&] { uk::min(grid, Axis{1}, uk::Out<float>::host(grid.data(), Shape{4, 1})); }),
            "min: the output overlaps the input, which is read while the output is written: write to an array of its own");
  EXPECT_EQ(message([&] { (void)uk::sum(HostArray<float>(Shape{3}), Axis{1}); }),
            "sum: axis 1 is out of range for a 1-dimensional array (shape (3,)): 0, or -1");
  HostArray<float> scalar_out(Shape{1});
  EXPECT_EQ(message([&] { uk::sum(uk::In<float>(2.0f), Axis{0}, scalar_out); }),
            "sum: a scalar has no axis to reduce along (give an array)");

  // Lines of length 0: sums 0, means NaN, min and max refused (NumPy's rules); no lines at all:
  // an empty result, nothing refused.
  const HostArray<float> hollow(Shape{2, 0, 3});
  const auto zero_sums = uk::sum(hollow, Axis{1});
  ASSERT_EQ(zero_sums.shape(), (Shape{2, 3}));
  for (const float v : zero_sums) EXPECT_EQ(v, 0.0f);
  for (const float v : uk::mean(hollow, Axis{1})) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(message([&] { (void)uk::min(hollow, Axis{1}); }),
            "min: axis 1 of (2, 0, 3) has length 0: its lines have no least element");
  const auto none = uk::max(hollow, Axis{2});
  EXPECT_EQ(none.shape(), (Shape{2, 0}));
  // Along an axis of length 0, min and max are refused even where there are no lines, as NumPy's
  // (np.zeros((0, 0)).min(axis=0) raises).
  EXPECT_EQ(message([&] { (void)uk::max(HostArray<float>(Shape{0, 0}), Axis{0}); }),
            "max: axis 0 of (0, 0) has length 0: its lines have no greatest element");
  EXPECT_EQ(uk::sum(HostArray<double>(Shape{4}, 0.5), Axis{0}).shape(), Shape{});  // a 0-d result
}

// A host input into a device output is refused before any CUDA call (the fake pointer is never
// touched), along an axis and over the whole array alike.
TEST(KernelAxisReduction, AHostInputIntoADeviceOutputIsRefused) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{0x1000});
  const HostArray<float> x(Shape{2, 3}, 1.0f);
  const std::string said = ": a host input reduces into a host output (copy the input to the device for a device one)";
  try {
    uk::sum(x, Axis{1}, uk::Out<float>::device(fake, Shape{2}));
    ADD_FAILURE() << "accepted";
  } catch (const usrecon::Error& e) {
    EXPECT_EQ(std::string(e.what()), "sum" + said);
  }
  try {
    uk::min(x, uk::Out<float>::device(fake, Shape{1}));
    ADD_FAILURE() << "accepted";
  } catch (const usrecon::Error& e) {
    EXPECT_EQ(std::string(e.what()), "min" + said);
  }
}

TEST(KernelAxisReduction, DeviceArraysWithoutADeviceThrowCudaUnavailable) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const float* fake = reinterpret_cast<const float*>(std::uintptr_t{0x1000});
  HostArray<float> out(Shape{2});
  EXPECT_THROW(uk::sum(uk::In<float>::device(fake, Shape{2, 3}), Axis{1}, out), usrecon::CudaUnavailable);
  EXPECT_THROW(uk::max(uk::In<float>::device(fake, Shape{2, 3}), Axis{1}, out), usrecon::CudaUnavailable);
}

}  // namespace
