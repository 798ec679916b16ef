// The CUDA backend's plan and per-thread program, run on the CPU: what the kernel computes is
// checked here on every machine, a GPU or not (test_seed_cuda.cpp compares the GPU with these).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "usrecon/recon/seed_cpu.hpp"
#include "usrecon/recon/seed_cuda.hpp"
#include "test_seed_cuda_util.hpp"

namespace seed = usrecon::recon::seed;
namespace gpu = usrecon::recon::seed::gpu;

namespace {

using usrecon::test::random_frame;

struct Case {
  seed::Problem problem;
  seed::Window window;
};

// Sizes that are not multiples of the block (32 depths, 6 P laterals per column-thread group),
// sub-windows away from the origin, few and many channels, short channels (orders past the end).
std::vector<Case> odd_cases() {
  return {
      {{37, 29, 9, 300}, {0, 37, 0, 29}},
      {{70, 61, 16, 180}, {5, 33, 7, 41}},
      {{45, 100, 24, 500}, {12, 33, 50, 25}},
      {{33, 25, 1, 64}, {0, 33, 0, 25}},
      {{40, 130, 12, 400}, {3, 30, 2, 121}},  // several column groups for every pixels per thread
      // As many channels as a thread has pixels, and one fewer or more: the edges of the loop
      // that runs without checks.
      {{20, 60, 4, 150}, {0, 20, 0, 60}},
      {{20, 60, 5, 150}, {0, 20, 0, 60}},
      {{20, 60, 6, 150}, {0, 20, 0, 60}},
      {{20, 60, 7, 150}, {0, 20, 0, 60}},
      {{20, 60, 8, 150}, {0, 20, 0, 60}},
  };
}

}  // namespace

TEST(ReconSeedGpuPlan, CoversTheWindowAndEveryReachableOrder) {
  for (const Case& c : odd_cases()) {
    for (const int pixels : gpu::kPixelChoices) {
      const gpu::Plan plan = gpu::make_plan(c.problem, c.window, {pixels});
      EXPECT_EQ(plan.split.pixels, pixels);
      EXPECT_EQ(plan.split.lateral_lanes, gpu::kDefaultLateralLanes);
      EXPECT_GE(plan.grid_x * gpu::kBlockDepths / plan.split.lateral_lanes, c.window.ni);
      EXPECT_EQ(plan.ni_pad % gpu::kBlockDepths, 0);
      EXPECT_GE(plan.grid_y * gpu::kBlockColumns * plan.split.lateral_lanes, plan.columns);
      EXPECT_GE(plan.groups * 6 * pixels, c.window.nj);
      EXPECT_LT((plan.groups - 1) * 6 * pixels, c.window.nj);  // no group wholly outside
      EXPECT_EQ(plan.stride % 32, 0);
      // Every table entry pair rounds (in double and in float) to an order inside the padding.
      const std::vector<double> table = gpu::make_table<double>(plan);
      double max_entry = 0.0;
      for (const double e : table) max_entry = std::max(max_entry, e);
      EXPECT_LT(std::lrint(2 * max_entry) + 1, plan.stride);
      EXPECT_LT(std::lrint(2.0f * float(max_entry)) + 1, plan.stride);
    }
  }
  EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {5, 10, 0, 10}), usrecon::Error);
  for (const int pixels : {0, 1, 4, 5, 6, 7, 12, 32})  // only the compiled counts
    EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {pixels}), usrecon::Error) << pixels;
  for (const int lanes : {0, 3, 4, 6, 32})
    EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {8, lanes}), usrecon::Error) << lanes;
  for (const int splits : {0, 3, 4})
    EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {8, 1, splits}), usrecon::Error) << splits;
  for (const int step : {0, 1, 3, 8})
    EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {8, 1, 1, step}), usrecon::Error) << step;
  for (const int ahead : {-1, 3})
    EXPECT_THROW(gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {8, 1, 1, 2, ahead}), usrecon::Error) << ahead;
  // Values each within their choices, in a combination that is not compiled: refused by name.
  try {
    (void)gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, {16, 2, 2, 4, 2});
    ADD_FAILURE() << "a split that is not compiled";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("P16 L2 S2 step 4 ahead 2 is not one of those compiled"), std::string::npos)
        << e.what();
  }
  // work_splits: the compiled list, each split once, the default among them, every choice of
  // every dimension in some split (the choices name nothing that is not built), and each one
  // plans and dispatches to its own constants.
  const std::vector<gpu::WorkSplit> all = gpu::work_splits();
  EXPECT_EQ(all.size(), std::size(gpu::kCompiledSplits));
  std::size_t defaults = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const gpu::WorkSplit& split = all[k];
    defaults += split.is_default();
    for (std::size_t other = 0; other < k; ++other) EXPECT_NE(all[other], split) << split.name() << " twice";
    EXPECT_NO_THROW((void)gpu::make_plan({10, 10, 4, 50}, {0, 10, 0, 10}, split)) << split.name();
    const gpu::WorkSplit dispatched =
        gpu::with_split(split, [](auto pixels, auto lanes, auto splits, auto step, auto ahead) {
          return gpu::WorkSplit{decltype(pixels)::value, decltype(lanes)::value, decltype(splits)::value,
                                decltype(step)::value, decltype(ahead)::value};
        });
    EXPECT_EQ(dispatched, split) << split.name();
  }
  EXPECT_EQ(defaults, 1u);
  const auto covered = [&](const auto& choices, int gpu::WorkSplit::*field) {
    for (const int value : choices)
      EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const gpu::WorkSplit& s) { return s.*field == value; }))
          << "no compiled split has the choice " << value;
  };
  covered(gpu::kPixelChoices, &gpu::WorkSplit::pixels);
  covered(gpu::kLateralLaneChoices, &gpu::WorkSplit::lateral_lanes);
  covered(gpu::kPairSplitChoices, &gpu::WorkSplit::pair_splits);
  covered(gpu::kPairStepChoices, &gpu::WorkSplit::pair_step);
  covered(gpu::kLoadsAheadChoices, &gpu::WorkSplit::loads_ahead);
  // Every P, L and S at the default step and loads ahead (the launch-grid test below walks them).
  for (const int pixels : gpu::kPixelChoices)
    for (const int lanes : gpu::kLateralLaneChoices)
      for (const int splits : gpu::kPairSplitChoices)
        EXPECT_NE(std::find(all.begin(), all.end(), gpu::WorkSplit{pixels, lanes, splits}), all.end());
  EXPECT_EQ(gpu::WorkSplit{}.key(), "px8");
  EXPECT_EQ(gpu::WorkSplit{}.name(), "P8 L1 S1 step 2 ahead 0");
  EXPECT_EQ((gpu::WorkSplit{16, 2, 2, 4}.key()), "px16_l2_s2_p4");
  EXPECT_EQ((gpu::WorkSplit{8, 1, 2, 2, 1}.key()), "px8_s2_a1");
  // The program's 32-bit indices: (channels + 7) windows of 2^21 samples each at 8 pixels a
  // thread; 1016 channels make 1023 * 2^21 < 2^31 windows, 1017 make 2^31, one too many.
  EXPECT_NO_THROW(gpu::make_plan({10, 10, 1016, 1 << 21}, {0, 10, 0, 10}, {8}));
  try {
    (void)gpu::make_plan({10, 10, 1017, 1 << 21}, {0, 10, 0, 10}, {8});
    ADD_FAILURE() << "a plan past the 32-bit index";
  } catch (const usrecon::Error& e) {
    EXPECT_NE(std::string(e.what()).find("32-bit index"), std::string::npos) << e.what();
  }
}

// The launch grid, walked on the host with the kernel's own thread_position: every (depth,
// column-thread) of the padded window once for each pair split, for every split of the work; at
// 2 lateral lanes each warp is 16 consecutive depths of two column-threads whose first laterals
// are neighbours, alternating lane by lane (the layout's reason to exist); and the pair splits'
// q ranges cover [1 - P, channels) once, in about equal shares of the pairs.
TEST(ReconSeedGpuPlan, LaunchGridRunsEveryThreadOnce) {
  for (const Case& c : odd_cases()) {
    for (const int pixels : gpu::kPixelChoices) {
      for (const int lanes : gpu::kLateralLaneChoices) {
        for (const int splits : gpu::kPairSplitChoices) {
          const gpu::Plan plan = gpu::make_plan(c.problem, c.window, {pixels, lanes, splits});
          EXPECT_EQ(plan.split.lateral_lanes, lanes);
          EXPECT_EQ(plan.split.pair_splits, splits);
          gpu::with_split(plan.split, [&](auto pixels_c, auto lanes_c, auto splits_c, auto, auto) {
            constexpr int kPixels = decltype(pixels_c)::value, kLanes = decltype(lanes_c)::value,
                          kSplits = decltype(splits_c)::value;
            std::vector<int> runs(std::size_t(plan.ni_pad) * plan.columns * kSplits, 0);
            std::size_t idle = 0;
            for (int by = 0; by < plan.grid_y; ++by)
              for (int ty = 0; ty < gpu::kBlockColumns; ++ty)
                for (int bx = 0; bx < plan.grid_x; ++bx) {
                  int warp_ir[gpu::kBlockDepths], warp_jj[gpu::kBlockDepths], warp_split[gpu::kBlockDepths];
                  bool active = false;
                  for (int tx = 0; tx < gpu::kBlockDepths; ++tx) {
                    int ir = -1, col = -1, split = -1;
                    const bool runs_here = gpu::thread_position<kLanes, kSplits>(bx, by, tx, ty, plan.groups,
                                                                                 plan.lane_columns, ir, col, &split);
                    if (tx > 0) {
                      ASSERT_EQ(runs_here, active) << "a warp runs whole or not at all";
                    }
                    active = runs_here;
                    if (!runs_here) {
                      ++idle;
                      continue;
                    }
                    ASSERT_GE(ir, 0);
                    ASSERT_LT(ir, plan.ni_pad);
                    ASSERT_GE(col, 0);
                    ASSERT_LT(col, plan.columns);
                    ASSERT_GE(split, 0);
                    ASSERT_LT(split, kSplits);
                    ++runs[(std::size_t(col) * plan.ni_pad + ir) * kSplits + split];
                    warp_ir[tx] = ir;
                    warp_split[tx] = split;
                    warp_jj[tx] = gpu::first_lateral<kPixels>(col, plan.groups);
                  }
                  if (!active) continue;
                  for (int tx = 0; tx < gpu::kBlockDepths; ++tx) {  // lane tx: depth tx / L, lateral tx % L
                    EXPECT_EQ(warp_ir[tx], warp_ir[0] + tx / kLanes) << "lanes " << kLanes;
                    EXPECT_EQ(warp_jj[tx], warp_jj[0] + tx % kLanes) << "lanes " << kLanes;
                    EXPECT_EQ(warp_split[tx], warp_split[0]) << "a warp is one split";
                  }
                }
            for (const int r : runs)
              ASSERT_EQ(r, 1) << "pixels " << kPixels << " lanes " << kLanes << " splits " << kSplits;
            // Idle threads only fill the last block's warps.
            EXPECT_LT(idle, std::size_t(gpu::kBlockColumns) * gpu::kBlockDepths * plan.grid_x);
            // The q ranges: consecutive, covering every q, the pairs shared about equally.
            std::int64_t pairs[2] = {0, 0};
            int expected_begin = 1 - kPixels;
            for (int split = 0; split < kSplits; ++split) {
              int begin = 0, end = 0;
              gpu::split_range<kPixels>(split, kSplits, c.problem.channels, plan.q_split, begin, end);
              EXPECT_EQ(begin, expected_begin);
              EXPECT_LE(begin, end);
              for (int q = begin; q < end; ++q) pairs[split] += c.problem.channels - q;
              expected_begin = end;
            }
            EXPECT_EQ(expected_begin, c.problem.channels);
            if (kSplits == 2) {  // the first split has half or more, by less than its last q's pairs
              EXPECT_GE(pairs[0], pairs[1]);
              EXPECT_LE(pairs[0] - pairs[1], 2 * (c.problem.channels - (plan.q_split - 1)));
            }
          });
          ASSERT_FALSE(HasFatalFailure()) << "pixels " << pixels << " lanes " << lanes << " splits " << splits;
        }
      }
    }
  }
}

TEST(ReconSeedGpuPlan, FloatIndexRoundsHalfToEven) {
  EXPECT_EQ(gpu::order_f32<false>(0.25f, 0.25f, 0, 0, 0), 0);  // 0.5 -> 0
  EXPECT_EQ(gpu::order_f32<false>(0.75f, 0.75f, 0, 0, 0), 2);  // 1.5 -> 2
  EXPECT_EQ(gpu::order_f32<false>(1.25f, 1.25f, 0, 0, 0), 2);  // 2.5 -> 2
  EXPECT_EQ(gpu::order_f32<false>(1000.0f, 1000.75f, 0, 0, 0), 2001);
  EXPECT_EQ(gpu::order_f32<false>(0.1f, 0.2f, 0, 0, 0), 0);
}

TEST(ReconSeedGpuPlan, GuardedIndicesEqualTheSeedsEverywhere) {
  // Every (i, dj_q, dj_r) of a 64-deep, 200-wide patch: both fast indices against the seed's.
  const gpu::Plan plan = gpu::make_plan({64, 200, 20, 2000}, {0, 64, 0, 200});
  const std::vector<double> t64 = gpu::make_table<double>(plan);
  const std::vector<float> t32 = gpu::make_table<float>(plan);
  std::size_t compared = 0, float_flips = 0;
  for (int ir = 0; ir < 64; ++ir) {
    for (int a = 0; a < plan.rows; a += 3) {
      for (int b = a; b < plan.rows; b += 7) {
        const std::size_t ia = std::size_t(a) * plan.ni_pad + ir, ib = std::size_t(b) * plan.ni_pad + ir;
        const int dj_a = plan.dj_min + a, dj_b = plan.dj_min + b;
        const int exact = seed::sample_index(seed::distance(ir, dj_a), seed::distance(ir, dj_b));
        ASSERT_EQ(gpu::order_f64(t64[ia], t64[ib], ir, dj_a, dj_b), exact);
        ASSERT_EQ(gpu::order_f32<true>(t32[ia], t32[ib], ir, dj_a, dj_b), exact);
        float_flips += gpu::order_f32<false>(t32[ia], t32[ib], ir, dj_a, dj_b) != exact;
        ++compared;
      }
    }
  }
  RecordProperty("unguarded_float_flips", std::to_string(float_flips) + " of " + std::to_string(compared));
  // That patch holds no near-tie that plain float rounding gets wrong (0 flips), so it would pass
  // without the guard. Random pairs over the seed's whole grid hold some: there the guard must
  // still give the seed's index, and plain float must not (or the guard was not exercised).
  const gpu::Plan full = gpu::make_plan({1200, 762, 128, 2000}, {0, 1200, 0, 762});
  const std::vector<float> f32 = gpu::make_table<float>(full);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> depth(0, 1199), row(0, full.rows - 1);
  std::size_t flips = 0;
  for (int n = 0; n < 2'000'000; ++n) {
    const int ir = depth(rng), a = row(rng), b = row(rng);
    const std::size_t ia = std::size_t(a) * full.ni_pad + ir, ib = std::size_t(b) * full.ni_pad + ir;
    const int dj_a = full.dj_min + a, dj_b = full.dj_min + b;
    const int exact = seed::sample_index(seed::distance(ir, dj_a), seed::distance(ir, dj_b));
    if (gpu::order_f32<false>(f32[ia], f32[ib], ir, dj_a, dj_b) == exact) continue;
    ++flips;
    ASSERT_EQ(gpu::order_f32<true>(f32[ia], f32[ib], ir, dj_a, dj_b), exact) << ir << " " << dj_a << " " << dj_b;
  }
  RecordProperty("unguarded_float_flips_full_grid", std::to_string(flips) + " of 2000000");
  EXPECT_GT(flips, 0u) << "no near-tie drawn: the guard was not exercised";
}

TEST(ReconSeedGpuPlan, ThreadProgramIsBitExactWithTheReference) {
  unsigned seed_value = 11;
  for (const Case& c : odd_cases()) {
    // Small values (int16 samples, int32 sums), values past 16 bits (int32 samples and sums) and
    // large ones (int64 sums).
    for (const int amplitude : {50, 40000, 2000000000}) {
      const std::vector<std::int32_t> rf = random_frame(c.problem, amplitude, ++seed_value);
      const gpu::FrameTypes types = gpu::frame_types(c.problem.channels, rf);
      ASSERT_EQ(types.int16_samples, amplitude == 50);
      if (c.problem.channels > 1) {  // one channel's sums are its samples: int32 whatever they are
        ASSERT_EQ(types.int32_sums, amplitude != 2000000000);
      }
      const std::size_t pixels = std::size_t(c.window.ni) * c.window.nj;
      std::vector<double> reference(pixels), model(pixels, -1.0);
      seed::beamform_reference(rf, c.problem, c.window, reference);
      for (const seed::Precision precision : {seed::Precision::Double, seed::Precision::Single}) {
        for (const gpu::WorkSplit& split : gpu::work_splits()) {
          std::fill(model.begin(), model.end(), -1.0);  // every pixel must be written
          gpu::beamform_gpu_model(rf, c.problem, c.window, precision, model, 0, true, split);
          const seed::ImageDiff d = seed::compare_images(model, reference);
          EXPECT_EQ(d.differing, 0u) << seed::to_string(precision) << " amplitude " << amplitude << " problem "
                                     << c.problem.nz << "x" << c.problem.nx << " split " << split.name();
        }
      }
    }
  }
}

TEST(ReconSeedGpuPlan, FrameTypesNarrowOnlyWhatFits) {
  // 16-bit samples need |rf| <= 32767 and int32 sums; int32 sums need channels^2 * max|rf| < 2^31.
  const auto types = [](int channels, std::vector<std::int32_t> rf) {
    const gpu::FrameTypes t = gpu::frame_types(channels, rf);
    return std::pair(t.int16_samples, t.int32_sums);
  };
  EXPECT_EQ(types(128, {0, 0}), std::pair(true, true));
  EXPECT_EQ(types(128, {32767, -32767}), std::pair(true, true));
  EXPECT_EQ(types(128, {-32768}), std::pair(false, true));  // the bound is symmetric: |rf| <= 32767
  EXPECT_EQ(types(128, {5, 32768}), std::pair(false, true));
  EXPECT_EQ(types(128, {131071}), std::pair(false, true));   // 128^2 * 131071 < 2^31
  EXPECT_EQ(types(128, {-131072}), std::pair(false, false));
  EXPECT_EQ(types(1024, {2047}), std::pair(true, true));      // 1024^2 * 2047 < 2^31
  EXPECT_EQ(types(1024, {2048}), std::pair(false, false));    // 16 bits, but not int32 sums
  EXPECT_EQ(types(1, {INT32_MIN}), std::pair(false, false));

  // The windowed layout, every element: window (q, s) of pixels-per-thread P holds channels
  // q + m, m < P, at sample s, zero past the channels and the samples; int16 and int32 alike.
  // 3 channels: fewer than any P, so windows reach past both ends; 21: windows of P real channels.
  for (const auto& [pixels, channels] : {std::pair(8, 3), std::pair(16, 3), std::pair(8, 21), std::pair(16, 21)}) {
    const int samples = 40;
    const gpu::Plan plan = gpu::make_plan({20, 30, channels, samples}, {0, 20, 0, 30}, {pixels});
    std::vector<std::int32_t> rf(std::size_t(channels) * samples);
    for (std::size_t s = 0; s < rf.size(); ++s) {
      const int v = int(s) * 271 % 32768;
      rf[s] = s % 2 ? v : -v;
    }
    const std::vector<std::int32_t> wide = gpu::make_windows<std::int32_t>(plan, rf);
    const std::vector<std::int16_t> narrow = gpu::make_windows<std::int16_t>(plan, rf);
    ASSERT_EQ(wide.size(), std::size_t(channels + pixels - 1) * plan.stride * pixels);
    ASSERT_EQ(narrow.size(), wide.size());
    std::size_t nonzero = 0;
    for (int q = 1 - pixels; q < channels; ++q)
      for (int s = 0; s < plan.stride; ++s)
        for (int m = 0; m < pixels; ++m) {
          const std::size_t e = (std::size_t(q + pixels - 1) * plan.stride + s) * pixels + m;
          const int k = q + m;
          const int expected = k >= 0 && k < channels && s < samples ? rf[std::size_t(k) * samples + s] : 0;
          ASSERT_EQ(wide[e], expected) << "P " << pixels << " q " << q << " s " << s << " m " << m;
          ASSERT_EQ(int(narrow[e]), expected) << "P " << pixels << " q " << q << " s " << s << " m " << m;
          nonzero += expected != 0;
        }
    // Each sample lies in P windows; the zero samples (s * 271 a multiple of 32768) in none.
    std::size_t zero_samples = 0;
    for (const std::int32_t v : rf) zero_samples += v == 0;
    EXPECT_EQ(nonzero, std::size_t(pixels) * (rf.size() - zero_samples));
  }
}

TEST(ReconSeedGpuPlan, ProgramOnTheCpuRefusesTablesAndWindowsOfTheWrongSize) {
  const gpu::Plan plan = gpu::make_plan({20, 30, 5, 40}, {0, 20, 0, 30}, {8});
  const std::vector<float> table = gpu::make_table<float>(plan);
  const std::vector<std::int32_t> windows(plan.windows_size());
  std::vector<double> out(std::size_t(20) * 30);
  EXPECT_NO_THROW((gpu::run_plan_on_cpu<float>(plan, std::span<const float>(table),
                                               std::span<const std::int32_t>(windows), true, out)));
  EXPECT_THROW((gpu::run_plan_on_cpu<float>(plan, std::span<const float>(table).first(table.size() - 1),
                                            std::span<const std::int32_t>(windows), true, out)),
               usrecon::Error);
  EXPECT_THROW((gpu::run_plan_on_cpu<float>(plan, std::span<const float>(table),
                                            std::span<const std::int32_t>(windows).first(windows.size() - 1),
                                            true, out)),
               usrecon::Error);
  std::vector<double> short_out(out.size() - 1);
  EXPECT_THROW((gpu::run_plan_on_cpu<float>(plan, std::span<const float>(table),
                                            std::span<const std::int32_t>(windows), true, short_out)),
               usrecon::Error);
}

TEST(ReconSeedGpuPlan, CompareImagesMeasuresTheMismatch) {
  const std::vector<double> ref = {3.0, 4.0, 0.0, 0.0};
  const std::vector<double> img = {3.0, 4.0, 0.0, 0.5};
  const seed::ImageDiff d = seed::compare_images(img, ref);
  EXPECT_EQ(d.differing, 1u);
  EXPECT_DOUBLE_EQ(d.fraction_differing, 0.25);
  EXPECT_DOUBLE_EQ(d.relative_l2, 0.1);
  EXPECT_DOUBLE_EQ(d.max_abs, 0.5);
  EXPECT_EQ(seed::parse_precision("single"), seed::Precision::Single);
  EXPECT_THROW(seed::parse_precision("half"), usrecon::Error);
}

// The precision target without a GPU: the single-precision program's image of the bundled example
// against the exact CPU image (relative L2 <= 1e-4). Plain float rounding is measured too.
TEST(ReconSeedGpuPlan, SinglePrecisionErrorOnExampleFullGrid) {
  const std::vector<std::int32_t> rf = usrecon::test::example_frame();
  const seed::Problem p;
  ASSERT_EQ(rf.size(), std::size_t(p.channels) * p.samples);
  const seed::Window w = seed::full_window(p);
  std::vector<double> exact(std::size_t(p.nz) * p.nx), single(exact.size()), plain(exact.size());
  seed::beamform_cpu(rf, p, w, exact);
  gpu::beamform_gpu_model(rf, p, w, seed::Precision::Single, single);
  gpu::beamform_gpu_model(rf, p, w, seed::Precision::Single, plain, 0, /*guard=*/false);
  const seed::ImageDiff d = seed::compare_images(single, exact);
  const seed::ImageDiff u = seed::compare_images(plain, exact);
  std::printf("single (guarded): %.6f of pixels differ, relative L2 %.3e\n"
              "plain float32 rounding: %.6f of pixels differ, relative L2 %.3e\n",
              d.fraction_differing, d.relative_l2, u.fraction_differing, u.relative_l2);
  RecordProperty("single_relative_l2", std::to_string(d.relative_l2));
  RecordProperty("plain_float_relative_l2", std::to_string(u.relative_l2));
  EXPECT_LE(d.relative_l2, 1e-4);
  EXPECT_EQ(d.differing, 0u);  // the guard makes it exact
  EXPECT_GT(u.differing, 0u);  // where plain float rounding is not: the guard was exercised
}
