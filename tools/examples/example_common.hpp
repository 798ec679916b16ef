// Small helpers shared by the tutorial examples: --cuda, a wall-clock timer, np.allclose, and
// NumPy-like printing.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "usrecon/kernels/kernels.hpp"

namespace example {

/// True when the command line has --cuda; exits with a message when no device can serve it.
inline bool want_cuda(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cuda") == 0) {
      if (usrecon::cuda_device_count() == 0) {
        std::printf("--cuda: no CUDA device available (built with CUDA: %s)\n",
                    usrecon::built_with_cuda() ? "yes" : "no");
        std::exit(2);
      }
      return true;
    }
  }
  return false;
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
