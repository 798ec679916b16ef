// Channel data for the seed's forward model, so reconstructions can be checked against truth.
//
// All elements fire at once; channel k records, for every scatterer and every element n, a pulse
// delayed by the two-way path n -> scatterer -> k: t = (d_k + d_n) * 0.05 / 1.54 * 30 samples
// with d in grid steps (the seed's delay without its rounding).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
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

/// The point targets none of whose echoes is centred within the record on any channel (its
/// nearest sample one of the record's; a pulse's tail reaching into it does not count): a depth
/// beyond the last sample, or units mixed up (a pitch in mm given as metres) put them there. Both
/// simulators refuse options whose points all lie there.
struct PointsOutsideRecord {
  std::vector<std::size_t> points;  ///< indices into the options' points, in order
  /// Names them (number from 1, position in mm, the samples their echoes arrive at) and what the
  /// record covers; empty when there are none.
  std::string message;
  /// The points with some echoes centred in the record and others not (the outer channels' of a
  /// point near its end), and the message that names them with how many of their echoes miss it.
  std::vector<std::size_t> partly;
  std::string partly_message;
};
PointsOutsideRecord points_outside_record(const SimulationOptions& options);

/// Simulated channel data rf[k * samples + s], rounded to integers. Throws Error for options out
/// of range, a centre frequency at or above the Nyquist frequency, and points that all lie
/// outside the record (points_outside_record).
std::vector<std::int32_t> simulate_seed_channels(const SimulationOptions& options);

namespace detail {

/// Gathers where each point's echoes arrive, for points_outside_record of either simulator.
class RecordCoverage {
 public:
  /// A record of `samples`.
  RecordCoverage(std::size_t points, int samples);
  /// An echo of point p arriving at sample `pos` (fractional).
  void echo(std::size_t p, double pos);
  /// `positions_mm`: each point's (x, z); `record`: what the record covers, in words.
  PointsOutsideRecord result(const std::vector<std::array<double, 2>>& positions_mm, const std::string& record) const;

 private:
  int samples_;
  std::vector<double> first_, last_;
  std::vector<bool> inside_;
  std::vector<std::size_t> echoes_, missed_;  ///< per point: echoes, and those not centred in the record
};

/// Both simulators' pulse: a Gaussian envelope of FWHM `fwhm_samples`. Its standard deviation
/// in samples, and how far it is taken to reach either side of an echo (4 sigma, clamped to 2^26
/// samples before the int cast: an absurd --cycles overflowed it; that covers any record).
double pulse_sigma(double fwhm_samples);
int pulse_reach(double sigma);

/// Throws Error naming the points when there are points and none of them lands in the record.
void refuse_points_outside_record(const PointsOutsideRecord& outside, std::size_t points);

}  // namespace detail

}  // namespace usrecon::recon
