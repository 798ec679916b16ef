// CPU figures of usrecon::kernels: maps and sums in GB/s against memcpy measured in the same run
// (on as many threads as the maps use, in chunks as theirs), blocked SGEMM against OpenBLAS in
// GFLOP/s. Each kernel's every output is checked against a plain reference before it is timed.
//
//   bench_kernels_cpu [--benchmark_repetitions=5] [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_kernels_common.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

constexpr std::int64_t kMapN = 1 << 24;  // 64 MiB per float array: well beyond the caches

using usrecon_bench::random_floats;

// The index of the first output that is not want(i) exactly, or -1: every one, before timing.
template <class Want>
std::int64_t first_wrong(const uk::HostArray<float>& got, Want want) {
  for (std::int64_t i = 0; i < std::int64_t(got.size()); ++i)
    if (!(got[i] == want(i))) return i;
  return -1;
}

void skip_wrong(benchmark::State& state, const char* what, std::int64_t i) {
  state.SkipWithError((std::string(what) + ": wrong result at element " + std::to_string(i)).c_str());
}

// The maps' memory traffic on the maps' threads (every hardware thread, chunks of 2^16 floats):
// one thread's memcpy would flatter their ratios on a machine with many cores.
void BM_Memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 1);
  uk::HostArray<float> b(uk::Shape{n});
  for (auto _ : state) {
    uk::parallel_for(std::size_t(n), std::size_t(1) << 16, 0, [&](std::size_t begin, std::size_t end) {
      std::memcpy(b.data() + begin, a.data() + begin, (end - begin) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  if (std::memcmp(a.data(), b.data(), std::size_t(n) * sizeof(float)) != 0) state.SkipWithError("memcpy: not a copy");
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));  // read + write
}
BENCHMARK(BM_Memcpy)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MapAdd(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n, 2), b = random_floats(n, 3);
  uk::HostArray<float> c(uk::Shape{n});
  uk::add(a, b, c);
  if (const auto i = first_wrong(c, [&](std::int64_t k) { return a[k] + b[k]; }); i >= 0)
    return skip_wrong(state, "add", i);
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
  uk::add(a, 10.0f, c);
  if (const auto i = first_wrong(c, [&](std::int64_t k) { return a[k] + 10.0f; }); i >= 0)
    return skip_wrong(state, "add scalar", i);
  for (auto _ : state) {
    uk::add(a, 10.0f, c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * std::int64_t(sizeof(float)));
}
BENCHMARK(BM_MapAddBroadcastScalar)->Arg(kMapN)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MapGaussianPdf(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = random_floats(n, 5);
  uk::HostArray<float> y(uk::Shape{n});
  uk::gaussian_pdf(x, 0.0f, 1.0f, y);
  if (const auto i = first_wrong(y, [&](std::int64_t k) { return uk::math::gaussian_pdf(x[k], 0.0f, 1.0f); }); i >= 0)
    return skip_wrong(state, "gaussian_pdf", i);
  for (auto _ : state) {
    uk::gaussian_pdf(x, 0.0f, 1.0f, y);
    benchmark::ClobberMemory();
  }
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
  uk::gaussian_pdf(x, 0.0f, 1.0f, y);
  if (const auto i = first_wrong(y, [&](std::int64_t k) { return uk::math::gaussian_pdf(x[k], 0.0f, 1.0f); }); i >= 0)
    return skip_wrong(state, "gaussian_pdf", i);
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
  uk::add(a, b, c);
  if (const auto i = first_wrong(c, [&](std::int64_t k) { return a[k] + b[k]; }); i >= 0)
    return skip_wrong(state, "add", i);
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

// Sums along each axis of a (4096, 4096) float32 array, all threads; checked against double
// sums of every line first. main() times NumPy's np.sum(a, axis) on the same shape beside them.
constexpr std::int64_t kSide = 4096;
void axis_sum_bench(benchmark::State& state, int axis) {
  auto a = random_floats(kSide * kSide, 11);
  a.reshape({kSide, kSide});
  const uk::HostArray<float> got = uk::sum(a, uk::Axis{axis});
  for (std::int64_t line = 0; line < kSide; ++line) {
    double want = 0, scale = 0;
    for (std::int64_t k = 0; k < kSide; ++k) {
      const double v = axis == 0 ? a[k * kSide + line] : a[line * kSide + k];
      want += v;
      scale += std::abs(v);
    }
    if (!(std::abs(double(got[line]) - want) <= 1e-5 * scale))
      return skip_wrong(state, axis == 0 ? "sum along axis 0" : "sum along axis 1", line);
  }
  uk::HostArray<float> out(uk::Shape{kSide});
  for (auto _ : state) {
    uk::sum(a, uk::Axis{axis}, out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kSide * kSide * std::int64_t(sizeof(float)));
}
void BM_SumAxis0(benchmark::State& state) { axis_sum_bench(state, 0); }
void BM_SumAxis1(benchmark::State& state) { axis_sum_bench(state, 1); }
BENCHMARK(BM_SumAxis0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SumAxis1)->UseRealTime()->Unit(benchmark::kMillisecond);

// hypot on one thread, 2^22 pairs spread over magnitudes 2^-20 to 2^20: the library's ufunc
// (checked first against long double: within an ulp everywhere), the tutorial's formula
// x·sqrt(1 + (y/x)²) and glibc's std::hypot (which NumPy calls) as plain loops beside it.
constexpr std::int64_t kHypotN = std::int64_t(1) << 22;
template <class T>
std::pair<uk::HostArray<T>, uk::HostArray<T>> hypot_inputs() {
  std::mt19937_64 gen(12);
  std::uniform_real_distribution<double> exponent(-20, 20), mantissa(-1, 1);
  uk::HostArray<T> x(uk::Shape{kHypotN}), y(uk::Shape{kHypotN});
  for (std::int64_t i = 0; i < kHypotN; ++i) {
    x[i] = static_cast<T>(mantissa(gen) * std::exp2(exponent(gen)));
    y[i] = static_cast<T>(mantissa(gen) * std::exp2(exponent(gen)));
  }
  return {std::move(x), std::move(y)};
}
template <class T>
T tutorial_hypot(T x, T y) {  // the tutorial's @jit hypot
  x = std::abs(x);
  y = std::abs(y);
  const T t = std::min(x, y);
  x = std::max(x, y);
  const T r = t / x;
  return x * std::sqrt(T(1) + r * r);
}
enum class HypotKind { library, tutorial, glibc };
template <class T>
void hypot_bench(benchmark::State& state, HypotKind kind) {
  const auto [x, y] = hypot_inputs<T>();
  uk::HostArray<T> h(uk::Shape{kHypotN});
  const auto run = [&] {
    if (kind == HypotKind::library) uk::hypot(x, y, h, uk::Exec{1});
    else if (kind == HypotKind::tutorial)
      for (std::int64_t i = 0; i < kHypotN; ++i) h[i] = tutorial_hypot(x[i], y[i]);
    else
      for (std::int64_t i = 0; i < kHypotN; ++i) h[i] = std::hypot(x[i], y[i]);
  };
  run();
  const T ulps = kind == HypotKind::tutorial ? T(4) : T(1);  // the tutorial's is 1-2 ulp off
  for (std::int64_t i = 0; i < kHypotN; ++i) {
    const long double exact = std::sqrt((long double)x[i] * x[i] + (long double)y[i] * y[i]);
    const long double ulp = std::nextafter(static_cast<T>(exact), std::numeric_limits<T>::infinity()) - static_cast<T>(exact);
    if (!(std::abs(h[i] - exact) <= ulps * ulp)) return skip_wrong(state, "hypot", i);
  }
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kHypotN * 3 * std::int64_t(sizeof(T)));
}
void BM_HypotFloat(benchmark::State& s) { hypot_bench<float>(s, HypotKind::library); }
void BM_HypotFloatTutorial(benchmark::State& s) { hypot_bench<float>(s, HypotKind::tutorial); }
void BM_HypotDouble(benchmark::State& s) { hypot_bench<double>(s, HypotKind::library); }
void BM_HypotDoubleTutorial(benchmark::State& s) { hypot_bench<double>(s, HypotKind::tutorial); }
void BM_HypotDoubleGlibc(benchmark::State& s) { hypot_bench<double>(s, HypotKind::glibc); }
BENCHMARK(BM_HypotFloat)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HypotFloatTutorial)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HypotDouble)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HypotDoubleTutorial)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HypotDoubleGlibc)->UseRealTime()->Unit(benchmark::kMillisecond);

// NumPy's np.sum along each axis of a random (4096, 4096) float32 array: the median of 9 after
// a warm-up, in ms, from /usr/bin/python3 (nothing when NumPy is missing).
std::vector<double> numpy_axis_sum_ms() {
  FILE* pipe = popen("/usr/bin/python3 -c '\n"
                     "import numpy as np, time, statistics\n"
                     "a = np.random.default_rng(1).random((4096, 4096), dtype=np.float32)\n"
                     "for axis in (0, 1):\n"
                     "    np.sum(a, axis=axis)\n"
                     "    t = []\n"
                     "    for _ in range(9):\n"
                     "        s = time.perf_counter(); np.sum(a, axis=axis); t.append(time.perf_counter() - s)\n"
                     "    print(1e3 * statistics.median(t))\n"
                     "' 2>/dev/null",
                     "r");
  std::vector<double> ms;
  if (!pipe) return ms;
  double v = 0;
  while (std::fscanf(pipe, "%lf", &v) == 1) ms.push_back(v);
  pclose(pipe);
  return ms.size() == 2 ? ms : std::vector<double>{};
}

void sgemm_bench(benchmark::State& state, uk::MatmulAlgo algo) {
  const std::int64_t n = state.range(0);
  const auto a = random_floats(n * n, 7), b = random_floats(n * n, 8);
  uk::HostArray<float> ma = a, mb = b;
  ma.reshape({n, n});
  mb.reshape({n, n});
  uk::HostArray<float> c(uk::Shape{n, n});
  if (algo == uk::MatmulAlgo::blas && !uk::have_cpu_blas())
    return state.SkipWithError("built without OpenBLAS");
  // Validated before timing against double dot products at 256 sampled entries.
  uk::matmul(ma, mb, c, algo);
  const double worst = usrecon_bench::sgemm_sample_error(a, b, c, n);
  state.counters["err_vs_double"] = worst;
  if (!(worst <= usrecon_bench::kSgemmSampleBound))
    return state.SkipWithError(("matmul is off by " + std::to_string(worst) + " of sum |a b| from double dot products").c_str());
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
      {"hypot float vs the tutorial's formula", "BM_HypotFloat/real_time", "BM_HypotFloatTutorial/real_time", 0.0},
      {"hypot double vs the tutorial's formula", "BM_HypotDouble/real_time", "BM_HypotDoubleTutorial/real_time", 0.0},
      {"hypot double vs glibc std::hypot", "BM_HypotDouble/real_time", "BM_HypotDoubleGlibc/real_time", 0.0},
  });
  // Axis sums against NumPy's, in the same run (np.sum on one thread, ours on all).
  const std::vector<double> numpy_ms = numpy_axis_sum_ms();
  for (int axis = 0; axis < 2; ++axis) {
    const double gbs = reporter.figure("BM_SumAxis" + std::to_string(axis) + "/real_time");
    if (gbs == 0 || numpy_ms.empty()) {
      std::printf("  %-40s not measured (NumPy missing or the benchmark filtered out)\n",
                  ("sum along axis " + std::to_string(axis) + " vs NumPy").c_str());
      continue;
    }
    const double ours_ms = 1e3 * double(kSide * kSide) * sizeof(float) / (gbs * 1e9);
    std::printf("  %-40s NumPy %.2f ms / ours %.2f ms = %.2f (NumPy's time over ours)\n",
                ("sum along axis " + std::to_string(axis) + " (4096, 4096) f32").c_str(), numpy_ms[std::size_t(axis)],
                ours_ms, numpy_ms[std::size_t(axis)] / ours_ms);
  }
  benchmark::Shutdown();
  return 0;
}
