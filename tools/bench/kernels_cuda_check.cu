// The GPU targets of usrecon::kernels checked and measured with nothing but CUDA, cuBLAS and this
// project's sources (no Google Benchmark: the lent GPU machine has none, so tools/gpu-check.sh can
// build this with nvcc alone). The same sizes and validations as bench_kernels_cuda.cu:
//
//   - device-to-device copy, maps (add of two arrays, add of a scalar), sums (float, int32),
//     max (float) and sums along each axis of a square float array on 2^27-element arrays (512
//     MiB each), in GB/s; targets: maps, sums and max >= 80 % of the copy's bandwidth measured in
//     the same run (the axis sums have none yet: a first measurement, in GB/s);
//   - the tiled float32 matmul at 4096 x 4096 against cuBLAS SGEMM (TF32 off), in GFLOP/s;
//     target: tiled >= 50 % of cuBLAS.
//
// Every kernel is validated before it is timed: copy and maps elementwise on a sample of indices,
// sums against a double sum on the host, min and max against the host's, both SGEMMs against double dot products on the host at
// sampled entries, the tiled SGEMM also bit for bit against sequential fused dot products there
// (its defined order) and against cuBLAS in relative L2. A kernel that fails is not timed,
// says why, and makes the exit code 1. Times come from CUDA events around runs of calls back to
// back (about 2 ms a run) after a warm-up call; the figure is the median of --reps runs. Without a device it prints a skip line and exits
// 0. Prints "RESULT kernels_<name>=<value>" lines for the table of tools/gpu-check.sh. Also:
// monte_carlo_pi's GPU count equals the CPU's. --small validates everything but the tall matmul
// at small sizes and times nothing: gpu-check runs it under compute-sanitizer. --sgemm-only runs
// the SGEMM check alone: gpu-check times a build of the tiled kernel with one block per
// multiprocessor (plain launch bounds) with it (kernels/cuda/matmul.cu, USRECON_GEMM_MIN_BLOCKS_PER_SM).
//   kernels_cuda_check [--reps N] [--small] [--sgemm-only]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_data.hpp"
#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/kernels.hpp"

namespace uk = usrecon::kernels;

namespace {

// Sizes: the targets' by default; --small (for compute-sanitizer, which runs kernels 10-100x
// slower) validates at sizes that are not multiples of any block or tile and times nothing.
std::int64_t g_elements = std::int64_t(1) << 27;  // elements per bandwidth array (512 MiB floats)
std::int64_t g_sgemm_n = 4096;
bool g_small = false;
constexpr std::int64_t kSampleStep = 4099;  // elementwise checks look at every 4099th index

// Bounds, with their reasons (measured on the CPU for k = 4096, inputs uniform in [-1, 1)):
// a float32 dot product accumulated in order is off by <= 2.1e-7 of sum |a_k b_k| and 1.2e-6 in
// relative L2; TF32 inputs make that 2.6e-5 and 2.6e-4, so these bounds also catch TF32.
constexpr double kSgemmSampleBound = 1e-6;  // |c - exact| / sum |a_ik b_kj| at sampled entries
constexpr double kSgemmL2Bound = 1e-5;      // ||tiled - cuBLAS|| / ||cuBLAS||
constexpr double kSumFloatBound = 1e-6;     // |gpu - host double| / |host double|

struct Timing {
  double median_ms = 0;  // per call
  double min_ms = 0;
  int calls = 0;  // calls back to back in each timed sample
};

/// Times `body` on `stream` with CUDA events, per call: `reps` samples, each `calls` calls back to
/// back between one pair of events, with `calls` chosen from a timed warm-up call so that a sample
/// lasts about 2 ms (at most 64 calls). Back to back, a call's launch is enqueued while the one
/// before runs, so the host's enqueue time (and the stream-ordered pool's, for sum's scratch) is
/// not counted into a 130 us pass over 512 MiB, as it would be between events on an idle stream.
/// With --small, nothing is timed.
template <class F>
Timing time_with_events(const uk::Stream& stream, int reps, F&& body) {
  if (g_small) return {};
  uk::Event start, stop;
  start.record(stream);
  body();  // the warm-up
  stop.record(stream);
  const double warm_ms = uk::Event::elapsed_ms(start, stop);
  const int calls = std::clamp(static_cast<int>(std::ceil(2.0 / std::max(warm_ms, 1e-3))), 1, 64);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    start.record(stream);
    for (int c = 0; c < calls; ++c) body();
    stop.record(stream);
    ms.push_back(uk::Event::elapsed_ms(start, stop) / calls);
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  const double median = ms.size() % 2 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  return {median, ms.front(), calls};
}

/// What was measured (by RESULT name, without the "kernels_" prefix) and how many checks failed.
class Report {
 public:
  explicit Report(int reps) : reps_(reps) {}
  [[nodiscard]] int reps() const noexcept { return reps_; }
  [[nodiscard]] int failures() const noexcept { return failures_; }

  /// A validation failure or an error: no time for `what`.
  void fail(const std::string& what, const std::string& why) {
    std::printf("%s: FAILED: %s: not timed\n", what.c_str(), why.c_str());
    ++failures_;
  }
  void result(const std::string& key, double value) {
    std::printf("RESULT kernels_%s=%.6g\n", key.c_str(), value);
  }
  /// Records a figure: `amount` (bytes or flops) per call, in GB/s or GFLOP/s.
  void figure(const std::string& key, const std::string& label, const Timing& t, double amount,
              const char* unit) {
    if (g_small) return;  // validation only
    const double value = amount / (t.median_ms * 1e-3) * 1e-9;
    std::printf("%-26s median %9.3f ms a call over %d runs of %d calls (min %9.3f ms): %10.1f %s\n",
                label.c_str(), t.median_ms, reps_, t.calls, t.min_ms, value, unit);
    figures_[key] = value;
    result(key, value);
  }
  /// Prints and records figure(num) / figure(den) when both were measured.
  void ratio(const std::string& key, const std::string& label, const std::string& num,
             const std::string& den, double target) {
    const auto a = figures_.find(num), b = figures_.find(den);
    if (a == figures_.end() || b == figures_.end()) {
      std::printf("%-36s not measured\n", label.c_str());
      return;
    }
    const double r = a->second / b->second;
    std::printf("%-36s %10.1f / %10.1f = %5.3f  (target >= %.2f) %s\n", label.c_str(), a->second,
                b->second, r, target, r >= target ? "met" : "NOT MET");
    result(key, r);
  }

  /// Runs one group of checks; an exception fails the group with its message.
  template <class F>
  void guarded(const char* what, F&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }

 private:
  int reps_;
  int failures_ = 0;
  std::map<std::string, double> figures_;
};

/// Compares got[i] with want(i) exactly at every kSampleStep-th index and at the last one; on a
/// mismatch returns why, else an empty string.
template <class F>
std::string sampled_mismatch(const uk::HostArray<float>& got, F&& want) {
  const auto n = static_cast<std::int64_t>(got.size());
  auto mismatch = [&](std::int64_t i) -> std::string {
    const float w = want(i);
    if (got[i] == w) return {};
    char why[160];
    std::snprintf(why, sizeof why, "element %lld is %.9g, expected %.9g", static_cast<long long>(i),
                  double(got[i]), double(w));
    return why;
  };
  for (std::int64_t i = 0; i < n; i += kSampleStep)
    if (std::string why = mismatch(i); !why.empty()) return why;
  return n > 0 ? mismatch(n - 1) : std::string();
}

/// D2D copy and the maps on g_elements floats: each validated, then timed.
void check_bandwidth_maps(const uk::Stream& stream, Report& report) {
  const uk::Exec exec{0, stream};
  const auto ha = usrecon_bench::random_floats(g_elements, 1);
  const auto hb = usrecon_bench::random_floats(g_elements, 2);
  const auto a = uk::to_device(ha, stream), b = uk::to_device(hb, stream);
  auto c = uk::device_array<float>({g_elements});
  const double bytes = double(g_elements) * sizeof(float);

  // Each validation writes into a zeroed c, so a kernel that writes nothing cannot pass.
  auto validate = [&](const char* what, auto&& run, auto&& want) {
    c.buffer().zero(stream);
    run();
    const std::string why = sampled_mismatch(c.copy_to_host(stream), want);
    if (!why.empty()) report.fail(what, why);
    return why.empty();
  };

  auto copy = [&] { uk::copy_async(c.span(), a.span(), stream); };
  if (validate("d2d copy", copy, [&](std::int64_t i) { return ha[i]; }))
    report.figure("d2d_copy_gbs", "d2d copy (GB/s)", time_with_events(stream, report.reps(), copy),
                  2 * bytes, "GB/s");

  auto add = [&] { uk::add(a, b, c, exec); };
  if (validate("map add", add, [&](std::int64_t i) { return ha[i] + hb[i]; }))
    report.figure("map_add_gbs", "map add a + b (GB/s)",
                  time_with_events(stream, report.reps(), add), 3 * bytes, "GB/s");

  auto add_scalar = [&] { uk::add(a, 10.0f, c, exec); };
  if (validate("map add scalar", add_scalar, [&](std::int64_t i) { return ha[i] + 10.0f; }))
    report.figure("map_add_scalar_gbs", "map add a + 10 (GB/s)",
                  time_with_events(stream, report.reps(), add_scalar), 2 * bytes, "GB/s");
}

/// sum() of g_elements elements of T against a double sum on the host, then timed.
template <class T>
void check_sum(const uk::Stream& stream, Report& report, const std::string& key,
               const char* label) {
  const uk::Exec exec{0, stream};
  uk::HostArray<T> h(uk::Shape{g_elements});
  for (std::int64_t i = 0; i < g_elements; ++i) h[i] = static_cast<T>(i % 1000) / T(8);
  double want = 0;  // exact: every partial sum is a multiple of 1/8 far below 2^50
  for (const T v : h) want += double(v);
  const auto d = uk::to_device(h, stream);
  const double got = double(uk::sum(d, exec));
  const double rel = std::abs(got - want) / std::abs(want);
  const double bound = std::is_integral_v<T> ? 0.0 : kSumFloatBound;
  report.result(key + "_rel_err", rel);
  if (!(rel <= bound)) {
    char why[200];
    std::snprintf(why, sizeof why,
                  "GPU sum %.17g, host double sum %.17g: relative error %.3g > %.3g", got, want,
                  rel, bound);
    return report.fail(label, why);
  }
  // Timed into a device output, as a loop of sums on the GPU runs: nothing waits or copies back.
  uk::DeviceArray<uk::sum_type_t<T>> out(uk::Shape{1});
  uk::sum(d, out, exec);
  const double into = double(out.copy_to_host(stream)[0]);
  if (into != got) {
    char why[200];
    std::snprintf(why, sizeof why, "sum into a device output %.17g, sum() %.17g", into, got);
    return report.fail(label, why);
  }
  const Timing t = time_with_events(stream, report.reps(), [&] { uk::sum(d, out, exec); });
  report.figure(key + "_gbs", std::string(label) + " (GB/s)", t, double(g_elements) * sizeof(T),
                "GB/s");
}

/// min() and max() of g_elements floats against the host's, then max timed into a device output.
void check_extremes(const uk::Stream& stream, Report& report) {
  const uk::Exec exec{0, stream};
  uk::HostArray<float> h(uk::Shape{g_elements});
  for (std::int64_t i = 0; i < g_elements; ++i) h[i] = static_cast<float>((i * 7919) % 1000003) - 500000.0f;
  h[g_elements / 3] = -1e9f;
  h[g_elements - 1] = 1e9f;
  const auto d = uk::to_device(h, stream);
  const float least = uk::min(d, exec), greatest = uk::max(d, exec);
  if (least != uk::min(h) || greatest != uk::max(h) || least != -1e9f || greatest != 1e9f) {
    char why[200];
    std::snprintf(why, sizeof why, "GPU min %.9g and max %.9g, host %.9g and %.9g (want -1e9 and 1e9)", least,
                  greatest, uk::min(h), uk::max(h));
    return report.fail("min/max float", why);
  }
  uk::DeviceArray<float> out(uk::Shape{1});
  uk::max(d, out, exec);  // the timed form, checked before it is timed
  if (out.copy_to_host(stream)[0] != greatest) return report.fail("min/max float", "max into a device output differs");
  const Timing t = time_with_events(stream, report.reps(), [&] { uk::max(d, out, exec); });
  report.figure("max_gbs", "max float (GB/s)", t, double(g_elements) * sizeof(float), "GB/s");
}

/// sum() along each axis of a square float array of g_elements (2^27: 11585 x 11585 rounded to
/// 11584) against the CPU's (within 1e-5 relative: other orders), then timed into device outputs.
void check_axis_sums(const uk::Stream& stream, Report& report) {
  const uk::Exec exec{0, stream};
  auto side = static_cast<std::int64_t>(std::sqrt(double(g_elements)));
  side -= side % 64;
  if (side < 64) side = 64;
  uk::HostArray<float> h(uk::Shape{side, side});
  for (std::int64_t i = 0; i < h.shape().size(); ++i) h[i] = static_cast<float>((i * 7919) % 1009) / 1009.0f;
  const auto d = uk::to_device(h, stream);
  for (const int axis : {0, 1}) {
    const std::string key = "sum_axis" + std::to_string(axis), label = "sum along axis " + std::to_string(axis);
    uk::DeviceArray<float> out(uk::Shape{side});
    uk::sum(d, uk::Axis{axis}, out, exec);
    const uk::HostArray<float> got = out.copy_to_host(stream);
    const uk::HostArray<float> want = uk::sum(h, uk::Axis{axis});
    double worst = 0;
    for (std::int64_t i = 0; i < side; ++i)
      worst = std::max(worst, std::abs(double(got[i]) - double(want[i])) / std::max(1e-30, std::abs(double(want[i]))));
    report.result(key + "_rel_err", worst);
    if (!(worst <= 1e-5)) {
      char why[160];
      std::snprintf(why, sizeof why, "GPU and CPU sums along axis %d differ by %.3g relative (> 1e-5)", axis, worst);
      report.fail(label.c_str(), why);
      continue;
    }
    const Timing t = time_with_events(stream, report.reps(), [&] { uk::sum(d, uk::Axis{axis}, out, exec); });
    report.figure(key + "_gbs", label + " (GB/s)", t, double(side) * double(side) * sizeof(float), "GB/s");
  }
}

/// ||x - ref|| / ||ref||, accumulated in double.
double relative_l2(const uk::HostArray<float>& x, const uk::HostArray<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / den);
}

/// The tiled SGEMM and cuBLAS SGEMM at g_sgemm_n: both against double dot products at sampled
/// entries, the tiled one against cuBLAS everywhere; then each timed.
void check_sgemm(const uk::Stream& stream, Report& report) {
  const std::int64_t n = g_sgemm_n;
  const uk::Exec exec{0, stream};
  const auto ha = usrecon_bench::random_floats(n * n, 5);
  const auto hb = usrecon_bench::random_floats(n * n, 6);
  uk::DeviceArray<float> a({n, n}), b({n, n}), tiled({n, n}), blas({n, n});
  a.copy_from_host(ha, stream);
  b.copy_from_host(hb, stream);
  uk::matmul(a, b, blas, uk::MatmulAlgo::blas, exec);
  uk::matmul(a, b, tiled, uk::MatmulAlgo::tiled, exec);
  const auto h_blas = blas.copy_to_host(stream), h_tiled = tiled.copy_to_host(stream);

  // Worst |c - exact| / sum |a_ik b_kj| over 256 random entries.
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> index(0, n - 1);
  // The tiled kernel's every output is a sequential fused dot product (usrecon/kernels/
  // gemm_tiled.hpp): at the sampled entries it must equal one computed here bit for bit.
  double worst_blas = 0, worst_tiled = 0;
  int fused_mismatches = 0;
  for (int s = 0; s < 256; ++s) {
    const std::int64_t i = index(rng), j = index(rng);
    double exact = 0, scale = 0;
    float fused = 0;
    for (std::int64_t p = 0; p < n; ++p) {
      const double prod = double(ha[i * n + p]) * double(hb[p * n + j]);
      exact += prod;
      scale += std::abs(prod);
      fused = std::fma(ha[i * n + p], hb[p * n + j], fused);
    }
    fused_mismatches += !(h_tiled[i * n + j] == fused);
    auto keep_worst = [&](double& worst, float got) {  // NaN, once seen, stays
      const double e = std::abs(double(got) - exact) / scale;
      if (std::isnan(e) || e > worst) worst = e;
    };
    keep_worst(worst_blas, h_blas[i * n + j]);
    keep_worst(worst_tiled, h_tiled[i * n + j]);
  }
  const double l2 = relative_l2(h_tiled, h_blas);
  const std::string prefix = "sgemm" + std::to_string(n);
  report.result(prefix + "_cublas_err_vs_double", worst_blas);
  report.result(prefix + "_tiled_err_vs_double", worst_tiled);
  report.result(prefix + "_tiled_rel_l2_vs_cublas", l2);
  char why[200];
  const bool blas_ok = worst_blas <= kSgemmSampleBound;  // false for NaN
  if (!blas_ok) {
    std::snprintf(why, sizeof why,
                  "off by %.3g of sum |a b| from double dot products (> %.1g; TF32 on?)",
                  worst_blas, kSgemmSampleBound);
    report.fail("cuBLAS SGEMM", why);
  }
  report.result(prefix + "_tiled_fused_mismatches", fused_mismatches);
  bool tiled_ok = worst_tiled <= kSgemmSampleBound && fused_mismatches == 0;
  if (fused_mismatches) {
    std::snprintf(why, sizeof why, "%d of 256 sampled entries differ from a sequential fused dot product",
                  fused_mismatches);
    report.fail("tiled SGEMM", why);
  } else if (!tiled_ok) {
    std::snprintf(why, sizeof why, "off by %.3g of sum |a b| from double dot products (> %.1g)",
                  worst_tiled, kSgemmSampleBound);
    report.fail("tiled SGEMM", why);
  } else if (blas_ok && !(l2 <= kSgemmL2Bound)) {  // against cuBLAS only when cuBLAS passed
    std::snprintf(why, sizeof why, "relative L2 %.3g from cuBLAS (> %.1g)", l2, kSgemmL2Bound);
    report.fail("tiled SGEMM", why);
    tiled_ok = false;
  }
  const double flops = 2.0 * double(n) * double(n) * double(n);
  if (tiled_ok)
    report.figure(prefix + "_tiled_gflops", "tiled SGEMM " + std::to_string(n) + " (GFLOP/s)",
                  time_with_events(stream, report.reps(),
                                   [&] { uk::matmul(a, b, tiled, uk::MatmulAlgo::tiled, exec); }),
                  flops, "GFLOP/s");
  if (blas_ok)
    report.figure(prefix + "_cublas_gflops", "cuBLAS SGEMM " + std::to_string(n) + " (GFLOP/s)",
                  time_with_events(stream, report.reps(),
                                   [&] { uk::matmul(a, b, blas, uk::MatmulAlgo::blas, exec); }),
                  flops, "GFLOP/s");
}

/// Matmuls taller than gridDim.y's 65535 blocks reach: (m x 3) . (3 x 2) with m past 65535 row
/// tiles of the tiled kernel and 65535 row blocks of the naive one, small integers, so every
/// entry is exact: each algorithm against a host loop.
void check_tall_matmul(const uk::Stream& stream, Report& report) {
  const std::int64_t m = 65535LL * 128 + 77, k = 3, n = 2;
  const uk::Exec exec{0, stream};
  uk::HostArray<float> ha(uk::Shape{m, k}), hb(uk::Shape{k, n});
  for (std::int64_t i = 0; i < m * k; ++i) ha[i] = float(i % 7) - 3.0f;
  for (std::int64_t i = 0; i < k * n; ++i) hb[i] = float(i % 5) - 2.0f;
  const auto a = uk::to_device(ha, stream), b = uk::to_device(hb, stream);
  uk::DeviceArray<float> c({m, n});
  for (const auto [algo, name] : {std::pair{uk::MatmulAlgo::tiled, "tiled"}, std::pair{uk::MatmulAlgo::naive, "naive"},
                                  std::pair{uk::MatmulAlgo::blas, "cuBLAS"}}) {
    // NaN bytes first: rows an algorithm leaves unwritten must not show the previous one's answer.
    USRECON_CUDA_CHECK(cudaMemsetAsync(c.data(), 0xFF, c.size() * sizeof(float), stream.get()));
    uk::matmul(a, b, c, algo, exec);
    const auto hc = c.copy_to_host(stream);
    std::int64_t wrong = 0, first = -1;
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        float want = 0;
        for (std::int64_t p = 0; p < k; ++p) want += ha[r * k + p] * hb[p * n + j];
        if (hc[r * n + j] != want && wrong++ == 0) first = r;
      }
    const std::string label = std::string("tall matmul ") + name;
    report.result("tall_matmul_" + std::string(name) + "_wrong", double(wrong));
    if (wrong) {
      char why[200];
      std::snprintf(why, sizeof why, "%lld of %lld entries wrong (first in row %lld) for m = %lld",
                    (long long)wrong, (long long)(m * n), (long long)first, (long long)m);
      report.fail(label, why);
    }
  }
}

/// monte_carlo_pi's GPU count against the CPU's for the same seed: equal, as integers.
void check_monte_carlo(const uk::Stream& stream, Report& report) {
  const std::uint64_t n = g_small ? 100'001 : 100'000'001, seed = 20261203;
  const uk::Exec exec{0, stream};
  const std::uint64_t gpu = uk::monte_carlo_count(n, seed, uk::Backend::cuda, exec);
  const std::uint64_t cpu = uk::monte_carlo_count(n, seed, uk::Backend::cpu);
  report.result("monte_carlo_gpu_minus_cpu", double(gpu) - double(cpu));
  if (gpu != cpu) {
    char why[160];
    std::snprintf(why, sizeof why, "GPU counts %llu of %llu samples inside, the CPU %llu",
                  (unsigned long long)gpu, (unsigned long long)n, (unsigned long long)cpu);
    report.fail("Monte-Carlo pi", why);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run killed by gpu-check's timeout keeps its lines
  int reps = 10;
  bool sgemm_only = false;
  for (int k = 1; k < argc; ++k) {
    if (!std::strcmp(argv[k], "--reps") && k + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++k]));
    } else if (!std::strcmp(argv[k], "--small")) {
      g_small = true;
      g_elements = (std::int64_t(1) << 20) + 3;
      g_sgemm_n = 257;
    } else if (!std::strcmp(argv[k], "--sgemm-only")) {
      sgemm_only = true;
    } else {
      std::fprintf(stderr, "usage: kernels_cuda_check [--reps N] [--small] [--sgemm-only]\n");
      return 2;
    }
  }
  std::optional<uk::Stream> stream;
  try {
    usrecon::require_cuda("the kernel library's GPU checks");
    cudaDeviceProp prop{};
    USRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (g_small)
      std::printf("device: %s, %d SMs; --small: validation only, nothing timed\n", prop.name,
                  prop.multiProcessorCount);
    else
      std::printf("device: %s, %d SMs; figures are medians of %d runs after a warm-up\n", prop.name,
                  prop.multiProcessorCount, reps);
    stream.emplace();
  } catch (const usrecon::CudaUnavailable& e) {
    std::printf("kernels_cuda_check: skipped: %s\n", e.what());
    return 77;  // nothing was checked: gpu-check.sh's steps say "skipped", never "ok"
  }

  Report report(reps);
  if (!sgemm_only) {
    report.guarded("copy and maps", [&] { check_bandwidth_maps(*stream, report); });
    report.guarded("sum float", [&] { check_sum<float>(*stream, report, "sum", "sum float"); });
    report.guarded("sum int32",
                   [&] { check_sum<std::int32_t>(*stream, report, "sum_int32", "sum int32"); });
    report.guarded("min/max float", [&] { check_extremes(*stream, report); });
    report.guarded("sums along an axis", [&] { check_axis_sums(*stream, report); });
  }
  report.guarded("SGEMM", [&] { check_sgemm(*stream, report); });
  if (!sgemm_only) {
    report.guarded("Monte-Carlo pi", [&] { check_monte_carlo(*stream, report); });
    if (!g_small) report.guarded("tall matmul", [&] { check_tall_matmul(*stream, report); });
  }

  std::printf("\nRatios (medians):\n");
  report.ratio("map_add_vs_copy", "map add a + b / d2d copy", "map_add_gbs", "d2d_copy_gbs", 0.80);
  report.ratio("map_add_scalar_vs_copy", "map add a + 10 / d2d copy", "map_add_scalar_gbs",
               "d2d_copy_gbs", 0.80);
  report.ratio("sum_vs_copy", "sum float / d2d copy", "sum_gbs", "d2d_copy_gbs", 0.80);
  report.ratio("sum_int32_vs_copy", "sum int32 / d2d copy", "sum_int32_gbs", "d2d_copy_gbs", 0.80);
  report.ratio("max_vs_copy", "max float / d2d copy", "max_gbs", "d2d_copy_gbs", 0.80);
  const std::string sgemm = "sgemm" + std::to_string(g_sgemm_n);
  report.ratio(sgemm + "_tiled_vs_cublas", "tiled SGEMM / cuBLAS (TF32 off)",
               sgemm + "_tiled_gflops", sgemm + "_cublas_gflops", 0.50);
  if (report.failures())
    std::printf("kernels_cuda_check: %d check(s) FAILED (see above)\n", report.failures());
  return report.failures() == 0 ? 0 : 1;
}
