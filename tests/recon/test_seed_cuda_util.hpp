// Frames for the CUDA backend's tests (test_seed_cuda*.cpp).
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
#include <vector>

#include "usrecon/recon/delay/seed.hpp"

namespace usrecon::test {

/// Uniform random samples in [-amplitude, amplitude], channel-major.
inline std::vector<std::int32_t> random_frame(const recon::seed::Problem& p, int amplitude,
                                              unsigned seed_value) {
  std::mt19937 rng(seed_value);
  std::uniform_int_distribution<std::int32_t> value(-amplitude, amplitude);
  std::vector<std::int32_t> rf(std::size_t(p.channels) * p.samples);
  for (std::int32_t& v : rf) v = value(rng);
  return rf;
}

/// data/example.txt's samples (empty when the file is missing).
inline std::vector<std::int32_t> example_frame() {
  std::ifstream in(USRECON_SOURCE_DIR "/data/example.txt");
  std::vector<std::int32_t> rf;
  for (long v; in >> v;) rf.push_back(std::int32_t(v));
  return rf;
}

}  // namespace usrecon::test
