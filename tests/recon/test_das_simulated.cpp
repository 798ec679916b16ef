// General DAS on simulated data: every point target is found within a quarter wavelength of its
// true position, with the axial and lateral widths that the pulse and the aperture predict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <numbers>

#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_simulate.hpp"
#include "usrecon/recon/metrics.hpp"

namespace usrecon::recon {
namespace {

constexpr double kC = 1540, kF0 = 5e6, kLambda = kC / kF0, kCycles = 2;

struct Case {
  DasSimulationOptions sim;
  DasProblem problem;
};

Case make_case(Model model, double fnumber) {
  Case c;
  Acquisition& acq = c.sim.acquisition;
  acq.model = model;
  acq.probe = {model == Model::PlaneWave ? 64 : 48, 0.3e-3};
  acq.fs = 40e6;
  acq.t0 = 0.5e-6;
  if (model == Model::PlaneWave)
    for (double deg : {-5.0, 0.0, 5.0}) acq.angles.push_back(deg * std::numbers::pi / 180);
  if (model == Model::DivergingWave) {  // five virtual sources 10 mm behind the array
    acq.source_x = {-6e-3, -3e-3, 0.0, 3e-3, 6e-3};
    acq.source_z.assign(5, -10e-3);
  }
  if (model == Model::FocusedWave) {  // nine focal points 16 mm deep, 1.5 mm apart
    for (int k = -4; k <= 4; ++k) acq.source_x.push_back(k * 1.5e-3);
    acq.source_z.assign(9, 16e-3);
  }
  c.sim.samples = 2400;
  c.sim.center_frequency = kF0;
  c.sim.cycles = kCycles;
  c.sim.points = {{0.0, 12e-3, 1}, {-2.5e-3, 20e-3, 1}, {3e-3, 28e-3, 1}};
  c.problem.acquisition = acq;
  c.problem.samples = c.sim.samples;
  c.problem.grid = Grid::from_ranges(-6e-3, 6e-3, kLambda / 10, 8e-3, 32e-3, kLambda / 10);
  c.problem.options.fnumber = fnumber;
  c.problem.options.interp = Interp::Linear;
  return c;
}

// The simulated channel data beamformed on the CPU: the envelope on c.problem.grid.
std::vector<double> beamformed_envelope(const Case& c) {
  return envelope(DasCpuBeamformer(c.problem).beamform(analytic_signal(simulate_das_channels(c.sim))));
}

void check_points(const Case& c, double lateral_lo, double lateral_hi) {
  const std::vector<double> env = beamformed_envelope(c);
  const double predicted_lateral = 1.206 * kLambda * c.problem.options.fnumber;  // sinc, -6 dB
  const double predicted_axial = kCycles * kLambda / 2;  // two-way: half the pulse length
  for (const PointTarget& p : c.sim.points) {
    const PointMetrics m = measure_point(env, c.problem.grid, p.x, p.z, 1e-3);
    SCOPED_TRACE("point (" + std::to_string(p.x * 1e3) + ", " + std::to_string(p.z * 1e3) + ") mm");
    EXPECT_LE(m.error, kLambda / 4);
    EXPECT_NEAR(m.fwhm_axial, predicted_axial, 0.15 * predicted_axial);
    EXPECT_GE(m.fwhm_lateral, lateral_lo * predicted_lateral);
    EXPECT_LE(m.fwhm_lateral, lateral_hi * predicted_lateral);
  }
}

// check_points for the model's case timed from the first element, then from the wavefront
// crossing the array centre (simulated and beamformed on the same clock).
void check_points_on_both_clocks(Model model, double lateral_lo, double lateral_hi) {
  for (das::TimeZero clock : {das::TimeZero::FirstElement, das::TimeZero::Center}) {
    SCOPED_TRACE(to_string(clock));
    Case c = make_case(model, 2.0);
    c.sim.acquisition.time_zero = clock;
    c.problem.acquisition.time_zero = clock;
    check_points(c, lateral_lo, lateral_hi);
  }
}

// The simulators refuse a speckle amplitude that is no finite number >= 0 themselves (the CLI
// now refuses such a value where it reads its options, so no CLI test reaches this check).
TEST(ReconDasSimulated, SpeckleAmplitudesThatAreNoFiniteNonNegativeNumberAreRefused) {
  for (const double amplitude : {std::nan(""), -0.1, HUGE_VAL}) {
    Case c = make_case(Model::PlaneWave, 1.0);
    c.sim.speckle = 3;
    c.sim.speckle_amplitude = amplitude;
    try {
      (void)simulate_das_channels(c.sim);
      ADD_FAILURE() << amplitude << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("must be a finite number >= 0"), std::string::npos) << e.what();
    }
  }
  Case c = make_case(Model::PlaneWave, 1.0);
  c.sim.speckle = 3;
  c.sim.speckle_amplitude = 0.5;
  EXPECT_NO_THROW((void)simulate_das_channels(c.sim));
}

TEST(ReconDasSimulated, PlaneWavePointsAtTheirPositionsWithTheApertureWidth) {
  // Receive-limited lateral resolution: a rect aperture z / F wide gives a sinc, -6 dB at
  // 1.206 lambda F; the unfocused plane-wave transmit barely narrows it.
  check_points(make_case(Model::PlaneWave, 2.0), 0.8, 1.2);
}

TEST(ReconDasSimulated, SyntheticAperturePointsAtTheirPositions) {
  // Transmit focusing everywhere (the full 14.4 mm transmit aperture, F < 1 at these depths)
  // narrows the beam well below the receive-only prediction.
  check_points(make_case(Model::SyntheticAperture, 2.0), 0.3, 1.1);
}

TEST(ReconDasSimulated, DivergingWavePointsAtTheirPositions) {
  // Each transmit is unfocused, but compounding five sources spread over 12 mm focuses the
  // transmit synthetically (as synthetic aperture does with its elements): narrower than the
  // receive-only prediction (measured 0.64-0.78 of it), not as narrow as synthetic aperture.
  // Timed from the first element's firing, and from the wave's crossing of the array centre
  // instead: the same points.
  check_points_on_both_clocks(Model::DivergingWave, 0.5, 1.1);
}

TEST(ReconDasSimulated, FocusedWavePointsAtTheirPositions) {
  // Nine focused transmits, their focal points 16 mm deep: the points lie above (12 mm) and below
  // (20, 28 mm) the focal depth, where the wave converges and where it diverges again. Both
  // clocks (the farthest element firing first, or the wave crossing the array centre) find them.
  // Compounding makes the focal points a synthetic transmit aperture, 12 mm wide and only 4 to
  // 12 mm from the points; the simulator's waves reach every point (no beam directivity), so that
  // whole aperture counts and the points come out far narrower than the receive-only prediction
  // (measured 0.22, 0.25 and 0.48 of it, the deepest point widest).
  check_points_on_both_clocks(Model::FocusedWave, 0.15, 1.1);
  // Beamformed as diverging waves from mirror sources (-16 mm) instead, the same data put every
  // point far off: the delay model matters.
  Case wrong = make_case(Model::FocusedWave, 2.0);
  wrong.problem.acquisition.model = Model::DivergingWave;
  wrong.problem.acquisition.source_z.assign(9, -16e-3);
  const std::vector<double> env = beamformed_envelope(wrong);
  for (const PointTarget& p : wrong.sim.points)
    EXPECT_GT(measure_point(env, wrong.problem.grid, p.x, p.z, 1e-3).error, kLambda);
}

TEST(ReconDasSimulated, FocusedWaveScanlinesFindThePointsWithTheReceiveAperture) {
  // Line by line: each column takes only the transmit focused nearest to it, so no synthetic
  // transmit aperture forms and the lateral width is about the receive aperture's: measured 1.02,
  // 1.04 and 1.25 of the prediction (against 0.22-0.48 when all nine transmits are compounded);
  // the deepest point, 12 mm past the focal depth, widens most where neighbouring columns switch
  // to the next line's transmit.
  Case c = make_case(Model::FocusedWave, 2.0);
  c.problem.options.tx_apodization = TxApodization::Scanline;
  check_points(c, 0.8, 1.4);
}

TEST(ReconDasSimulated, FocusedWaveTransmitFNumberKeepsEachTransmitInItsHourglass) {
  // Transmit F-number 1: a point takes only the transmits whose hourglass (|x - xf| <= |z - zf| / 2,
  // no narrower than half the focal points' spacing) covers it. The synthetic transmit aperture
  // that forms is that narrow, so each point's width lies between compounding every transmit and
  // one line per column, all three with the Hann window (measured 0.16-0.37, 0.58-0.63 and
  // 1.16-1.35 mm).
  Case c = make_case(Model::FocusedWave, 2.0);
  c.problem.options.window = Window::Hann;
  c.problem.options.tx_fnumber = 1.0;
  check_points(c, 0.0, 100.0);  // positions within lambda / 4, axial widths as the pulse predicts
  const auto lateral_widths = [&](TxApodization lines, double tx_fnumber) {
    Case k = c;
    k.problem.options.tx_apodization = lines;
    k.problem.options.tx_fnumber = tx_fnumber;
    const std::vector<double> env = beamformed_envelope(k);
    std::vector<double> widths;
    for (const PointTarget& p : k.sim.points)
      widths.push_back(measure_point(env, k.problem.grid, p.x, p.z, 1e-3).fwhm_lateral);
    return widths;
  };
  const std::vector<double> all = lateral_widths(TxApodization::None, 0.0);
  const std::vector<double> cones = lateral_widths(TxApodization::None, 1.0);
  const std::vector<double> lines = lateral_widths(TxApodization::Scanline, 0.0);
  for (std::size_t k = 0; k < c.sim.points.size(); ++k) {
    EXPECT_GT(cones[k], 1.2 * all[k]) << "point " << k;
    EXPECT_LT(cones[k], lines[k]) << "point " << k;
  }
  // Points at the focal depth, on a focal point and midway between two: the cones' waists keep
  // the focal rows lit, so both are found where they are. (Their axial widths are not the
  // pulse's: the weights change along depth as the cones narrow to their waists; measured 0.85
  // of it midway.)
  c.sim.points = {{0.0, 16e-3, 1}, {2.25e-3, 16e-3, 1}};
  const std::vector<double> env = beamformed_envelope(c);
  for (const PointTarget& p : c.sim.points)
    EXPECT_LE(measure_point(env, c.problem.grid, p.x, p.z, 1e-3).error, kLambda / 4) << p.x;
}

TEST(ReconDasSimulated, CystIsDarkAgainstSpeckle) {
  Case c = make_case(Model::PlaneWave, 1.5);
  c.sim.points.clear();
  c.sim.cysts = {{0.0, 20e-3, 3e-3}};
  c.sim.speckle = 3000;
  c.sim.x_min = -8e-3;
  c.sim.x_max = 8e-3;
  c.sim.z_min = 8e-3;
  c.sim.z_max = 32e-3;
  c.problem.grid = Grid::from_ranges(-6e-3, 6e-3, 0.1e-3, 12e-3, 28e-3, 0.05e-3);
  const AnalyticData data = analytic_signal(simulate_das_channels(c.sim));
  const Image image = DasCpuBeamformer(c.problem).beamform(data);
  const CystMetrics m = measure_cyst(envelope(image), image.grid, 0.0, 20e-3, 3e-3);
  EXPECT_LT(m.contrast_db, -12);
  EXPECT_GT(m.gcnr, 0.7);
  EXPECT_GT(m.cnr, 1.0);
}

// simulate_das_analytic: I is simulate_das_channels' RF bit for bit (noise included), and Q is
// its Hilbert transform, as analytic_signal's FFT computes it from the RF alone, for every model.
TEST(ReconDasSimulated, AnalyticSimulationIsTheRfAndItsHilbertTransform) {
  for (Model model : {Model::PlaneWave, Model::SyntheticAperture, Model::DivergingWave, Model::FocusedWave}) {
    SCOPED_TRACE(to_string(model));
    Case c = make_case(model, 1.5);
    c.sim.speckle = 200;  // echoes everywhere, some cut off by the record's ends
    c.sim.noise = 0.01;
    const ChannelData rf = simulate_das_channels(c.sim);
    const AnalyticData direct = simulate_das_analytic(c.sim);
    ASSERT_EQ(direct.samples, rf.samples);
    ASSERT_EQ(direct.elements * direct.transmits, rf.elements * rf.transmits);
    std::size_t differing = 0;
    for (int t = 0; t < rf.transmits; ++t)
      for (int e = 0; e < rf.elements; ++e)
        for (int s = 0; s < rf.samples; ++s)
          differing += direct.i_channel(t, e)[s] != rf.data[(std::size_t(t) * rf.elements + e) * rf.samples + s];
    EXPECT_EQ(differing, 0u);

    // Q against the FFT's, on the points alone, without noise (Q's is independent of I's): they
    // differ by float rounding and the pulse spectrum's negative-frequency part (measured: 4e-5).
    // With speckle, echoes cut off by the record's ends differ more (1.5e-2 here): the FFT sees
    // a periodic record, and the Hilbert transform of a cut-off echo spreads far.
    c.sim.speckle = 0;
    c.sim.noise = 0;
    const AnalyticData by_fft = analytic_signal(simulate_das_channels(c.sim));
    const AnalyticData clean = simulate_das_analytic(c.sim);
    double diff = 0, norm = 0;
    for (int t = 0; t < rf.transmits; ++t)
      for (int e = 0; e < rf.elements; ++e)
        for (int s = 0; s < rf.samples; ++s) {
          const double q = clean.q_channel(t, e)[s], q_fft = by_fft.q_channel(t, e)[s];
          diff += (q - q_fft) * (q - q_fft);
          norm += q_fft * q_fft;
        }
    ASSERT_GT(norm, 0);
    EXPECT_LE(std::sqrt(diff / norm), 2e-4);
  }
  // The options are checked as for the RF.
  Case bad = make_case(Model::PlaneWave, 1.5);
  bad.sim.cycles = 0;
  EXPECT_THROW(simulate_das_analytic(bad.sim), Error);
  bad = make_case(Model::PlaneWave, 1.5);
  bad.sim.acquisition.probe.elements = 0;
  EXPECT_THROW(simulate_das_analytic(bad.sim), Error);
}

// The simulator and the beamformers share the delay functions, so a point found where it was put
// cannot catch a wrong delay that both make. Here the echoes' arrival times are derived from the
// geometry alone, written out in this test for each model with time counted from the first
// element's firing (the default for NPY and MAT data): the simulated analytic trace of every
// (transmit, element) peaks there. The peak is found from the samples alone: the envelope is a
// Gaussian, so the parabola through the logs of the largest sample and its two neighbours peaks
// exactly at the echo.
TEST(ReconDasSimulated, EchoesArriveWhenTheGeometryAloneSays) {
  const double x = 1.1e-3, z = 14e-3, t0 = 2e-6, fs = 40e6, pitch = 0.3e-3;
  const int elements = 16;
  const auto element_x = [&](int e) { return (e - 0.5 * (elements - 1)) * pitch; };
  const auto receive = [&](int e) { return std::hypot(x - element_x(e), z) / kC; };  // s
  struct ModelCase {
    const char* name;
    Model model;
    std::vector<double> angles, source_x, source_z;
    std::vector<int> tx_elements;
    // Seconds from time zero until transmit t's wave reaches (x, z).
    std::function<double(int)> transmit;
  };
  const double a = 12 * std::numbers::pi / 180;
  const std::vector<ModelCase> cases = {
      // Angle > 0: element 0 (x = -2.25 mm) fires first, at time zero; < 0: the last one.
      {"planewave", Model::PlaneWave, {a, -a}, {}, {}, {},
       [&](int t) {
         const double angle = t == 0 ? a : -a, x_first = angle > 0 ? element_x(0) : element_x(elements - 1);
         return (z * std::cos(angle) + (x - x_first) * std::sin(angle)) / kC;
       }},
      // Each transmit one element, firing at time zero.
      {"sa", Model::SyntheticAperture, {}, {}, {}, {2, 13},
       [&](int t) { return std::hypot(x - element_x(t == 0 ? 2 : 13), z) / kC; }},
      // A source 6 mm behind the array at x = -1 mm: its nearest element fires first.
      {"dw", Model::DivergingWave, {}, {-1e-3}, {-6e-3}, {},
       [&](int) {
         double nearest = 1e9;
         for (int e = 0; e < elements; ++e) nearest = std::min(nearest, std::hypot(element_x(e) + 1e-3, 6e-3));
         return (std::hypot(x + 1e-3, z + 6e-3) - nearest) / kC;
       }},
      // Focal points in front of the array: the farthest element fires first, at time zero, and
      // every element's wave reaches the focus d_max / c later. (x, z) lies before the first
      // focus (the wave reaches it |p - f| earlier) and beyond the second (|p - f| later).
      {"fw", Model::FocusedWave, {}, {0.5e-3, -0.5e-3}, {20e-3, 10e-3}, {},
       [&](int t) {
         const double fx = t == 0 ? 0.5e-3 : -0.5e-3, fz = t == 0 ? 20e-3 : 10e-3;
         double farthest = 0;
         for (int e = 0; e < elements; ++e) farthest = std::max(farthest, std::hypot(element_x(e) - fx, fz));
         const double past_focus = std::hypot(x - fx, z - fz);
         return (farthest + (z < fz ? -past_focus : past_focus)) / kC;
       }},
  };
  for (const ModelCase& m : cases) {
    SCOPED_TRACE(m.name);
    DasSimulationOptions o;
    Acquisition& acq = o.acquisition;
    acq.model = m.model;
    acq.probe = {elements, pitch};
    acq.fs = fs;
    acq.t0 = t0;
    acq.sound_speed = kC;
    acq.angles = m.angles;
    acq.source_x = m.source_x;
    acq.source_z = m.source_z;
    acq.tx_elements = m.tx_elements;
    acq.time_zero = das::TimeZero::FirstElement;
    o.samples = 1200;
    o.center_frequency = kF0;
    o.cycles = kCycles;
    o.points = {{x, z, 1}};
    const AnalyticData data = simulate_das_analytic(o);
    ASSERT_EQ(data.transmits, acq.transmits());
    for (int t = 0; t < data.transmits; ++t)
      for (int e = 0; e < elements; e += 5) {
        const float *i = data.i_channel(t, e), *q = data.q_channel(t, e);
        int peak = 0;
        for (int k = 1; k < data.samples; ++k)
          if (std::hypot(i[k], q[k]) > std::hypot(i[peak], q[peak])) peak = k;
        ASSERT_GT(peak, 0);
        ASSERT_LT(peak, data.samples - 1);
        const double l = std::log(std::hypot(i[peak - 1], q[peak - 1])), c = std::log(std::hypot(i[peak], q[peak])),
                     r = std::log(std::hypot(i[peak + 1], q[peak + 1]));
        const double found = peak + 0.5 * (l - r) / (l - 2 * c + r);
        const double expected = (m.transmit(t) + receive(e) - t0) * fs;
        EXPECT_NEAR(found, expected, 0.02) << "transmit " << t << ", element " << e;
      }
  }
}

// A point whose echoes all arrive after the last sample (or one lying far off) is named by
// points_outside_record; when every point is such, both simulators refuse rather than return
// data without them. The seed model's simulator likewise.
TEST(ReconDasSimulated, PointsOutsideTheRecordAreNamedAndRefusedWhenAllAre) {
  Case c = make_case(Model::PlaneWave, 2.0);  // 2400 samples at 40 MHz: to about 46 mm
  c.sim.points.push_back({0.0, 60e-3, 1});
  c.sim.points.push_back({400.0, 10e-3, 1});  // 400 m off: its sample positions would not fit an int
  const PointsOutsideRecord outside = points_outside_record(c.sim);
  EXPECT_EQ(outside.points, (std::vector<std::size_t>{3, 4}));
  EXPECT_NE(outside.message.find("point 4 at (0, 60) mm"), std::string::npos) << outside.message;
  EXPECT_NE(outside.message.find("point 5 at (400000, 10) mm"), std::string::npos) << outside.message;
  EXPECT_NO_THROW(simulate_das_channels(c.sim));
  c.sim.points.erase(c.sim.points.begin(), c.sim.points.begin() + 3);
  for (const auto& simulate : {std::function<void()>([&] { simulate_das_channels(c.sim); }),
                               std::function<void()>([&] { simulate_das_analytic(c.sim); })}) {
    try {
      simulate();
      ADD_FAILURE() << "no point in the record, no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no echo of any point lands in the record"), std::string::npos) << e.what();
    }
  }
  // Speckle alone has no points to miss.
  c.sim.points.clear();
  c.sim.speckle = 20;
  EXPECT_TRUE(points_outside_record(c.sim).points.empty());
  EXPECT_NO_THROW(simulate_das_channels(c.sim));

  SimulationOptions seed;
  seed.problem.channels = 8;
  seed.problem.samples = 300;  // to about 7.7 mm
  seed.points = {{1.0, 4.0, 1.0}, {1.0, 9.0, 1.0}};
  EXPECT_EQ(points_outside_record(seed).points, (std::vector<std::size_t>{1}));
  EXPECT_NO_THROW(simulate_seed_channels(seed));
  seed.points.erase(seed.points.begin());
  EXPECT_THROW(simulate_seed_channels(seed), Error);
}

}  // namespace
}  // namespace usrecon::recon
