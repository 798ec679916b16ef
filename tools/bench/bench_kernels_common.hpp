// Shared by bench_kernels_cpu.cpp and bench_kernels_cuda.cu: a console reporter that remembers
// each benchmark's figure (the median when --benchmark_repetitions is given) and prints the
// ratios the kernel targets are stated in. The data helpers (random_floats, sgemm_sample_error) come
// from bench_data.hpp.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_data.hpp"

namespace usrecon_bench {

/// Reports GFLOP/s for an n × n × n matrix product per iteration.
inline void set_matmul_gflops(benchmark::State& state, std::int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      const std::string name = run.run_name.str();
      double value = run.counters.count("GFLOP/s") ? double(run.counters.at("GFLOP/s"))
                     : run.counters.count("bytes_per_second")
                         ? double(run.counters.at("bytes_per_second")) / 1e9
                         : 0.0;
      if (median || !figures_.count(name) || !has_median_.count(name)) figures_[name] = value;
      if (median) has_median_[name] = true;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  /// The figure of a benchmark by run name (GB/s or GFLOP/s); 0 when it did not run.
  double figure(const std::string& name) const {
    const auto it = figures_.find(name);
    return it == figures_.end() ? 0.0 : it->second;
  }

  /// Prints "label: a / b = ratio (target >= t)" for each (label, numerator, denominator, target).
  void print_ratios(const std::vector<std::tuple<std::string, std::string, std::string, double>>& rows) const {
    std::printf("\nRatios (medians when repeated):\n");
    for (const auto& [label, num, den, target] : rows) {
      const double a = figure(num), b = figure(den);
      if (a == 0.0 || b == 0.0) {
        std::printf("  %-40s not measured (%s, %s)\n", label.c_str(), num.c_str(), den.c_str());
        continue;
      }
      if (target > 0)
        std::printf("  %-40s %9.2f / %9.2f = %5.2f  (target >= %.2f) %s\n", label.c_str(), a, b,
                    a / b, target, a / b >= target ? "MET" : "NOT MET");
      else
        std::printf("  %-40s %9.2f / %9.2f = %5.2f\n", label.c_str(), a, b, a / b);
    }
  }

 private:
  std::map<std::string, double> figures_;
  std::map<std::string, bool> has_median_;
};

}  // namespace usrecon_bench
