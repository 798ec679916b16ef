// The seed's kernel, loop for loop, as the independent reference for every optimised backend.
#include <cmath>
#include <string>

#include "usrecon/recon/seed_cpu.hpp"

namespace usrecon::recon::seed {

Window full_window(const Problem& problem) { return Window{0, problem.nz, 0, problem.nx}; }

void check_arguments(const Problem& p, const Window& w, std::size_t rf_size, std::size_t out_size) {
  if (p.nz <= 0 || p.nx <= 0 || p.channels <= 0 || p.samples <= 0)
    throw Error("seed model: grid, channel and sample counts must be positive");
  // Bounds that keep every intermediate exact and in range: i*i + dj*dj fits in int and is exact
  // in double; sums of channels^2 int32 values stay below 2^53 in the double output.
  if (p.nz > 16384 || p.nx > 16384 || p.channels > 1024 || p.samples > (1 << 24))
    throw Error("seed model: problem too large (nz, nx <= 16384, channels <= 1024, samples <= 2^24)");
  if (w.ni <= 0 || w.nj <= 0 || w.i0 < 0 || w.j0 < 0 || w.i0 + w.ni > p.nz || w.j0 + w.nj > p.nx)
    throw Error("seed model: window [" + std::to_string(w.i0) + ", +" + std::to_string(w.ni) +
                ") x [" + std::to_string(w.j0) + ", +" + std::to_string(w.nj) +
                ") is empty or outside the " + std::to_string(p.nz) + " x " +
                std::to_string(p.nx) + " grid");
  const std::size_t rf_expected = static_cast<std::size_t>(p.channels) * p.samples;
  if (rf_size != rf_expected)
    throw Error("seed model: channel data has " + std::to_string(rf_size) + " values, expected " +
                std::to_string(rf_expected) + " (" + std::to_string(p.channels) + " channels x " +
                std::to_string(p.samples) + " samples)");
  const std::size_t out_expected = static_cast<std::size_t>(w.ni) * w.nj;
  if (out_size != out_expected)
    throw Error("seed model: output has " + std::to_string(out_size) + " values, expected " +
                std::to_string(out_expected));
}

void beamform_reference(std::span<const std::int32_t> rf, const Problem& p, const Window& w,
                        std::span<double> out) {
  check_arguments(p, w, rf.size(), out.size());
  for (int i = w.i0; i < w.i0 + w.ni; ++i) {
    for (int j = w.j0; j < w.j0 + w.nj; ++j) {
      double& pixel = out[static_cast<std::size_t>(j - w.j0) * w.ni + (i - w.i0)];
      pixel = 0.0;
      for (int k = 0; k < p.channels; ++k) {
        for (int n = 0; n < p.channels; ++n) {
          // Written out rather than calling sample_index(), so the reference does not share code
          // with the kernels under test.
          const double a = std::sqrt(static_cast<double>(i * i + (j - k * 6) * (j - k * 6)));
          const double b = std::sqrt(static_cast<double>(i * i + (j - n * 6) * (j - n * 6)));
          const double t = ((a + b) * 0.05) / 1.54 * 30;
          const long order = std::lrint(t);  // round half to even, as Python's round()
          if (order < p.samples) pixel = pixel + rf[static_cast<std::size_t>(k) * p.samples + order];
        }
      }
    }
  }
}

}  // namespace usrecon::recon::seed
