// Small helpers shared by the tutorial examples: --cuda, a wall-clock timer, np.allclose, and
// NumPy-like printing.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>

#include "usrecon/kernels/kernels.hpp"

namespace example {

/// The examples' command line: [--cuda], and the options in `valued` that take one value each
/// (monte_carlo_pi's --seed N, which the example reads itself). True with --cuda; exits with a
/// message when no device can serve it. -h/--help prints the usage; anything else is refused
/// with it (exit 2), rather than ignored.
inline bool want_cuda(int argc, char** argv, std::initializer_list<const char*> valued = {}) {
  const auto usage = [&](std::FILE* to) {
    std::fprintf(to, "usage: %s [--cuda]", argv[0]);
    for (const char* option : valued) std::fprintf(to, " [%s N]", option);
    std::fprintf(to, "\n");
  };
  bool cuda = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cuda") {
      cuda = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      std::exit(0);
    }
    bool takes_value = false;
    for (const char* option : valued) takes_value = takes_value || arg == option;
    if (takes_value && i + 1 < argc) {
      ++i;
      continue;
    }
    std::fprintf(stderr, "%s: %s %s\n", argv[0], takes_value ? "no value after" : "unknown option", arg.c_str());
    usage(stderr);
    std::exit(2);
  }
  if (cuda && usrecon::cuda_device_count() == 0) {
    std::printf("--cuda: no CUDA device available (built with CUDA: %s)\n", usrecon::built_with_cuda() ? "yes" : "no");
    std::exit(2);
  }
  return cuda;
}

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// np.allclose(a, b) with NumPy's default tolerances.
template <class A, class B>
bool allclose(const A& a, const B& b, double rtol = 1e-5, double atol = 1e-8) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(double(a[i]) - double(b[i])) <= atol + rtol * std::abs(double(b[i])))) return false;
  return true;
}

/// Prints a 1-D array the way NumPy abbreviates long ones: [a b c ... x y z].
template <class T>
void print_array(const usrecon::kernels::HostArray<T>& a) {
  std::string s = "[";
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 6 && i == 3) {
      s += "... ";
      i = n - 4;
      continue;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.8g", double(a[i]));
    s += buf;
    s += i + 1 < n ? " " : "";
  }
  std::printf("%s]\n", s.c_str());
}

}  // namespace example
