// The general DAS's CUDA backend. ReconDasCudaProgram runs on every machine: it walks the kernels'
// launch grid on the host and calls the same per-thread programs (usrecon/recon/das_cuda.hpp)
// the CUDA kernels call, with the plan's tables, so the GPU's indexing, layouts and arithmetic
// are checked against the CPU beamformer and the reference loop without a GPU. ReconDasCuda runs
// the kernels themselves when a device is there.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "das_test_problems.hpp"
#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_cuda.hpp"

namespace usrecon::recon {
namespace {

using test::simulated;
using test::small_problem;
namespace g = das::gpu;

struct HostPair {  // float2's layout on the host
  float x, y;
};

template <class T>
const T* device_pointer(const std::vector<T>& table) {  // a DeviceBuffer of 0 elements is null
  return table.empty() ? nullptr : table.data();
}

/// What the device computes for `plan` on `data`: the interleave kernel's grid (element-outer),
/// then every (block, thread) of the pixel kernel's grid, each calling the kernel's program, in
/// each of the plan's launches (a transmit-blocked plan split by transmits: each launch adds its
/// transmits to what the launches before left, as the kernel does). Every pixel must be written
/// by exactly one thread a launch.
std::vector<std::complex<float>> run_on_host(const g::Plan& plan, const AnalyticData& data) {
  const g::Params& p = plan.params;
  std::vector<std::complex<float>> out(plan.pixels(), {NAN, NAN});
  std::vector<int> writes(plan.pixels(), 0);
  std::vector<HostPair> iq;
  if (plan.interleaved()) {
    iq.assign(plan.data_floats, {NAN, NAN});
    for (unsigned block = 0; block < plan.interleave_blocks; ++block)
      for (unsigned thread = 0; thread < unsigned(g::kInterleaveThreads); ++thread) {
        const std::size_t k = std::size_t(block) * g::kInterleaveThreads + thread;
        if (k < plan.data_floats) iq[k] = {data.i[k], data.q[k]};
      }
  }
  g::TransmitArrays tr;
  tr.cos_a = device_pointer(plan.tables.cos_a);
  tr.sin_a = device_pointer(plan.tables.sin_a);
  tr.x_reference = device_pointer(plan.tables.x_reference);
  tr.tx_element = device_pointer(plan.tables.tx_element);
  tr.src_x = device_pointer(plan.tables.src_x);
  tr.src_z = device_pointer(plan.tables.src_z);
  tr.src_r0 = device_pointer(plan.tables.src_r0);
  tr.src_waist = device_pointer(plan.tables.src_waist);
  tr.column_transmit = device_pointer(plan.tables.column_transmit);
  const int per_launch = plan.transmits_a_launch();
  for (int first = 0; first < p.transmits; first += per_launch) {
    for (unsigned by = 0; by < plan.grid_y; ++by)
      for (unsigned bx = 0; bx < plan.grid_x; ++bx)
        for (unsigned t = 0; t < unsigned(g::kBlockThreads); ++t) {
          int ix, iz;
          float x, z, vi = 0.f, vq = 0.f;
          if (!g::thread_pixel(p, bx, by, t, ix, iz, x, z)) continue;
          if (plan.kernel == DasCudaKernel::TransmitBlocked) {
            const int end = std::min(first + per_launch, p.transmits);
            if (first > 0) {
              const std::complex<float> before = out[std::size_t(ix) * p.nz + iz];
              vi = before.real(), vq = before.imag();
            }
            if (p.linear)
              g::pixel_transmit_blocked<true>(p, iq.data(), tr.cos_a, tr.sin_a, tr.x_reference, plan.tables.ex.data(), x, z,
                                              first, end, vi, vq);
            else
              g::pixel_transmit_blocked<false>(p, iq.data(), tr.cos_a, tr.sin_a, tr.x_reference, plan.tables.ex.data(), x, z,
                                               first, end, vi, vq);
          } else if (plan.kernel == DasCudaKernel::ElementOuter) {
            if (p.linear)
              g::pixel_element_outer<true>(p, iq.data(), tr.cos_a, tr.sin_a, tr.x_reference, plan.tables.ex.data(), x, z, vi,
                                           vq);
            else
              g::pixel_element_outer<false>(p, iq.data(), tr.cos_a, tr.sin_a, tr.x_reference, plan.tables.ex.data(), x, z, vi,
                                            vq);
          } else {
            g::pixel_every_transmit(p, data.i.data(), data.q.data(), tr, plan.tables.ex.data(), ix, x, z, vi, vq);
          }
          const std::size_t at = std::size_t(ix) * p.nz + iz;
          out[at] = {vi, vq};
          ++writes[at];
        }
  }
  std::size_t wrong = 0;
  for (int w : writes) wrong += w != plan.launches();
  EXPECT_EQ(wrong, 0u) << "pixels not written exactly once a launch by the launch grid";
  return out;
}

struct Case {
  Model model;
  das::TimeZero time_zero;
  Interp interp;
  DasCudaKernel kernel;
  Window window = Window::Hann;
  double fnumber = 1.5;
  TxApodization tx_apodization = TxApodization::None;
  double tx_fnumber = 0.0;
  // The grid starts above the array (z < 0), where an F-number leaves no aperture (README).
  bool above_array = false;
};

std::string describe(const Case& k) {
  return to_string(k.model) + " " + to_string(k.time_zero) + " " + to_string(k.interp) + " " + to_string(k.kernel) +
         " " + to_string(k.window) + " F " + std::to_string(k.fnumber) + " " + to_string(k.tx_apodization) +
         " tx F " + std::to_string(k.tx_fnumber) + (k.above_array ? " above the array" : "");
}

DasProblem problem_of(const Case& k) {
  DasProblem p = test::configured_problem(k.model, k.time_zero, k.window, k.interp, k.fnumber, k.tx_apodization,
                                          k.tx_fnumber);
  if (k.above_array) p.grid = Grid::from_ranges(-4.0123e-3, 4e-3, 0.1013e-3, -2.0071e-3, 25e-3, 0.2517e-3);
  return p;
}

// Every model, both kernels, both clocks, both interpolations, every transmit apodization.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::ElementOuter},
      {Model::PlaneWave, das::TimeZero::Center, Interp::Linear, DasCudaKernel::ElementOuter},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Nearest, DasCudaKernel::ElementOuter},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Nearest, DasCudaKernel::PixelPerThread},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::ElementOuter, Window::Rect, 0.0},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::ElementOuter, Window::Tukey, 2.0},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::TransmitBlocked},
      {Model::PlaneWave, das::TimeZero::Center, Interp::Nearest, DasCudaKernel::TransmitBlocked, Window::Tukey, 0.0},
      {Model::SyntheticAperture, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread},
      {Model::SyntheticAperture, das::TimeZero::FirstElement, Interp::Nearest, DasCudaKernel::PixelPerThread,
       Window::Rect, 0.0},
      {Model::DivergingWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread},
      {Model::DivergingWave, das::TimeZero::Center, Interp::Nearest, DasCudaKernel::PixelPerThread},
      {Model::DivergingWave, das::TimeZero::Center, Interp::Linear, DasCudaKernel::PixelPerThread, Window::Tukey,
       1.0, TxApodization::None, 0.5},
      {Model::FocusedWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread},
      {Model::FocusedWave, das::TimeZero::Center, Interp::Linear, DasCudaKernel::PixelPerThread},
      {Model::FocusedWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread, Window::Hann,
       1.5, TxApodization::Scanline},
      {Model::FocusedWave, das::TimeZero::Center, Interp::Linear, DasCudaKernel::PixelPerThread, Window::Hann, 1.5,
       TxApodization::None, 1.0},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread, Window::Hann,
       1.5, TxApodization::None, 0.0, true},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::ElementOuter, Window::Hann, 1.5,
       TxApodization::None, 0.0, true},
      {Model::PlaneWave, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::TransmitBlocked, Window::Hann,
       1.5, TxApodization::None, 0.0, true},
      {Model::SyntheticAperture, das::TimeZero::FirstElement, Interp::Linear, DasCudaKernel::PixelPerThread,
       Window::Tukey, 1.0, TxApodization::None, 0.0, true}};
  return all;
}

TEST(ReconDasCudaProgram, KernelProgramsOnTheHostAgreeWithTheCpuAndTheReference) {
  for (const Case& k : cases()) {
    const DasProblem p = problem_of(k);
    const g::Plan plan = g::make_plan(p, k.kernel);
    ASSERT_EQ(plan.kernel, k.kernel);
    ASSERT_NE(plan.params.nz % plan.block_depths(), 0) << "the grid should leave the last depth block part-filled";
    const AnalyticData data = simulated(p);
    ASSERT_EQ(data.stride, plan.params.stride);
    ASSERT_EQ(data.i.size(), plan.data_floats);
    const std::vector<std::complex<float>> gpu = run_on_host(plan, data);
    const Image cpu = DasCpuBeamformer(p).beamform(data);
    const Image ref = das_reference(data, p);
    // The same per-sample float arithmetic as the CPU kernels, summed in another order (as the
    // device test holds the kernels to); against the double reference, the CPU kernels' bounds.
    // Nearest interpolation may flip a sample where float rounding straddles a half-sample.
    const bool linear = k.interp == Interp::Linear;
    EXPECT_LE(relative_l2(gpu, cpu.data), linear ? 1e-5 : 1e-3) << describe(k);
    EXPECT_LT(relative_l2(gpu, ref.data), linear ? 1e-4 : 1e-2) << describe(k);
    // Not a vacuous comparison: the image has signal.
    double energy = 0;
    for (const std::complex<float>& v : gpu) energy += std::norm(v);
    EXPECT_GT(energy, 0.0) << describe(k);
  }
}

// More plane waves than one transmit block holds (two full blocks and a part), for every
// plane-wave kernel.
TEST(ReconDasCudaProgram, ManyPlaneWavesFillSeveralTransmitBlocks) {
  DasProblem p = small_problem(Model::PlaneWave);
  p.acquisition.angles.clear();
  for (int k = 0; k < 2 * g::kTransmitBlock + 3; ++k) p.acquisition.angles.push_back((k - 9) * 0.02);
  p.options.window = Window::Hann;
  const AnalyticData data = simulated(p);
  const Image cpu = DasCpuBeamformer(p).beamform(data);
  for (DasCudaKernel kernel : {DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter, DasCudaKernel::TransmitBlocked}) {
    const std::vector<std::complex<float>> gpu = run_on_host(g::make_plan(p, kernel), data);
    EXPECT_LE(relative_l2(gpu, cpu.data), 1e-5) << to_string(kernel);
  }
}

// The transmit-blocked program runs the last block through a template instance of its size
// (1 to 7, none when the blocks are full): every size, alone and after a full block.
TEST(ReconDasCudaProgram, TransmitBlockedTakesEveryLastBlockSize) {
  static_assert(g::kTransmitBlock == 8);
  for (const int transmits : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 15, 16}) {
    DasProblem p = small_problem(Model::PlaneWave);
    p.acquisition.angles.clear();
    for (int k = 0; k < transmits; ++k) p.acquisition.angles.push_back((k - transmits / 2) * 0.03);
    const AnalyticData data = simulated(p);
    const Image cpu = DasCpuBeamformer(p).beamform(data);
    const std::vector<std::complex<float>> gpu = run_on_host(g::make_plan(p, DasCudaKernel::TransmitBlocked), data);
    EXPECT_LE(relative_l2(gpu, cpu.data), 1e-5) << transmits << " transmits";
  }
}

// Transmit-blocked launches of whole transmit blocks each, adding to the image the launch before
// left, compute the single launch's sums in its order: the same image bit for bit, whatever the
// split (and the last launch may hold a part block).
TEST(ReconDasCudaProgram, TransmitBlockedSplitOverLaunchesIsTheOneLaunchBitForBit) {
  DasProblem p = small_problem(Model::PlaneWave);
  p.acquisition.angles.clear();
  for (int k = 0; k < 3 * g::kTransmitBlock + 5; ++k) p.acquisition.angles.push_back((k - 14) * 0.015);
  const AnalyticData data = simulated(p);
  for (const bool linear : {true, false}) {
    p.options.interp = linear ? Interp::Linear : Interp::Nearest;
    const g::Plan one = g::make_plan(p, DasCudaKernel::TransmitBlocked, 0, {.transmits_per_launch = 0});
    ASSERT_EQ(one.launches(), 1);
    const std::vector<std::complex<float>> single = run_on_host(one, data);
    for (const int per_launch : {8, 16, 24}) {
      const g::Plan split = g::make_plan(p, DasCudaKernel::TransmitBlocked, 0, {.transmits_per_launch = per_launch});
      ASSERT_EQ(split.transmits_per_launch, per_launch);
      ASSERT_EQ(split.launches(), (29 + per_launch - 1) / per_launch);
      const std::vector<std::complex<float>> image = run_on_host(split, data);
      std::size_t differing = 0;
      for (std::size_t k = 0; k < image.size(); ++k) differing += image[k] != single[k];
      EXPECT_EQ(differing, 0u) << per_launch << " transmits a launch, linear " << linear;
    }
  }
  // As many transmits a launch as there are, or more: one launch.
  EXPECT_EQ(g::make_plan(p, DasCudaKernel::TransmitBlocked, 0, {.transmits_per_launch = 32}).launches(), 1);
  // Whole blocks only; the other kernels run in one launch whatever is asked.
  for (const int bad : {-2, 1, 7, 12})
    EXPECT_THROW((void)g::make_plan(p, DasCudaKernel::TransmitBlocked, 0, {.transmits_per_launch = bad}), Error) << bad;
  EXPECT_EQ(g::make_plan(p, DasCudaKernel::ElementOuter, 0, {.transmits_per_launch = 8}).launches(), 1);
  EXPECT_EQ(g::make_plan(p, DasCudaKernel::ElementOuter, 0, {.transmits_per_launch = 8}).transmits_per_launch, 0);
}

// Every lateral-lane choice: each warp is 32 / L consecutive depths of L neighbouring columns,
// lateral fastest, each block four such warps stacked in depth; the grid writes every pixel once
// (run_on_host) on a grid whose edges leave blocks part-filled in both directions; and as each
// pixel's program is unchanged, the image is the one-lane image bit for bit, for every kernel.
TEST(ReconDasCudaProgram, LateralLanesPlaceEveryPixelOnceAndKeepTheImageBitForBit) {
  struct Setup {
    Model model;
    DasCudaKernel kernel;
  };
  for (const Setup& setup : {Setup{Model::PlaneWave, DasCudaKernel::TransmitBlocked},
                             Setup{Model::PlaneWave, DasCudaKernel::ElementOuter},
                             Setup{Model::PlaneWave, DasCudaKernel::PixelPerThread},
                             Setup{Model::DivergingWave, DasCudaKernel::PixelPerThread}}) {
    DasProblem p = small_problem(setup.model);
    p.grid.nx = 77;  // odd: the last block row is part-filled at every L > 1
    ASSERT_EQ(p.grid.nz % 2, 1);
    const AnalyticData data = simulated(p);
    const std::vector<std::complex<float>> one_lane = run_on_host(g::make_plan(p, setup.kernel), data);
    for (const int lanes : g::kLateralLaneChoices) {
      const std::string what = to_string(setup.model) + " " + to_string(setup.kernel) + " L " + std::to_string(lanes);
      const g::Plan plan = g::make_plan(p, setup.kernel, 0, {.lateral_lanes = lanes});
      ASSERT_EQ(plan.lateral_lanes(), lanes) << what;
      ASSERT_EQ(plan.block_depths() * lanes, g::kBlockThreads) << what;
      EXPECT_EQ(plan.grid_x, unsigned((p.grid.nz + plan.block_depths() - 1) / plan.block_depths())) << what;
      EXPECT_EQ(plan.grid_y, unsigned((p.grid.nx + lanes - 1) / lanes)) << what;
      for (const unsigned bx : {0u, plan.grid_x - 1})
        for (const unsigned by : {0u, plan.grid_y / 2, plan.grid_y - 1})
          for (int warp = 0; warp < g::kBlockThreads / 32; ++warp) {
            int min_ix = INT32_MAX, max_ix = INT32_MIN, min_iz = INT32_MAX, max_iz = INT32_MIN;
            for (int lane = 0; lane < 32; ++lane) {
              int ix, iz;
              float x, z;
              (void)g::thread_pixel(plan.params, bx, by, unsigned(warp * 32 + lane), ix, iz, x, z);
              min_ix = std::min(min_ix, ix), max_ix = std::max(max_ix, ix);
              min_iz = std::min(min_iz, iz), max_iz = std::max(max_iz, iz);
              EXPECT_EQ(ix - min_ix, lane % lanes) << what << ": lateral fastest";
              EXPECT_EQ(iz - min_iz, lane / lanes) << what;
            }
            EXPECT_EQ(max_ix - min_ix + 1, lanes) << what;
            EXPECT_EQ(max_iz - min_iz + 1, 32 / lanes) << what;
            EXPECT_EQ(min_ix, int(by) * lanes) << what;
            EXPECT_EQ(min_iz, int(bx) * plan.block_depths() + warp * (32 / lanes)) << what << ": warps stacked in depth";
          }
      const std::vector<std::complex<float>> image = run_on_host(plan, data);
      std::size_t differing = 0;
      for (std::size_t k = 0; k < image.size(); ++k) differing += image[k] != one_lane[k];
      EXPECT_EQ(differing, 0u) << what;
    }
  }
  // Anything else is refused, device or not; a scanline plan keeps one lane (each column takes
  // its own transmit: a warp over several columns would run theirs one after another).
  for (const int bad : {-1, 0, 3, 6, 64})
    EXPECT_THROW((void)g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto, 0, {.lateral_lanes = bad}),
                 Error)
        << bad;
  DasProblem scanline = small_problem(Model::FocusedWave);
  scanline.options.tx_apodization = TxApodization::Scanline;
  EXPECT_EQ(g::make_plan(scanline, DasCudaKernel::Auto, 0, {.lateral_lanes = 8}).lateral_lanes(), 1);
  EXPECT_EQ(g::make_plan(scanline, DasCudaKernel::Auto, 0, {.lateral_lanes = 8}).params.lateral_shift, 0);
  EXPECT_EQ(g::make_plan(small_problem(Model::FocusedWave), DasCudaKernel::Auto, 0, {.lateral_lanes = 8}).lateral_lanes(),
            8);
}

TEST(ReconDasCudaProgram, TransmitBlockedLaunchSizeFollowsTheL2Cache) {
  constexpr std::size_t kMiB = std::size_t(1) << 20;
  // PICMUS's size on a 50 MiB L2: 75 transmits, 260 MB; 0.6 x 50 MiB holds 9 transmits: 1 block.
  EXPECT_EQ(g::transmit_blocked_launch_size(260'000'000, 75, 50 * kMiB), 8);
  // On a 100 MiB cache, 18 transmits fit: 2 blocks.
  EXPECT_EQ(g::transmit_blocked_launch_size(260'000'000, 75, 100 * kMiB), 16);
  // Within 1.25 times the cache, or its size unknown: one launch.
  EXPECT_EQ(g::transmit_blocked_launch_size(62 * kMiB, 16, 50 * kMiB), 0);
  EXPECT_EQ(g::transmit_blocked_launch_size(260'000'000, 75, 0), 0);
  // At least one block, even when one transmit alone outgrows the cache.
  EXPECT_EQ(g::transmit_blocked_launch_size(1000 * kMiB, 10, 50 * kMiB), 8);
  // Never more than the transmits there are.
  EXPECT_EQ(g::transmit_blocked_launch_size(1000 * kMiB, 8, 50 * kMiB), 0);
  // make_plan takes it for the transmit-blocked kernel when asked (-1) and the cache is known.
  DasProblem p = small_problem(Model::PlaneWave);
  p.acquisition.angles.assign(20, 0.0);
  const g::Plan whole = g::make_plan(p, DasCudaKernel::TransmitBlocked);
  const std::size_t per_transmit = whole.interleaved_bytes() / 20;
  const g::Plan split = g::make_plan(p, DasCudaKernel::TransmitBlocked, per_transmit * 14);  // 0.6 x: 8 transmits
  EXPECT_EQ(whole.launches(), 1);
  EXPECT_EQ(split.transmits_per_launch, 8);
  EXPECT_EQ(split.launches(), 3);
}

TEST(ReconDasCudaProgram, PlanPicksTheKernelAndRefusesWhatALaunchCannotDo) {
  EXPECT_EQ(g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto).kernel, DasCudaKernel::TransmitBlocked);
  // Auto for plane waves follows the data's size against the L2 cache: up to 1.25 times it.
  const g::Plan small = g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto);
  const std::size_t bytes = small.interleaved_bytes();
  EXPECT_EQ(bytes, 2 * sizeof(float) * small.data_floats);
  ASSERT_GT(bytes, 100u);  // so that bytes * 4 / 5 - 8 below is a smaller cache, not a wrapped one
  EXPECT_EQ(g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto, bytes).kernel,
            DasCudaKernel::TransmitBlocked);
  EXPECT_EQ(g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto, bytes * 4 / 5 - 8).kernel,
            DasCudaKernel::ElementOuter);
  EXPECT_EQ(g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto, bytes / 2).kernel,
            DasCudaKernel::ElementOuter);
  EXPECT_EQ(g::plane_wave_kernel(65 << 20, 52 << 20), DasCudaKernel::TransmitBlocked);  // 65 <= 1.25 * 52
  EXPECT_EQ(g::plane_wave_kernel(66 << 20, 52 << 20), DasCudaKernel::ElementOuter);
  EXPECT_EQ(g::plane_wave_kernel(std::size_t(1) << 40, 0), DasCudaKernel::TransmitBlocked);  // L2 unknown
  // Named kernels are kept whatever the cache.
  EXPECT_EQ(g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::TransmitBlocked, 1).kernel,
            DasCudaKernel::TransmitBlocked);
  for (Model m : {Model::SyntheticAperture, Model::DivergingWave, Model::FocusedWave}) {
    EXPECT_EQ(g::make_plan(small_problem(m), DasCudaKernel::Auto).kernel, DasCudaKernel::PixelPerThread);
    EXPECT_THROW(g::make_plan(small_problem(m), DasCudaKernel::ElementOuter), Error) << to_string(m);
    EXPECT_THROW(g::make_plan(small_problem(m), DasCudaKernel::TransmitBlocked), Error) << to_string(m);
  }
  // One block row a column at one lateral lane (gridDim.y <= 65535); L columns a row at L lanes.
  DasProblem wide = small_problem(Model::PlaneWave);
  wide.grid.nx = g::kMaxBlockRows;
  EXPECT_EQ(g::make_plan(wide, DasCudaKernel::Auto).grid_y, unsigned(g::kMaxBlockRows));
  wide.grid.nx = g::kMaxBlockRows + 1;
  EXPECT_THROW(g::make_plan(wide, DasCudaKernel::Auto), Error);
  EXPECT_EQ(g::make_plan(wide, DasCudaKernel::Auto, 0, {.lateral_lanes = 2}).grid_y, unsigned(g::kMaxBlockRows / 2 + 1));
  DasProblem invalid = small_problem(Model::PlaneWave);
  invalid.options.fnumber = -1;
  EXPECT_THROW(g::make_plan(invalid, DasCudaKernel::Auto), Error);
  // The programs' 32-bit sample index: up to 2^31 - 1 values per I/Q array with one transmit
  // to spare (element-outer forms the index after its last transmit's), and no further.
  DasProblem big = small_problem(Model::PlaneWave);
  big.samples = 16384;  // 32 elements x 16448 padded samples a transmit
  big.acquisition.angles.assign(4079, 0.0);  // (4079 + 1) x 32 x 16448 = 2 147 450 880 values
  for (DasCudaKernel k : {DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter, DasCudaKernel::TransmitBlocked})
    EXPECT_NO_THROW((void)g::make_plan(big, k)) << to_string(k);
  big.acquisition.angles.assign(4080, 0.0);  // (4080 + 1) x 32 x 16448 = 2 147 977 216 > 2^31 - 1
  DasProblem long_channels = small_problem(Model::PlaneWave);  // positions are clamped in float
  long_channels.samples = (1 << 24) + 1;
  for (DasCudaKernel k : {DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter, DasCudaKernel::TransmitBlocked}) {
    try {
      (void)g::make_plan(big, k);
      ADD_FAILURE() << to_string(k) << ": a plan past the 32-bit sample index";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("32-bit sample index"), std::string::npos) << e.what();
    }
    try {
      (void)g::make_plan(long_channels, k);
      ADD_FAILURE() << to_string(k) << ": a plan of channels longer than 2^24 samples";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("(2^24)"), std::string::npos) << e.what();
    }
  }

  // The beamformer plans before it looks for a device: an invalid job is the job's error (not
  // "no CUDA"), with or without a GPU.
  for (const DasProblem& bad : {invalid, wide}) {
    try {
      DasCudaBeamformer beamformer(bad);
      ADD_FAILURE() << "an invalid problem was accepted";
    } catch (const CudaUnavailable& e) {
      ADD_FAILURE() << "the device was looked for before the problem: " << e.what();
    } catch (const Error&) {
    }
  }
}

TEST(ReconDasCudaProgram, PlanTablesHoldEachModelsTransmits) {
  const g::Plan pw = g::make_plan(small_problem(Model::PlaneWave), DasCudaKernel::Auto);
  EXPECT_EQ(pw.tables.cos_a.size(), 3u);
  EXPECT_EQ(pw.tables.sin_a.size(), 3u);
  EXPECT_EQ(pw.tables.x_reference.size(), 3u);
  EXPECT_TRUE(pw.tables.src_x.empty());
  EXPECT_TRUE(pw.tables.column_transmit.empty());
  EXPECT_EQ(pw.interleave_blocks * std::size_t(g::kInterleaveThreads) >= pw.data_floats, true);
  EXPECT_LT((pw.interleave_blocks - 1) * std::size_t(g::kInterleaveThreads), pw.data_floats);

  const g::Plan sa = g::make_plan(small_problem(Model::SyntheticAperture), DasCudaKernel::Auto);
  ASSERT_EQ(sa.tables.tx_element.size(), 32u);  // full matrix capture: every element fires, in order
  for (int e = 0; e < 32; ++e) EXPECT_EQ(sa.tables.tx_element[std::size_t(e)], e);
  EXPECT_EQ(sa.params.transmits, 32);

  DasProblem fw = small_problem(Model::FocusedWave);
  fw.options.tx_apodization = TxApodization::Scanline;
  const g::Plan lines = g::make_plan(fw, DasCudaKernel::Auto);
  EXPECT_EQ(lines.tables.column_transmit, fw.column_transmits());
  EXPECT_EQ(lines.tables.column_transmit.size(), std::size_t(fw.grid.nx));
  EXPECT_EQ(lines.tables.src_x.size(), 3u);
  EXPECT_EQ(lines.tables.src_waist.size(), 3u);
  EXPECT_EQ(lines.params.model, g::kVirtualSource);
  EXPECT_EQ(lines.params.stride, AnalyticData::zeros(fw.samples, 1, 1).stride);
  EXPECT_EQ(lines.params.stride % 16, 0);
}

TEST(ReconDasCuda, AgreesWithTheCpuWhenADeviceIsThere) {
  for (const Case& k : cases()) {
    const DasProblem p = problem_of(k);
    std::unique_ptr<DasCudaBeamformer> gpu;
    try {
      gpu = std::make_unique<DasCudaBeamformer>(p, k.kernel);
    } catch (const CudaUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
    EXPECT_EQ(gpu->kernel(), k.kernel);
    const AnalyticData data = simulated(p);
    const Image cpu = DasCpuBeamformer(p).beamform(data);
    std::vector<std::complex<float>> out(p.grid.pixels());
    gpu->beamform(data, out.data());
    // Linear: the same per-sample float arithmetic, summed in another order. Nearest may flip a
    // sample where float rounding straddles a half-sample (see ReconDasCpu).
    EXPECT_LE(relative_l2(out, cpu.data), k.interp == Interp::Linear ? 1e-5 : 1e-3) << describe(k);
    // And what the device computed is what its program computes on the host, to float rounding
    // (the device's sqrtf/floorf are IEEE-exact, like the host's; the only fused multiply-adds
    // are the programs' explicit hd_fma, which the host computes exactly as the device does).
    EXPECT_LE(relative_l2(out, run_on_host(g::make_plan(p, k.kernel), data)), 1e-6) << describe(k);
  }
  // Auto picks the transmit-blocked kernel for plane waves; the plane-wave kernels refuse the
  // other models.
  try {
    EXPECT_EQ(DasCudaBeamformer(small_problem(Model::PlaneWave)).kernel(), DasCudaKernel::TransmitBlocked);
    EXPECT_THROW(DasCudaBeamformer(small_problem(Model::SyntheticAperture), DasCudaKernel::ElementOuter), Error);
    EXPECT_EQ(DasCudaBeamformer(small_problem(Model::DivergingWave)).kernel(), DasCudaKernel::PixelPerThread);
    EXPECT_THROW(DasCudaBeamformer(small_problem(Model::DivergingWave), DasCudaKernel::ElementOuter), Error);
    EXPECT_EQ(DasCudaBeamformer(small_problem(Model::FocusedWave)).kernel(), DasCudaKernel::PixelPerThread);
    EXPECT_THROW(DasCudaBeamformer(small_problem(Model::FocusedWave), DasCudaKernel::ElementOuter), Error);
    EXPECT_THROW(DasCudaBeamformer(small_problem(Model::FocusedWave), DasCudaKernel::TransmitBlocked), Error);
    // Data whose zero padding holds a value are refused before the kernels (which read the
    // padding unchecked) see them.
    DasCudaBeamformer plane_wave(small_problem(Model::PlaneWave));
    AnalyticData poked = simulated(small_problem(Model::PlaneWave));
    poked.q[poked.q.size() - 1] = 1.f;
    std::vector<std::complex<float>> out(small_problem(Model::PlaneWave).grid.pixels());
    try {
      plane_wave.beamform(poked, out.data());
      ADD_FAILURE() << "non-zero padding was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("zero padding"), std::string::npos) << e.what();
    }
  } catch (const CudaUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
}

// On the device too, each lateral-lane choice computes every pixel's program unchanged: the
// one-lane image bit for bit, for each plane-wave kernel (and pixel-per-thread on diverging waves).
TEST(ReconDasCuda, LateralLanesGiveTheOneLaneImageBitForBit) {
  const std::pair<Model, DasCudaKernel> setups[] = {{Model::PlaneWave, DasCudaKernel::TransmitBlocked},
                                                    {Model::PlaneWave, DasCudaKernel::ElementOuter},
                                                    {Model::DivergingWave, DasCudaKernel::PixelPerThread}};
  for (const auto& [model, kernel] : setups) {
    DasProblem p = small_problem(model);
    p.grid.nx = 77;  // part-filled block rows at every L > 1
    const AnalyticData data = simulated(p);
    std::vector<std::complex<float>> one_lane(p.grid.pixels()), image(p.grid.pixels());
    try {
      DasCudaBeamformer gpu(p, kernel);
      ASSERT_EQ(gpu.lateral_lanes(), 1);
      gpu.beamform(data, one_lane.data());
    } catch (const CudaUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
    for (const int lanes : g::kLateralLaneChoices) {
      DasCudaBeamformer gpu(p, kernel, {.lateral_lanes = lanes});
      EXPECT_EQ(gpu.lateral_lanes(), lanes);
      std::fill(image.begin(), image.end(), std::complex<float>(NAN, NAN));
      gpu.beamform(data, image.data());
      std::size_t differing = 0;
      for (std::size_t k = 0; k < image.size(); ++k) differing += image[k] != one_lane[k];
      EXPECT_EQ(differing, 0u) << to_string(model) << " " << to_string(kernel) << " L " << lanes;
    }
  }
}

}  // namespace
}  // namespace usrecon::recon
