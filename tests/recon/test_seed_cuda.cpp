// The CUDA backend against the CPU: bit-exact in both precisions (single's guard band), for every
// work split (pixels a thread, lateral lanes, pair splits; each split's program runs on the CPU in
// test_seed_cuda_plan.cpp). Every test that needs a device skips, saying why, when there is none;
// the rest of the suite runs as usual.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/recon/seed_cpu.hpp"
#include "usrecon/recon/seed_cuda.hpp"
#include "test_seed_cuda_util.hpp"

namespace seed = usrecon::recon::seed;
namespace recon = usrecon::recon;

#define USRECON_REQUIRE_DEVICE()                                                              \
  do {                                                                                        \
    if (!usrecon::built_with_cuda()) GTEST_SKIP() << "built without CUDA (-DUSRECON_CUDA=OFF)"; \
    if (usrecon::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";  \
  } while (0)

using usrecon::test::example_frame;

namespace {
// The work splits the bit-exactness test builds: all of them, or with USRECON_TEST_SEED_SPLITS
// set, those whose benchmark key contains it (tools/gpu-check.sh's racecheck takes "_s2": only
// the pair-split kernels use shared memory). A filter that matches none fails the test.
std::vector<seed::gpu::WorkSplit> tested_splits() {
  std::vector<seed::gpu::WorkSplit> splits = seed::gpu::work_splits();
  if (const char* filter = std::getenv("USRECON_TEST_SEED_SPLITS"); filter && *filter)
    std::erase_if(splits, [&](const seed::gpu::WorkSplit& s) { return s.key().find(filter) == std::string::npos; });
  return splits;
}

// The bit-exactness test's cases of at most this many channels: all, or with
// USRECON_TEST_SEED_MAX_CHANNELS set, those of no more (gpu-check's sanitizer steps take 32: the
// 128-channel case is 98 % of the test's GPU work, which memcheck and racecheck slow 10-100x;
// every split, precision and sample type stays in the smaller cases).
int tested_max_channels() {
  if (const char* most = std::getenv("USRECON_TEST_SEED_MAX_CHANNELS"); most && *most) return std::atoi(most);
  return std::numeric_limits<int>::max();
}
}  // namespace

TEST(ReconSeedCuda, WithoutADeviceConstructionThrowsCudaUnavailable) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const seed::Problem p{40, 30, 8, 100};
  EXPECT_THROW(seed::SeedCudaBeamformer(p, seed::full_window(p)), usrecon::CudaUnavailable);
  std::string notice;
  const auto backend = recon::make_seed_backend(recon::BackendKind::Auto, p, 1, &notice);
  EXPECT_EQ(backend->describe().value("name", ""), "cpu");
  EXPECT_NE(notice.find("no CUDA device"), std::string::npos) << notice;
  EXPECT_NE(notice.find("using the CPU"), std::string::npos) << notice;
}

// A wrong work split, stream count or window is the caller's error, with or without a device and
// with or without CUDA built in: never CudaUnavailable, which `auto` would answer with the CPU.
TEST(ReconSeedCuda, WrongArgumentsAreErrorsNotAMissingDevice) {
  const seed::Problem p{40, 30, 8, 100};
  const auto kind = [&](auto&& construct) -> std::string {
    try {
      construct();
    } catch (const usrecon::CudaUnavailable& e) {
      return std::string("CudaUnavailable: ") + e.what();
    } catch (const usrecon::Error& e) {
      return std::string("Error: ") + e.what();
    }
    return "nothing thrown";
  };
  const std::string split = kind([&] { seed::SeedCudaBeamformer(p, seed::full_window(p), seed::Precision::Double, 1, {5}); });
  EXPECT_EQ(split.rfind("Error: ", 0), 0u) << split;
  EXPECT_NE(split.find("pixels per thread"), std::string::npos) << split;
  const std::string lanes = kind([&] { seed::SeedCudaBeamformer(p, seed::full_window(p), seed::Precision::Double, 1, {8, 3}); });
  EXPECT_EQ(lanes.rfind("Error: ", 0), 0u) << lanes;
  EXPECT_NE(lanes.find("lateral lanes"), std::string::npos) << lanes;
  const std::string splits = kind([&] { seed::SeedCudaBeamformer(p, seed::full_window(p), seed::Precision::Double, 1, {8, 1, 3}); });
  EXPECT_EQ(splits.rfind("Error: ", 0), 0u) << splits;
  EXPECT_NE(splits.find("pair splits"), std::string::npos) << splits;
  const std::string step = kind([&] { seed::SeedCudaBeamformer(p, seed::full_window(p), seed::Precision::Double, 1, {8, 1, 1, 3}); });
  EXPECT_EQ(step.rfind("Error: ", 0), 0u) << step;
  EXPECT_NE(step.find("pairs a step"), std::string::npos) << step;
  const std::string streams = kind([&] { seed::SeedCudaBeamformer(p, seed::full_window(p), seed::Precision::Double, 0); });
  EXPECT_EQ(streams.rfind("Error: ", 0), 0u) << streams;
  EXPECT_NE(streams.find("streams"), std::string::npos) << streams;
  const std::string window = kind([&] { seed::SeedCudaBeamformer(p, seed::Window{0, 41, 0, 30}); });
  EXPECT_EQ(window.rfind("Error: ", 0), 0u) << window;
}

TEST(ReconSeedCuda, BitExactWithTheCpuOnRandomDataAndOddSizes) {
  USRECON_REQUIRE_DEVICE();
  const struct {
    seed::Problem p;
    seed::Window w;
  } cases[] = {
      {{37, 29, 9, 300}, {0, 37, 0, 29}},
      {{77, 53, 16, 700}, {0, 77, 0, 53}},
      {{130, 101, 32, 900}, {7, 100, 13, 77}},
      {{200, 150, 128, 2000}, {0, 200, 0, 150}},
  };
  const std::vector<seed::gpu::WorkSplit> splits = tested_splits();
  ASSERT_FALSE(splits.empty()) << "USRECON_TEST_SEED_SPLITS matches no compiled work split";
  unsigned seed_value = 5;
  const int max_channels = tested_max_channels();
  int tested_cases = 0;
  for (const auto& c : cases) {
    if (c.p.channels > max_channels) {
      std::printf("[ NOTE     ] the %dx%dx%d case left out (USRECON_TEST_SEED_MAX_CHANNELS=%d)\n", c.p.nz, c.p.nx,
                  c.p.channels, max_channels);
      continue;
    }
    ++tested_cases;
    // int16 samples with int32 sums, int32 samples with int32 sums, int32 samples with int64 sums
    for (const int amplitude : {100, 40000, 2000000000}) {
      const std::vector<std::int32_t> rf = usrecon::test::random_frame(c.p, amplitude, ++seed_value);
      const std::size_t pixels = std::size_t(c.w.ni) * c.w.nj;
      std::vector<double> cpu(pixels), gpu_image(pixels, -1.0);
      seed::beamform_cpu(rf, c.p, c.w, cpu);
      for (const seed::Precision precision : {seed::Precision::Double, seed::Precision::Single}) {
        for (const seed::gpu::WorkSplit& split : splits) {
          seed::SeedCudaBeamformer beamformer(c.p, c.w, precision, 1, split);
          std::fill(gpu_image.begin(), gpu_image.end(), -1.0);  // every pixel must be written
          beamformer.beamform(rf, gpu_image);
          const seed::ImageDiff vs_cpu = seed::compare_images(gpu_image, cpu);
          EXPECT_EQ(vs_cpu.differing, 0u) << seed::to_string(precision) << " " << c.p.nz << "x" << c.p.nx
                                          << " amplitude " << amplitude << " split " << split.name();
        }
      }
    }
  }
  EXPECT_GT(tested_cases, 0) << "USRECON_TEST_SEED_MAX_CHANNELS=" << max_channels << " leaves no case to test";
}

TEST(ReconSeedCuda, ExampleFullGridDoubleExactSingleMeasured) {
  USRECON_REQUIRE_DEVICE();
  const std::vector<std::int32_t> rf = example_frame();
  const seed::Problem p;
  ASSERT_EQ(rf.size(), std::size_t(p.channels) * p.samples);
  const seed::Window w = seed::full_window(p);
  std::vector<double> cpu(std::size_t(p.nz) * p.nx), out(cpu.size());
  seed::beamform_cpu(rf, p, w, cpu);
  seed::SeedCudaBeamformer dbl(p, w, seed::Precision::Double);
  const seed::GpuTiming t = dbl.beamform(rf, out);
  EXPECT_EQ(seed::compare_images(out, cpu).differing, 0u);
  RecordProperty("double_kernel_ms", std::to_string(t.kernel_ms));
  // The occupancy calculator answers for this kernel: some blocks of the grid fit at once.
  const double waves = dbl.waves();
  EXPECT_GT(waves, 0.0);
  EXPECT_LE(waves, double(dbl.plan().grid_x) * dbl.plan().grid_y);
  seed::SeedCudaBeamformer single(p, w, seed::Precision::Single);
  const seed::GpuTiming ts = single.beamform(rf, out);
  const seed::ImageDiff d = seed::compare_images(out, cpu);
  std::printf("single: %.6f of pixels differ, relative L2 %.3e (kernel %.3f ms, double %.3f ms)\n",
              d.fraction_differing, d.relative_l2, ts.kernel_ms, t.kernel_ms);
  EXPECT_LE(d.relative_l2, 1e-4);
}

TEST(ReconSeedCuda, OverlappedStreamsGiveTheSequentialResults) {
  USRECON_REQUIRE_DEVICE();
  const seed::Problem p{150, 120, 64, 1500};
  const seed::Window w = seed::full_window(p);
  const std::size_t pixels = std::size_t(p.nz) * p.nx;
  seed::SeedCudaBeamformer beamformer(p, w, seed::Precision::Double, 3);
  constexpr int kFrames = 8;
  std::vector<usrecon::kernels::PinnedBuffer<std::int32_t>> inputs;
  std::vector<std::vector<double>> expected;
  for (int f = 0; f < kFrames; ++f) {
    const std::vector<std::int32_t> rf = usrecon::test::random_frame(p, 1000, 100 + f);
    inputs.emplace_back(rf.size());
    std::copy(rf.begin(), rf.end(), inputs.back().begin());
    expected.emplace_back(pixels);
    seed::beamform_cpu(rf, p, w, expected.back());
  }
  for (int f = 0; f < kFrames + beamformer.streams(); ++f) {
    const int slot = f % beamformer.streams();
    if (beamformer.pending(slot)) {
      const int done = f - beamformer.streams();
      seed::GpuTiming t;
      const std::span<const double> image = beamformer.finish(slot, &t);
      const std::vector<double> copy(image.begin(), image.end());
      EXPECT_EQ(seed::compare_images(copy, expected[std::size_t(done)]).differing, 0u) << "frame " << done;
      EXPECT_GT(t.kernel_ms, 0.0);
    }
    if (f < kFrames) beamformer.enqueue(slot, inputs[std::size_t(f)].cspan());
  }
  EXPECT_THROW(beamformer.finish(0), usrecon::Error);  // nothing pending
}

TEST(ReconSeedCuda, BackendSelectionUsesTheDevice) {
  USRECON_REQUIRE_DEVICE();
  const seed::Problem p{40, 30, 8, 100};
  std::string notice;
  const auto backend = recon::make_seed_backend(recon::BackendKind::Auto, p, 1, &notice);
  EXPECT_EQ(backend->describe().value("name", ""), "cuda");
  EXPECT_TRUE(notice.empty()) << notice;
  const auto single = recon::make_seed_backend(recon::BackendKind::Cuda, p, 1, nullptr,
                                               seed::Precision::Single);
  EXPECT_EQ(single->describe().value("precision", ""), "single");
  std::vector<double> out(std::size_t(p.nz) * p.nx);
  single->beamform(usrecon::test::random_frame(p, 10, 1), out);
  EXPECT_TRUE(single->last_timing_s().contains("kernel"));
}
