// Plane-wave DAS on CUDA, in points per second of kernel time (points = pixels x receive
// elements x transmits; weighted_points/s counts those whose weight is not zero), on the real data set's size: 128 elements, 7 angles, 2688 samples, a
// 40 x 85 mm grid at 0.05 mm; and on PICMUS's: 128 elements, 75 angles, 3328 samples. Every CUDA
// kernel (DasCudaKernel), each checked against the CPU before it is timed. Skips (prints why)
// when no CUDA device is there.
#include <benchmark/benchmark.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <string>

#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_simulate.hpp"

namespace {

using namespace usrecon::recon;

void BM_CudaPlaneWaveLinear(benchmark::State& state) {
  DasProblem p;
  p.acquisition.probe = {128, 0.298e-3};
  p.acquisition.fs = 20e6;
  for (int k = -3; k <= 3; ++k) p.acquisition.angles.push_back(0.5 * k * std::numbers::pi / 180);
  p.samples = 2688;
  p.grid = Grid::from_ranges(-20e-3, 20e-3, 0.05e-3, 5e-3, 90e-3, 0.05e-3);
  p.options.fnumber = static_cast<double>(state.range(0)) / 10.0;
  const auto kernel = static_cast<DasCudaKernel>(state.range(1));
  if (state.range(2) == 75) {  // PICMUS's plane-wave sequence: 75 angles over +-16 degrees
    p.acquisition.angles.clear();
    for (int k = 0; k < 75; ++k) p.acquisition.angles.push_back((-16.0 + k * 32.0 / 74) * std::numbers::pi / 180);
    p.samples = 3328;
  }
  std::unique_ptr<DasCudaBeamformer> gpu;
  try {
    gpu = std::make_unique<DasCudaBeamformer>(p, kernel);
  } catch (const usrecon::CudaUnavailable& e) {
    state.SkipWithError(e.what());
    return;
  }
  DasSimulationOptions o;
  o.acquisition = p.acquisition;
  o.samples = p.samples;
  o.points = {{0, 20e-3, 1}, {2e-3, 40e-3, 1}};
  const AnalyticData data = analytic_signal(simulate_das_channels(o));
  std::vector<std::complex<float>> out(p.grid.pixels());
  // Validated before timed: against the CPU beamformer on the same data.
  gpu->beamform(data, out.data());
  const Image cpu = DasCpuBeamformer(p).beamform(data);
  const double rel_l2 = relative_l2(out, cpu.data);
  if (!(rel_l2 <= 1e-5)) {
    state.SkipWithError(("disagrees with the CPU: relative L2 " + std::to_string(rel_l2)).c_str());
    return;
  }
  double kernel_s = 0;
  for (auto _ : state) {
    gpu->beamform(data, out.data());
    kernel_s += gpu->last_kernel_seconds();
    state.SetIterationTime(gpu->last_kernel_seconds());
  }
  state.counters["points/s"] = p.points() * state.iterations() / kernel_s;
  // The points whose weight is not zero (the kernels skip the rest): the work an F-number leaves.
  state.counters["weighted_points/s"] = p.weighted_points() * state.iterations() / kernel_s;
  state.counters["rel_l2_vs_cpu"] = rel_l2;
  state.SetLabel(gpu->device() + " " + to_string(gpu->kernel()));
}

// Args: F-number x 10, kernel (1 pixel-per-thread, 2 element-outer, 3 transmit-blocked), angles
// (7 or 75).
BENCHMARK(BM_CudaPlaneWaveLinear)
    ->ArgsProduct({{0, 15}, {1, 2, 3}, {7}})
    ->Args({15, 1, 75})
    ->Args({15, 2, 75})
    ->Args({15, 3, 75})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
