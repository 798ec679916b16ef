// GPU figures of usrecon::kernels: device-to-device copy bandwidth, maps and sums in GB/s measured
// in the same run, the tiled SGEMM against cuBLAS SGEMM (TF32 off) at 4096 in GFLOP/s. Every
// kernel is validated against a reference before it is timed (into an output zeroed first, on
// random inputs, at every 4099th element; SGEMM against double dot products); times come from
// CUDA events after a warm-up call.
// Without a device it prints "no CUDA device" and exits 0. (tools/gpu-check.sh runs
// kernels_cuda_check instead, which needs no Google Benchmark.)
//
//   bench_kernels_cuda [--benchmark_repetitions=5] [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "bench_kernels_common.hpp"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

constexpr std::int64_t kN = std::int64_t(1) << 27;  // 512 MiB per float array

using usrecon_bench::random_floats;

/// True when got[i] == want(i) at every 4099th index and the last one.
template <class F>
bool sampled_equal(const uk::HostArray<float>& got, F&& want) {
  const auto n = static_cast<std::int64_t>(got.size());
  for (std::int64_t i = 0; i < n; i += 4099)
    if (!(got[i] == want(i))) return false;
  return n == 0 || got[n - 1] == want(n - 1);
}

// Times `body` with CUDA events on `stream`, per call: each iteration runs `calls` calls back to
// back between one pair of events (as kernels_cuda_check does, so that the host's enqueue time is
// hidden behind the previous call), `calls` chosen from a timed warm-up call so that an
// iteration lasts about 2 ms (at most 64).
template <class F>
void time_with_events(benchmark::State& state, uk::Stream& stream, F&& body) {
  uk::Event start, stop;
  start.record(stream);
  body();
  stop.record(stream);
  const double warm_ms = uk::Event::elapsed_ms(start, stop);
  const int calls = std::clamp(static_cast<int>(std::ceil(2.0 / std::max(warm_ms, 1e-3))), 1, 64);
  for (auto _ : state) {
    start.record(stream);
    for (int c = 0; c < calls; ++c) body();
    stop.record(stream);
    state.SetIterationTime(1e-3 * uk::Event::elapsed_ms(start, stop) / calls);
  }
  state.counters["calls_per_sample"] = calls;
}

void BM_CudaCopyD2D(benchmark::State& state) {
  uk::Stream stream;
  const auto ha = random_floats(kN, 7);
  const auto a = uk::to_device(ha, stream);
  auto b = uk::device_array<float>({kN});
  b.buffer().zero(stream);
  uk::copy_async(b.span(), a.span(), stream);
  if (!sampled_equal(b.copy_to_host(stream), [&](std::int64_t i) { return ha[i]; }))
    return state.SkipWithError("d2d copy: wrong result");
  time_with_events(state, stream, [&] { uk::copy_async(b.span(), a.span(), stream); });
  state.SetBytesProcessed(state.iterations() * kN * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_CudaCopyD2D)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaMapAdd(benchmark::State& state) {
  uk::Stream stream;
  const auto ha = random_floats(kN, 1), hb = random_floats(kN, 2);
  const auto a = uk::to_device(ha, stream), b = uk::to_device(hb, stream);
  auto c = uk::device_array<float>({kN});
  c.buffer().zero(stream);
  uk::add(a, b, c, uk::Exec{0, stream});
  if (!sampled_equal(c.copy_to_host(stream), [&](std::int64_t i) { return ha[i] + hb[i]; }))
    return state.SkipWithError("add: wrong result");
  time_with_events(state, stream, [&] { uk::add(a, b, c, uk::Exec{0, stream}); });
  state.SetBytesProcessed(state.iterations() * kN * 3 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_CudaMapAdd)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaMapAddScalar(benchmark::State& state) {
  uk::Stream stream;
  const auto ha = random_floats(kN, 3);
  const auto a = uk::to_device(ha, stream);
  auto c = uk::device_array<float>({kN});
  c.buffer().zero(stream);
  uk::add(a, 10.0f, c, uk::Exec{0, stream});
  if (!sampled_equal(c.copy_to_host(stream), [&](std::int64_t i) { return ha[i] + 10.0f; }))
    return state.SkipWithError("add scalar: wrong result");
  time_with_events(state, stream, [&] { uk::add(a, 10.0f, c, uk::Exec{0, stream}); });
  state.SetBytesProcessed(state.iterations() * kN * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_CudaMapAddScalar)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaMapGaussianPdf(benchmark::State& state) {
  uk::Stream stream;
  const auto hx = random_floats(kN, 4);
  const auto x = uk::to_device(hx, stream);
  auto y = uk::device_array<float>({kN});
  y.buffer().zero(stream);
  uk::gaussian_pdf(x, 0.0f, 1.0f, y, uk::Exec{0, stream});
  const auto hy = y.copy_to_host(stream);
  for (std::int64_t i = 0; i < kN; i += 4099)  // the device's expf may differ from the host's by an ulp
    if (!(std::abs(hy[i] - uk::math::gaussian_pdf(hx[i], 0.0f, 1.0f)) <= 1e-6f))
      return state.SkipWithError("gaussian_pdf: wrong result");
  time_with_events(state, stream, [&] { uk::gaussian_pdf(x, 0.0f, 1.0f, y, uk::Exec{0, stream}); });
  state.SetBytesProcessed(state.iterations() * kN * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_CudaMapGaussianPdf)->UseManualTime()->Unit(benchmark::kMicrosecond);

template <class T>
void sum_bench(benchmark::State& state) {
  uk::Stream stream;
  uk::HostArray<T> h(uk::Shape{kN});
  for (std::int64_t i = 0; i < kN; ++i) h[i] = static_cast<T>(i % 1000) / T(8);
  const auto d = uk::to_device(h, stream);
  const double cpu = static_cast<double>(uk::sum(h));
  const double gpu = static_cast<double>(uk::sum(d, uk::Exec{0, stream}));
  if (std::abs(gpu - cpu) > 1e-6 * std::abs(cpu)) return state.SkipWithError("sum: differs from the CPU");
  // Timed into a device output, as a loop of sums on the GPU runs: nothing waits or copies back.
  // That form is checked too (it enqueues its own kernels).
  uk::DeviceArray<uk::sum_type_t<T>> out(uk::Shape{1});
  uk::sum(d, out, uk::Exec{0, stream});
  if (static_cast<double>(out.copy_to_host(stream)[0]) != gpu)
    return state.SkipWithError("sum into a device output differs from sum()");
  time_with_events(state, stream, [&] { uk::sum(d, out, uk::Exec{0, stream}); });
  state.SetBytesProcessed(state.iterations() * kN * std::int64_t(sizeof(T)));
}
void BM_CudaSumFloat(benchmark::State& state) { sum_bench<float>(state); }
void BM_CudaSumInt32(benchmark::State& state) { sum_bench<std::int32_t>(state); }
BENCHMARK(BM_CudaSumFloat)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CudaSumInt32)->UseManualTime()->Unit(benchmark::kMicrosecond);

void sgemm_bench(benchmark::State& state, uk::MatmulAlgo algo) {
  const std::int64_t n = state.range(0);
  uk::Stream stream;
  const auto ha = random_floats(n * n, 5), hb = random_floats(n * n, 6);
  uk::DeviceArray<float> a({n, n}), b({n, n}), c({n, n});
  a.copy_from_host(ha, stream);
  b.copy_from_host(hb, stream);
  // Validated before timing, either algorithm, against double dot products at 256 sampled
  // entries: within a float32 dot product's error (TF32 inputs, 100 times that, fail).
  c.buffer().zero(stream);
  uk::matmul(a, b, c, algo, uk::Exec{0, stream});
  const auto hc = c.copy_to_host(stream);
  const double worst = usrecon_bench::sgemm_sample_error(ha, hb, hc, n);
  state.counters["err_vs_double"] = worst;
  if (!(worst <= usrecon_bench::kSgemmSampleBound))
    return state.SkipWithError(("matmul is off by " + std::to_string(worst) +
                                " of sum |a b| from double dot products (TF32 on?)").c_str());
  time_with_events(state, stream, [&] { uk::matmul(a, b, c, algo, uk::Exec{0, stream}); });
  usrecon_bench::set_matmul_gflops(state, n);
}
void BM_CudaSgemmTiled(benchmark::State& state) { sgemm_bench(state, uk::MatmulAlgo::tiled); }
void BM_CudaSgemmCublas(benchmark::State& state) { sgemm_bench(state, uk::MatmulAlgo::blas); }
BENCHMARK(BM_CudaSgemmTiled)->Arg(4096)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaSgemmCublas)->Arg(4096)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (usrecon::cuda_device_count() == 0) {
    std::printf("no CUDA device: bench_kernels_cuda has nothing to measure (built with CUDA: %s)\n",
                usrecon::built_with_cuda() ? "yes" : "no");
    return 0;
  }
  cudaDeviceProp prop{};
  USRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  usrecon_bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const std::string copy = "BM_CudaCopyD2D/manual_time";
  reporter.print_ratios({
      {"map add vs D2D copy", "BM_CudaMapAdd/manual_time", copy, 0.80},
      {"map add scalar vs D2D copy", "BM_CudaMapAddScalar/manual_time", copy, 0.80},
      {"map gaussian_pdf vs D2D copy", "BM_CudaMapGaussianPdf/manual_time", copy, 0.80},
      {"sum float vs D2D copy", "BM_CudaSumFloat/manual_time", copy, 0.80},
      {"sum int32 vs D2D copy", "BM_CudaSumInt32/manual_time", copy, 0.80},
      {"tiled sgemm 4096 vs cuBLAS (TF32 off)", "BM_CudaSgemmTiled/4096/manual_time",
       "BM_CudaSgemmCublas/4096/manual_time", 0.50},
  });
  benchmark::Shutdown();
  return 0;
}
