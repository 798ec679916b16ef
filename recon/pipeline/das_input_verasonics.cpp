// Verasonics Vantage saves: a MAT file (v5 or v7.3) that holds the scanner's structs beside its
// channel data RcvData{b} [rows x channels x frames]. Trans is the probe (its centre frequency,
// element positions, lens and connector), Receive one element per acquisition (its rows of
// RcvData, sampling and start depth), TX each transmit (a plane, focused or diverging wave, or
// one element: steering, focal point, apodization, delays), TW the waveform (its peak),
// Resource.Parameters the speed of sound, and Event, where saved, which TX and Receive each
// acquisition pairs. Verasonics gives lengths in wavelengths at Trans.frequency
// (lambda = c / f0) and times sample 0 from the moment a TX delay of 0 fires.
#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "das_input_formats.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/mat.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon::detail {
namespace {

using io::MatFieldValue;
using io::MatStruct;
using Field = std::optional<MatFieldValue>;

/// A field's one finite number; nullopt when it is absent, empty, text or more than one value.
std::optional<double> number(const Field& v) {
  if (!v || !v->numeric() || v->values.size() != 1 || !std::isfinite(v->values[0])) return std::nullopt;
  return v->values[0];
}
/// A field's numbers (empty when absent or not numeric).
std::vector<double> numbers(const Field& v) { return v && v->numeric() ? v->values : std::vector<double>(); }
/// A char field's text.
std::optional<std::string> text(const Field& v) {
  if (!v || v->matlab_class != "char") return std::nullopt;
  return v->text;
}
bool whole(double v, double lo, double hi) { return v >= lo && v <= hi && v == std::floor(v); }

/// The most acquisitions one frame may hold, and the most TX and Event entries read.
constexpr std::size_t kMostAcquisitions = 16384;
constexpr std::size_t kMostEntries = 65536;

/// Elements [0, n) of struct array `name`, read in growing chunks from `first_chunk` until
/// `enough` says the last chunk holds what is needed (or the array ends, or kMostEntries are
/// read): v7.3 files cost a reader request per field per chunk, resolving each element's
/// reference, and a cine's Receive and Event hold every frame's entries.
template <class Enough>
MatStruct read_until(const io::MatStructReader& file, const std::string& name, const std::vector<std::string>& fields,
                     std::size_t first_chunk, Enough enough) {
  for (std::size_t chunk = std::max<std::size_t>(first_chunk, 1);; chunk *= 4) {
    MatStruct s = file.read(name, fields, 0, std::min(chunk, kMostEntries));
    const std::size_t n = s.dims.empty() ? 0 : std::accumulate(s.dims.begin(), s.dims.end(), std::size_t{1}, std::multiplies<>());
    if (s.elements.size() >= n || s.elements.size() >= kMostEntries || enough(s)) return s;
  }
}

VerasonicsSave read_save(const fs::path& path, const io::MatStructReader& file) {
  const std::string where = path.string() + " (a Verasonics save)";
  VerasonicsSave save;
  FileGeometry& g = save.geometry;
  const auto has = [&](const char* name) {
    return std::any_of(file.variables().begin(), file.variables().end(),
                       [&](const io::MatVariableInfo& v) { return v.name == name; });
  };
  g.source = "Verasonics (";
  for (const char* name : {"Trans", "Receive", "TX", "TW", "Resource", "Event"})
    if (has(name)) g.source += std::string(g.source.back() == '(' ? "" : ", ") + name;
  g.source += ")";
  const auto note = [&](const std::string& text) { g.notes.push_back(text); };
  // A value the save holds but that is no number (NaN) is refused by name, not taken as absent.
  const auto checked = [&](const Field& v, const std::string& name) -> std::optional<double> {
    if (v && v->numeric() && v->values.size() == 1 && !std::isfinite(v->values[0]))
      throw Error(where + ": " + name + " is " + number_text(v->values[0]) + ", not a number usrecon can use");
    return number(v);
  };

  // The probe. Lengths in Trans.units: "mm" or "wavelengths".
  enum { kUnits, kFrequency, kNumElements, kSpacingMm, kSpacing, kElementPos, kLens, kConnector, kType, kHVMux,
         kConnectorES };
  const MatStruct trans = file.read("Trans",
                                    {"units", "frequency", "numelements", "spacingMm", "spacing", "ElementPos",
                                     "lensCorrection", "Connector", "type", "HVMux", "ConnectorES"},
                                    0, 1);
  if (trans.elements.size() != 1) throw Error(where + ": Trans is not one struct");
  const auto& T = trans.elements.front();
  if (T[kHVMux] && !(T[kHVMux]->numeric() && T[kHVMux]->values.empty()))  // [] is none
    throw Error(where + ": Trans.HVMux: the probe is multiplexed, and which element each channel reads in an "
                "acquisition (its aperture) is not read");
  if (const auto type = checked(T[kType], "Trans.type"); type && *type != 0)
    throw Error(where + ": Trans.type " + number_text(*type) +
                (*type == 1 ? " (a curved array)" : *type == 2 ? " (a 2-D array)" : "") +
                ": usrecon beamforms linear arrays (Trans.type 0)");
  const std::optional<std::string> units = text(T[kUnits]);
  if (units && *units != "mm" && *units != "wavelengths")
    throw Error(where + ": Trans.units is '" + *units + "', neither 'mm' nor 'wavelengths'");
  std::optional<double> f0 = checked(T[kFrequency], "Trans.frequency");  // MHz
  if (f0) {
    if (!(*f0 > 0)) throw Error(where + ": Trans.frequency " + number_text(*f0) + " MHz is not a frequency");
    *f0 *= 1e6;
  } else {
    note("Trans.frequency (the centre frequency) is not in the file: the parameters it gives in wavelengths are not "
         "taken");
  }

  // The speed of sound, and the wavelength that Verasonics' lengths count.
  std::optional<double> c;
  if (has("Resource")) {
    try {
      const MatStruct parameters = file.read("Resource.Parameters", {"speedOfSound"}, 0, 1);
      if (!parameters.elements.empty()) c = checked(parameters.elements[0][0], "Resource.Parameters.speedOfSound");
    } catch (const io::InputError&) {  // no Parameters struct: said below as no speed
    }
  }
  if (c) {
    if (!(*c > 0)) throw Error(where + ": Resource.Parameters.speedOfSound " + number_text(*c) + " is not a speed");
    g.sound_speed = *c;
  } else {
    note("Resource.Parameters.speedOfSound is not in the file: give --sound-speed; the parameters it gives in "
         "wavelengths are not taken");
  }
  const std::optional<double> lambda = c && f0 ? std::optional<double>(*c / *f0) : std::nullopt;
  const auto in_metres = [&](double v) -> std::optional<double> {  // a length in Trans.units
    if (units == "mm") return v * 1e-3;
    if (units == "wavelengths" && lambda) return v * *lambda;
    return std::nullopt;
  };

  // The elements and their pitch: Trans.ElementPos [elements x 4 or 5] (x, y, z, azimuth, ...)
  // when its units are known, else Trans.spacingMm, else Trans.spacing (wavelengths). One
  // element (a custom single-element transducer) has no pitch to find.
  if (const auto n = checked(T[kNumElements], "Trans.numelements")) {
    if (!whole(*n, 1, 65536)) throw Error(where + ": Trans.numelements " + number_text(*n) + " is not an element count");
    g.elements = static_cast<int>(*n);
  }
  double array_centre = 0;  // metres: the array's centre (the image's x = 0) in Trans.ElementPos's x
  if (const std::vector<double> pos = numbers(T[kElementPos]); !pos.empty()) {
    const std::vector<std::size_t>& d = T[kElementPos]->dims;
    const std::size_t n = d.empty() ? 0 : d[0];
    if (d.size() != 2 || d[1] < 3 || n * d[1] != pos.size())
      throw Error(where + ": Trans.ElementPos is not [elements x 3 or more] (x, y, z, ...)");
    if (g.elements > 0 && n != std::size_t(g.elements))
      throw Error(where + ": Trans.ElementPos holds " + std::to_string(n) + " elements but Trans.numelements says " +
                  std::to_string(g.elements));
    g.elements = static_cast<int>(n);
    for (std::size_t e = 0; n > 1 && d[1] >= 4 && e < n; ++e)
      if (pos[3 * n + e] != 0)
        throw Error(where + ": Trans.ElementPos: element " + std::to_string(e + 1) + " faces " +
                    number_text(pos[3 * n + e]) + " rad off the array's axis, as on a curved array: usrecon "
                    "beamforms linear arrays");
    if (n > 1 && in_metres(1.0)) {
      std::vector<double> x(n), y(n), z(n);
      for (std::size_t e = 0; e < n; ++e) {
        x[e] = *in_metres(pos[e]);
        y[e] = *in_metres(pos[n + e]);
        z[e] = *in_metres(pos[2 * n + e]);
      }
      // A uniform line at z = 0 (its centre anywhere: x counts from the array's centre, as
      // usrecon's grids do, which is said where it is not Trans.ElementPos's origin).
      array_centre = 0.5 * (x.front() + x.back());
      for (double& v : x) v -= array_centre;
      g.pitch = centred_linear_array_pitch(x, y, z, where + ": Trans.ElementPos");
      if (std::fabs(array_centre) > 1e-3 * *g.pitch)
        note("Trans.ElementPos centres the array at x = " + number_text(array_centre * 1e3) +
             " mm: the image's x counts from the array's centre");
    }
  }
  if (!g.pitch && g.elements != 1) {
    if (const auto mm = checked(T[kSpacingMm], "Trans.spacingMm")) g.pitch = *mm * 1e-3;
    else if (const auto wl = checked(T[kSpacing], "Trans.spacing"); wl && lambda) g.pitch = *wl * *lambda;
    if (g.pitch && !(*g.pitch > 0)) throw Error(where + ": Trans's element spacing is not a length");
    if (!g.pitch) note("the element pitch is not in the file (Trans.ElementPos with Trans.units, Trans.spacingMm): give --pitch");
  }
  // Element e is read from RcvData's channel Trans.Connector(e): kept as the list --channel-map
  // takes (read here with the rest, not again from the file by name).
  if (const std::vector<double> connector = numbers(T[kConnector]); !connector.empty()) {
    const std::vector<std::size_t>& d = T[kConnector]->dims;
    if (std::count_if(d.begin(), d.end(), [](std::size_t k) { return k > 1; }) > 1 ||
        connector.size() > std::size_t(kMaxMappedChannels))
      throw Error(where + ": Trans.Connector is not a vector of channels, one per element");
    for (std::size_t e = 0; e < connector.size(); ++e) {
      if (!whole(connector[e], 1, kMaxMappedChannels))
        throw Error(where + ": Trans.Connector(" + std::to_string(e + 1) + ") is " + number_text(connector[e]) +
                    ", not a channel number");
      if (e > 0) save.channel_map += ',';
      save.channel_map += std::to_string(static_cast<int>(connector[e]));
    }
  }

  // The first frame's Receive entries: those from the first on that fill the same buffer and
  // frame, found from their keys alone (a cine's Receive holds every frame's). Its acquisitions
  // are the entries that replace their rows (mode 0); an accumulating one (mode 1: pulse
  // inversion, averaging) adds onto an acquisition's rows, which then hold the sum.
  const auto same_frame_run = [](const MatStruct& s) {
    const auto key = [&](std::size_t i) {
      return std::pair(number(s.elements[i][0]).value_or(1), number(s.elements[i][1]).value_or(1));
    };
    std::size_t k = s.elements.empty() ? 0 : 1;
    while (k < s.elements.size() && key(k) == key(0)) ++k;
    return k;
  };
  const MatStruct keys = read_until(file, "Receive", {"bufnum", "framenum"}, 16,
                                    [&](const MatStruct& s) { return same_frame_run(s) < s.elements.size(); });
  const std::size_t entries = same_frame_run(keys);
  if (entries == 0) throw Error(where + ": Receive holds no acquisition");
  if (entries > kMostAcquisitions)
    throw Error(where + ": Receive holds more than " + std::to_string(kMostAcquisitions) + " acquisitions a frame");
  enum { kBuf, kStartSample, kEndSample, kStartDepth, kSamplesPerWave, kDecimRate, kSampleMode, kAperture, kMode };
  const MatStruct rcv = file.read("Receive",
                                  {"bufnum", "startSample", "endSample", "startDepth", "samplesPerWave",
                                   "decimSampleRate", "sampleMode", "aperture", "mode"},
                                  0, entries);
  if (rcv.elements.size() != entries) throw Error(where + ": Receive changed while it was read");
  const auto& R0 = rcv.elements.front();
  const double buffer = checked(R0[kBuf], "Receive(1).bufnum").value_or(1);
  if (!whole(buffer, 1, 1e6)) throw Error(where + ": Receive(1).bufnum " + number_text(buffer) + " names no buffer");
  save.var = "RcvData{" + std::to_string(static_cast<long>(buffer)) + "}";
  const std::optional<double> first_row = number(R0[kStartSample]), last_row = number(R0[kEndSample]);
  if (!first_row || !last_row || !whole(*first_row, 1, 1e9) || !whole(*last_row, *first_row, 1e9))
    throw Error(where + ": Receive(1).startSample and endSample name no rows of " + save.var);
  if (*first_row != 1)
    throw Error(where + ": Receive(1) reads rows " + number_text(*first_row) + " to " + number_text(*last_row) + " of " +
                save.var + ": usrecon reads a frame's acquisitions from its first row on");
  const double rows = *last_row - *first_row + 1;
  const std::optional<std::string> mode = text(R0[kSampleMode]);
  if (checked(R0[kMode], "Receive(1).mode").value_or(0) != 0)
    throw Error(where + ": Receive(1).mode accumulates onto rows no acquisition has filled");
  std::vector<std::size_t> acquired;  // the Receive index of each acquisition, in order
  for (std::size_t k = 0; k < entries; ++k) {
    const auto& R = rcv.elements[k];
    const std::string which = where + ": Receive(" + std::to_string(k + 1) + ")";
    const std::optional<double> a = number(R[kStartSample]), b = number(R[kEndSample]);
    if (const auto aperture = checked(R[kAperture], "Receive(" + std::to_string(k + 1) + ").aperture"); aperture && *aperture != 1)
      throw Error(which + ".aperture is " + number_text(*aperture) + ": a multiplexed aperture is not read");
    for (const int f : {kStartDepth, kSamplesPerWave, kDecimRate})
      if (checked(R[f], "Receive(" + std::to_string(k + 1) + ")'s sampling") != number(R0[f]) ||
          text(R[kSampleMode]) != mode)
        throw Error(which + " is sampled or started unlike Receive(1) (startDepth, samplesPerWave, decimSampleRate, "
                    "sampleMode): usrecon beamforms a frame's acquisitions on one time axis");
    if (number(R[kMode]).value_or(0) != 0) {
      // Accumulated onto an acquisition's rows: it names them.
      const bool onto = std::any_of(acquired.begin(), acquired.end(), [&](std::size_t j) {
        return number(rcv.elements[j][kStartSample]) == a && number(rcv.elements[j][kEndSample]) == b;
      });
      if (!onto)
        throw Error(which + " accumulates (mode " + number_text(number(R[kMode]).value_or(0)) + ") onto rows " +
                    (a ? number_text(*a) : "?") + " to " + (b ? number_text(*b) : "?") + " of " + save.var +
                    ", which no acquisition before it filled");
      continue;
    }
    const double j = double(acquired.size());
    if (a != 1 + j * rows || b != (j + 1) * rows)
      throw Error(which + " reads rows " + (a ? number_text(*a) : "?") + " to " + (b ? number_text(*b) : "?") + " of " +
                  save.var + ", not " + number_text(1 + j * rows) + " to " + number_text((j + 1) * rows) +
                  ": usrecon reads a frame's acquisitions from rows one after another, each as long as the first");
    acquired.push_back(k);
  }
  const std::size_t acquisitions = acquired.size();
  // Evenly spaced samples only: the bandpass modes take theirs in pairs a quarter wave apart.
  if (mode && *mode != "NS200BW" && *mode != "custom")
    throw Error(where + ": Receive(1).sampleMode is '" + *mode + "'" +
                (mode->rfind("BS", 0) == 0 ? ", which samples in pairs a quarter wave apart (bandpass sampling)" : "") +
                ": usrecon beamforms evenly spaced samples (sampleMode 'NS200BW' or 'custom')");
  save.samples = static_cast<int>(rows);
  save.transmits = static_cast<int>(acquisitions);
  g.layout = "(samples,transmits),elements,frames";

  // The sampling rate: decimSampleRate (MHz), else samplesPerWave at Trans.frequency.
  if (const auto rate = checked(R0[kDecimRate], "Receive(1).decimSampleRate")) g.fs = *rate * 1e6;
  else if (const auto per_wave = checked(R0[kSamplesPerWave], "Receive(1).samplesPerWave"); per_wave && f0)
    g.fs = *per_wave * *f0;
  if (g.fs && !(*g.fs > 0)) throw Error(where + ": Receive(1)'s sampling rate is not a rate");
  if (!g.fs) note("the sampling rate is not in the file (Receive(1).decimSampleRate, or samplesPerWave with Trans.frequency): give --fs");

  // The transmits: which TX each acquisition fires (Event pairs TX and Receive entries; without
  // it TX(k) fires acquisition k, or TX(1) fires them all).
  enum { kApod, kFocus, kSteer, kDelay, kWaveform, kOrigin, kFocalPt, kFocalPtMm };
  MatStruct tx;
  if (has("TX")) {
    try {
      tx = file.read("TX", {"Apod", "focus", "Steer", "Delay", "waveform", "Origin", "FocalPt", "FocalPtMm"}, 0,
                     kMostEntries);
    } catch (const io::InputError& e) {
      note(std::string("its TX is not read (") + e.what() + "): give the transmits");
    }
  } else {
    note("it holds no TX: give the transmits");
  }
  std::vector<std::size_t> fired(acquisitions, SIZE_MAX);  // TX index of each acquisition
  bool paired = false;
  if (!tx.elements.empty()) {
    if (has("Event")) {
      // Receive index (from 1) -> acquisition, for the acquisitions of the first frame.
      std::vector<std::size_t> acquisition_of(entries, SIZE_MAX);
      for (std::size_t j = 0; j < acquisitions; ++j) acquisition_of[acquired[j]] = j;
      const auto acquisition = [&](const Field& r) -> std::optional<std::size_t> {
        const auto v = number(r);
        if (!v || !whole(*v, 1, double(entries)) || acquisition_of[std::size_t(*v) - 1] == SIZE_MAX) return std::nullopt;
        return acquisition_of[std::size_t(*v) - 1];
      };
      const auto found_all = [&](const MatStruct& s) {
        std::vector<bool> seen(acquisitions);
        for (const auto& e : s.elements)
          if (const auto j = acquisition(e[1])) seen[*j] = true;
        return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
      };
      const MatStruct events = read_until(file, "Event", {"tx", "rcv"}, entries + 16, found_all);
      for (const auto& e : events.elements) {
        const auto t = number(e[0]);
        if (const auto j = acquisition(e[1]); j && t && whole(*t, 1, double(tx.elements.size())) && fired[*j] == SIZE_MAX)
          fired[*j] = std::size_t(*t) - 1;
      }
      paired = std::none_of(fired.begin(), fired.end(), [](std::size_t t) { return t == SIZE_MAX; });
      if (!paired) note("its Event does not pair every acquisition of the first frame with a TX: give the transmits");
    } else if (tx.elements.size() == acquisitions || tx.elements.size() == entries || tx.elements.size() == 1) {
      for (std::size_t j = 0; j < acquisitions; ++j)
        fired[j] = tx.elements.size() == 1 ? 0 : tx.elements.size() == acquisitions ? j : acquired[j];
      paired = true;
    } else {
      note("it pairs its " + std::to_string(tx.elements.size()) + " TX with its " + std::to_string(acquisitions) +
           " acquisitions a frame by no Event: give the transmits");
    }
  }

  // Each TX's waveform peak (TW(TX.waveform).peak, wavelengths): t0 takes the first
  // acquisition's, and a transmit whose pulse peaks later starts later by the difference.
  std::vector<std::optional<double>> peaks;  // per acquisition
  if (has("TW") && paired) {
    try {
      const MatStruct tw = file.read("TW", {"peak"}, 0, kMostEntries);
      for (std::size_t j = 0; j < acquisitions; ++j) {
        const double w = checked(tx.elements[fired[j]][kWaveform], "TX(" + std::to_string(fired[j] + 1) + ").waveform").value_or(1);
        peaks.push_back(whole(w, 1, double(tw.elements.size()))
                            ? checked(tw.elements[std::size_t(w) - 1][0], "TW(" + number_text(w) + ").peak")
                            : std::nullopt);
      }
    } catch (const io::InputError&) {  // a TW that is no struct: no peaks, said below
    }
  }

  // The kinds of transmit, told apart as computeTXDelays tells them: one element firing
  // (synthetic aperture); TX.focus 0 without a focal point (a plane wave steered at Steer(1));
  // else a spherical wave through the focal point TX.FocalPtMm (mm), TX.FocalPt (wavelengths) or
  // Origin + focus (sin Steer(1), cos Steer(1)) (wavelengths, z from the array): a focused wave
  // where that point lies in front of the array (z > 0), a diverging one from a virtual source
  // on or behind it (focus < 0).
  // A TX's Delay (wavelengths) says when each element fires after the acquisition's trigger;
  // each wave is timed from it on the centre clock (TimeZero::Center: time zero where the wave
  // crosses the array's centre), with wave delay minus that crossing's time after the trigger:
  //  - a plane wave's front crosses the centre at D_ref = Delay_i - x_i sin(angle) / c, fitted
  //    over its active elements;
  //  - a focused wave converges on its focal point F at T_F = Delay_i + |F - e_i| / c, fitted
  //    likewise, and crossed the centre |F| / c before;
  //  - a diverging wave leaves its source S at T_S = Delay_i - |e_i - S| / c and crosses the
  //    centre |S| / c later;
  //  - a synthetic aperture's element fires at its delay.
  // A fit off by more than an eighth of a period is no such wave. Without a Delay to fit, a plane
  // wave is timed from its first element's firing (TimeZero::FirstElement), and a spherical wave
  // as computeTXDelays times it: its first active element (the farthest from a focal point, the
  // nearest to a source) fires at 0.
  bool transmits_taken = paired;
  std::vector<double> angles, delays, source_x, source_z;
  std::vector<int> sa_elements;
  int focused_waves = 0, diverging_waves = 0;
  bool timed = true;  // every TX's timing known (its Delay read, or computed for a spherical wave)
  const auto element_x = [&](std::size_t i) { return (double(i) - 0.5 * (g.elements - 1)) * *g.pitch; };
  // The fit of a TX's Delay: the mean over the elements `firing` of Delay_i lambda / c +
  // offset(i) (the moment the wave is where offset counts from), and the worst difference from it.
  const auto fit = [&](const std::vector<double>& delay, const std::vector<std::size_t>& firing, auto offset) {
    double sum = 0;
    for (std::size_t i : firing) sum += delay[i] * *lambda / *c + offset(i);
    const double mean = sum / double(firing.size());
    double worst = 0;
    for (std::size_t i : firing) worst = std::max(worst, std::fabs(delay[i] * *lambda / *c + offset(i) - mean));
    return std::pair(mean, worst);
  };
  // An Apod shorter than the array lists its active elements only (computeTXDelays: the elements
  // whose Trans.ConnectorES(:, 1) is not 0, in order), and Delay with it.
  std::vector<std::size_t> listed;
  if (const std::vector<double> es = numbers(T[kConnectorES]); g.elements > 0 && !es.empty()) {
    const std::size_t rows = T[kConnectorES]->dims.empty() ? 0 : T[kConnectorES]->dims[0];
    for (std::size_t e = 0; rows == std::size_t(g.elements) && e < rows; ++e)
      if (es[e] != 0) listed.push_back(e);
  }
  for (std::size_t k = 0; paired && k < acquisitions; ++k) {
    const auto& X = tx.elements[fired[k]];
    const std::string which = "TX(" + std::to_string(fired[k] + 1) + ")";
    std::vector<double> apod = numbers(X[kApod]), delay = numbers(X[kDelay]);
    if (g.elements > 0 && !apod.empty() && apod.size() < std::size_t(g.elements) && apod.size() == listed.size()) {
      std::vector<double> full_apod(std::size_t(g.elements), 0.0), full_delay;
      for (std::size_t j = 0; j < listed.size(); ++j) full_apod[listed[j]] = apod[j];
      if (delay.size() == apod.size()) {
        full_delay.assign(std::size_t(g.elements), 0.0);
        for (std::size_t j = 0; j < listed.size(); ++j) full_delay[listed[j]] = delay[j];
        delay = std::move(full_delay);
      }
      apod = std::move(full_apod);
    }
    const std::size_t active = std::count_if(apod.begin(), apod.end(), [](double a) { return a != 0; });
    if (active == 0 && !apod.empty()) {
      note(which + ".Apod fires no element: give the transmits");
      transmits_taken = false;
      break;
    }
    const std::vector<double> steer = numbers(X[kSteer]);
    if (steer.size() > 1 && steer[1] != 0)
      throw Error(where + ": " + which + " is steered in elevation (" + number_text(steer[1]) + " rad)");
    const double angle = steer.empty() ? 0.0 : steer[0];
    if (!(std::fabs(angle) < M_PI / 2))
      throw Error(where + ": " + which + ".Steer(1) " + number_text(angle) + " rad is not a steering angle");
    const bool whole_array = g.elements > 0 && apod.size() == std::size_t(g.elements);
    const bool delays_read = !delay.empty() && delay.size() == apod.size() && lambda &&
                             std::all_of(delay.begin(), delay.end(), [](double d) { return std::isfinite(d); });
    if (!delay.empty() && !delays_read && lambda)
      note(which + ".Delay holds values that are not finite or does not match its Apod: it is timed as a TX without "
           "one");
    if (active == 1 && apod.size() > 1) {
      if (!whole_array) {
        note(which + ".Apod lists " + std::to_string(apod.size()) + " elements of the " + std::to_string(g.elements) +
             ": its firing element is not known; give the transmits");
        transmits_taken = false;
        break;
      }
      const auto e = std::find_if(apod.begin(), apod.end(), [](double a) { return a != 0; }) - apod.begin();
      sa_elements.push_back(static_cast<int>(e));
      if (delays_read) delays.push_back(0.0 - delay[std::size_t(e)] * *lambda / *c);
      else timed = false;
      continue;
    }

    // A spherical wave's focal point or virtual source (x from the array's centre, z; metres).
    // A FocalPt(Mm) saved is the one computeTXDelays takes (its y left out on a linear array, as
    // there), but for [0 0 0] beside a focus of 0: what computeTXDelays returns for a plane
    // wave, which scripts save as [TX.Delay, TX.FocalPt] = computeTXDelays(TX).
    std::vector<double> point_mm = numbers(X[kFocalPtMm]), point_wl = numbers(X[kFocalPt]);
    const auto origin_point = [](const std::vector<double>& p) {
      return p.size() == 3 && p[0] == 0 && p[1] == 0 && p[2] == 0;
    };
    if ((origin_point(point_mm) || origin_point(point_wl)) && number(X[kFocus]).value_or(0) == 0) {
      if (origin_point(point_mm)) point_mm.clear();
      if (origin_point(point_wl)) point_wl.clear();
    }
    std::optional<std::pair<double, double>> point;
    std::string in_wavelengths;  // the field that needs the wavelength to be read
    if (!point_mm.empty() || !point_wl.empty()) {
      const bool mm = !point_mm.empty();
      const std::vector<double>& p = mm ? point_mm : point_wl;
      const std::string field = which + (mm ? ".FocalPtMm" : ".FocalPt");
      if (p.size() != 3 || !std::all_of(p.begin(), p.end(), [](double v) { return std::isfinite(v); }))
        throw Error(where + ": " + field + " is not a point (x, y, z)");
      if (mm) point = std::pair(p[0] * 1e-3 - array_centre, p[2] * 1e-3);
      else if (lambda) point = std::pair(p[0] * *lambda - array_centre, p[2] * *lambda);
      else in_wavelengths = field;
    } else if (const double focus = checked(X[kFocus], which + ".focus").value_or(0); focus != 0) {
      const std::vector<double> origin = numbers(X[kOrigin]);
      const double origin_x = origin.empty() ? 0.0 : origin[0];
      if (!std::isfinite(origin_x)) throw Error(where + ": " + which + ".Origin is not a point");
      if (lambda)
        point = std::pair((origin_x + focus * std::sin(angle)) * *lambda - array_centre, focus * std::cos(angle) * *lambda);
      else in_wavelengths = which + ".focus";
    }
    if (!in_wavelengths.empty()) {
      note(in_wavelengths + " is in wavelengths, which need Trans.frequency and the speed of sound: give the transmits");
      transmits_taken = false;
      break;
    }

    if (!point) {  // a plane wave
      angles.push_back(angle);
      if (!delays_read || !g.pitch || !whole_array) {
        if (delays_read && !whole_array)
          note(which + ".Apod and Delay list " + std::to_string(apod.size()) + " elements of the " +
               std::to_string(g.elements) + ": each transmit is timed from its first element's firing");
        timed = false;
        continue;
      }
      // D_i = Delay_i lambda / c against x_i sin(angle) / c: the centre's crossing is their mean
      // difference; a difference off it by more than an eighth of a period is no such plane wave.
      std::vector<std::size_t> firing;
      for (std::size_t i = 0; i < apod.size(); ++i)
        if (apod[i] != 0) firing.push_back(i);
      const auto [centre, worst] = fit(delay, firing, [&](std::size_t i) { return -element_x(i) * std::sin(angle) / *c; });
      if (worst > 0.125 / *f0) {
        note(which + ".Delay is not a plane wave steered at its Steer(1) (" + number_text(worst * *f0) +
             " periods off): each transmit is timed from its first element's firing");
        timed = false;
        continue;
      }
      delays.push_back(0.0 - centre);
      continue;
    }

    // A focused or diverging wave. Its Delay is fitted over the elements that fire; without one it
    // is timed as computeTXDelays times it, over those elements (all of them without an Apod).
    // Which elements fire decides its timing: an Apod of part of the array that
    // Trans.ConnectorES does not place leaves it unknown.
    if (!apod.empty() && !whole_array) {
      note(which + ".Apod lists " + std::to_string(apod.size()) + " elements of the " + std::to_string(g.elements) +
           " and no Trans.ConnectorES says which: its wave's timing is not known; give the transmits");
      transmits_taken = false;
      break;
    }
    const double xs = point->first, zs = point->second;  // (lambdas below capture them: no structured binding)
    const bool converging = zs > 0;
    ++(converging ? focused_waves : diverging_waves);
    source_x.push_back(xs);
    source_z.push_back(zs);
    if (!g.pitch || !lambda || g.elements < 1) {
      timed = false;
      continue;
    }
    std::vector<std::size_t> firing;
    for (std::size_t i = 0; i < std::size_t(g.elements); ++i)
      if (apod.empty() || apod[i] != 0) firing.push_back(i);
    // The time (s after the trigger) at which the wave is at its point: T_F, or T_S.
    const double sign = converging ? 1.0 : -1.0;
    const auto path = [&](std::size_t i) { return sign * std::hypot(element_x(i) - xs, zs) / *c; };
    std::optional<double> at_point;
    if (delays_read) {
      const auto [mean, worst] = fit(delay, firing, path);
      if (worst <= 0.125 / *f0) at_point = mean;
      else
        note(which + ".Delay is not a wave " + (converging ? "focused on" : "diverging from") + " (" +
             number_text(xs * 1e3) + ", " + number_text(zs * 1e3) + ") mm (" + number_text(worst * *f0) +
             " periods off): it is timed as computeTXDelays times that wave");
    }
    if (!at_point) {
      // Its first element fires at 0: T_F = max |F - e_i| / c, T_S = -min |e_i - S| / c, both the
      // largest path(i).
      double latest = -INFINITY;
      for (std::size_t i : firing) latest = std::max(latest, path(i));
      at_point = latest;
    }
    const double r = std::hypot(xs, zs);
    delays.push_back(converging ? r / *c - *at_point : -(*at_point + r / *c));
  }
  const int kinds = int(!sa_elements.empty()) + int(!angles.empty()) + int(focused_waves > 0) + int(diverging_waves > 0);
  if (transmits_taken && kinds > 1) {
    std::vector<std::string> names;
    if (!sa_elements.empty()) names.push_back("single-element transmits");
    if (!angles.empty()) names.push_back("plane waves");
    if (focused_waves) names.push_back("focused waves");
    if (diverging_waves) names.push_back("diverging waves");
    std::string list;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) list += (i ? ", " : "") + names[i];
    note("it mixes " + list + " with " + names.back() + ": give the transmits");
    transmits_taken = false;
  }
  // Transmits whose pulses peak apart start apart: timed when the delays are.
  const bool peaks_differ = peaks.size() == acquisitions && acquisitions > 0 && peaks[0] &&
                            std::any_of(peaks.begin(), peaks.end(), [&](const auto& p) { return p != peaks[0]; });
  if (transmits_taken) {
    if (!angles.empty() || focused_waves || diverging_waves) {
      if (!angles.empty()) {
        g.model = Model::PlaneWave;
        g.angles = angles;
      } else {
        g.model = focused_waves ? Model::FocusedWave : Model::DivergingWave;
        g.source_x = source_x;
        g.source_z = source_z;
      }
      g.time_zero = timed ? das::TimeZero::Center : das::TimeZero::FirstElement;
    } else {
      g.model = Model::SyntheticAperture;
      g.tx_elements = sa_elements;
      g.time_zero.reset();  // each element's firing
    }
    if (timed && f0) {
      for (std::size_t j = 0; peaks_differ && j < acquisitions; ++j)
        if (peaks[j]) delays[j] -= (*peaks[j] - *peaks[0]) / *f0;
      g.wave_delays = delays;
    }
    if (peaks_differ && !timed)
      note("its transmits' waveforms peak at different times (TW.peak), which untimed transmits cannot honour: t0 "
           "takes the first's");
  }

  // t0: sample 0 lies 2 startDepth wavelengths (there and back) after the trigger; the echo
  // of a point comes later by the waveform's time to its peak (TW.peak, wavelengths) and by the
  // lens, crossed twice (Trans.lensCorrection, one way, in Trans.units).
  const std::optional<double> start_depth = checked(R0[kStartDepth], "Receive(1).startDepth");
  if (!transmits_taken && paired) {
    note("its t0 is not taken without its transmits: give --t0");
  } else if (!start_depth || !lambda) {
    note("t0 is not in the file (Receive(1).startDepth, with Trans.frequency and the speed of sound): give --t0");
  } else {
    double t0 = 2 * *start_depth * *lambda / *c;
    const std::optional<double> peak = peaks.empty() ? std::nullopt : peaks[0];
    if (peak) t0 -= *peak / *f0;
    else note("TW.peak is not in the file: t0 leaves out the time to the transmit pulse's peak");
    if (const auto lens = checked(T[kLens], "Trans.lensCorrection")) {
      if (const auto metres = in_metres(*lens)) t0 -= 2 * *metres / *c;
      else note("Trans.units is not in the file: t0 leaves out Trans.lensCorrection");
    }
    g.t0 = t0;
  }
  return save;
}

}  // namespace

std::shared_ptr<const VerasonicsSave> verasonics_save(const fs::path& path) {
  if (io::lower_extension(path) != ".mat") return nullptr;
  // A batch reads a cine's frames one after another: the last file's answer is kept, with its
  // refusal, while the file is unchanged.
  static std::mutex mutex;
  static std::string kept_key;
  static std::shared_ptr<const VerasonicsSave> kept;
  static std::exception_ptr kept_refusal;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec);
  const std::string key = path.string() + "\n" + std::to_string(ec ? 0 : size) + "\n" +
                          std::to_string(ec ? 0 : time.time_since_epoch().count());
  {
    std::lock_guard lock(mutex);
    if (!ec && key == kept_key) {
      if (kept_refusal) std::rethrow_exception(kept_refusal);
      return kept;
    }
  }
  // Trans and Receive structs beside RcvData make a save (Resource, TX, TW and Event are read where
  // saved); a file the list cannot read is left for the channel data's reader to refuse in its
  // words. The list is read once for the structs' reads too (a v7.3 cine's takes seconds).
  std::unique_ptr<io::MatStructReader> file;
  try {
    file = std::make_unique<io::MatStructReader>(path);
  } catch (const io::InputError&) {
    return nullptr;
  }
  int found = 0;
  for (const io::MatVariableInfo& v : file->variables()) {
    if ((v.name == "Trans" || v.name == "Receive") && v.matlab_class == "struct") ++found;
    if (v.name == "RcvData") ++found;
  }
  const bool is_save = found == 3;
  std::shared_ptr<const VerasonicsSave> save;
  std::exception_ptr refusal;
  try {
    if (is_save) save = std::make_shared<const VerasonicsSave>(read_save(path, *file));
  } catch (const Error&) {
    refusal = std::current_exception();
  }
  std::lock_guard lock(mutex);
  if (!ec) {
    kept_key = key;
    kept = save;
    kept_refusal = refusal;
  }
  if (refusal) std::rethrow_exception(refusal);
  return save;
}

ChannelInput with_verasonics_defaults(const ChannelInput& in, const VerasonicsSave& save) {
  ChannelInput own = in;
  if (own.var.empty()) own.var = save.var;
  if (own.var != save.var) return own;  // another array: its layout is the user's to say
  if (own.layout.empty()) own.layout = save.geometry.layout;
  if (own.samples == 0 && own.layout.find('(') != std::string::npos) own.samples = save.samples;
  if (own.channel_map.empty() && !save.channel_map.empty()) {
    own.channel_map = save.channel_map;
    own.channel_map_from = "the save's Trans.Connector (--channel-map replaces it)";
  }
  return own;
}

}  // namespace usrecon::recon::detail
