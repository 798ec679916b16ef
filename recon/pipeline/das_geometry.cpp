// Geometry, options and problem checks of the general DAS models.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/geometry.hpp"
#include "text_parts.hpp"

namespace usrecon::recon {
namespace {

// Geometry past this many metres from the array centre is refused (Acquisition::validate,
// DasProblem::validate).
constexpr double kMaxExtentM = 1000.0;
constexpr double kMaxPixelsAlong = 1e6;

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

}  // namespace

// Here rather than with the readers that print most values: the simulators' messages need it
// where the readers are not linked (tools/gpu-check.sh's test binaries).
std::string number_text(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::vector<double> Probe::positions() const {
  std::vector<double> x(std::size_t(std::max(elements, 0)));
  for (int i = 0; i < elements; ++i) x[std::size_t(i)] = element_x(i);
  return x;
}

Grid Grid::from_ranges(double x_min, double x_max, double dx, double z_min, double z_max,
                       double dz) {
  require(std::isfinite(x_min) && std::isfinite(x_max) && x_max >= x_min,
          "grid: the x range must be MIN:MAX with MIN <= MAX");
  require(std::isfinite(z_min) && std::isfinite(z_max) && z_max >= z_min,
          "grid: the z range must be MIN:MAX with MIN <= MAX");
  require(dx > 0 && dz > 0 && std::isfinite(dx) && std::isfinite(dz),
          "grid: --dx and --dz must be positive");
  const double nx = std::floor((x_max - x_min) / dx + 1e-9) + 1;
  const double nz = std::floor((z_max - z_min) / dz + 1e-9) + 1;
  require(nx * nz <= 4e8, "grid: more than 4e8 pixels; use a larger --dx/--dz or smaller ranges");
  // A PNG (libpng's limit) holds at most 1e6 rows and columns: refused here, not after beamforming.
  require(nx <= kMaxPixelsAlong && nz <= kMaxPixelsAlong,
          "grid: " + number_text(nx) + " x " + number_text(nz) + " pixels, more than 1e6 along " +
              (nx > kMaxPixelsAlong ? "x" : "z") + " (a PNG's most); use a larger --" +
              (nx > kMaxPixelsAlong ? "dx" : "dz") + " or a smaller range (in metres)");
  Grid g;
  g.x0 = x_min;
  g.dx = dx;
  g.nx = static_cast<int>(nx);
  g.z0 = z_min;
  g.dz = dz;
  g.nz = static_cast<int>(nz);
  return g;
}

std::string to_string(Model model) {
  switch (model) {
    case Model::PlaneWave: return "planewave";
    case Model::SyntheticAperture: return "sa";
    case Model::DivergingWave: return "dw";
    case Model::FocusedWave: return "fw";
  }
  return "?";
}

std::string to_string(das::TimeZero time_zero) {
  return time_zero == das::TimeZero::Center ? "center" : "first-element";
}

das::TimeZero parse_time_zero(std::string_view name) {
  if (name == "first-element") return das::TimeZero::FirstElement;
  if (name == "center") return das::TimeZero::Center;
  throw Error("unknown time zero '" + std::string(name) + "' (expected first-element or center)");
}

std::string to_string(DasCudaKernel kernel) {  // here, so that CPU-only builds have it too
  switch (kernel) {
    case DasCudaKernel::Auto: return "auto";
    case DasCudaKernel::PixelPerThread: return "pixel-per-thread";
    case DasCudaKernel::ElementOuter: return "element-outer";
    case DasCudaKernel::TransmitBlocked: return "transmit-blocked";
  }
  return "?";
}

DasCudaKernel parse_das_cuda_kernel(std::string_view name) {
  for (DasCudaKernel k : {DasCudaKernel::Auto, DasCudaKernel::PixelPerThread, DasCudaKernel::ElementOuter,
                          DasCudaKernel::TransmitBlocked})
    if (name == to_string(k)) return k;
  throw Error("unknown CUDA kernel '" + std::string(name) +
              "' (expected auto, pixel-per-thread, element-outer or transmit-blocked)");
}

int Acquisition::transmits() const {
  if (model == Model::PlaneWave) return static_cast<int>(angles.size());
  if (has_virtual_sources(model)) return static_cast<int>(source_x.size());
  return tx_elements.empty() ? probe.elements : static_cast<int>(tx_elements.size());
}

namespace {

// One check per parameter: Acquisition::validate runs them all on the geometry a file has
// completed, validate_given those the user gave, before any file is read.
//
// Bounds far past any ultrasound scan that keep every sample position a finite float (the
// kernels' delay arithmetic is float; an infinite position would give NaN, not silence):
// at most 3 km between any two points, 1e3 s of t0, 1e12 Hz and 1 m/s make 4e15 samples.
void check_elements(int elements) { require(elements >= 1, "geometry: the number of elements must be positive"); }
void check_pitch(double pitch) { require(pitch > 0 && std::isfinite(pitch), "geometry: --pitch must be positive"); }
void check_span(const Probe& probe) {
  require(probe.pitch * (probe.elements - 1) <= kMaxExtentM, "geometry: the array spans more than 1 km");
}
void check_sound_speed(double c) {
  require(c > 0 && std::isfinite(c), "geometry: --sound-speed must be positive");
  require(c >= 1 && c <= 1e6, "geometry: --sound-speed must lie between 1 and 1e6 m/s");
}
void check_fs(double fs) {
  require(fs > 0 && std::isfinite(fs), "geometry: --fs must be positive");
  require(fs <= 1e12, "geometry: --fs must be at most 1e12 Hz");
}
void check_t0(double t0) {
  require(std::isfinite(t0), "geometry: --t0 must be a number");
  require(std::fabs(t0) <= 1e3, "geometry: --t0 must lie within +-1000 s");
}
void check_angles(const std::vector<double>& angles) {
  require(!angles.empty(), "plane wave: give the steering angles (--angles-deg)");
  for (double a : angles)
    require(std::isfinite(a) && std::fabs(a) < 1.5, "plane wave: steering angles must lie within +-85 degrees");
}
void check_sources(Model model, const std::vector<double>& source_x, const std::vector<double>& source_z) {
  const bool focused = model == Model::FocusedWave;
  const std::string what = focused ? "focused waves" : "diverging waves";
  require(!source_x.empty(), what + ": give the " + (focused ? "focal points" : "virtual sources") +
                                 " (--sources-x, --sources-z)");
  require(source_z.size() == source_x.size(),
          what + ": " + std::to_string(source_x.size()) + " source x but " + std::to_string(source_z.size()) +
              " source z positions");
  for (std::size_t t = 0; t < source_x.size(); ++t) {
    require(std::isfinite(source_x[t]) && std::isfinite(source_z[t]),
            what + ": virtual source " + std::to_string(t + 1) + " is not a finite position");
    require(std::fabs(source_x[t]) <= kMaxExtentM && std::fabs(source_z[t]) <= kMaxExtentM,
            what + ": virtual source " + std::to_string(t + 1) + " lies more than 1 km from the array");
    if (focused)
      require(source_z[t] > 0, "focused waves: focal point " + std::to_string(t + 1) +
                                   " must lie in front of the array (z > 0; sources behind it are --model dw)");
    else
      require(source_z[t] <= 0, "diverging waves: virtual source " + std::to_string(t + 1) +
                                    " must lie behind the array (z <= 0; focal points in front of it are --model fw)");
  }
}
// elements < 0: not known yet (only that no index is negative is checked).
void check_tx_elements(const std::vector<int>& tx_elements, int elements) {
  for (int e : tx_elements)
    require(e >= 0 && (elements < 0 || e < elements),
            "synthetic aperture: transmit element " + std::to_string(e) + " is not on the array");
}

}  // namespace

void Acquisition::validate(int transmits_in_data) const {
  check_elements(probe.elements);
  check_pitch(probe.pitch);
  check_sound_speed(sound_speed);
  check_fs(fs);
  check_t0(t0);
  check_span(probe);
  if (model == Model::PlaneWave)
    check_angles(angles);
  else if (has_virtual_sources(model))
    check_sources(model, source_x, source_z);
  else
    check_tx_elements(tx_elements, probe.elements);
  if (transmits_in_data >= 0)
    require(transmits_in_data == transmits(),
            "the data hold " + std::to_string(transmits_in_data) + " transmits but the " +
                to_string(model) + " acquisition describes " + std::to_string(transmits()) +
                (model == Model::PlaneWave       ? " (one per steering angle)"
                 : model == Model::DivergingWave ? " (one per virtual source)"
                 : model == Model::FocusedWave   ? " (one per focal point)"
                                                 : " (one per transmit element)"));
}

Window parse_window(std::string_view name) {
  if (name == "rect") return Window::Rect;
  if (name == "hann") return Window::Hann;
  if (name == "tukey") return Window::Tukey;
  throw Error("unknown window '" + std::string(name) + "' (expected rect, hann or tukey)");
}

Interp parse_interp(std::string_view name) {
  if (name == "nearest") return Interp::Nearest;
  if (name == "linear") return Interp::Linear;
  throw Error("unknown interpolation '" + std::string(name) + "' (expected nearest or linear)");
}

std::string to_string(Window window) {
  switch (window) {
    case Window::Rect: return "rect";
    case Window::Hann: return "hann";
    case Window::Tukey: return "tukey";
  }
  return "?";
}

std::string to_string(Interp interp) { return interp == Interp::Linear ? "linear" : "nearest"; }

TxApodization parse_tx_apodization(std::string_view name) {
  if (name == "none") return TxApodization::None;
  if (name == "scanline") return TxApodization::Scanline;
  throw Error("unknown transmit apodization '" + std::string(name) + "' (expected none or scanline)");
}

std::string to_string(TxApodization apodization) {
  return apodization == TxApodization::Scanline ? "scanline" : "none";
}

std::vector<int> DasProblem::column_transmits() const {
  if (options.tx_apodization != TxApodization::Scanline) return {};
  const std::vector<double>& focus_x = acquisition.source_x;
  std::vector<int> table(std::size_t(std::max(grid.nx, 0)), 0);
  for (int ix = 0; ix < grid.nx; ++ix) {
    const double x = grid.x(ix);
    for (std::size_t t = 1; t < focus_x.size(); ++t)
      if (std::fabs(x - focus_x[t]) < std::fabs(x - focus_x[std::size_t(table[ix])])) table[ix] = int(t);
  }
  return table;
}

void DasOptions::validate(Model model) const {
  require(tx_apodization == TxApodization::None || model == Model::FocusedWave,
          "DAS: a scanline transmit apodization applies to focused waves (--model fw) only");
  // 0, or a number the float arithmetic of every backend holds with room: 1e-50 is 0 in float
  // (the full aperture) and 1e39 infinite (no aperture). The top is the CLI's (--fnumber takes 0
  // to 100): a message naming 1e3 for an option that refuses 101 said two ranges.
  const auto sane = [](double f) { return f == 0 || (f >= 1e-3 && f <= 100); };
  require(tx_fnumber >= 0 && std::isfinite(tx_fnumber), "DAS: --tx-fnumber must be a finite number >= 0");
  require(sane(tx_fnumber), "DAS: --tx-fnumber must be 0 or between 1e-3 and 100");
  require(tx_fnumber == 0 || has_virtual_sources(model),
          "DAS: a transmit F-number applies to diverging and focused waves (--model dw, fw) only");
  require(fnumber >= 0 && std::isfinite(fnumber), "DAS: --fnumber must be a finite number >= 0");
  require(sane(fnumber), "DAS: --fnumber must be 0 (the full aperture) or between 1e-3 and 100");
  require(tukey_alpha > 0 && tukey_alpha <= 1, "DAS: the Tukey alpha must be in (0, 1]");
}

void DasProblem::validate() const {
  acquisition.validate(-1);
  options.validate(acquisition.model);
  require(samples >= 1, "DAS: the data must hold at least one sample per channel");
  require(grid.nx >= 1 && grid.nz >= 1 && grid.dx > 0 && grid.dz > 0, "DAS: empty or invalid image grid");
  const auto within = [](double start, double step, int n) {
    return std::fabs(start) <= kMaxExtentM && std::fabs(start + step * (n - 1)) <= kMaxExtentM;
  };
  require(within(grid.x0, grid.dx, grid.nx) && within(grid.z0, grid.dz, grid.nz),
          "DAS: the image grid reaches more than 1 km from the array");
}

// --channel-map's lists: here, with the checks of what the user gave, for the GPU machine's build
// without io (tools/gpu-check.sh), which has this file and not das_input.cpp.
/// Refuses a channel listed twice in a channel map, naming the two elements that list it.
void detail::check_distinct_channels(const std::vector<int>& channels, const std::string& what) {
  std::vector<int> element_of(std::size_t(kMaxMappedChannels) + 1, 0);  // channel -> element (from 1)
  for (std::size_t e = 0; e < channels.size(); ++e) {
    int& earlier = element_of[std::size_t(channels[e])];
    if (earlier != 0)
      throw Error(what + ": channel " + std::to_string(channels[e]) + " is listed for elements " +
                  std::to_string(earlier) + " and " + std::to_string(e + 1) +
                  ": each element is read from a channel of its own");
    earlier = static_cast<int>(e + 1);
  }
}

std::vector<int> parse_channel_numbers(std::string_view text, const std::string& what) {
  const auto channel = [&](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    int value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || value < 1 || value > kMaxMappedChannels)
      throw Error(what + ": '" + std::string(t) + "' is not a channel number from 1 to " +
                  std::to_string(kMaxMappedChannels));
    return value;
  };
  std::vector<int> channels;
  for (std::string_view part : detail::split(text, ',')) {
    const auto ends = detail::split(part, ':');
    if (ends.size() > 2)
      throw Error(what + ": '" + std::string(part) + "': a range is FIRST:LAST (both included)");
    const int first = channel(ends[0]), last = ends.size() == 2 ? channel(ends[1]) : first;
    const std::size_t count = std::size_t(std::abs(last - first)) + 1;
    if (channels.size() + count > std::size_t(kMaxMappedChannels))
      throw Error(what + ": lists more than " + std::to_string(kMaxMappedChannels) + " elements");
    for (int c = first;; c += last >= first ? 1 : -1) {
      channels.push_back(c);
      if (c == last) break;
    }
  }
  detail::check_distinct_channels(channels, what);
  return channels;
}

bool channel_map_names_variable(std::string_view text) {
  // A MATLAB name starts with a letter, an HDF5 path with '/' (or a name); a list with a digit,
  // and a sign or anything else is a list's mistake, said as such.
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return false;
  const char c = text[first];
  return c == '/' || c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

void validate_given(const DasSetup& setup) {
  const Acquisition& acq = setup.acquisition;
  const GivenParameters& given = setup.given;
  if (given.elements) check_elements(acq.probe.elements);
  if (given.pitch) check_pitch(acq.probe.pitch);
  if (given.sound_speed) check_sound_speed(acq.sound_speed);
  if (given.fs) check_fs(acq.fs);
  if (given.t0) check_t0(acq.t0);
  if (given.elements && given.pitch) check_span(acq.probe);
  if (acq.model == Model::PlaneWave && given.angles) check_angles(acq.angles);
  if (has_virtual_sources(acq.model) && given.sources) check_sources(acq.model, acq.source_x, acq.source_z);
  if (acq.model == Model::SyntheticAperture && given.tx_elements)
    check_tx_elements(acq.tx_elements, given.elements ? acq.probe.elements : -1);
  if (!setup.input.channel_map.empty() && !channel_map_names_variable(setup.input.channel_map)) {
    const std::size_t listed = parse_channel_numbers(setup.input.channel_map, "--channel-map").size();
    if (given.elements && listed != std::size_t(acq.probe.elements))
      throw Error("--channel-map lists " + std::to_string(listed) + " element(s) but --elements says " +
                  std::to_string(acq.probe.elements));
  }
  setup.options.validate(acq.model);
  // The grid as far as the ranges given fix it (steps left to the geometry are not known yet).
  const GridRequest& g = setup.grid;
  for (double edge : {g.x_min, g.x_max, g.z_min, g.z_max})
    require(std::isnan(edge) || std::fabs(edge) <= kMaxExtentM, "DAS: the image grid reaches more than 1 km from the array");
  const bool all_given = !std::isnan(g.x_min) && !std::isnan(g.x_max) && !std::isnan(g.z_min) &&
                         !std::isnan(g.z_max) && !std::isnan(g.dx) && !std::isnan(g.dz);
  if (all_given) (void)Grid::from_ranges(g.x_min, g.x_max, g.dx, g.z_min, g.z_max, g.dz);
}

double DasProblem::points() const {
  const int summed = options.tx_apodization == TxApodization::Scanline ? 1 : acquisition.transmits();
  return double(grid.pixels()) * acquisition.probe.elements * summed;
}

double DasProblem::weighted_points() const {
  const Acquisition& acq = acquisition;
  const std::vector<double> ex = acq.probe.positions();
  const auto fnumber = static_cast<float>(options.fnumber), tx_fnumber = static_cast<float>(options.tx_fnumber);
  const auto alpha = static_cast<float>(options.tukey_alpha);
  const int window = static_cast<int>(options.window);
  const bool tx_weighted = has_virtual_sources(acq.model) && options.tx_fnumber > 0;
  const std::vector<double> waists =
      tx_weighted ? das::virtual_source_waists(acq.source_x, acq.probe.pitch) : std::vector<double>{};
  const std::vector<int> columns = column_transmits();
  double total = 0;
  for (int ix = 0; ix < grid.nx; ++ix) {
    const auto x = static_cast<float>(grid.x(ix));
    for (int iz = 0; iz < grid.nz; ++iz) {
      const auto z = static_cast<float>(grid.z(iz));
      int elements = 0;  // receive weights: the transmit's alone decide nothing here
      for (const double xe : ex)
        elements += das::receive_apodization(x, z, static_cast<float>(xe), fnumber, window, alpha) != 0.0f;
      int transmits = 0;
      for (int t = 0; t < acq.transmits(); ++t) {
        if (!columns.empty() && t != columns[std::size_t(ix)]) continue;
        transmits += !tx_weighted || das::virtual_source_apodization(x, z, static_cast<float>(acq.source_x[std::size_t(t)]),
                                                                      static_cast<float>(acq.source_z[std::size_t(t)]),
                                                                      tx_fnumber, static_cast<float>(waists[std::size_t(t)]),
                                                                      window, alpha) != 0.0f;
      }
      total += double(elements) * transmits;
    }
  }
  return total;
}

DasTables make_das_tables(const DasProblem& problem) {
  const Acquisition& acq = problem.acquisition;
  DasTables t;
  for (int e = 0; e < acq.probe.elements; ++e) t.ex.push_back(static_cast<float>(acq.probe.element_x(e)));
  if (acq.model == Model::PlaneWave) {
    const float x_min = t.ex.front(), x_max = t.ex.back();
    for (double a : acq.angles) {
      t.cos_a.push_back(static_cast<float>(std::cos(a)));
      t.sin_a.push_back(static_cast<float>(std::sin(a)));
      t.x_reference.push_back(das::planewave_x_reference(static_cast<float>(a), x_min, x_max, acq.time_zero));
    }
  } else if (has_virtual_sources(acq.model)) {
    const std::vector<double> positions = acq.probe.positions();
    for (double waist : das::virtual_source_waists(acq.source_x, acq.probe.pitch))
      t.src_waist.push_back(static_cast<float>(waist));
    for (std::size_t k = 0; k < acq.source_x.size(); ++k) {
      t.src_x.push_back(static_cast<float>(acq.source_x[k]));
      t.src_z.push_back(static_cast<float>(acq.source_z[k]));
      t.src_r0.push_back(static_cast<float>(
          das::virtual_source_reference_distance(acq.source_x[k], acq.source_z[k], positions, acq.time_zero)));
    }
  } else {  // synthetic aperture: every element in order when the acquisition lists none
    t.tx_element = acq.tx_elements;
    if (t.tx_element.empty())
      for (int e = 0; e < acq.probe.elements; ++e) t.tx_element.push_back(e);
  }
  t.column_transmit = problem.column_transmits();
  return t;
}

AnalyticData AnalyticData::zeros(int samples, int elements, int transmits) {
  AnalyticData d;
  d.samples = samples;
  d.elements = elements;
  d.transmits = transmits;
  d.stride = stride_for(samples);
  const std::size_t n = std::size_t(d.stride) * elements * transmits;
  d.i.assign(n, 0.f);
  d.q.assign(n, 0.f);
  return d;
}

void AnalyticData::check_layout(const std::string& who) const {
  // The largest channel whose stride_for fits an int; the beamformers' own limits come later.
  constexpr int kMaxSamples = std::numeric_limits<int>::max() - kFront - kBack - 15;
  if (samples < 1 || elements < 1 || transmits < 1 || samples > kMaxSamples)
    throw Error(who + ": the data have " + std::to_string(samples) + " samples x " + std::to_string(elements) +
                " elements x " + std::to_string(transmits) + " transmits");
  const std::size_t n = std::size_t(stride_for(samples)) * elements * transmits;
  if (stride != stride_for(samples) || i.size() != n || q.size() != n)
    throw Error(who + ": the data's storage is not AnalyticData's layout (stride " + std::to_string(stride) +
                ", expected " + std::to_string(stride_for(samples)) + "; I " + std::to_string(i.size()) + " and Q " +
                std::to_string(q.size()) + " floats, expected " + std::to_string(n) + ")");
  // +0.0f only: a -0.0f or NaN in the padding would show where the checked functions give +0.
  for (const std::vector<float>* part : {&i, &q})
    for (std::size_t channel = 0; channel < std::size_t(elements) * transmits; ++channel) {
      const float* c = part->data() + channel * stride;
      for (int k = 0; k < stride; ++k) {
        if (k == kFront) k += samples;  // the channel's own samples: any value
        if (k < stride && std::bit_cast<std::uint32_t>(c[k]) != 0)
          throw Error(who + ": the zero padding around channel " + std::to_string(channel % elements) +
                      " of transmit " + std::to_string(channel / elements) + " holds " + std::to_string(c[k]) +
                      " (" + (part == &i ? "I" : "Q") + ", float " + std::to_string(k) +
                      " of the channel's stride); the fast kernels read the padding as zeros");
      }
    }
}

}  // namespace usrecon::recon
