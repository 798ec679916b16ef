// The optimised seed beamformer against the plain reference loop: bit-exact on random data, on
// subgrids, on every kernel this CPU can run, and on the full 1200 x 762 grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels_left_out.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/seed_cpu.hpp"

namespace seed = usrecon::recon::seed;

namespace {

std::vector<std::int32_t> random_rf(const seed::Problem& p, std::int32_t lo, std::int32_t hi,
                                    unsigned seed_value) {
  std::mt19937 rng(seed_value);
  std::uniform_int_distribution<std::int32_t> dist(lo, hi);
  std::vector<std::int32_t> rf(std::size_t(p.channels) * p.samples);
  for (auto& v : rf) v = dist(rng);
  return rf;
}

// Bitwise equality of two double images, reporting the first difference.
void expect_bit_exact(const std::vector<double>& expected, const std::vector<double>& actual,
                      const seed::Window& w) {
  ASSERT_EQ(expected.size(), actual.size());
  std::size_t mismatches = 0;
  for (std::size_t idx = 0; idx < expected.size(); ++idx) {
    if (std::memcmp(&expected[idx], &actual[idx], sizeof(double)) != 0) {
      if (mismatches == 0)
        ADD_FAILURE() << "first mismatch at j=" << w.j0 + idx / w.ni << " i=" << w.i0 + idx % w.ni
                      << ": expected " << expected[idx] << ", got " << actual[idx];
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

std::vector<seed::CpuKernel> runnable_kernels() {
  std::vector<seed::CpuKernel> kernels;
  for (auto k : {seed::CpuKernel::Avx512, seed::CpuKernel::Avx2, seed::CpuKernel::Scalar})
    if (seed::cpu_supports(k)) kernels.push_back(k);
  return kernels;
}

std::string kernels_this_cpu_cannot_run() {
  std::string left_out;
  for (auto k : {seed::CpuKernel::Avx512, seed::CpuKernel::Avx2})
    if (!seed::cpu_supports(k)) left_out += (left_out.empty() ? "" : " and ") + seed::to_string(k);
  return left_out;
}

// The reference loop is single-threaded; for big windows run it on column strips in parallel
// (each strip is still the plain loop).
std::vector<double> reference_parallel(const std::vector<std::int32_t>& rf, const seed::Problem& p,
                                       const seed::Window& w) {
  std::vector<double> out(std::size_t(w.ni) * w.nj);
  usrecon::kernels::parallel_for(std::size_t(w.nj), 1, 0, [&](std::size_t b, std::size_t e) {
    for (std::size_t jj = b; jj < e; ++jj) {
      const seed::Window strip{w.i0, w.ni, w.j0 + int(jj), 1};
      seed::beamform_reference(rf, p, strip,
                               std::span<double>(out.data() + jj * w.ni, std::size_t(w.ni)));
    }
  });
  return out;
}

}  // namespace

TEST(ReconSeedModel, SampleIndexMatchesTheSeedFormula) {
  // Half-to-even rounding and the seed's operation order, on hand-checked values.
  // i = 0, j = 0, k = n = 0: distances 0 -> order 0.
  EXPECT_EQ(seed::sample_index(0, 0, 0, 0), 0);
  // d = 100 + 100: ((200 * 0.05) / 1.54) * 30 = 194.805... -> 195
  EXPECT_EQ(seed::sample_index(100, 0, 0, 0), 195);
  // Lateral and element terms too, from the seed's own Python expression (python3:
  // round((((i*i + (j-k*6)*(j-k*6)) ** 0.5 + (i*i + (j-n*6)*(j-n*6)) ** 0.5) * 0.05) / 1.54 * 30)).
  EXPECT_EQ(seed::sample_index(100, 0, 5, 0), 199);
  EXPECT_EQ(seed::sample_index(37, 5, 64, 3), 409);
  EXPECT_EQ(seed::sample_index(599, 380, 127, 0), 1383);
  EXPECT_EQ(seed::sample_index(1199, 761, 0, 127), 2551);
  // Symmetry in (k, n) holds bit for bit.
  for (int i : {0, 1, 37, 599, 1199})
    for (int j : {0, 5, 380, 761})
      for (int k : {0, 3, 64, 127})
        for (int n : {1, 63, 126})
          EXPECT_EQ(seed::sample_index(i, j, k, n), seed::sample_index(i, j, n, k));
}

TEST(ReconSeedCpu, MatchesReferenceOnSmallProblemsEveryKernel) {
  // Window depths around the blocks (4 for AVX2, 16 a task): 1, odd, block +- 1, several blocks;
  // columns past a task's 32 (AVX2) and every lateral residue (AVX-512).
  const seed::Problem p{60, 70, 12, 60};
  const std::vector<seed::Window> windows = {
      {0, 1, 0, 1},    {3, 7, 5, 9},    {8, 9, 0, 33},   {31, 9, 40, 30}, {0, 40, 0, 70},
      {13, 27, 2, 65}, {0, 15, 10, 5},  {1, 16, 10, 5},  {2, 17, 0, 70},  {5, 33, 30, 12},
      {0, 60, 0, 3},   {44, 16, 60, 10}};
  unsigned seed_value = 1;
  for (const auto& w : windows) {
    const auto rf = random_rf(p, -30000, 30000, seed_value++);
    std::vector<double> expected(std::size_t(w.ni) * w.nj);
    seed::beamform_reference(rf, p, w, expected);
    for (auto kernel : runnable_kernels()) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(seed::to_string(kernel) + " threads=" + std::to_string(threads) +
                     " window i0=" + std::to_string(w.i0) + " ni=" + std::to_string(w.ni) +
                     " j0=" + std::to_string(w.j0) + " nj=" + std::to_string(w.nj));
        std::vector<double> actual(expected.size(), -1.0);
        seed::beamform_cpu(rf, p, w, actual, threads, kernel);
        expect_bit_exact(expected, actual, w);
      }
    }
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, WideValuesUseInt64Accumulation) {
  // Values near the int32 limits overflow any int32 sum: the kernel must switch to int64.
  const seed::Problem p{24, 30, 16, 50};
  const seed::Window w = seed::full_window(p);
  auto rf = random_rf(p, INT32_MIN, INT32_MAX, 7);
  rf[0] = INT32_MIN;
  rf[1] = INT32_MAX;
  std::vector<double> expected(std::size_t(w.ni) * w.nj);
  seed::beamform_reference(rf, p, w, expected);
  for (auto kernel : runnable_kernels()) {
    SCOPED_TRACE(seed::to_string(kernel));
    std::vector<double> actual(expected.size());
    seed::beamform_cpu(rf, p, w, actual, 2, kernel);
    expect_bit_exact(expected, actual, w);
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, EverySampleWidthAndItsBoundsMatchReference) {
  // The AVX-512 kernel adds in the samples' width while that cannot overflow: 16-bit lanes up to
  // |rf| = 16383 (a pair's sum fits int16) when channels^2 * |rf| fits int32, 32-bit lanes up to
  // 2^30 - 1, int64 terms past that. Each bound and its neighbour, as the frame's extreme value,
  // and a frame of zeros; 400 channels put 16383 on the 32-bit side of the int32 total.
  struct Case { seed::Problem p; std::int32_t max_abs; };
  const std::vector<Case> cases = {
      {{30, 40, 12, 60}, 0},          {{30, 40, 12, 60}, 3},          {{30, 40, 12, 60}, 2047},
      {{30, 40, 12, 60}, 16383},      {{30, 40, 12, 60}, 16384},      {{30, 40, 12, 60}, (1 << 30) - 1},
      {{30, 40, 12, 60}, 1 << 30},    {{30, 40, 12, 60}, INT32_MAX},  {{4, 40, 400, 50}, 16383}};
  unsigned seed_value = 40;
  for (const auto& [p, max_abs] : cases) {
    const seed::Window w = seed::full_window(p);
    auto rf = random_rf(p, -max_abs, max_abs, seed_value++);
    rf[3] = max_abs;  // the bound itself decides the width
    rf[rf.size() / 2] = -max_abs;
    std::vector<double> expected(std::size_t(w.ni) * w.nj);
    seed::beamform_reference(rf, p, w, expected);
    for (auto kernel : runnable_kernels()) {
      SCOPED_TRACE(seed::to_string(kernel) + " channels=" + std::to_string(p.channels) +
                   " max|rf|=" + std::to_string(max_abs));
      std::vector<double> actual(expected.size(), -1.0);
      seed::beamform_cpu(rf, p, w, actual, 2, kernel);
      expect_bit_exact(expected, actual, w);
    }
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, WideGridsSpanSeveralTilesOfLaterals) {
  // The AVX-512 kernel takes the laterals of one residue (j mod 6) 128 at a time: grids wider
  // than 6 * 128 = 768 laterals need several tiles, and windows may start and end mid-tile and at
  // any residue. 4000 samples keep orders in range across the whole width.
  const seed::Problem p{6, 1700, 8, 4000};
  const auto rf = random_rf(p, -2048, 2047, 77);
  for (const seed::Window w : {seed::full_window(p), seed::Window{1, 4, 5, 1690},
                               seed::Window{2, 3, 767, 775}, seed::Window{0, 2, 1531, 169}}) {
    std::vector<double> expected(std::size_t(w.ni) * w.nj);
    seed::beamform_reference(rf, p, w, expected);
    // Every pixel has pairs in range: no tile can pass by leaving zeros.
    EXPECT_EQ(std::count(expected.begin(), expected.end(), 0.0), 0);
    for (auto kernel : runnable_kernels()) {
      SCOPED_TRACE(seed::to_string(kernel) + " j0=" + std::to_string(w.j0) + " nj=" + std::to_string(w.nj));
      std::vector<double> actual(expected.size(), -1.0);
      seed::beamform_cpu(rf, p, w, actual, 3, kernel);
      expect_bit_exact(expected, actual, w);
    }
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, SeedSizedSubgridsMatchReference) {
  // The seed's real geometry (128 channels x 2000 samples) on windows at the top, where every
  // order is in range, around depth ~1030 where orders start to pass 2000, and at the bottom.
  const seed::Problem p;
  const auto rf = random_rf(p, -8192, 8191, 11);
  for (const seed::Window w : {seed::Window{0, 16, 0, 12}, seed::Window{1020, 21, 370, 9},
                               seed::Window{1184, 16, 740, 22}, seed::Window{500, 9, 755, 7}}) {
    std::vector<double> expected(std::size_t(w.ni) * w.nj);
    seed::beamform_reference(rf, p, w, expected);
    for (auto kernel : runnable_kernels()) {
      SCOPED_TRACE(seed::to_string(kernel) + " i0=" + std::to_string(w.i0));
      std::vector<double> actual(expected.size());
      seed::beamform_cpu(rf, p, w, actual, 0, kernel);
      expect_bit_exact(expected, actual, w);
    }
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, FullGridMatchesReference) {
  // The whole 1200 x 762 grid with the seed's 128 channels x 2000 samples, bit for bit.
  const seed::Problem p;
  const seed::Window w = seed::full_window(p);
  const auto rf = random_rf(p, -2048, 2047, 2024);
  const auto expected = reference_parallel(rf, p, w);
  std::vector<seed::CpuKernel> kernels = runnable_kernels();
  kernels.pop_back();  // not the scalar kernel here: ~15 s a frame; the small problems test it
  kernels.push_back(seed::CpuKernel::Auto);
  for (auto kernel : kernels) {
    std::vector<double> actual(expected.size());
    seed::SeedCpuBeamformer beamformer(p, w, kernel);
    beamformer.beamform(rf, actual);
    SCOPED_TRACE(seed::to_string(kernel) + " ran " + seed::to_string(beamformer.kernel()));
    expect_bit_exact(expected, actual, w);
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

TEST(ReconSeedCpu, RejectsBadArguments) {
  const seed::Problem p{10, 10, 4, 20};
  std::vector<std::int32_t> rf(79);
  std::vector<double> out(100);
  EXPECT_THROW(seed::beamform_cpu(rf, p, seed::full_window(p), out), usrecon::Error);
  rf.resize(80);
  EXPECT_THROW(seed::beamform_cpu(rf, p, seed::Window{5, 6, 0, 10}, out), usrecon::Error);
  out.resize(99);
  EXPECT_THROW(seed::beamform_cpu(rf, p, seed::full_window(p), out), usrecon::Error);
  try {
    seed::beamform_reference(std::vector<std::int32_t>(3), p, seed::full_window(p), out);
    FAIL() << "expected an error";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 80"), std::string::npos) << e.what();
  }
}
