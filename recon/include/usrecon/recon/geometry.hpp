// Geometry of a general delay-and-sum problem, in SI units: the linear array, the acquisition
// (plane waves or synthetic aperture), the image grid, and the channel data that io reads.
//
// Coordinates: x lateral along the array, z depth, metres. Element i of an N-element array with
// pitch p sits at x_i = (i - (N - 1) / 2) p, z = 0, so x = 0 is the array centre.
#pragma once

#include <complex>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/kernels/common.hpp"
#include "usrecon/recon/delay/planewave.hpp"

namespace usrecon::recon {

/// A linear array of equally spaced elements centred on x = 0.
struct Probe {
  int elements = 128;
  double pitch = 0.3e-3;  ///< metres
  double element_x(int i) const { return (i - 0.5 * (elements - 1)) * pitch; }
  std::vector<double> positions() const;
  bool operator==(const Probe&) const = default;
};

/// A rectangular image grid: pixel (ix, iz) is at x = x0 + ix dx, z = z0 + iz dz.
struct Grid {
  double x0 = 0.0, dx = 1e-4;
  int nx = 1;
  double z0 = 0.0, dz = 1e-4;
  int nz = 1;
  double x(int ix) const { return x0 + ix * dx; }
  double z(int iz) const { return z0 + iz * dz; }
  std::size_t pixels() const { return std::size_t(nx) * std::size_t(nz); }
  /// The grid covering [min, max] in steps of d on each axis (the last point at or below max).
  static Grid from_ranges(double x_min, double x_max, double dx, double z_min, double z_max,
                          double dz);
  bool operator==(const Grid&) const = default;
};

enum class Model { PlaneWave, SyntheticAperture, DivergingWave, FocusedWave };
std::string to_string(Model model);
/// Diverging and focused waves: spherical waves from virtual sources (delay/virtual_source.hpp).
inline bool has_virtual_sources(Model model) { return model == Model::DivergingWave || model == Model::FocusedWave; }
std::string to_string(das::TimeZero time_zero);            // "first-element" | "center"
das::TimeZero parse_time_zero(std::string_view name);      // the same names, else throws Error

/// How the data were acquired. Plane waves: one transmit per steering angle; the transmit time to
/// (x, z) is (z cos a + (x - x_first) sin a) / c with x_first the first element to fire
/// (angle > 0: element 0). Synthetic aperture: transmit t fires element tx_elements[t] alone
/// (all elements in order when the list is empty: full matrix capture). Diverging waves:
/// transmit t is a spherical wave from the virtual source (source_x[t], source_z[t]) behind the
/// array; focused waves: one converging on the focal point (source_x[t], source_z[t]) in front
/// of it and diverging beyond; see delay/virtual_source.hpp.
struct Acquisition {
  Model model = Model::PlaneWave;
  Probe probe;
  double sound_speed = 1540.0;  ///< m/s
  double fs = 20e6;             ///< sampling frequency, Hz
  double t0 = 0.0;              ///< time of sample 0 after the transmit (s)
  std::vector<double> angles;   ///< plane-wave steering angles, radians, one per transmit
  std::vector<int> tx_elements; ///< synthetic aperture: the element firing in each transmit
  /// Diverging and focused waves: the virtual sources, one per transmit (metres; diverging:
  /// source_z <= 0, behind the array; focused: source_z > 0, the focal points).
  std::vector<double> source_x, source_z;
  /// Plane, diverging and focused waves: time zero (t0 counts from it) at the first element's firing, or
  /// when the wavefront crosses the array centre (USTB, PICMUS); see delay/planewave.hpp and
  /// delay/virtual_source.hpp.
  das::TimeZero time_zero = das::TimeZero::FirstElement;

  int transmits() const;
  /// Throws Error naming the first inconsistent parameter.
  void validate(int transmits_in_data) const;
  bool operator==(const Acquisition&) const = default;
};

/// Receive apodization window over the F-number aperture.
enum class Window { Rect, Hann, Tukey };
enum class Interp { Nearest, Linear };
Window parse_window(std::string_view name);  // "rect" | "hann" | "tukey", else throws Error
Interp parse_interp(std::string_view name);  // "nearest" | "linear", else throws Error
std::string to_string(Window window);
std::string to_string(Interp interp);

/// Transmit apodization. None: every transmit counts at every pixel (coherent compounding).
/// Scanline (focused waves only): each image column takes the one transmit whose focal point
/// lies nearest to it laterally, as line-by-line focused imaging forms its lines (USTB's
/// uff.window.scanline).
enum class TxApodization { None, Scanline };
TxApodization parse_tx_apodization(std::string_view name);  // "none" | "scanline", else throws Error
std::string to_string(TxApodization apodization);

/// Beamforming options independent of the backend.
struct DasOptions {
  double fnumber = 0.0;  ///< receive F-number; 0 = full aperture everywhere
  Window window = Window::Rect;
  double tukey_alpha = 0.5;  ///< taper fraction of the Tukey window
  Interp interp = Interp::Linear;
  TxApodization tx_apodization = TxApodization::None;
  /// Diverging and focused waves: transmit F-number (virtual_source_apodization, with `window`);
  /// 0 = every transmit at full weight everywhere.
  double tx_fnumber = 0.0;
  /// Throws Error naming the first option that is invalid or does not apply to `model`.
  void validate(Model model) const;
  bool operator==(const DasOptions&) const = default;
};

/// Channel data as the beamformers take it: real RF, data[(t * elements + e) * samples + s]
/// (transmit-major, then receive element, samples contiguous).
struct ChannelData {
  int samples = 0, elements = 0, transmits = 0;
  /// RF, or for baseband IQ data the I part: data[(t * elements + e) * samples + s]. Finite
  /// (read_channel_data refuses others): the backends' images of a NaN or infinite sample differ.
  std::vector<float> data;
  /// Baseband IQ data only (empty for RF): the Q part, laid out like `data`; the samples are
  /// s_bb(t) = s_analytic(t) exp(-j 2 pi modulation_frequency t) at t = iq_time0 + s / fs.
  std::vector<float> imag;
  double modulation_frequency = 0;  ///< Hz
  double iq_time0 = 0;              ///< s: the demodulation's time of sample 0
  bool is_iq() const { return !imag.empty(); }
  std::size_t size() const { return std::size_t(samples) * elements * transmits; }
  const float* channel(int t, int e) const {
    return data.data() + (std::size_t(t) * elements + e) * samples;
  }
};

/// A beamformed complex (IQ: analytic-signal) image img[ix * nz + iz], lateral-major, depth
/// contiguous, like the seed's out[j][i]; |img| is the envelope.
struct Image {
  Grid grid;
  std::vector<std::complex<float>> data;
};

}  // namespace usrecon::recon
