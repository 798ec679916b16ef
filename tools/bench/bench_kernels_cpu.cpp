// CPU figures of usrecon::kernels: maps and sums in GB/s against memcpy measured in the same run,
// blocked SGEMM against OpenBLAS in GFLOP/s. Each kernel is checked against a reference first.
//
//   bench_kernels_cpu [--benchmark_repetitions=5] [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "bench_kernels_common.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

constexpr std::int64_t kMapN = 1 << 24;  // 64 MiB per float array: well beyond the caches

using usrecon_bench::random_floats;

void BM_Memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 1);
  uk::HostArray<float> b(uk::Shape{n});
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), static_cast<std::size_t>(n) * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));  // read + write
}
BENCHMARK(BM_Memcpy)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MapAdd(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 2), b = random_floats(n, 3);
  uk::HostArray<float> c(uk::Shape{n});
  uk::add(a, b, c);
  for (std::int64_t i = 0; i < n; i += 997)
    if (c[i] != a[i] + b[i]) return state.SkipWithError("add: wrong result");
  for (auto _ : state) {
    uk::add(a, b, c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapAdd)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MapAddBroadcastScalar(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 4);
  uk::HostArray<float> c(uk::Shape{n});
  for (auto _ : state) {
    uk::add(a, 10.0f, c);
    benchmark::ClobberMemory();
  }
  if (c[5] != a[5] + 10.0f) state.SkipWithError("add_ten: wrong result");
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapAddBroadcastScalar)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MapGaussianPdf(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = random_floats(n, 5);
  uk::HostArray<float> y(uk::Shape{n});
  for (auto _ : state) {
    uk::gaussian_pdf(x, 0.0f, 1.0f, y);
    benchmark::ClobberMemory();
  }
  if (std::abs(y[7] - uk::math::gaussian_pdf(x[7], 0.0f, 1.0f)) > 0)
    state.SkipWithError("gaussian_pdf: wrong result");
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapGaussianPdf)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

// In place (the output is the input): the map's loop reads each element before it writes it.
// Cache-resident (1 MiB), so that the loop's own speed shows, not memory's.
void BM_MapGaussianPdfInPlace(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = random_floats(n, 8);
  uk::HostArray<float> y(uk::Shape{n});
  uk::gaussian_pdf(x, 0.0f, 1.0f, y);
  uk::HostArray<float> v(uk::Shape{n});
  std::memcpy(v.data(), x.data(), static_cast<std::size_t>(n) * sizeof(float));
  uk::gaussian_pdf(v, 0.0f, 1.0f, v);
  for (std::int64_t i = 0; i < n; ++i)
    if (v[i] != y[i]) return state.SkipWithError("gaussian_pdf in place: wrong result");
  for (auto _ : state) {
    uk::gaussian_pdf(v, 0.0f, 1.0f, v);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapGaussianPdfInPlace)->Arg(1 << 18)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_MapGaussianPdfCached(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = random_floats(n, 8);
  uk::HostArray<float> y(uk::Shape{n});
  for (auto _ : state) {
    uk::gaussian_pdf(x, 0.0f, 1.0f, y);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapGaussianPdfCached)->Arg(1 << 18)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_MapAddInPlace(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto b = random_floats(n, 9);
  uk::HostArray<float> v(uk::Shape{n});
  std::memset(v.data(), 0, static_cast<std::size_t>(n) * sizeof(float));
  uk::add(v, b, v);
  for (std::int64_t i = 0; i < n; ++i)
    if (v[i] != b[i]) return state.SkipWithError("add in place: wrong result");
  for (auto _ : state) {
    uk::add(v, b, v);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapAddInPlace)->Arg(1 << 16)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_MapAddCached(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 10), b = random_floats(n, 9);
  uk::HostArray<float> c(uk::Shape{n});
  for (auto _ : state) {
    uk::add(a, b, c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapAddCached)->Arg(1 << 16)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_SumFloat(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 6);
  double ref = 0;
  for (float v : a) ref += v;
  if (std::abs(uk::sum(a) - ref) > 1e-3) return state.SkipWithError("sum: wrong result");
  for (auto _ : state) benchmark::DoNotOptimize(uk::sum(a));
  state.SetBytesProcessed(state.iterations() * n * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_SumFloat)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SumInt32(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  uk::HostArray<std::int32_t> a(uk::Shape{n});
  for (std::int64_t i = 0; i < n; ++i) a[i] = static_cast<std::int32_t>(i % 1000);
  std::int64_t ref = 0;
  for (auto v : a) ref += v;
  if (uk::sum(a) != ref) return state.SkipWithError("sum: wrong result");
  for (auto _ : state) benchmark::DoNotOptimize(uk::sum(a));
  state.SetBytesProcessed(state.iterations() * n * std::int64_t(sizeof(std::int32_t)));
}
BENCHMARK(BM_SumInt32)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

// max: validated against a plain loop first (the NaN check and the 16 compare lanes a leaf).
void BM_MaxFloat(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 7);
  float ref = a[0];
  for (float v : a) ref = ref < v ? v : ref;
  if (uk::max(a) != ref) return state.SkipWithError("max: wrong result");
  for (auto _ : state) benchmark::DoNotOptimize(uk::max(a));
  state.SetBytesProcessed(state.iterations() * n * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MaxFloat)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void sgemm_bench(benchmark::State& state, uk::MatmulAlgo algo) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n * n, 7), b = random_floats(n * n, 8);
  uk::HostArray<float> ma = a, mb = b;
  ma.reshape({n, n});
  mb.reshape({n, n});
  uk::HostArray<float> c(uk::Shape{n, n});
  if (algo == uk::MatmulAlgo::blas && !uk::have_cpu_blas())
    return state.SkipWithError("built without OpenBLAS");
  // Validate against the other implementation before timing.
  uk::matmul(ma, mb, c, algo);
  const uk::MatmulAlgo other = algo == uk::MatmulAlgo::tiled && uk::have_cpu_blas()
                                   ? uk::MatmulAlgo::blas
                                   : uk::MatmulAlgo::naive;
  const uk::HostArray<float> ref = uk::matmul(ma, mb, other);
  const double worst = usrecon_bench::max_abs_diff(c, ref);
  if (worst > 1e-5 * n) return state.SkipWithError("matmul: result differs from the reference");
  for (auto _ : state) {
    uk::matmul(ma, mb, c, algo);
    benchmark::ClobberMemory();
  }
  usrecon_bench::set_matmul_gflops(state, n);
}
void BM_SgemmBlocked(benchmark::State& state) { sgemm_bench(state, uk::MatmulAlgo::tiled); }
void BM_SgemmOpenBLAS(benchmark::State& state) { sgemm_bench(state, uk::MatmulAlgo::blas); }
BENCHMARK(BM_SgemmBlocked)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SgemmOpenBLAS)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("CPU threads: %d\n", uk::hardware_threads());
  usrecon_bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const std::string n = "/" + std::to_string(kMapN) + "/real_time";
  reporter.print_ratios({
      {"map add vs memcpy", "BM_MapAdd" + n, "BM_Memcpy" + n, 0.70},
      {"map add scalar vs memcpy", "BM_MapAddBroadcastScalar" + n, "BM_Memcpy" + n, 0.70},
      {"map gaussian_pdf vs memcpy", "BM_MapGaussianPdf" + n, "BM_Memcpy" + n, 0.0},
      {"map gaussian_pdf in place vs apart (cached)", "BM_MapGaussianPdfInPlace/262144/real_time",
       "BM_MapGaussianPdfCached/262144/real_time", 0.0},
      {"map add in place vs apart (cached)", "BM_MapAddInPlace/65536/real_time", "BM_MapAddCached/65536/real_time", 0.0},
      {"sum float vs memcpy", "BM_SumFloat" + n, "BM_Memcpy" + n, 0.0},
      {"sum int32 vs memcpy", "BM_SumInt32" + n, "BM_Memcpy" + n, 0.0},
      {"blocked sgemm 2048 vs OpenBLAS", "BM_SgemmBlocked/2048/real_time",
       "BM_SgemmOpenBLAS/2048/real_time", 0.30},
  });
  benchmark::Shutdown();
  return 0;
}
