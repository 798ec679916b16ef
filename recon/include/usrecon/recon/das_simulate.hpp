// Simulated channel data for the general models (plane wave, synthetic aperture, diverging and
// focused waves):
// point targets and anechoic cysts in speckle, with the delays of delay/planewave.hpp,
// delay/synthetic_aperture.hpp and delay/virtual_source.hpp, so that reconstructions can be checked
// against truth.
#pragma once

#include <cstdint>
#include <vector>

#include "usrecon/recon/das.hpp"
#include "usrecon/recon/geometry.hpp"
#include "usrecon/recon/simulate.hpp"

namespace usrecon::recon {

struct PointTarget {
  double x = 0.0, z = 0.0;  ///< metres
  double amplitude = 1.0;
};

struct Cyst {
  double x = 0.0, z = 0.0, radius = 0.0;  ///< metres; no speckle scatterer falls inside
};

struct DasSimulationOptions {
  Acquisition acquisition;
  int samples = 2048;
  std::vector<PointTarget> points;
  std::vector<Cyst> cysts;
  int speckle = 0;                  ///< random scatterers over the speckle region
  double speckle_amplitude = 0.1;   ///< their amplitude (normal, this standard deviation)
  double x_min = 0, x_max = 0;      ///< speckle region (x_max <= x_min: the array's span)
  double z_min = 0, z_max = 0;      ///< speckle region (z_max <= z_min: 2 mm to the last sample)
  double center_frequency = 5e6;    ///< pulse centre frequency, Hz
  double cycles = 2.0;              ///< Gaussian envelope FWHM, in cycles
  double noise = 0.0;               ///< white noise standard deviation, relative to the peak
  std::uint64_t seed = 1;
};

/// The rectangle the speckle scatterers are drawn from, metres: the options' region, or where
/// it is unset the array's span in x and 2 mm to the depth of the last sample in z. Elements are
/// points that send and receive equally in every direction (no element directivity), so shallow
/// speckle beside the array adds more clutter than a real probe's would.
struct SpeckleRegion {
  double x_min, x_max, z_min, z_max;
};
SpeckleRegion speckle_region(const DasSimulationOptions& options);

/// The points none of whose echoes reaches a sample of the record (see simulate.hpp). Throws
/// Error for options simulate_das_channels refuses otherwise.
PointsOutsideRecord points_outside_record(const DasSimulationOptions& options);

/// RF channel data, normalised so that the largest |value| is 1. Throws Error for options out of
/// range, a centre frequency at or above the Nyquist frequency fs / 2, and points that all lie
/// outside the record (points_outside_record).
ChannelData simulate_das_channels(const DasSimulationOptions& options);

/// The same acquisition's analytic signal, simulated directly: each echo is the complex pulse
/// env(u) exp(i omega u), whose real part is simulate_das_channels' pulse. I is exactly
/// simulate_das_channels(options); Q is the Hilbert transform of I's echoes, but for the Gaussian
/// spectrum's small negative-frequency part (analytic_signal of the RF gives the same Q to 4e-5
/// relative L2 for 2-cycle pulses, float rounding included), without the FFT's wrap-around at the
/// record's ends. Noise in Q is independent of I's, with the same standard deviation.
AnalyticData simulate_das_analytic(const DasSimulationOptions& options);

}  // namespace usrecon::recon
