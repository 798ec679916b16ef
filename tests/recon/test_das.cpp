// General DAS: the optimised CPU kernels against the plain reference loop, and the delay math.
// (The CUDA backend's tests are in test_das_cuda.cpp.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/das_simulate.hpp"
#include "das_test_problems.hpp"
#include "kernels_left_out.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"

namespace usrecon::recon {
namespace {

using test::simulated;
using test::small_problem;

// The message of the usrecon::Error that f() throws; "" when it throws none.
template <class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

template <class F>
bool message_contains(F f, const std::string& words) {
  return message_of(f).find(words) != std::string::npos;
}

std::string kernels_this_cpu_cannot_run() {
  std::string left_out;
  for (DasCpuKernel kernel : {DasCpuKernel::Avx512, DasCpuKernel::Avx2})
    if (!das_cpu_supports(kernel)) left_out += (left_out.empty() ? "" : " and ") + to_string(kernel);
  return left_out;
}

struct Variant {
  Model model;
  Window window;
  Interp interp;
  double fnumber;
  das::TimeZero time_zero = das::TimeZero::FirstElement;
  TxApodization tx_apodization = TxApodization::None;
  double tx_fnumber = 0.0;
  // The grid starts 2 mm above the array (z < 0), where a vector's sample positions fall and
  // rise again with depth: the kernels' non-monotone path (smallest and largest index); its
  // depths are 0.25 mm apart, so that a vector's positions also span more than a window (the
  // gather).
  bool above_array = false;
};

class ReconDasCpu : public ::testing::TestWithParam<Variant> {};

TEST_P(ReconDasCpu, KernelsAgreeWithTheReferenceLoop) {
  const Variant v = GetParam();
  DasProblem p =
      test::configured_problem(v.model, v.time_zero, v.window, v.interp, v.fnumber, v.tx_apodization, v.tx_fnumber);
  if (v.above_array) p.grid = Grid::from_ranges(-4.0123e-3, 4e-3, 0.1013e-3, -2.0071e-3, 25e-3, 0.2517e-3);
  const AnalyticData data = simulated(p);
  const Image ref = das_reference(data, p);
  std::vector<Image> vector_images;  // AVX-512's and AVX2's
  for (DasCpuKernel kernel : {DasCpuKernel::Scalar, DasCpuKernel::Avx512, DasCpuKernel::Avx2, DasCpuKernel::Auto}) {
    if (!das_cpu_supports(kernel)) continue;
    const Image fast = DasCpuBeamformer(p, 2, kernel).beamform(data);
    if (kernel == DasCpuKernel::Avx512 || kernel == DasCpuKernel::Avx2) vector_images.push_back(fast);
    // Single against double precision: sample positions differ by ~1e-4 samples. Linear
    // interpolation is continuous in the position, so the images agree to ~3e-5; nearest
    // interpolation flips to the neighbouring sample for the rare positions that close to a
    // half-sample, so it is held to a looser bound.
    const double tolerance = v.interp == Interp::Linear ? 1e-4 : 1e-2;
    EXPECT_LT(relative_l2(fast.data, ref.data), tolerance) << to_string(kernel);
  }
  // The two vector kernels are one source (das_vector_kernel.inc) on 16 and 8 lanes: each lane
  // does the same operations in the same order (divisions and square roots are correctly
  // rounded, a permuted window and a gather fetch the same samples), so their images are the
  // same bit for bit.
  if (vector_images.size() == 2) {
    EXPECT_EQ(std::memcmp(vector_images[0].data.data(), vector_images[1].data.data(),
                          vector_images[0].data.size() * sizeof(std::complex<float>)),
              0);
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

// A grid through the apertures' edges, as real ones are: x on the element positions, steps of
// pitch / 2, rect windows. Pixels sit exactly on an edge, where the reference (in double) and
// the kernels (in float) disagreed about whole elements' weights (relative L2 0.006 to 0.04);
// the reference now decides apodization in float as every backend does.
TEST(ReconDasCpuEdges, RectAperturesOnARoundGridAgreeWithTheReference) {
  for (const Model model : {Model::PlaneWave, Model::SyntheticAperture, Model::DivergingWave, Model::FocusedWave}) {
    SCOPED_TRACE(to_string(model));
    DasProblem p = small_problem(model);
    p.grid = Grid::from_ranges(-4.65e-3, 4.65e-3, 0.15e-3, 0.0, 24e-3, 0.15e-3);
    p.options.window = Window::Rect;
    p.options.fnumber = 1.0;
    if (model == Model::FocusedWave || model == Model::DivergingWave) p.options.tx_fnumber = 1.0;
    const AnalyticData data = simulated(p);
    const Image ref = das_reference(data, p);
    for (DasCpuKernel kernel : {DasCpuKernel::Scalar, DasCpuKernel::Avx512, DasCpuKernel::Avx2}) {
      if (!das_cpu_supports(kernel)) continue;
      EXPECT_LT(relative_l2(DasCpuBeamformer(p, 2, kernel).beamform(data).data, ref.data), 1e-4)
          << to_string(kernel);
    }
  }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

// The vector kernels against the scalar one (the USRECON_HD functions one position at a time) on
// white noise in short channels, with sample positions before the first sample and past the last
// (the zero padding and the clamps): the simulated problems above keep every echo inside the
// record, so a kernel reading past a channel's ends the wrong way passed them (a review's
// mutants). The kernels differ from the scalar one only by float rounding (measured: under 1e-7).
TEST(ReconDasCpuEdges, VectorKernelsMatchTheScalarOnePastTheChannelEnds) {
  std::mt19937 rng(23);
  std::normal_distribution<float> noise(0.f, 1.f);
  for (const Model model : {Model::PlaneWave, Model::SyntheticAperture, Model::DivergingWave, Model::FocusedWave})
    for (const Interp interp : {Interp::Linear, Interp::Nearest})
      for (const int nz : {1, 7, 15, 16, 17, 255, 257}) {
        SCOPED_TRACE(to_string(model) + " " + to_string(interp) + " nz " + std::to_string(nz));
        DasProblem p = small_problem(model);
        p.samples = 120;
        p.acquisition.t0 = 4e-6;  // sample 0 at about 3 mm: the rows above it read before the record
        p.options.interp = interp;
        // The short grids lie wholly above the array, where an F-number leaves no aperture (an
        // image of zeros): they keep the full aperture. The long ones reach 13 mm with an
        // F-number (a window continuous at its edge) and check its cut-off at z <= 0.
        p.options.fnumber = nz < 255 ? 0.0 : 1.5;
        p.options.window = Window::Hann;
        // From above the array to well past the last sample's depth (about 7.6 mm).
        p.grid = Grid::from_ranges(-4e-3, 4e-3, 1e-3, -1e-3, -1e-3 + (nz - 1) * (14e-3 / 256), 14e-3 / 256);
        ASSERT_EQ(p.grid.nz, nz);
        AnalyticData data = AnalyticData::zeros(p.samples, 32, p.acquisition.transmits());
        for (int t = 0; t < data.transmits; ++t)
          for (int e = 0; e < data.elements; ++e)
            for (int k = 0; k < data.samples; ++k) {
              const std::size_t at = (std::size_t(t) * data.elements + e) * data.stride + AnalyticData::kFront + k;
              data.i[at] = noise(rng);
              data.q[at] = noise(rng);
            }
        const Image scalar = DasCpuBeamformer(p, 2, DasCpuKernel::Scalar).beamform(data);
        for (DasCpuKernel kernel : {DasCpuKernel::Avx512, DasCpuKernel::Avx2}) {
          if (!das_cpu_supports(kernel)) continue;
          EXPECT_LT(relative_l2(DasCpuBeamformer(p, 2, kernel).beamform(data).data, scalar.data), 1e-6)
              << to_string(kernel);
        }
      }
  SKIP_IF_KERNELS_WERE_LEFT_OUT(kernels_this_cpu_cannot_run());
}

// F-numbers float cannot hold with room are refused: 1e-50 is 0 in float (the full aperture, and
// the rows above the array lit), 1e39 infinite (an empty image).
TEST(ReconDasCpuEdges, FNumbersOutsideFloatsRoomAreRefused) {
  // The range said is the CLI's (--fnumber and --tx-fnumber take 0 to 100).
  for (const double f : {1e-50, 1e-4, 100.5, 1e4, 1e39}) {
    DasProblem p = small_problem(Model::DivergingWave);
    p.options.fnumber = f;
    EXPECT_TRUE(message_contains([&] { p.validate(); }, "--fnumber must be 0 (the full aperture) or between 1e-3 and 100"))
        << f;
    p.options.fnumber = 1.5;
    p.options.tx_fnumber = f;
    EXPECT_TRUE(message_contains([&] { p.validate(); }, "--tx-fnumber must be 0 or between 1e-3 and 100")) << f;
  }
  DasProblem p = small_problem(Model::DivergingWave);
  p.options.fnumber = 1e-3;
  p.options.tx_fnumber = 100;
  EXPECT_NO_THROW(p.validate());
}

// NaN F-numbers and a Tukey alpha outside (0, 1] are the library's to refuse: the CLI now refuses
// them where it reads its options, so no CLI test reaches these checks any more.
TEST(ReconDasCpuEdges, NanFNumbersAndATukeyAlphaOutsideItsRangeAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  DasProblem p = small_problem(Model::DivergingWave);
  p.options.fnumber = nan;
  EXPECT_TRUE(message_contains([&] { p.validate(); }, "--fnumber must be a finite number >= 0"));
  p.options.fnumber = 1.5;
  p.options.tx_fnumber = nan;
  EXPECT_TRUE(message_contains([&] { p.validate(); }, "--tx-fnumber must be a finite number >= 0"));
  p.options.tx_fnumber = 0;
  for (const double alpha : {nan, 0.0, -0.5, 1.5}) {
    p.options.tukey_alpha = alpha;
    EXPECT_TRUE(message_contains([&] { p.validate(); }, "the Tukey alpha must be in (0, 1]")) << alpha;
  }
  p.options.tukey_alpha = 1.0;
  EXPECT_NO_THROW(p.validate());
}

INSTANTIATE_TEST_SUITE_P(
    ReconDas, ReconDasCpu,
    ::testing::Values(Variant{Model::PlaneWave, Window::Rect, Interp::Linear, 1.5},
                      Variant{Model::PlaneWave, Window::Hann, Interp::Linear, 1.0},
                      Variant{Model::PlaneWave, Window::Tukey, Interp::Nearest, 2.0},
                      Variant{Model::PlaneWave, Window::Rect, Interp::Linear, 0.0},
                      Variant{Model::PlaneWave, Window::Hann, Interp::Linear, 1.5, das::TimeZero::Center},
                      Variant{Model::SyntheticAperture, Window::Rect, Interp::Linear, 1.5},
                      Variant{Model::SyntheticAperture, Window::Hann, Interp::Nearest, 0.0},
                      Variant{Model::DivergingWave, Window::Rect, Interp::Linear, 1.5},
                      Variant{Model::DivergingWave, Window::Tukey, Interp::Nearest, 0.0},
                      Variant{Model::DivergingWave, Window::Hann, Interp::Linear, 1.0, das::TimeZero::Center},
                      Variant{Model::FocusedWave, Window::Rect, Interp::Linear, 1.5},
                      Variant{Model::FocusedWave, Window::Tukey, Interp::Nearest, 0.0},
                      Variant{Model::FocusedWave, Window::Hann, Interp::Linear, 1.0, das::TimeZero::Center},
                      Variant{Model::FocusedWave, Window::Rect, Interp::Linear, 1.5, das::TimeZero::FirstElement,
                              TxApodization::Scanline},
                      Variant{Model::FocusedWave, Window::Hann, Interp::Linear, 1.5, das::TimeZero::FirstElement,
                              TxApodization::None, 1.0},
                      // A continuous window: a rect cone's edge would flip pixels where float and
                      // double round differently.
                      Variant{Model::DivergingWave, Window::Tukey, Interp::Linear, 1.0, das::TimeZero::Center,
                              TxApodization::None, 0.5},
                      Variant{Model::PlaneWave, Window::Rect, Interp::Linear, 0.0, das::TimeZero::FirstElement,
                              TxApodization::None, 0.0, true},
                      Variant{Model::SyntheticAperture, Window::Rect, Interp::Nearest, 0.0,
                              das::TimeZero::FirstElement, TxApodization::None, 0.0, true},
                      // With an F-number, the rows above the array have no aperture (README): the
                      // vector kernels decide this themselves, apart from receive_apodization.
                      Variant{Model::PlaneWave, Window::Hann, Interp::Linear, 1.5, das::TimeZero::FirstElement,
                              TxApodization::None, 0.0, true},
                      Variant{Model::DivergingWave, Window::Tukey, Interp::Linear, 1.0, das::TimeZero::Center,
                              TxApodization::None, 0.0, true}),
    [](const ::testing::TestParamInfo<Variant>& info) {
      return to_string(info.param.model) + "_" + to_string(info.param.window) + "_" +
             to_string(info.param.interp) + "_F" + std::to_string(int(info.param.fnumber * 10)) +
             (info.param.time_zero == das::TimeZero::Center ? "_center" : "") +
             (info.param.tx_apodization == TxApodization::Scanline ? "_scanline" : "") +
             (info.param.tx_fnumber > 0 ? "_txF" + std::to_string(int(info.param.tx_fnumber * 10)) : "") +
             (info.param.above_array ? "_above" : "");
    });

// The beamformers refuse data whose storage is not AnalyticData's layout, before any kernel
// reads it: the AVX-512 (and CUDA) kernels read the zero padding around each channel in place of
// bounds checks, so a value there, a wrong stride or short storage would change or overrun them.
TEST(ReconDasCpu, RefusesDataOutsideTheLayoutOrWithNonZeroPadding) {
  const DasProblem p = small_problem(Model::PlaneWave);
  const AnalyticData good = simulated(p);
  ASSERT_NO_THROW(good.check_layout("test"));
  const DasCpuBeamformer beamformer(p, 1);
  std::vector<std::complex<float>> out(p.grid.pixels());
  ASSERT_NO_THROW(beamformer.beamform(good, out.data()));
  const auto refusal = [&](const AnalyticData& bad) -> std::string {
    try {
      beamformer.beamform(bad, out.data());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::size_t last_channel = (std::size_t(good.transmits) * good.elements - 1) * good.stride;
  // One float of padding at a time: before the first channel, just after a channel's last sample,
  // at the very end of the storage, in Q; -0.0f and NaN count, as they would show in an image.
  const struct {
    bool in_q;
    std::size_t at;
    float value;
  } pokes[] = {{false, 0, 1.f},
               {false, std::size_t(AnalyticData::kFront) - 1, -0.f},
               {false, std::size_t(AnalyticData::kFront + good.samples), 3.f},
               {true, std::size_t(good.stride) + AnalyticData::kFront + good.samples,
                std::numeric_limits<float>::quiet_NaN()},
               {true, last_channel + good.stride - 1, 2.f}};
  for (const auto& poke : pokes) {
    AnalyticData bad = good;
    (poke.in_q ? bad.q : bad.i)[poke.at] = poke.value;
    const std::string why = refusal(bad);
    EXPECT_NE(why.find("zero padding"), std::string::npos) << "at " << poke.at << ": " << why;
  }
  {  // the channel's own first and last samples may hold anything
    AnalyticData edges = good;
    edges.i[AnalyticData::kFront] = 5.f;
    edges.q[last_channel + AnalyticData::kFront + good.samples - 1] = -5.f;
    EXPECT_EQ(refusal(edges), "");
  }
  {
    AnalyticData bad = good;
    bad.stride += 16;
    EXPECT_NE(refusal(bad).find("layout"), std::string::npos);
  }
  {
    AnalyticData bad = good;
    bad.q.pop_back();
    EXPECT_NE(refusal(bad).find("layout"), std::string::npos);
  }
  // Sizes that no layout has (before stride_for could overflow).
  for (const int samples : {0, std::numeric_limits<int>::max() - 10}) {
    AnalyticData bad = good;
    bad.samples = samples;
    EXPECT_THROW(bad.check_layout("test"), Error) << samples;
  }
}

TEST(ReconDasDelay, PlaneWaveFiresFromTheFirstElement) {
  // angle > 0: element 0 (x_min) fires first; the wavefront reaches x_first at z = 0 at time 0.
  EXPECT_DOUBLE_EQ(das::planewave_x_first(0.1, -1.0, 1.0), -1.0);
  EXPECT_DOUBLE_EQ(das::planewave_x_first(-0.1, -1.0, 1.0), 1.0);
  const double a = 0.1;
  EXPECT_NEAR(das::planewave_transmit_distance(-1.0, 0.0, std::cos(a), std::sin(a), -1.0), 0.0, 1e-15);
  // A pixel straight below the first element at depth z: transmit path z cos a.
  EXPECT_NEAR(das::planewave_transmit_distance(-1.0, 2.0, std::cos(a), std::sin(a), -1.0), 2.0 * std::cos(a), 1e-15);
  // Two-way sample for a pixel under element xe, angle 0: 2 z fs / c - t0 fs.
  EXPECT_NEAR(das::planewave_sample(0.5, 0.01, 0.5, 1.0, 0.0, -1.0, 20e6 / 1540, 10.0),
              0.02 * 20e6 / 1540 - 10.0, 1e-9);
  EXPECT_NEAR(das::synthetic_aperture_sample(0.0, 0.03, -0.04, 0.0, 1.0, 0.0), 0.05 + 0.03, 1e-15);
}

// An element exactly on the aperture's edge counts, whatever float rounding makes of r, as
// |x - xe| <= z / (2F) says: a grid of half-pitch steps puts many pixels there (here with pitch =
// dz and F = 1.5 a tie is 3 |i - 2e| = 2 j, decided in integers), and float r kept some of them
// and dropped others (2 to 8 % of a rect image against a double reference). Every other element
// is in or out as the integers say: the nearest non-tie is 1 / (2 j) of the aperture away.
TEST(ReconDasDelay, ElementsOnTheApertureEdgeCount) {
  const double pitch = 0.3e-3, f = 1.5;
  int ties = 0, rounded_past_the_edge = 0;
  for (int e = -24; e <= 24; ++e)
    for (int i = -64; i <= 64; ++i)
      for (int j = 1; j <= 140; ++j) {
        const float x = float(i * pitch / 2), z = float(j * pitch), xe = float(e * pitch);
        const int gap = 3 * std::abs(i - 2 * e) - 2 * j;  // < 0 inside, 0 on the edge, > 0 outside
        const float rect = das::receive_apodization(x, z, xe, float(f), das::kRect, 0.5f);
        EXPECT_EQ(rect, gap <= 0 ? 1.0f : 0.0f) << "element " << e << ", x " << i << " half pitches, z " << j;
        if (gap != 0) continue;
        ++ties;
        rounded_past_the_edge += std::fabs(x - xe) / (z / (2.0f * float(f))) > 1.0f;
        // Hann and Tukey weigh the edge 0, in or out.
        EXPECT_EQ(das::receive_apodization(x, z, xe, float(f), das::kHann, 0.5f), 0.0f);
        EXPECT_EQ(das::receive_apodization(x, z, xe, float(f), das::kTukey, 0.5f), 0.0f);
      }
  EXPECT_GT(ties, 1000);
  EXPECT_GT(rounded_past_the_edge, 100) << "no tie that float puts past the edge: the slack is not tested";
}

TEST(ReconDasDelay, ApodizationByFNumber) {
  // Aperture at depth 30 mm with F = 1.5 is 20 mm wide: |x - xe| <= 10 mm.
  EXPECT_EQ(das::receive_apodization(0.0, 0.03, 0.0099, 1.5, das::kRect, 0.5), 1.0);
  EXPECT_EQ(das::receive_apodization(0.0, 0.03, 0.0101, 1.5, das::kRect, 0.5), 0.0);
  EXPECT_EQ(das::receive_apodization(0.0, 0.03, 0.5, 0.0, das::kRect, 0.5), 1.0);
  EXPECT_NEAR(das::receive_apodization(0.0, 0.03, 0.005, 1.5, das::kHann, 0.5), 0.5, 1e-7);
  EXPECT_NEAR(das::receive_apodization(0.0, 0.03, 0.0, 1.5, das::kHann, 0.5), 1.0, 1e-7);
  EXPECT_EQ(das::receive_apodization(0.0, 0.03, 0.004, 1.5, das::kTukey, 0.5), 1.0);
  EXPECT_NEAR(das::receive_apodization(0.0, 0.03, 0.0075, 1.5, das::kTukey, 0.5), 0.5, 1e-7);
  for (double u = 0; u <= 1.0; u += 0.01)
    EXPECT_NEAR(das::hann_taper(u), std::pow(std::cos(std::numbers::pi * u / 2), 2), 1e-7);
  // A pixel on or above the array's line has no aperture with an F-number (README), whatever the
  // window; with F = 0 (the full aperture) it has every element.
  for (const auto window : {das::kRect, das::kHann, das::kTukey}) {
    EXPECT_EQ(das::receive_apodization(0.0, -1e-3, 0.0, 1.5, window, 0.5), 0.0);
    EXPECT_EQ(das::receive_apodization(0.0, 0.0, 0.0, 1.5, window, 0.5), 0.0);
    EXPECT_EQ(das::receive_apodization(0.0, -1e-3, 0.0, 0.0, window, 0.5), 1.0);
  }
}

TEST(ReconDasDelay, InterpolationReadsZerosOffTheEnds) {
  const float ch[3] = {1.f, 3.f, 5.f};
  EXPECT_FLOAT_EQ(das::interp_linear(ch, 3, 0.5f), 2.f);
  EXPECT_FLOAT_EQ(das::interp_linear(ch, 3, -0.5f), 0.5f);
  EXPECT_FLOAT_EQ(das::interp_linear(ch, 3, 2.5f), 2.5f);
  EXPECT_FLOAT_EQ(das::interp_linear(ch, 3, 3.5f), 0.f);
  EXPECT_FLOAT_EQ(das::interp_nearest(ch, 3, 1.49f), 3.f);
  EXPECT_FLOAT_EQ(das::interp_nearest(ch, 3, 1.5f), 5.f);
  EXPECT_FLOAT_EQ(das::interp_nearest(ch, 3, -0.6f), 0.f);
}

TEST(ReconDasDelay, InterleavedPairInterpolationIsTheSingleChannelsOnBothHalves) {
  // The CUDA plane-wave kernel reads I and Q interleaved; its interpolation must give what
  // interp_linear / interp_nearest give on the two channels apart, everywhere, edges included.
  struct Pair {
    float x, y;
  };
  constexpr int n = 7;
  float i[n], q[n];
  Pair iq[n];
  for (int k = 0; k < n; ++k) {
    i[k] = std::sin(1.3f * k) + 0.25f * k;
    q[k] = std::cos(0.7f * k) - 0.5f;
    iq[k] = {i[k], q[k]};
  }
  for (float s = -2.5f; s < n + 1.5f; s += 0.0625f) {
    float x = -1, y = -1;
    das::interp_linear_pair(iq, n, s, x, y);
    EXPECT_EQ(x, das::interp_linear(i, n, s)) << s;
    EXPECT_EQ(y, das::interp_linear(q, n, s)) << s;
    das::interp_nearest_pair(iq, n, s, x, y);
    EXPECT_EQ(x, das::interp_nearest(i, n, s)) << s;
    EXPECT_EQ(y, das::interp_nearest(q, n, s)) << s;
  }
}

TEST(ReconDasDelay, PaddedInterpolationIsTheUnpaddedOneBitForBit) {
  // The GPU programs read channels padded with zeros (AnalyticData) without bounds checks; for
  // every position (out of range, NaN and infinities included) they must give exactly what the
  // checked functions give, sign of zero included, also when the channel's own samples are not
  // finite (a NaN result must be NaN on both). Two channels one after the other, as in
  // AnalyticData, of 1 and of 9 samples.
  struct Pair {
    float x, y;
  };
  constexpr int front = das::kPaddedFront, back = das::kPaddedBack;
  const auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
  };
  for (const int n : {1, 9}) {
    for (const bool finite : {true, false}) {
      const int stride = front + n + back;
      std::vector<float> i(2 * std::size_t(stride)), q(i.size());
      std::vector<Pair> iq(i.size(), Pair{0.f, 0.f});
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < n; ++k) {
          const std::size_t at = std::size_t(c) * stride + front + k;
          i[at] = std::sin(1.3f * k + c) - 0.6f;  // negative values too: 0 * negative is -0
          q[at] = std::cos(0.7f * k - c) - 0.5f;
          if (!finite && k == 0) i[at] = std::numeric_limits<float>::infinity();
          if (!finite && k == n - 1) q[at] = std::numeric_limits<float>::quiet_NaN();
          iq[at] = {i[at], q[at]};
        }
      std::vector<float> positions = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(), -1e30f, 1e30f, -2.0f, -1.5f, -1.0f,
                                      -0.5f, -0.0f, float(n) - 1, std::nextafter(float(n), 0.f), float(n),
                                      float(n) + 0.5f};
      for (float s = -4.f; s < n + 3; s += 0.03125f) positions.push_back(s);
      for (int c = 0; c < 2; ++c) {
        const int channel = c * stride + front;
        const float* ci = i.data() + channel;  // the checked functions' view of the same channel
        const float* cq = q.data() + channel;
        const Pair* ciq = iq.data() + channel;
        for (const float s : positions) {
          const std::string where = "n " + std::to_string(n) + (finite ? "" : " (inf, NaN samples)") +
                                    " channel " + std::to_string(c) + " s " + std::to_string(s);
          EXPECT_TRUE(same(das::interp_linear_padded(i.data(), channel, n, s), das::interp_linear(ci, n, s))) << where;
          EXPECT_TRUE(same(das::interp_nearest_padded(i.data(), channel, n, s), das::interp_nearest(ci, n, s))) << where;
          float x = -1, y = -1, ux = -2, uy = -2;
          das::interp_linear_pair_padded(iq.data(), channel, n, s, x, y);
          das::interp_linear_pair(ciq, n, s, ux, uy);
          EXPECT_TRUE(same(x, ux) && same(y, uy)) << where;
          EXPECT_TRUE(same(x, das::interp_linear(ci, n, s)) && same(y, das::interp_linear(cq, n, s))) << where;
          das::interp_nearest_pair_padded(iq.data(), channel, n, s, x, y);
          das::interp_nearest_pair(ciq, n, s, ux, uy);
          EXPECT_TRUE(same(x, ux) && same(y, uy)) << where;
        }
      }
    }
  }
}

TEST(ReconDasDelay, FusedPairInterpolationIsWithinTwoUlpsAndZeroOutOfRange) {
  // The plane-wave GPU programs blend two samples with one fused multiply-add
  // (interp_linear_pair_padded_fma): out of range it must still give exactly +0 (the padding's
  // zeros), at whole positions exactly the sample, elsewhere the unfused value within two ulps of
  // the samples blended; and it must really be fused, so on these samples it differs from the
  // unfused blend somewhere.
  struct Pair {
    float x, y;
  };
  constexpr int front = das::kPaddedFront, back = das::kPaddedBack, n = 64;
  std::vector<Pair> iq(front + n + back, Pair{0.f, 0.f});
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.f, 1.f);
  for (int k = 0; k < n; ++k) iq[std::size_t(front + k)] = {noise(rng), noise(rng)};
  std::vector<float> positions = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(), -1e30f, 1e30f, -2.5f, -2.0f, float(n),
                                  float(n) + 0.25f};
  std::uniform_real_distribution<float> inside(-1.f, float(n));
  for (int k = 0; k < 4000; ++k) positions.push_back(inside(rng));
  const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
  int differing_x = 0, differing_y = 0;
  for (const float s : positions) {
    float x = -1, y = -1, ux = -2, uy = -2;
    das::interp_linear_pair_padded_fma(iq.data(), front, n, s, x, y);
    das::interp_linear_pair_padded(iq.data(), front, n, s, ux, uy);
    if (!(s >= -1.f && s < float(n))) {  // both samples read are padding (NaN clamps to -2)
      EXPECT_EQ(bits(x), bits(0.f)) << s;
      EXPECT_EQ(bits(y), bits(0.f)) << s;
    }
    if (s == std::floor(s) && s >= 0.f && s < float(n)) {
      EXPECT_EQ(x, iq[std::size_t(front + int(s))].x) << s;
      EXPECT_EQ(y, iq[std::size_t(front + int(s))].y) << s;
    }
    // Rounding the product w (b - a) once less moves the result by at most half an ulp of the
    // product and one of the result, both at most two ulps of the larger of the samples a, b.
    const int k = std::isnan(s) ? -2 : int(std::floor(std::clamp(s, -2.f, float(n))));
    const Pair a = iq[std::size_t(front + k)], b = iq[std::size_t(front + k + 1)];
    for (const auto& [fused, plain, larger, differing] :
         {std::tuple{x, ux, std::max(std::abs(a.x), std::abs(b.x)), &differing_x},
          std::tuple{y, uy, std::max(std::abs(a.y), std::abs(b.y)), &differing_y}}) {
      ASSERT_TRUE(std::isfinite(fused)) << s;
      EXPECT_LE(std::abs(fused - plain), 2 * (std::nextafter(larger, INFINITY) - larger)) << s;
      *differing += fused != plain;
    }
  }
  EXPECT_GT(differing_x, 0) << "no position gave a different first component: its blend is not fused";
  EXPECT_GT(differing_y, 0) << "no position gave a different second component: its blend is not fused";
}

// scipy.signal.hilbert's analytic signal of one line by the definition: a direct O(n^2) DFT in
// long double, h = 1 at DC (and Nyquist for even n), 2 for positive frequencies, 0 for negative.
std::vector<std::complex<long double>> reference_analytic(const float* line, int n) {
  using Complex = std::complex<long double>;
  std::vector<Complex> twiddle(n);  // exp(2 pi i k / n)
  for (int k = 0; k < n; ++k) twiddle[k] = std::polar(1.0L, 2.0L * std::numbers::pi_v<long double> * k / n);
  std::vector<Complex> spectrum(n), analytic(n);
  for (int f = 0; f < n; ++f)
    for (int t = 0; t < n; ++t) spectrum[f] += static_cast<long double>(line[t]) * std::conj(twiddle[std::size_t(f) * t % n]);
  for (int f = 1; f < n; ++f) spectrum[f] *= (2 * f == n) ? 1.0L : (2 * f < n ? 2.0L : 0.0L);
  for (int t = 0; t < n; ++t) {
    for (int f = 0; f < n; ++f) analytic[t] += spectrum[f] * twiddle[std::size_t(f) * t % n];
    analytic[t] /= static_cast<long double>(n);
  }
  return analytic;
}

/// 9 elements x 2 transmits of n random samples (seeded by n).
ChannelData random_channels(int n) {
  ChannelData rf;
  rf.samples = n;
  rf.elements = 9;
  rf.transmits = 2;
  std::mt19937 gen{static_cast<unsigned>(n)};
  std::normal_distribution<float> d(0.f, 100.f);
  for (std::size_t k = 0; k < rf.size(); ++k) rf.data.push_back(d(gen));
  return rf;
}

TEST(ReconDasAnalytic, IsTheDefinitionsAnalyticSignalWithTheDataAsI) {
  // 9 elements x 2 transmits: 18 channels, past a task of 16; lengths 1, 2, odd and even.
  for (const int n : {1, 2, 7, 64, 257}) {
    const ChannelData rf = random_channels(n);
    const AnalyticData a = analytic_signal(rf, 2);
    for (int t = 0; t < rf.transmits; ++t)
      for (int e = 0; e < rf.elements; ++e) {
        const float* x = rf.data.data() + (std::size_t(t) * rf.elements + e) * n;
        const auto ref = reference_analytic(x, n);
        double largest = 0, worst_q = 0;
        for (int s = 0; s < n; ++s) {
          EXPECT_EQ(a.i_channel(t, e)[s], x[s]) << "n " << n << " channel " << t << "," << e << " sample " << s;
          largest = std::max(largest, double(std::abs(ref[s])));
          worst_q = std::max(worst_q, std::abs(double(a.q_channel(t, e)[s]) - double(ref[s].imag())));
        }
        EXPECT_LE(worst_q, 1e-5 * largest) << "n " << n << " channel " << t << "," << e;
        EXPECT_EQ(a.q_channel(t, e)[-1], 0.f);
        EXPECT_EQ(a.q_channel(t, e)[n], 0.f);
      }
  }
}

TEST(ReconDasAnalytic, EnvelopeOfAToneBurstIsItsAmplitude) {
  ChannelData rf;
  rf.samples = 256;
  rf.elements = 1;
  rf.transmits = 1;
  for (int s = 0; s < 256; ++s) rf.data.push_back(2.f * std::cos(2 * std::numbers::pi * 16 * s / 256.0));
  const AnalyticData a = analytic_signal(rf);
  for (int s = 0; s < 256; ++s)
    EXPECT_NEAR(std::hypot(a.i_channel(0, 0)[s], a.q_channel(0, 0)[s]), 2.0, 1e-4);
  EXPECT_EQ(a.i_channel(0, 0)[-1], 0.f);
  EXPECT_EQ(a.i_channel(0, 0)[256], 0.f);
}

// --upsample K: the analytic signal at K times the rate, by zero-padding the analytic spectrum:
// every K-th sample is the K = 1 signal (I the data, Q its Hilbert transform), and a tone whole
// periods long (band-limited and periodic, where FFT interpolation is exact) is exp(i w t) at
// every fine sample, so that its envelope is flat where linear interpolation between samples a
// quarter cycle apart dipped it by 3 dB; the mean phase step gives the samples a cycle.
TEST(ReconDasAnalytic, UpsampledRfIsTheAnalyticSignalAtTheFinerRate) {
  for (const int n : {7, 64, 257}) {
    const ChannelData rf = random_channels(n);
    const AnalyticData one = analytic_signal(rf, 2);
    for (const int k : {2, 3, 4}) {
      SCOPED_TRACE(std::to_string(n) + " samples, upsampled " + std::to_string(k));
      const AnalyticData a = analytic_signal(rf, 2, k);
      ASSERT_EQ(a.samples, n * k);
      double worst = 0, largest = 0;
      for (int t = 0; t < rf.transmits; ++t)
        for (int e = 0; e < rf.elements; ++e) {
          for (int s = 0; s < n; ++s) {
            largest = std::max(largest, double(std::hypot(one.i_channel(t, e)[s], one.q_channel(t, e)[s])));
            worst = std::max({worst, std::fabs(double(a.i_channel(t, e)[s * k]) - one.i_channel(t, e)[s]),
                              std::fabs(double(a.q_channel(t, e)[s * k]) - one.q_channel(t, e)[s])});
          }
          EXPECT_EQ(a.i_channel(t, e)[n * k], 0.f);  // the padding stays zero
          EXPECT_EQ(a.q_channel(t, e)[-1], 0.f);
        }
      EXPECT_LE(worst, 2e-5 * largest);
    }
  }
  // A tone of 4 samples a cycle, 64 whole cycles.
  ChannelData tone;
  tone.samples = 256;
  tone.elements = 1;
  tone.transmits = 1;
  for (int s = 0; s < 256; ++s) tone.data.push_back(float(std::cos(2 * std::numbers::pi * s / 4.0)));
  EXPECT_NEAR(2 * std::numbers::pi / mean_phase_step(analytic_signal(tone)), 4.0, 1e-9);
  const AnalyticData fine = analytic_signal(tone, 1, 4);
  EXPECT_NEAR(2 * std::numbers::pi / mean_phase_step(fine), 16.0, 1e-6);
  for (int s = 0; s < 1024; ++s) {
    const double phase = 2 * std::numbers::pi * s / 16.0;
    EXPECT_NEAR(fine.i_channel(0, 0)[s], std::cos(phase), 1e-5) << s;
    EXPECT_NEAR(fine.q_channel(0, 0)[s], std::sin(phase), 1e-5) << s;
  }
  ChannelData zeros = tone;
  std::fill(zeros.data.begin(), zeros.data.end(), 0.f);
  EXPECT_EQ(mean_phase_step(analytic_signal(zeros)), 0.0);
  EXPECT_THROW((void)analytic_signal(tone, 1, 0), Error);
  EXPECT_THROW((void)analytic_signal(tone, 1, 65), Error);
}

TEST(ReconDasAnalytic, BasebandIqBecomesTheAnalyticSignalAtTheUpsampledRate) {
  // A 5.5 MHz Gaussian pulse demodulated at 5 MHz and sampled at 6.25 MHz (complex), against its
  // closed-form analytic signal at the upsampled times. t = t0 + k / fs is the demodulation's
  // clock, as USTB and PICMUS files define it.
  EXPECT_EQ(iq_upsampling(5e6, 20e6), 1);
  EXPECT_EQ(iq_upsampling(5e6, 10e6), 2);
  EXPECT_EQ(iq_upsampling(5.208e6, 5.208e6), 4);  // PICMUS's IQ files
  EXPECT_EQ(iq_upsampling(5e6, 6.25e6), 4);
  EXPECT_THROW(iq_upsampling(5e6, 0), Error);
  const double f0 = 5.5e6, fd = 5e6, fs = 6.25e6, t0 = 3e-6, tau = 15e-6, sigma = 0.25e-6;
  const auto analytic = [&](double t) {
    const double u = t - tau;
    return std::exp(-0.5 * u * u / (sigma * sigma)) * std::polar(1.0, 2 * std::numbers::pi * f0 * u);
  };
  ChannelData iq;
  iq.samples = 200;
  iq.elements = 2;
  iq.transmits = 1;
  iq.modulation_frequency = fd;
  iq.iq_time0 = t0;
  for (int e = 0; e < 2; ++e)
    for (int k = 0; k < iq.samples; ++k) {
      const double t = t0 + k / fs;
      const std::complex<double> bb = analytic(t) * std::polar(1.0, -2 * std::numbers::pi * fd * t) * (e + 1.0);
      iq.data.push_back(float(bb.real()));
      iq.imag.push_back(float(bb.imag()));
    }
  const int k_up = iq_upsampling(fd, fs);
  const AnalyticData a = analytic_from_baseband(iq, fs, k_up);
  ASSERT_EQ(a.samples, 200 * k_up);
  double worst = 0;
  for (int e = 0; e < 2; ++e)
    for (int k = 0; k < a.samples; ++k) {
      const std::complex<double> want = analytic(t0 + k / (fs * k_up)) * (e + 1.0);
      worst = std::max(worst, std::abs(std::complex<double>(a.i_channel(0, e)[k], a.q_channel(0, e)[k]) - want) / (e + 1));
    }
  // Measured 3.7e-5: the pulse's spectrum is not quite zero at +-fs/2 (4 standard deviations from
  // its centre), so the 6.25 MHz samples alias a little.
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ(a.i_channel(0, 1)[a.samples], 0.f);  // the padding after each channel stays zero
  ChannelData rf = iq;
  rf.imag.clear();
  EXPECT_THROW(analytic_from_baseband(rf, fs, 2), Error);  // I without Q
  {
    // A channel whose upsampled length would overflow an int is refused before anything is made.
    ChannelData long_iq;
    long_iq.samples = 1 << 24;
    long_iq.elements = long_iq.transmits = 1;
    long_iq.data.assign(long_iq.size(), 0.0f);
    long_iq.imag.assign(long_iq.size(), 0.0f);
    EXPECT_TRUE(message_contains([&] { analytic_from_baseband(long_iq, fs, 64); }, "too many for one channel"));
  }
}

TEST(ReconDasAnalytic, TransmitsDelayedByFractionalSamples) {
  // A complex 5 MHz Gaussian pulse sampled at 20 MHz; transmit 0 delayed by 0, transmit 1 by
  // 37.4 samples, compared with the closed form at the delayed times.
  const double fs = 20e6, f0 = 5e6, centre = 60 / fs, sigma = 0.2e-6;
  const auto pulse = [&](double t) {
    const double u = t - centre;
    return std::exp(-0.5 * u * u / (sigma * sigma)) * std::polar(1.0, 2 * std::numbers::pi * f0 * u);
  };
  AnalyticData a = AnalyticData::zeros(150, 3, 2);
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int k = 0; k < 150; ++k) {
        const std::complex<double> v = pulse(k / fs) * (e + 1.0);
        const std::size_t at = (std::size_t(t) * 3 + e) * a.stride + AnalyticData::kFront + k;
        a.i[at] = float(v.real());
        a.q[at] = float(v.imag());
      }
  const std::vector<double> delays = {0.0, 37.4};
  const AnalyticData d = delay_transmits(a, delays, 40);
  ASSERT_EQ(d.samples, 190);
  double worst = 0;
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e)
      for (int k = 0; k < 190; ++k) {
        const std::complex<double> want = pulse((k - delays[std::size_t(t)]) / fs) * (e + 1.0);
        const std::complex<double> got(d.i_channel(t, e)[k], d.q_channel(t, e)[k]);
        worst = std::max(worst, std::abs(got - want) / (e + 1));
      }
  EXPECT_LT(worst, 1e-5);  // measured 1.2e-7 (float32 FFT)
  EXPECT_EQ(d.i_channel(1, 2)[190], 0.f);
  EXPECT_THROW(delay_transmits(a, {0.0, 41.0}, 40), Error);  // more than the room given
  EXPECT_THROW(delay_transmits(a, {0.0}, 40), Error);        // one delay per transmit
}

TEST(ReconDasDelay, DivergingWaveTimedFromTheNearestElementOrTheCentre) {
  // Elements at x = -1, 0, +1 mm. A source 10 mm straight behind the centre element reaches it
  // first, over 10 mm; a pixel 20 mm deep below it is 30 mm from the source: 20 mm after time
  // zero, and 20 mm back to the centre element.
  const std::vector<double> ex = {-1e-3, 0.0, 1e-3};
  const double r0 = das::virtual_source_reference_distance(0.0, -10e-3, ex, das::TimeZero::FirstElement);
  EXPECT_DOUBLE_EQ(r0, 10e-3);
  EXPECT_DOUBLE_EQ(das::virtual_source_reference_distance(0.0, -10e-3, ex, das::TimeZero::Center), 10e-3);
  EXPECT_NEAR(das::virtual_source_transmit_distance(0.0, 20e-3, 0.0, -10e-3, r0), 20e-3, 1e-15);
  EXPECT_NEAR(das::virtual_source_sample(0.0, 20e-3, 0.0, -10e-3, r0, 0.0, 20e6 / 1540, 3.0),
              40e-3 * 20e6 / 1540 - 3.0, 1e-9);
  // Off to the side, at (5, -10) mm: the element at +1 mm fires first, at sqrt(4^2 + 10^2) mm;
  // the wave crosses the centre at sqrt(5^2 + 10^2) mm (USTB's time zero).
  EXPECT_DOUBLE_EQ(das::virtual_source_reference_distance(5e-3, -10e-3, ex, das::TimeZero::FirstElement),
                   std::hypot(4e-3, 10e-3));
  EXPECT_DOUBLE_EQ(das::virtual_source_reference_distance(5e-3, -10e-3, ex, das::TimeZero::Center),
                   std::hypot(5e-3, 10e-3));
  // A source on an element (z = 0, r0 = 0) is that element's synthetic-aperture transmit.
  EXPECT_NEAR(das::virtual_source_sample(0.3e-3, 15e-3, 1e-3, 0.0, 0.0, -1e-3, 1.0, 0.0),
              das::synthetic_aperture_sample(0.3e-3, 15e-3, 1e-3, -1e-3, 1.0, 0.0), 1e-15);
  // The acquisition: sources behind the array only, one z per x.
  Acquisition acq;
  acq.model = Model::DivergingWave;
  acq.probe = {3, 1e-3};
  acq.source_x = {0.0, 1e-3};
  acq.source_z = {-5e-3, -5e-3};
  EXPECT_EQ(acq.transmits(), 2);
  EXPECT_NO_THROW(acq.validate(2));
  acq.source_z = {-5e-3, 2e-3};  // in front of the array: a focused wave
  EXPECT_THROW(acq.validate(2), Error);
  acq.source_z = {-5e-3};
  EXPECT_THROW(acq.validate(2), Error);
  EXPECT_EQ(parse_virtual_sources("-2e-3:2e-3:2e-3", "-0.01").second, (std::vector<double>{-0.01, -0.01, -0.01}));
  EXPECT_EQ(parse_virtual_sources("0,1e-3", "-0.01,-0.02").first, (std::vector<double>{0, 1e-3}));
  EXPECT_THROW(parse_virtual_sources("0,1e-3", "-0.01,-0.02,-0.03"), Error);
  EXPECT_THROW(parse_virtual_sources("0", "0.01"), Error);
  EXPECT_THROW(parse_virtual_sources("0", ""), Error);
}

TEST(ReconDasDelay, FocusedWaveTimedFromTheFarthestElementOrTheCentre) {
  // Elements at x = -1, 0, +1 mm, a focal point 10 mm below the centre element. The outer
  // elements, sqrt(1 + 100) mm from it, fire first; the wave reaches the focus that far after
  // time zero, so a pixel on the axis 4 mm above it is reached 4 mm earlier and one 5 mm below
  // it 5 mm later.
  const std::vector<double> ex = {-1e-3, 0.0, 1e-3};
  const double farthest = std::hypot(1e-3, 10e-3);
  const double r0 = das::virtual_source_reference_distance(0.0, 10e-3, ex, das::TimeZero::FirstElement);
  EXPECT_DOUBLE_EQ(r0, -farthest);
  EXPECT_NEAR(das::virtual_source_transmit_distance(0.0, 6e-3, 0.0, 10e-3, r0), farthest - 4e-3, 1e-15);
  EXPECT_NEAR(das::virtual_source_transmit_distance(0.0, 15e-3, 0.0, 10e-3, r0), farthest + 5e-3, 1e-15);
  // Off the axis at the focal depth the wave has passed the focus (USTB's sign: negative only
  // above the focal depth): 3 mm to the side is 3 mm after the focus.
  EXPECT_NEAR(das::virtual_source_transmit_distance(3e-3, 10e-3, 0.0, 10e-3, r0), farthest + 3e-3, 1e-15);
  EXPECT_NEAR(das::virtual_source_transmit_distance(3e-3, 10e-3 - 1e-6, 0.0, 10e-3, r0), farthest - 3e-3, 1e-9);
  // The side is decided in float precision, as the float kernels decide it: a pixel 1e-10 m above
  // the focal depth is on the focal row (float cannot tell the two depths apart).
  EXPECT_NEAR(das::virtual_source_transmit_distance(3e-3, 10e-3 - 1e-10, 0.0, 10e-3, r0), farthest + 3e-3, 1e-9);
  // Diverging waves have no focal depth: a pixel above the source (z < zs <= 0) counts positive.
  EXPECT_NEAR(das::virtual_source_transmit_distance(0.0, -12e-3, 0.0, -10e-3, 0.0), 2e-3, 1e-15);
  // USTB's clock: the wave crosses the origin at t = 0 and reaches the focus f at |f| / c.
  EXPECT_DOUBLE_EQ(das::virtual_source_reference_distance(2e-3, 10e-3, ex, das::TimeZero::Center),
                   -std::hypot(2e-3, 10e-3));
  EXPECT_NEAR(das::virtual_source_sample(0.0, 6e-3, 0.0, 10e-3, r0, 1e-3, 20e6 / 1540, 3.0),
              (farthest - 4e-3 + std::hypot(1e-3, 6e-3)) * 20e6 / 1540 - 3.0, 1e-9);
  // Along the axis the path grows with depth on both sides of the focus (the CPU kernel's
  // monotone windows rely on it), and it jumps up at the focal depth off the axis.
  double previous = -INFINITY;
  for (double z = 0; z < 30e-3; z += 0.37e-3) {
    const double path = das::virtual_source_transmit_distance(1.5e-3, z, 0.0, 10e-3, r0);
    EXPECT_GT(path, previous) << z;
    previous = path;
  }
  // The acquisition: focal points in front of the array only.
  Acquisition acq;
  acq.model = Model::FocusedWave;
  acq.probe = {3, 1e-3};
  acq.source_x = {0.0, 1e-3};
  acq.source_z = {10e-3, 20e-3};
  EXPECT_EQ(acq.transmits(), 2);
  EXPECT_NO_THROW(acq.validate(2));
  EXPECT_EQ(to_string(acq.model), "fw");
  acq.source_z = {10e-3, 0.0};  // on the array line: not a focal point
  EXPECT_THROW(acq.validate(2), Error);
  acq.source_z = {10e-3, NAN};
  EXPECT_THROW(acq.validate(2), Error);
  EXPECT_EQ(parse_virtual_sources("0,1e-3", "0.02", Model::FocusedWave).second, (std::vector<double>{0.02, 0.02}));
  EXPECT_THROW(parse_virtual_sources("0", "-0.01", Model::FocusedWave), Error);
  EXPECT_THROW(parse_virtual_sources("0", "0", Model::FocusedWave), Error);
}

TEST(ReconDasDelay, ScanlineTakesTheTransmitFocusedNearestToEachColumn) {
  DasProblem p = small_problem(Model::FocusedWave);  // focal points at x = -2, 0.5, 3 mm
  p.grid = Grid::from_ranges(-4.01e-3, 4e-3, 0.25e-3, 5e-3, 6e-3, 0.5e-3);  // no column at a midpoint
  EXPECT_TRUE(p.column_transmits().empty());  // no transmit apodization: every transmit everywhere
  const double all_points = p.points();
  p.options.tx_apodization = TxApodization::Scanline;
  const std::vector<int> lines = p.column_transmits();
  ASSERT_EQ(lines.size(), std::size_t(p.grid.nx));
  for (int ix = 0; ix < p.grid.nx; ++ix) {
    const double x = p.grid.x(ix);
    // Midpoints: -0.75 mm between the first two, 1.75 mm between the last two.
    const int expected = x < -0.75e-3 ? 0 : x < 1.75e-3 ? 1 : 2;
    EXPECT_EQ(lines[std::size_t(ix)], expected) << "x = " << x;
  }
  EXPECT_DOUBLE_EQ(p.points(), all_points / 3);  // one transmit summed per pixel, not three
  EXPECT_NO_THROW(p.validate());
  EXPECT_EQ(parse_tx_apodization("scanline"), TxApodization::Scanline);
  EXPECT_EQ(to_string(TxApodization::None), "none");
  EXPECT_THROW(parse_tx_apodization("hourglass"), Error);
  for (Model other : {Model::PlaneWave, Model::SyntheticAperture, Model::DivergingWave}) {
    DasProblem q = small_problem(other);
    q.options.tx_apodization = TxApodization::Scanline;
    EXPECT_THROW(q.validate(), Error) << to_string(other);
  }
}

// weighted_points counts what the F-numbers leave: against a count of the apertures' geometry in
// double (|x - xe| <= z / 2F, the transmit cone's |x - xs| <= max(|z - zs| / 2F, waist), each
// edge widened by kApertureEdgeSlack as the windows take it) on small_problem's grid, whose
// pixels lie on no aperture edge.
TEST(ReconDasDelay, WeightedPointsCountTheTriplesTheApodizationsKeep) {
  for (const Model model : {Model::PlaneWave, Model::FocusedWave}) {
    DasProblem p = small_problem(model);
    if (model == Model::FocusedWave) p.options.tx_fnumber = 2.0;
    const std::vector<double> ex = p.acquisition.probe.positions();
    const std::vector<double> waists = das::virtual_source_waists(p.acquisition.source_x, p.acquisition.probe.pitch);
    double want = 0;
    for (int ix = 0; ix < p.grid.nx; ++ix)
      for (int iz = 0; iz < p.grid.nz; ++iz) {
        const double x = p.grid.x(ix), z = p.grid.z(iz);
        int elements = 0, transmits = 0;
        const double edge = 1 + das::kApertureEdgeSlack;  // the apertures' edges, as the windows take them
        for (const double xe : ex) elements += std::fabs(x - xe) <= edge * z / (2 * p.options.fnumber);
        for (int t = 0; t < p.acquisition.transmits(); ++t) {
          if (model == Model::PlaneWave) {
            ++transmits;
            continue;
          }
          const double xs = p.acquisition.source_x[std::size_t(t)], zs = p.acquisition.source_z[std::size_t(t)];
          transmits += std::fabs(x - xs) <= edge * std::max(std::fabs(z - zs) / (2 * p.options.tx_fnumber), waists[std::size_t(t)]);
        }
        want += double(elements) * transmits;
      }
    EXPECT_EQ(p.weighted_points(), want) << to_string(model);
    EXPECT_LT(p.weighted_points(), 0.8 * p.points()) << to_string(model);
    p.options.window = Window::Hann;  // zero at the edge: fewer (every edge element lies off a pixel here)
    EXPECT_LE(p.weighted_points(), want) << to_string(model);
    p.options.fnumber = 0;
    p.options.tx_fnumber = 0;
    EXPECT_EQ(p.weighted_points(), p.points()) << to_string(model) << ": full apertures weigh every triple";
  }
  DasProblem scan = small_problem(Model::FocusedWave);
  scan.options.fnumber = 0;
  scan.options.tx_apodization = TxApodization::Scanline;
  EXPECT_EQ(scan.weighted_points(), scan.points()) << "a scanline's one transmit a column, every element";
}

TEST(ReconDasDelay, TransmitFNumberIsAConeAroundTheVirtualSource) {
  // F = 2 around a focal point at (1, 20) mm: at 8 mm above or below it the cone is 4 mm wide.
  const int rect = das::kRect, hann = das::kHann;
  const auto weight = [&](double x, double z, double xs, double zs, double f, double waist, int window) {
    return das::virtual_source_apodization(x, z, xs, zs, f, waist, window, 0.5);
  };
  EXPECT_EQ(weight(1e-3 + 1.9e-3, 12e-3, 1e-3, 20e-3, 2.0, 0.0, rect), 1.0);
  EXPECT_EQ(weight(1e-3 - 2.1e-3, 12e-3, 1e-3, 20e-3, 2.0, 0.0, rect), 0.0);
  EXPECT_EQ(weight(1e-3 + 1.9e-3, 28e-3, 1e-3, 20e-3, 2.0, 0.0, rect), 1.0);
  EXPECT_EQ(weight(1e-3 + 2.1e-3, 28e-3, 1e-3, 20e-3, 2.0, 0.0, rect), 0.0);
  EXPECT_NEAR(weight(1e-3 + 1e-3, 12e-3, 1e-3, 20e-3, 2.0, 0.0, hann), 0.5, 1e-7);
  EXPECT_EQ(weight(0.5, 0.1, 1e-3, 20e-3, 0.0, 0.0, rect), 1.0);  // F = 0: off
  // The waist: without a smallest half-width the focal row would be dark even on the focal
  // point; with one (0.6 mm here) it keeps that width near the focal depth.
  EXPECT_EQ(weight(1e-3, 20e-3, 1e-3, 20e-3, 2.0, 0.0, rect), 0.0);
  EXPECT_EQ(weight(1e-3, 20e-3, 1e-3, 20e-3, 2.0, 0.6e-3, rect), 1.0);
  EXPECT_EQ(weight(1e-3 + 0.55e-3, 20.5e-3, 1e-3, 20e-3, 2.0, 0.6e-3, rect), 1.0);
  EXPECT_EQ(weight(1e-3 + 0.65e-3, 20.5e-3, 1e-3, 20e-3, 2.0, 0.6e-3, rect), 0.0);
  EXPECT_EQ(weight(1e-3 + 1.9e-3, 28e-3, 1e-3, 20e-3, 2.0, 0.6e-3, rect), 1.0);  // the cone beyond it
  // Waists: the distance to the nearest other source, at least half the pitch.
  EXPECT_EQ(das::virtual_source_waists({-3e-3, 0.0, 1e-3}, 0.3e-3), (std::vector<double>{3e-3, 1e-3, 1e-3}));
  EXPECT_EQ(das::virtual_source_waists({0.0, 0.0, 0.1e-3}, 0.3e-3), (std::vector<double>{0.15e-3, 0.15e-3, 0.15e-3}));
  EXPECT_EQ(das::virtual_source_waists({2e-3}, 0.3e-3), std::vector<double>{0.15e-3});
  // A diverging wave's cone opens from its source behind the array: 10 mm below a source at
  // z = -10 mm (at depth 0) it is 5 mm wide with F = 2.
  EXPECT_EQ(weight(2.4e-3, 0.0, 0.0, -10e-3, 2.0, 0.15e-3, rect), 1.0);
  EXPECT_EQ(weight(2.6e-3, 0.0, 0.0, -10e-3, 2.0, 0.15e-3, rect), 0.0);
  DasProblem p = small_problem(Model::PlaneWave);
  p.options.tx_fnumber = 1.0;
  EXPECT_THROW(p.validate(), Error);
  p = small_problem(Model::FocusedWave);
  p.options.tx_fnumber = -1.0;
  EXPECT_THROW(p.validate(), Error);
  p.options.tx_fnumber = 1.0;
  EXPECT_NO_THROW(p.validate());
  p.options.tx_fnumber = NAN;
  EXPECT_THROW(p.validate(), Error);
  p = small_problem(Model::SyntheticAperture);
  p.options.tx_fnumber = 1.0;
  EXPECT_THROW(p.validate(), Error);
}

TEST(ReconDasDelay, CenterTimeZeroCountsFromTheWavefrontAtTheArrayCentre) {
  // USTB/PICMUS: t = 0 when the wavefront crosses x = 0, whatever the angle.
  EXPECT_DOUBLE_EQ(das::planewave_x_reference(0.1, -1.0, 1.0, das::TimeZero::Center), 0.0);
  EXPECT_DOUBLE_EQ(das::planewave_x_reference(-0.1, -1.0, 1.0, das::TimeZero::Center), 0.0);
  EXPECT_DOUBLE_EQ(das::planewave_x_reference(0.1, -1.0, 1.0, das::TimeZero::FirstElement), -1.0);
  // So the two conventions differ by the time the wave takes from the first element to the
  // centre: (x_max - x_min) / 2 * |sin a| / c, here in metres of path.
  const double a = -0.2, x = 0.3, z = 2.0;
  const double first = das::planewave_transmit_distance(
      x, z, std::cos(a), std::sin(a), das::planewave_x_reference(a, -1.0, 1.0, das::TimeZero::FirstElement));
  const double centre = das::planewave_transmit_distance(
      x, z, std::cos(a), std::sin(a), das::planewave_x_reference(a, -1.0, 1.0, das::TimeZero::Center));
  EXPECT_NEAR(first - centre, 1.0 * std::fabs(std::sin(a)), 1e-15);
  EXPECT_EQ(parse_time_zero("center"), das::TimeZero::Center);
  EXPECT_EQ(to_string(parse_time_zero("first-element")), "first-element");
  EXPECT_THROW(parse_time_zero("middle"), Error);
}

TEST(ReconDasDelay, CudaKernelNamesRoundTrip) {
  for (DasCudaKernel k : {DasCudaKernel::Auto, DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter,
                          DasCudaKernel::TransmitBlocked})
    EXPECT_EQ(parse_das_cuda_kernel(to_string(k)), k);
  EXPECT_EQ(to_string(DasCudaKernel::TransmitBlocked), "transmit-blocked");
  EXPECT_THROW(parse_das_cuda_kernel("fastest"), Error);
}

// Geometry past any scan is refused: with it a sample position could overflow the kernels' float
// arithmetic to infinity, and an infinite position is NaN in the vector kernels' linear
// interpolation where the reference gives silence (a review found a grid at z = 1e20 m).
TEST(ReconDasGeometry, GeometryPastAnyScanIsRefused) {
  for (Model model : {Model::PlaneWave, Model::SyntheticAperture, Model::DivergingWave, Model::FocusedWave}) {
    SCOPED_TRACE(to_string(model));
    const DasProblem good = small_problem(model);
    EXPECT_NO_THROW(good.validate());
    auto refused = [&](auto change, const char* words) {
      DasProblem p = good;
      change(p);
      EXPECT_TRUE(message_contains([&] { p.validate(); }, words)) << words;
    };
    refused([](DasProblem& p) { p.grid.z0 = 1e20; }, "more than 1 km");
    refused([](DasProblem& p) { p.grid.x0 = -2e3; }, "more than 1 km");
    refused([](DasProblem& p) { p.grid.dz = 1e3; }, "more than 1 km");  // the far end
    refused([](DasProblem& p) { p.acquisition.probe.pitch = 40.0; }, "spans more than 1 km");  // 31 gaps
    refused([](DasProblem& p) { p.acquisition.sound_speed = 0.5; }, "between 1 and 1e6");
    refused([](DasProblem& p) { p.acquisition.fs = 1e13; }, "at most 1e12");
    refused([](DasProblem& p) { p.acquisition.t0 = -2e3; }, "within +-1000 s");
    if (has_virtual_sources(model))
      refused([](DasProblem& p) { p.acquisition.source_z[0] *= 1e6; }, "more than 1 km from the array");
  }
}

// A shape that cannot be channel data says which axis is wrong and how the array was read (it said
// only "implausible"): here source.txt's order, transmits,elements,samples, saved as [1][32][500].
TEST(ReconDasInput, AnImplausibleShapeSaysWhyAndHowTheArrayWasRead) {
  const std::vector<double> values(32 * 500, 1.0);
  const std::string m = message_of([&] { arrange_channels(values, {1, 32, 500}, false, "", Offset::None, "t.npy"); });
  EXPECT_NE(m.find("t.npy: implausible channel data shape: the 1 x 32 x 500 array read as 'samples,elements,transmits' "
                   "gives 1 samples x 32 elements x 500 transmits (1 sample(s) per channel; --layout names the array's "
                   "axes in order"),
            std::string::npos)
      << m;
  EXPECT_NO_THROW(arrange_channels(values, {1, 32, 500}, false, "transmits,elements,samples", Offset::None, "t.npy"));
  const std::string none = message_of([&] { arrange_channels({}, {40, 0}, false, "", Offset::None, "e.npy"); });
  EXPECT_NE(none.find("gives 40 samples x 0 elements x 1 transmits (no elements;"), std::string::npos) << none;
}

// Channel data that are not finite floats are refused where they are read, naming how many and
// the first (0-based sample, element, transmit), also a double past float's range.
TEST(ReconDasInput, NonFiniteSamplesAreRefusedWithThePlaceOfTheFirst) {
  std::vector<double> values(4 * 3 * 2, 1.0);  // MATLAB [4 samples x 3 elements x 2 transmits]
  auto at = [](int s, int e, int t) { return std::size_t(s + 4 * (e + 3 * t)); };
  EXPECT_NO_THROW(arrange_channels(values, {4, 3, 2}, true, "", Offset::None, "x.mat"));
  values[at(2, 1, 1)] = std::nan("");
  values[at(3, 2, 1)] = INFINITY;
  const std::string two = message_of([&] { arrange_channels(values, {4, 3, 2}, true, "", Offset::None, "x.mat"); });
  EXPECT_NE(two.find("x.mat: 2 of 24 samples are not finite"), std::string::npos) << two;
  EXPECT_NE(two.find("the first is sample 2 of element 1 in transmit 1"), std::string::npos) << two;
  values[at(2, 1, 1)] = 1.0;
  values[at(3, 2, 1)] = 1.0;
  values[at(0, 0, 0)] = 1e39;  // finite in double, infinite in float
  const std::string big = message_of([&] { arrange_channels(values, {4, 3, 2}, true, "", Offset::None, "x.mat"); });
  EXPECT_NE(big.find("1 of 24 samples"), std::string::npos) << big;
  EXPECT_NE(big.find("sample 0 of element 0 in transmit 0"), std::string::npos) << big;
  // With the mean removed, the samples are still counted and placed as the file holds them: a
  // NaN was said as its whole channel ("4 of 24"), from the channel's first sample.
  values[at(0, 0, 0)] = 1.0;
  values[at(2, 0, 0)] = std::nan("");
  const std::string mean = message_of([&] { arrange_channels(values, {4, 3, 2}, true, "", Offset::Mean, "x.mat"); });
  EXPECT_NE(mean.find("x.mat: 1 of 24 samples are not finite"), std::string::npos) << mean;
  EXPECT_NE(mean.find("the first is sample 2 of element 0 in transmit 0"), std::string::npos) << mean;
  // Finite floats whose difference from their mean is not one are said as such.
  values[at(2, 0, 0)] = 1.0;
  for (int s = 0; s < 4; ++s) values[at(s, 1, 0)] = s == 3 ? 3e38 : -3e38;
  const std::string past = message_of([&] { arrange_channels(values, {4, 3, 2}, true, "", Offset::Mean, "x.mat"); });
  EXPECT_NE(past.find("x.mat: samples pass float's range after removing their channel's mean (--offset mean); the "
                      "first is sample 3 of element 1 in transmit 0"),
            std::string::npos)
      << past;
  EXPECT_NO_THROW(arrange_channels(values, {4, 3, 2}, true, "", Offset::None, "x.mat"));
}

}  // namespace
}  // namespace usrecon::recon
