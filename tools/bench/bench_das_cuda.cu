// Plane-wave DAS on CUDA, in points per second of kernel time (points = pixels x receive
// elements x transmits), on the real data set's size: 128 elements, 7 angles, 2688 samples, a
// 40 x 85 mm grid at 0.05 mm. Skips (prints why) when no CUDA device is there.
#include <benchmark/benchmark.h>

#include <numbers>

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
  std::unique_ptr<DasCudaBeamformer> gpu;
  try {
    gpu = std::make_unique<DasCudaBeamformer>(p);
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
  double kernel_s = 0;
  for (auto _ : state) {
    gpu->beamform(data, out.data());
    kernel_s += gpu->last_kernel_seconds();
    state.SetIterationTime(gpu->last_kernel_seconds());
  }
  state.counters["points/s"] = p.points() * state.iterations() / kernel_s;
  state.SetLabel(gpu->device());
}

BENCHMARK(BM_CudaPlaneWaveLinear)->Arg(0)->Arg(15)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
