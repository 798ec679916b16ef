// Channel data for the seed's forward model, so reconstructions can be checked against truth.
//
// All elements fire at once; channel k records, for every scatterer and every element n, a pulse
// delayed by the two-way path n -> scatterer -> k: t = (d_k + d_n) * 0.05 / 1.54 * 30 samples
// with d in grid steps (the seed's delay without its rounding).
#pragma once

#include <cstdint>
#include <vector>

#include "usrecon/recon/delay/seed.hpp"

namespace usrecon::recon {

struct Scatterer {
  double x_mm = 0.0;   ///< lateral position from element 0 (the seed's j * 0.05 mm)
  double z_mm = 0.0;   ///< depth (the seed's i * 0.05 mm)
  double amplitude = 1.0;
};

struct SimulationOptions {
  seed::Problem problem;             ///< grid, channels and samples (the seed's by default)
  std::vector<Scatterer> points;     ///< bright point targets
  int speckle = 0;                   ///< number of random weak scatterers over the grid
  double speckle_amplitude = 0.05;   ///< their amplitude (uniform in [-a, a])
  double center_mhz = 5.0;           ///< pulse centre frequency
  double cycles = 2.0;               ///< pulse length: Gaussian envelope FWHM in cycles
  double peak = 2000.0;              ///< largest |value| written (integers, like a 12-bit ADC)
  double noise = 0.0;                ///< white noise, standard deviation in output units
  std::uint64_t seed = 1;            ///< random seed for speckle and noise
};

/// Throws Error unless the speckle scatterers' amplitude is a finite number >= 0 (both
/// simulators: NaN would give all-NaN or, scaled by a NaN peak, all-zero data, and a negative one
/// is no parameter of their distributions).
void check_speckle_amplitude(double amplitude);

/// Simulated channel data rf[k * samples + s], rounded to integers.
std::vector<std::int32_t> simulate_seed_channels(const SimulationOptions& options);

}  // namespace usrecon::recon
