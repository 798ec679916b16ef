// How far one image is from a reference: what the tests and GPU checks use to compare backends.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <vector>

namespace usrecon::recon {

/// ||a - reference|| / ||reference|| over complex pixels, accumulated in double. Sizes must match.
inline double relative_l2(const std::vector<std::complex<float>>& a,
                          const std::vector<std::complex<float>>& reference) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k < a.size() && k < reference.size(); ++k) {
    num += std::norm(std::complex<double>(a[k]) - std::complex<double>(reference[k]));
    den += std::norm(std::complex<double>(reference[k]));
  }
  return a.size() == reference.size() ? std::sqrt(num / den) : INFINITY;
}

}  // namespace usrecon::recon
