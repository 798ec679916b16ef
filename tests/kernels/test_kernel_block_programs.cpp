// The tiled GEMM's, sum()'s, min()'s, max()'s (whole arrays and along an axis) and monte_carlo_pi's CUDA block programs, run on the host by the block emulator (one
// std::thread per CUDA thread, real barriers and warp exchanges): the code the kernels run,
// checked without a GPU against plain reference loops. test_kernel_cuda.cu compares the GPU with
// the same emulation bit for bit where a device is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "block_emulator.hpp"
#include "kernel_test_util.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;
namespace bs = usrecon::kernels::block_reduce;
using uk::Shape;
using uk::testing::emulate_columns;
using uk::testing::emulate_gemm_tiled;
using uk::testing::emulate_monte_carlo_count;
using uk::testing::emulate_reduce;
using uk::testing::emulate_sum;
using uk::testing::random_array;

namespace {

struct GemmCase {
  int batch, m, n, k;
  bool broadcast_b;  // b's batch stride 0: one b for every batch entry
};

// Tile edges ± 1 for both tilings (float 128 × 128, double 64 × 64, slices of 8), odd sizes,
// a single element, batches with and without a broadcast b.
const GemmCase kGemmCases[] = {
    {1, 1, 1, 1, false},    {1, 37, 45, 19, false},  {1, 127, 129, 7, false}, {1, 129, 127, 9, false},
    {2, 65, 63, 17, false}, {2, 63, 65, 16, true},   {1, 5, 257, 33, false},  {3, 3, 2, 1, true},
};

template <class T>
class KernelGemmTiledProgram : public ::testing::Test {};
using GemmTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelGemmTiledProgram, GemmTypes);

// Every output of the tiled program is fma(a[i][p], b[p][j], acc) for p ascending from acc = 0,
// so a plain sequential fused dot product is its exact reference, on any inputs. Entries left
// unwritten (NaN) or written past the end of c (a guard band) fail too.
TYPED_TEST(KernelGemmTiledProgram, EqualsASequentialFusedDotProductBitForBit) {
  using T = TypeParam;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::uint64_t seed = 11;
  for (const GemmCase& g : kGemmCases) {
    const std::string what = std::to_string(g.batch) + " x " + std::to_string(g.m) + " x " +
                             std::to_string(g.n) + " x " + std::to_string(g.k) +
                             (g.broadcast_b ? " (b broadcast)" : "");
    const std::int64_t sa = std::int64_t(g.m) * g.k, sb = g.broadcast_b ? 0 : std::int64_t(g.k) * g.n,
                       sc = std::int64_t(g.m) * g.n;
    const auto a = random_array<T>(Shape{g.batch * sa}, seed++);
    const auto b = random_array<T>(Shape{g.broadcast_b ? std::int64_t(g.k) * g.n : g.batch * sb}, seed++);
    constexpr std::size_t kGuard = 1024;
    std::vector<T> c(std::size_t(g.batch * sc) + kGuard, nan);
    emulate_gemm_tiled(a.data(), b.data(), c.data(), g.batch, g.m, g.n, g.k, sa, sb, sc);

    std::int64_t wrong = 0;
    for (int z = 0; z < g.batch; ++z)
      for (int i = 0; i < g.m; ++i)
        for (int j = 0; j < g.n; ++j) {
          T want = 0;
          for (int p = 0; p < g.k; ++p) want = std::fma(a[z * sa + i * g.k + p], b[z * sb + p * g.n + j], want);
          const T got = c[std::size_t(z * sc + std::int64_t(i) * g.n + j)];
          if (!(got == want) && wrong++ < 3)
            ADD_FAILURE() << what << ": c[" << z << "][" << i << "][" << j << "] = " << got << ", want " << want;
        }
    EXPECT_EQ(wrong, 0) << what;
    for (std::size_t g_i = std::size_t(g.batch * sc); g_i < c.size(); ++g_i)
      ASSERT_TRUE(std::isnan(c[g_i])) << what << ": written past the end of c, at " << g_i;
  }
}

// The program reads a and b only inside the m x k and k x n operands: the last slice of a k that
// is no multiple of the slice depth is zero-padded, not read. Past each operand's end lies a band of
// infinities, and a[1][0] is infinite: an over-read of a row of a (into the next row or the band)
// or of b's rows past k meets an infinity, and infinity times the other operand's zero padding is
// NaN where the reference is finite. (Reading finite values there would multiply them by zeros
// and change nothing, which is why the other tests cannot see such reads.)
TYPED_TEST(KernelGemmTiledProgram, ReadsNothingPastTheOperands) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  std::uint64_t seed = 29;
  for (const int k : {1, 5, 13, 19}) {
    const int m = 67, n = 70;
    constexpr std::size_t kBand = 64;
    auto a_values = random_array<T>(Shape{std::int64_t(m) * k}, seed++);
    auto b_values = random_array<T>(Shape{std::int64_t(k) * n}, seed++);
    std::vector<T> a(a_values.data(), a_values.data() + a_values.size()), b(b_values.data(), b_values.data() + b_values.size());
    a[std::size_t(k)] = inf;  // a[1][0]
    a.insert(a.end(), kBand, inf);
    b.insert(b.end(), kBand, inf);
    std::vector<T> c(std::size_t(m) * n, std::numeric_limits<T>::quiet_NaN());
    emulate_gemm_tiled(a.data(), b.data(), c.data(), 1, m, n, k, 0, 0, 0);
    std::int64_t wrong = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        T want = 0;
        for (int p = 0; p < k; ++p) want = std::fma(a[std::size_t(i) * k + p], b[std::size_t(p) * n + j], want);
        const T got = c[std::size_t(i) * n + j];
        const bool same = got == want || (std::isnan(got) && std::isnan(want));
        if (!same && wrong++ < 3)
          ADD_FAILURE() << "k = " << k << ": c[" << i << "][" << j << "] = " << got << ", want " << want;
      }
    EXPECT_EQ(wrong, 0) << "k = " << k;
  }
}

// The same program against the library's CPU matmul on small integers, where every product and
// sum is exact: the emulated kernel and the CPU backend agree on the row-major batched layout.
TYPED_TEST(KernelGemmTiledProgram, AgreesWithTheCpuMatmulOnSmallIntegers) {
  using T = TypeParam;
  const std::int64_t batch = 2, m = 70, n = 131, k = 23;
  auto a = random_array<T>(Shape{batch, m, k}, 5, -4, 4);
  auto b = random_array<T>(Shape{batch, k, n}, 6, -4, 4);
  for (T& v : a) v = std::round(v);
  for (T& v : b) v = std::round(v);
  const uk::HostArray<T> want = uk::matmul(a, b, uk::MatmulAlgo::naive);
  std::vector<T> got(std::size_t(batch * m * n), std::numeric_limits<T>::quiet_NaN());
  emulate_gemm_tiled(a.data(), b.data(), got.data(), int(batch), int(m), int(n), int(k), m * k, k * n, m * n);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "entry " << i;
}

TEST(KernelBlockSumProgram, BlockCountDependsOnlyOnTheSize) {
  EXPECT_EQ(bs::blocks_for(1), 1);
  EXPECT_EQ(bs::blocks_for(bs::kThreads * bs::kUnroll), 1);
  EXPECT_EQ(bs::blocks_for(bs::kThreads * bs::kUnroll + 1), 2);
  EXPECT_EQ(bs::blocks_for(std::int64_t(1) << 40), bs::kMaxBlocks);
}

struct SumCase {
  std::int64_t n;
  int blocks;  // 0: blocks_for(n), as on the GPU
};

// Sizes: one, a warp − 1, a block, one block's share ± 1, several blocks; and few blocks over many
// elements, so that each thread runs the unrolled loop (kUnroll loads in flight) and its tail.
const SumCase kSumCases[] = {{1, 0},    {31, 0},     {256, 0},   {1023, 0},     {1024, 0},
                             {1025, 0}, {20'011, 0}, {100'003, 3}, {7 * 1024 + 5, 1}};

int blocks_of(const SumCase& c) { return c.blocks ? c.blocks : bs::blocks_for(c.n); }

TEST(KernelBlockSumProgram, IntegersAreExact) {
  for (const SumCase& c : kSumCases) {
    const auto x = random_array<std::int32_t>(Shape{c.n}, std::uint64_t(c.n), -2'000'000'000, 2'000'000'000);
    std::int64_t want = 0;
    for (const std::int32_t v : x) want += v;
    EXPECT_EQ((emulate_sum<std::int32_t, std::int64_t>(x.data(), c.n, blocks_of(c))), want)
        << "n = " << c.n << ", " << blocks_of(c) << " blocks";
  }
}

// Each thread's Kahan sum is good to about 2 ulp of the magnitudes it adds; the two trees add 16
// levels of rounding and pass 2's Kahan sum 2 more: at most ~20 eps · sum |x|, so 24 eps bounds it.
template <class T>
void expect_sum_within_bound(std::uint64_t seed) {
  for (const SumCase& c : kSumCases) {
    const auto x = random_array<T>(Shape{c.n}, seed + std::uint64_t(c.n));
    long double want = 0, scale = 0;
    for (const T v : x) {
      want += v;
      scale += std::abs(static_cast<long double>(v));
    }
    const T got = emulate_sum<T, T>(x.data(), c.n, blocks_of(c));
    EXPECT_LE(std::abs(static_cast<long double>(got) - want), 24 * std::numeric_limits<T>::epsilon() * scale)
        << "n = " << c.n << ", " << blocks_of(c) << " blocks, got " << got << ", want " << double(want);
  }
}

TEST(KernelBlockSumProgram, FloatsAreWithinTheCompensatedBound) {
  expect_sum_within_bound<float>(1);
  expect_sum_within_bound<double>(2);
}

// The bound above is loose enough for a plain sum too; this one is not. 2^24 then 2^14 ones: a
// plain float sum keeps 2^24 (each 1 is half an ulp and rounds away, an error of 2^14), the
// compensated sums keep every one (the exact 2^24 + 2^14 is a float).
TEST(KernelBlockSumProgram, CompensationKeepsWhatAPlainFloatSumLoses) {
  const std::int64_t n = (std::int64_t(1) << 14) + 1;
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f);
  x[0] = 16777216.0f;  // 2^24
  const float want = 16777216.0f + 16384.0f;
  float plain = 0;
  for (const float v : x) plain += v;
  EXPECT_EQ(plain, 16777216.0f);  // what the compensation is for
  for (const int blocks : {1, 3, bs::blocks_for(n)}) {
    const float got = emulate_sum<float, float>(x.data(), n, blocks);
    EXPECT_EQ(got, want) << blocks << " blocks";
  }
}

// An infinity, or a sum past the largest float, stays infinite as the CPU's sum does (the Kahan
// carry of an infinite sum was inf - inf: a NaN that spread through pass 2); infinities of both
// signs and a NaN give NaN, as there. Each case also against the CPU's uk::sum.
template <class T>
void expect_infinities_as_the_cpu() {
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max() / 4;
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(1025), std::int64_t(4099)}) {
    for (const int blocks : {1, 3}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", " + std::to_string(blocks) + " blocks");
      const auto run = [&](std::vector<T> x) {
        const T cpu = uk::sum(uk::In<T>::host(x.data(), Shape{n}));
        const T got = emulate_sum<T, T>(x.data(), n, blocks);
        EXPECT_TRUE(std::isnan(got) ? std::isnan(cpu) : got == cpu) << got << " on the emulated GPU, " << cpu << " on the CPU";
        return got;
      };
      std::vector<T> x(static_cast<std::size_t>(n), T(1.5));
      x[static_cast<std::size_t>(n / 2)] = inf;
      EXPECT_EQ(run(x), inf);
      x[static_cast<std::size_t>(n / 2)] = -inf;
      EXPECT_EQ(run(x), -inf);
      if (n > 1) {
        x[0] = inf;
        EXPECT_TRUE(std::isnan(run(x)));
        x.assign(static_cast<std::size_t>(n), big);  // 4 or more of them overflow
        EXPECT_EQ(run(x), inf);
      }
      x.assign(static_cast<std::size_t>(n), T(2));
      x.back() = std::numeric_limits<T>::quiet_NaN();
      EXPECT_TRUE(std::isnan(run(x)));
    }
  }
}

TEST(KernelBlockSumProgram, InfinitiesStayInfiniteAsOnTheCpu) {
  expect_infinities_as_the_cpu<float>();
  expect_infinities_as_the_cpu<double>();
}

// int64 partial sums may pass the type's range while the total fits: they wrap around and back
// (unsigned arithmetic, no undefined overflow for tools/sanitize.sh's UBSan to find). Thread 0 of
// one block adds x[0], x[256], x[512], x[768]: the largest twice, then its negation twice.
TEST(KernelBlockSumProgram, IntegerPartialsMayOverflowWhileTheTotalFits) {
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> x(1024, 0);
  x[0] = x[256] = most;
  x[512] = x[768] = -most;
  x[1] = x[2] = most;  // and across the block's tree: threads 1 and 2
  x[3] = -most;
  x[4] = -most;
  x[5] = 5;
  EXPECT_EQ((emulate_sum<std::int64_t, std::int64_t>(x.data(), 1024, 1)), 5);
  EXPECT_EQ(uk::sum(uk::In<std::int64_t>::host(x.data(), Shape{1024})), 5);
}

// min and max: exact in any order, so every grid gives the CPU's result and a plain loop's, for
// each size (threads and blocks with nothing to read hold the identity), the extreme anywhere; a
// NaN anywhere is the result; the type's own extremes are values, not identities.
// (Fewer sizes than the sum's: one block program emulated spawns its 256 threads anew, and four
// types times six runs of every sum size took 80 s.)
template <class T>
void expect_extremes_as_the_cpu(std::uint64_t seed) {
  for (const SumCase& c : {SumCase{1, 0}, SumCase{31, 0}, SumCase{1025, 0}, SumCase{7 * 1024 + 5, 1},
                           SumCase{20'011, 3}}) {
    {
      const int blocks = blocks_of(c);
      SCOPED_TRACE("n = " + std::to_string(c.n) + ", " + std::to_string(blocks) + " blocks");
      auto x = random_array<T>(Shape{c.n}, seed + std::uint64_t(c.n), -1e6, 1e6);
      const auto run = [&] {
        const T least = emulate_reduce<bs::Min<T>, T, T>(x.data(), c.n, blocks);
        const T greatest = emulate_reduce<bs::Max<T>, T, T>(x.data(), c.n, blocks);
        T want_least = x[0], want_greatest = x[0];
        for (const T v : x) {
          want_least = v < want_least ? v : want_least;
          want_greatest = want_greatest < v ? v : want_greatest;
        }
        EXPECT_EQ(least, want_least);
        EXPECT_EQ(greatest, want_greatest);
        EXPECT_EQ(least, uk::min(x));
        EXPECT_EQ(greatest, uk::max(x));
      };
      run();
      x[c.n - 1] = std::numeric_limits<T>::lowest();
      x[c.n / 2] = std::numeric_limits<T>::max();
      run();
      if constexpr (!std::is_integral_v<T>) {
        x[c.n / 3] = std::numeric_limits<T>::quiet_NaN();
        EXPECT_TRUE(std::isnan(emulate_reduce<bs::Min<T>, T, T>(x.data(), c.n, blocks)));
        EXPECT_TRUE(std::isnan(emulate_reduce<bs::Max<T>, T, T>(x.data(), c.n, blocks)));
      }
    }
  }
}

TEST(KernelBlockReduceProgram, MinAndMaxEqualAPlainLoopAndTheCpu) {
  expect_extremes_as_the_cpu<float>(90);
  expect_extremes_as_the_cpu<double>(91);
  expect_extremes_as_the_cpu<std::int32_t>(92);
  expect_extremes_as_the_cpu<std::int64_t>(93);
}

// The plain-loop model of the whole-array kernels (model_reduce, the GPU tests' reference: the
// emulator is too slow for their sizes) equals the emulated kernels bit for bit: every op and
// type, sizes around a warp, a block and the unrolled loads, 1 to 3 blocks and the GPU's count;
// with one block it also equals pass 1 alone (the GPU's contiguous lines along an axis: pass 2
// over one partial gives it back, but for a -0 sum, which the compensated sum never yields).
template <class Op, class T, class R>
void expect_model_equals_emulation(std::uint64_t seed, double lo, double hi) {
  for (const std::int64_t n : {1, 3, 31, 33, 257, 1025, 4 * 256 * 2 + 7, 5'001}) {
    auto x = random_array<T>(Shape{n}, seed + std::uint64_t(n), lo, hi);
    for (const int blocks : {1, 3, bs::blocks_for(n)}) {
      if (blocks == 3 && bs::blocks_for(n) == 3) continue;
      const R model = uk::testing::model_reduce<Op, T, R>(x.data(), n, blocks);
      const R emulated = emulate_reduce<Op, T, R>(x.data(), n, blocks);
      EXPECT_EQ(std::memcmp(&model, &emulated, sizeof model), 0) << "n = " << n << ", " << blocks << " blocks";
      if (blocks == 1) {  // pass 1 alone, as the GPU reduces a contiguous line along an axis
        R pass1{};
        R warp_results[bs::kThreads / bs::kWarp];
        uk::testing::run_block(bs::kThreads, [&](int tid, const uk::testing::EmulatedThread& thread) {
          bs::partials_program(x.data(), n, &pass1, 0, 1, tid, warp_results, thread, Op{});
        });
        EXPECT_EQ(std::memcmp(&model, &pass1, sizeof model), 0) << "n = " << n << ", pass 1 alone";
      }
    }
  }
}

TEST(KernelBlockReduceProgram, PlainLoopModelEqualsTheEmulatedKernels) {
  expect_model_equals_emulation<bs::Sum<float>, float, float>(700, -1000, 1000);
  expect_model_equals_emulation<bs::Sum<double>, double, double>(701, -1000, 1000);
  expect_model_equals_emulation<bs::Sum<std::int64_t>, std::int32_t, std::int64_t>(702, -2e9, 2e9);
  expect_model_equals_emulation<bs::Sum<uk::Int128>, std::int64_t, uk::Int128>(703, -9e18, 9e18);
  expect_model_equals_emulation<bs::Min<float>, float, float>(704, -1e6, 1e6);
  expect_model_equals_emulation<bs::Max<double>, double, double>(705, -1e6, 1e6);
  expect_model_equals_emulation<bs::Max<std::int32_t>, std::int32_t, std::int32_t>(706, -2e9, 2e9);
}

// ---- Strided lines (reduce_columns, fold_column_chunks) ----

TEST(KernelColumnsProgram, GridCoversEveryRowOnceWithAboutTheBlocksOfAWholeArraySum) {
  struct Case {
    std::int64_t outer, length, inner, tiles, chunks;
    bool line_per_thread = false;
  };
  const Case cases[] = {
      {1, 4096, 4096, 128, 16},     // gpu-check's square arrays: 16 chunks of 256 rows
      {1, 3'000'000, 2, 1, 2048},   // two columns: the rows split kMaxBlocks ways
      {1000, 10, 40, 2000, 1},      // enough tiles: one chunk
      {1, 1000, 40, 2, 3},          // few rows: each warp at least kLeastRowsAWarp of a chunk
      {3, 255, 33, 6, 1},           // fewer rows than a block reads 32 times
      {1, 0, 5, 1, 1},              // no rows: one empty chunk (a sum of 0 a line)
      {2, 1 << 20, 1, 2, 1024},
      {1'000'000, 64, 2, 1'000'000, 1, true},  // a thread a line: tiles of 2 columns would idle 30 lanes
      {2048, 5, 31, 2048, 1, true},
      {2047, 5, 31, 2047, 1},                   // fewer tiles than kMaxBlocks: tiles
      {2048, 5, 32, 2048, 1},                   // whole tiles
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("outer " + std::to_string(c.outer) + ", length " + std::to_string(c.length) + ", inner " +
                 std::to_string(c.inner));
    const bs::ColumnsGrid g = bs::columns_grid(c.outer, c.length, c.inner);
    EXPECT_EQ(g.tiles_per_outer, (c.inner + bs::kWarp - 1) / bs::kWarp);
    EXPECT_EQ(g.tiles, c.tiles);
    EXPECT_EQ(g.chunks, c.chunks);
    EXPECT_EQ(g.line_per_thread, c.line_per_thread);
    EXPECT_GE(g.chunks * g.chunk_rows, c.length) << "rows left out";
    if (c.length > 0) {
      EXPECT_LT((g.chunks - 1) * g.chunk_rows, c.length) << "an empty chunk";
    }
    if (g.chunks > 1) {
      EXPECT_GE(g.chunk_rows, bs::kRowsAtOnce * bs::kLeastRowsAWarp);
      EXPECT_LE(g.tiles * g.chunks, 2 * bs::kMaxBlocks);
    }
  }
}

// The emulated kernels equal their plain-loop model (model_columns, the GPU test's reference) bit
// for bit, and each line a plain loop: min and max equal it, integer sums equal it exactly (mod 2^64,
// as the CPU's), float sums are within a few roundings of the exact sum (each lane's rows are
// compensated; the 8 warps and the chunks add their results). Tile edges (31, 32, 33, 65
// columns), several chunks, a NaN (min/max: its line only) and an infinity (sums: its line
// only), on the grid the GPU uses and on another that covers the rows.
template <class T>
void expect_columns_as_a_plain_loop(std::uint64_t seed) {
  using S = uk::sum_type_t<T>;
  struct Case {
    std::int64_t outer, length, inner;
  };
  for (const Case c : {Case{1, 1, 2}, Case{2, 7, 33}, Case{1, 257, 31}, Case{1, 1000, 40}, Case{2, 300, 65},
                       Case{1, 2100, 32}, Case{2048, 9, 3}}) {  // the last: a thread a line
    for (const bool own_grid : {false, true}) {
      if (own_grid && c.outer * c.inner > 70) continue;  // 5 chunks of the smaller shapes: the emulator is slow
      bs::ColumnsGrid grid = bs::columns_grid(c.outer, c.length, c.inner);
      if (own_grid) {  // 5 chunks, whatever the length
        grid.chunk_rows = (c.length + 4) / 5;
        grid.chunks = (c.length + grid.chunk_rows - 1) / grid.chunk_rows;
      }
      SCOPED_TRACE("outer " + std::to_string(c.outer) + ", length " + std::to_string(c.length) + ", inner " +
                   std::to_string(c.inner) + ", " + std::to_string(grid.chunks) + " chunks");
      auto x = random_array<T>(Shape{c.outer, c.length, c.inner}, seed++, -1e6, 1e6);
      const std::int64_t lines = c.outer * c.inner;
      const auto check = [&](std::int64_t special_line) {
        const auto count = static_cast<std::size_t>(lines);
        std::vector<S> sums(count);
        std::vector<T> least(count), greatest(count);
        emulate_columns<bs::Sum<S>, bs::Min<T>, bs::Max<T>>(x.data(), c.outer, c.length, c.inner, grid, sums.data(),
                                                             least.data(), greatest.data());
        const auto cpu_sums = uk::sum(x, uk::Axis{1});
        std::vector<S> model_sums(count);  // what the GPU test expects, bit for bit
        std::vector<T> model_least(count), model_greatest(count);
        uk::testing::model_columns<bs::Sum<S>>(x.data(), c.outer, c.length, c.inner, model_sums.data(), grid);
        uk::testing::model_columns<bs::Min<T>>(x.data(), c.outer, c.length, c.inner, model_least.data(), grid);
        uk::testing::model_columns<bs::Max<T>>(x.data(), c.outer, c.length, c.inner, model_greatest.data(), grid);
        for (std::size_t line = 0; line < count; ++line) {
          ASSERT_EQ(std::memcmp(&sums[line], &model_sums[line], sizeof(S)), 0) << "line " << line;
          ASSERT_EQ(std::memcmp(&least[line], &model_least[line], sizeof(T)), 0) << "line " << line;
          ASSERT_EQ(std::memcmp(&greatest[line], &model_greatest[line], sizeof(T)), 0) << "line " << line;
        }
        for (std::int64_t o = 0; o < c.outer; ++o)
          for (std::int64_t j = 0; j < c.inner; ++j) {
            const std::int64_t line = o * c.inner + j;
            T lo = x[std::size_t((o * c.length) * c.inner + j)], hi = lo;
            long double exact = 0, magnitude = 0;
            bool nan = false;
            for (std::int64_t k = 0; k < c.length; ++k) {
              const T v = x[std::size_t((o * c.length + k) * c.inner + j)];
              nan |= v != v;
              lo = v < lo ? v : lo;
              hi = hi < v ? v : hi;
              exact += static_cast<long double>(v);
              magnitude += std::fabs(static_cast<long double>(v));
            }
            SCOPED_TRACE("line " + std::to_string(line));
            if (nan) {
              ASSERT_TRUE(std::isnan(double(least[std::size_t(line)])));
              ASSERT_TRUE(std::isnan(double(greatest[std::size_t(line)])));
            } else {
              ASSERT_EQ(least[std::size_t(line)], lo);
              ASSERT_EQ(greatest[std::size_t(line)], hi);
            }
            if constexpr (std::is_integral_v<T>) {
              ASSERT_EQ(sums[std::size_t(line)], cpu_sums[line]);
              ASSERT_EQ(static_cast<long double>(sums[std::size_t(line)]), exact);
            } else if (line == special_line) {
              ASSERT_EQ(double(sums[std::size_t(line)]), std::numeric_limits<double>::infinity());
            } else if (!nan) {
              const long double eps = std::numeric_limits<S>::epsilon();
              ASSERT_LE(std::fabs(static_cast<long double>(sums[std::size_t(line)]) - exact),
                        4 * eps * magnitude)
                  << "sum " << sums[std::size_t(line)] << ", exact " << double(exact);
            }
          }
      };
      check(-1);
      if constexpr (!std::is_integral_v<T>) {
        if (c.length > 1) {  // a NaN in the last chunk of the last line, an infinity in the first line
          const std::int64_t last = lines - 1;
          x[std::size_t(((last / c.inner) * c.length + c.length - 1) * c.inner + last % c.inner)] =
              std::numeric_limits<T>::quiet_NaN();
          x[std::size_t(c.length / 2 * c.inner)] = std::numeric_limits<T>::infinity();
          check(0);
        }
      }
    }
  }
}

TEST(KernelColumnsProgram, EqualsAPlainLoopOnEveryLine) {
  expect_columns_as_a_plain_loop<float>(500);
  expect_columns_as_a_plain_loop<double>(510);
  expect_columns_as_a_plain_loop<std::int32_t>(520);
  expect_columns_as_a_plain_loop<std::int64_t>(530);
}

// Counts are integers, so any grid gives the CPU's count: one block, several, more threads than
// counters (idle lanes still join the shuffles), and an odd n (the last counter's second point
// is not a sample).
TEST(KernelMonteCarloProgram, AnyGridOnTheHostGivesTheCpuCount) {
  struct Case {
    std::uint64_t n;
    unsigned blocks;
  };
  for (const Case c : {Case{1, 1}, Case{2, 1}, Case{3, 2}, Case{1001, 3}, Case{200'001, 4}, Case{200'000, 1}}) {
    const std::uint64_t seed = 0x5eed0000u + c.n;
    EXPECT_EQ(emulate_monte_carlo_count(c.n, seed, c.blocks, 256), uk::monte_carlo_count(c.n, seed))
        << "n = " << c.n << ", " << c.blocks << " blocks";
  }
}

}  // namespace
