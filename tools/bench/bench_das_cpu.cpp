// Plane-wave, diverging-wave and synthetic-aperture DAS on the CPU, in points per second
// (points = pixels x receive elements x transmits, the unit; weighted_points/s counts
// those whose weight is not zero, the work an F-number leaves). The plane-wave case is the size
// of the real data set RFdata1.mat: 128 elements, 7 angles, 2688 samples, a 40 x 85 mm grid at
// 0.05 mm. Each kernel's image is checked against the plain double reference before it is timed.
#include <benchmark/benchmark.h>

#include <time.h>

#include <numbers>

#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_simulate.hpp"

namespace {

using namespace usrecon::recon;

DasProblem planewave_problem(double fnumber) {
  DasProblem p;
  p.acquisition.model = Model::PlaneWave;
  p.acquisition.probe = {128, 0.298e-3};
  p.acquisition.fs = 20e6;
  for (int k = -3; k <= 3; ++k) p.acquisition.angles.push_back(0.5 * k * std::numbers::pi / 180);
  p.samples = 2688;
  p.grid = Grid::from_ranges(-20e-3, 20e-3, 0.05e-3, 5e-3, 90e-3, 0.05e-3);
  p.options.fnumber = fnumber;
  p.options.interp = Interp::Linear;
  return p;
}

AnalyticData data_for(const DasProblem& p) {
  DasSimulationOptions o;
  o.acquisition = p.acquisition;
  o.samples = p.samples;
  o.points = {{0, 20e-3, 1}, {2e-3, 40e-3, 1}};
  return analytic_signal(simulate_das_channels(o));
}

// Relative L2 distance of 9 columns of `image` (p's grid, img[ix * nz + iz]) from the plain
// double reference loop (das_reference) on one-column grids: the whole grid's reference would
// take minutes. 1e-4 is the unit tests' bound for linear interpolation in float. The benchmark's
// cases measured 2.4e-5 (plane waves, full aperture) to 5.4e-5 (focused waves), the same for
// every kernel (the float geometry's rounding, not the vector code's); a wrong kernel is O(1).
double columns_vs_reference(const DasProblem& p, const AnalyticData& data,
                            const std::vector<std::complex<float>>& image) {
  std::vector<std::complex<float>> got, want;
  for (int k = 0; k < 9; ++k) {
    const int ix = k * (p.grid.nx - 1) / 8;
    DasProblem column = p;
    column.grid.x0 = p.grid.x(ix);
    column.grid.nx = 1;
    const Image reference = das_reference(data, column);
    want.insert(want.end(), reference.data.begin(), reference.data.end());
    const auto first = image.begin() + std::ptrdiff_t(ix) * p.grid.nz;
    got.insert(got.end(), first, first + p.grid.nz);
  }
  return relative_l2(got, want);
}

void run(benchmark::State& state, const DasProblem& p, DasCpuKernel kernel) {
  if (!das_cpu_supports(kernel)) {
    state.SkipWithError("this CPU lacks the kernel's instruction set");
    return;
  }
  const AnalyticData data = data_for(p);
  const DasCpuBeamformer beamformer(p, 0, kernel);
  std::vector<std::complex<float>> out(p.grid.pixels());
  beamformer.beamform(data, out.data());
  if (const double error = columns_vs_reference(p, data, out); !(error <= 1e-4)) {
    state.SkipWithError(("the image disagrees with das_reference: relative L2 " + std::to_string(error)).c_str());
    return;
  }
  // The machine may be shared: besides wall-clock points/s, report points per second of this
  // process's CPU time times the thread count, i.e. the rate on that many dedicated cores.
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  };
  const double cpu_start = cpu_now();
  for (auto _ : state) {
    beamformer.beamform(data, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["points/s"] = benchmark::Counter(p.points(), benchmark::Counter::kIsIterationInvariantRate);
  const double cpu_s = (cpu_now() - cpu_start) / double(state.iterations());
  state.counters["weighted_points/s"] =  // counted after the CPU time is read: a pass over the grid
      benchmark::Counter(p.weighted_points(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["points/s_dedicated"] = p.points() / (cpu_s / beamformer.threads());
  state.counters["threads"] = beamformer.threads();
  state.SetLabel(to_string(beamformer.kernel()));
}

void BM_PlaneWaveLinearF15(benchmark::State& state) { run(state, planewave_problem(1.5), DasCpuKernel::Auto); }
void BM_PlaneWaveLinearFullAperture(benchmark::State& state) { run(state, planewave_problem(0.0), DasCpuKernel::Auto); }
void BM_PlaneWaveLinearF15Scalar(benchmark::State& state) { run(state, planewave_problem(1.5), DasCpuKernel::Scalar); }
// The kernel a CPU without AVX-512 takes (Auto takes AVX-512 where the CPU has it).
void BM_PlaneWaveLinearF15Avx2(benchmark::State& state) { run(state, planewave_problem(1.5), DasCpuKernel::Avx2); }
void BM_PlaneWaveHannF15(benchmark::State& state) {
  DasProblem p = planewave_problem(1.5);
  p.options.window = Window::Hann;
  run(state, p, DasCpuKernel::Auto);
}
void BM_SyntheticApertureLinear(benchmark::State& state) {
  DasProblem p;
  p.acquisition.model = Model::SyntheticAperture;
  p.acquisition.probe = {64, 0.3e-3};
  p.samples = 2048;
  p.grid = Grid::from_ranges(-10e-3, 10e-3, 0.1e-3, 5e-3, 40e-3, 0.05e-3);
  run(state, p, DasCpuKernel::Auto);
}

// The plane-wave case's size with 7 virtual sources 3 mm apart at depth `z` instead of the
// angles: the transmit path is a square root per pixel and transmit, not a line.
DasProblem virtual_source_problem(Model model, double z) {
  DasProblem p = planewave_problem(1.5);
  p.acquisition.model = model;
  p.acquisition.angles.clear();
  for (int k = -3; k <= 3; ++k) {
    p.acquisition.source_x.push_back(k * 3e-3);
    p.acquisition.source_z.push_back(z);
  }
  return p;
}

// Diverging waves from sources 10 mm behind the array.
void BM_DivergingWaveLinearF15(benchmark::State& state) {
  run(state, virtual_source_problem(Model::DivergingWave, -10e-3), DasCpuKernel::Auto);
}

void BM_DivergingWaveLinearF15Avx2(benchmark::State& state) {
  run(state, virtual_source_problem(Model::DivergingWave, -10e-3), DasCpuKernel::Avx2);
}

// Focused waves, their focal points 30 mm deep (the path's sign flips at that depth).
void BM_FocusedWaveLinearF15(benchmark::State& state) {
  run(state, virtual_source_problem(Model::FocusedWave, 30.0123e-3), DasCpuKernel::Auto);
}

BENCHMARK(BM_PlaneWaveLinearF15)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlaneWaveLinearFullAperture)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlaneWaveHannF15)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlaneWaveLinearF15Scalar)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_PlaneWaveLinearF15Avx2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DivergingWaveLinearF15Avx2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DivergingWaveLinearF15)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FocusedWaveLinearF15)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SyntheticApertureLinear)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
