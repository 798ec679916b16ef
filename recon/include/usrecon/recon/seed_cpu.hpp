// The seed model on the CPU: a plain reference loop and the optimised multithreaded beamformer.
//
// Layouts (the seed's): channel data rf[k * samples + s] (channel-major, int32);
// image out[(j - window.j0) * window.ni + (i - window.i0)] — lateral-major, depth contiguous,
// exactly the seed's out[j][i] when the window is the whole grid.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "usrecon/recon/delay/seed.hpp"

namespace usrecon::recon::seed {

/// The whole grid of a problem.
Window full_window(const Problem& problem);

/// Throws usrecon::Error when the problem or window is invalid or the spans have the wrong size.
void check_arguments(const Problem& problem, const Window& window, std::size_t rf_size,
                     std::size_t out_size);

/// The seed's four-deep loop written straight from the formula (no precomputation, no
/// symmetry). Slow; it is the independent reference the optimised kernels are tested against.
void beamform_reference(std::span<const std::int32_t> rf, const Problem& problem,
                        const Window& window, std::span<double> out);

/// Instruction sets the optimised CPU kernel can use, best first. `Auto` picks the best the CPU
/// supports at run time, so one binary runs everywhere.
enum class CpuKernel { Auto, Avx512, Avx2, Scalar };
std::string to_string(CpuKernel kernel);
/// True when this CPU can run `kernel` (Auto and Scalar always can).
bool cpu_supports(CpuKernel kernel);

/// The optimised seed beamformer. Construction picks the kernel and precomputes what depends only
/// on the geometry (the AVX2 and scalar kernels' table of every distance sqrt(i^2 + dj^2); the
/// AVX-512 kernel computes a task's few hundred itself), so one instance serves a whole batch of
/// frames. Bit-exact with beamform_reference for every input.
class SeedCpuBeamformer {
 public:
  SeedCpuBeamformer(const Problem& problem, const Window& window, CpuKernel kernel = CpuKernel::Auto);
  ~SeedCpuBeamformer();
  SeedCpuBeamformer(SeedCpuBeamformer&&) noexcept;
  SeedCpuBeamformer& operator=(SeedCpuBeamformer&&) noexcept;

  /// Beamforms one frame. threads = 0 uses every hardware thread.
  void beamform(std::span<const std::int32_t> rf, std::span<double> out, int threads = 0) const;

  const Problem& problem() const;
  const Window& window() const;
  /// The instruction set actually used (never Auto).
  CpuKernel kernel() const;

  struct Impl;  // opaque: the precomputed tables, defined in cpu/seed_cpu.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

/// Convenience: one frame through a temporary SeedCpuBeamformer.
void beamform_cpu(std::span<const std::int32_t> rf, const Problem& problem, const Window& window,
                  std::span<double> out, int threads = 0, CpuKernel kernel = CpuKernel::Auto);

}  // namespace usrecon::recon::seed
