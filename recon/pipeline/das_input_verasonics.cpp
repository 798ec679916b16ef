// Verasonics Vantage saves: a MAT file (v5 or v7.3) that holds the scanner's structs beside its
// channel data RcvData{b} [rows x channels x frames]. Trans is the probe (its centre frequency,
// element positions, lens and connector), Receive one element per acquisition (its rows of
// RcvData, sampling and start depth), TX each transmit (steering, apodization, delays), TW the
// waveform (its peak), Resource.Parameters the speed of sound, and Event, where saved, which TX
// and Receive each acquisition pairs. Verasonics gives lengths in wavelengths at Trans.frequency
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

/// Elements [0, n) of struct array `name`, read in growing chunks until `enough` says the last
/// chunk holds what is needed (or the array ends, or kMostEntries are read): v7.3 files cost a
/// reader request per field per chunk, and a cine's Receive holds every frame's acquisitions.
template <class Enough>
MatStruct read_until(const fs::path& path, const std::string& name, const std::vector<std::string>& fields,
                     Enough enough) {
  for (std::size_t chunk = 256;; chunk *= 4) {
    MatStruct s = io::read_mat_struct(path, name, fields, 0, std::min(chunk, kMostEntries));
    const std::size_t n = s.dims.empty() ? 0 : std::accumulate(s.dims.begin(), s.dims.end(), std::size_t{1}, std::multiplies<>());
    if (s.elements.size() >= n || s.elements.size() >= kMostEntries || enough(s)) return s;
  }
}

VerasonicsSave read_save(const fs::path& path) {
  const std::string where = path.string() + " (a Verasonics save)";
  VerasonicsSave save;
  FileGeometry& g = save.geometry;
  g.source = "Verasonics (Trans, Receive, TX, TW, Resource)";
  const auto note = [&](const std::string& text) { g.notes.push_back(text); };

  // The probe. Lengths in Trans.units: "mm" or "wavelengths".
  enum { kUnits, kFrequency, kNumElements, kSpacingMm, kSpacing, kElementPos, kLens, kConnector, kType, kHVMux };
  const MatStruct trans = io::read_mat_struct(path, "Trans",
                                              {"units", "frequency", "numelements", "spacingMm", "spacing",
                                               "ElementPos", "lensCorrection", "Connector", "type", "HVMux"},
                                              0, 1);
  if (trans.elements.size() != 1) throw Error(where + ": Trans is not one struct");
  const auto& T = trans.elements.front();
  if (T[kHVMux] && !(T[kHVMux]->numeric() && T[kHVMux]->values.empty()))  // [] is none
    throw Error(where + ": Trans.HVMux: the probe is multiplexed, and which element each channel reads in an "
                "acquisition (its aperture) is not read");
  if (const auto type = number(T[kType]); type && *type != 0)
    throw Error(where + ": Trans.type " + number_text(*type) +
                (*type == 1 ? " (a curved array)" : *type == 2 ? " (a 2-D array)" : "") +
                ": usrecon beamforms linear arrays (Trans.type 0)");
  const std::optional<std::string> units = text(T[kUnits]);
  if (units && *units != "mm" && *units != "wavelengths")
    throw Error(where + ": Trans.units is '" + *units + "', neither 'mm' nor 'wavelengths'");
  std::optional<double> f0 = number(T[kFrequency]);  // MHz
  if (f0) {
    if (!(*f0 > 0)) throw Error(where + ": Trans.frequency " + number_text(*f0) + " MHz is not a frequency");
    *f0 *= 1e6;
  } else {
    note("Trans.frequency (the centre frequency) is not in the file: the parameters it gives in wavelengths are not "
         "taken");
  }

  // The speed of sound, and the wavelength that Verasonics' lengths count.
  std::optional<double> c;
  try {
    c = number(io::read_mat_struct(path, "Resource.Parameters", {"speedOfSound"}, 0, 1).elements.at(0).at(0));
  } catch (const io::InputError&) {
  } catch (const std::out_of_range&) {
  }
  if (c) {
    if (!(*c > 0)) throw Error(where + ": Resource.Parameters.speedOfSound " + number_text(*c) + " is not a speed");
    g.sound_speed = *c;
  } else {
    note("Resource.Parameters.speedOfSound is not in the file: the parameters it gives in wavelengths are not taken");
  }
  const std::optional<double> lambda = c && f0 ? std::optional<double>(*c / *f0) : std::nullopt;
  const auto in_metres = [&](double v) -> std::optional<double> {  // a length in Trans.units
    if (units == "mm") return v * 1e-3;
    if (units == "wavelengths" && lambda) return v * *lambda;
    return std::nullopt;
  };

  // The elements and their pitch: Trans.ElementPos [elements x 4 or 5] (x, y, z, azimuth, ...)
  // when its units are known, else Trans.spacingMm, else Trans.spacing (wavelengths).
  if (const auto n = number(T[kNumElements])) {
    if (!whole(*n, 1, 65536)) throw Error(where + ": Trans.numelements " + number_text(*n) + " is not an element count");
    g.elements = static_cast<int>(*n);
  }
  if (const std::vector<double> pos = numbers(T[kElementPos]); !pos.empty()) {
    const std::vector<std::size_t>& d = T[kElementPos]->dims;
    const std::size_t n = d.empty() ? 0 : d[0];
    if (d.size() != 2 || d[1] < 3 || n * d[1] != pos.size())
      throw Error(where + ": Trans.ElementPos is not [elements x 3 or more] (x, y, z, ...)");
    if (g.elements > 0 && n != std::size_t(g.elements))
      throw Error(where + ": Trans.ElementPos holds " + std::to_string(n) + " elements but Trans.numelements says " +
                  std::to_string(g.elements));
    for (std::size_t e = 0; d[1] >= 4 && e < n; ++e)
      if (pos[3 * n + e] != 0)
        throw Error(where + ": Trans.ElementPos: element " + std::to_string(e + 1) + " faces " +
                    number_text(pos[3 * n + e]) + " rad off the array's axis, as on a curved array: usrecon "
                    "beamforms linear arrays");
    if (in_metres(1.0)) {
      std::vector<double> x(n), y(n), z(n);
      for (std::size_t e = 0; e < n; ++e) {
        x[e] = *in_metres(pos[e]);
        y[e] = *in_metres(pos[n + e]);
        z[e] = *in_metres(pos[2 * n + e]);
      }
      g.pitch = centred_linear_array_pitch(x, y, z, where + ": Trans.ElementPos");
      g.elements = static_cast<int>(n);
    }
  }
  if (!g.pitch) {
    if (const auto mm = number(T[kSpacingMm])) g.pitch = *mm * 1e-3;
    else if (const auto wl = number(T[kSpacing]); wl && lambda) g.pitch = *wl * *lambda;
    if (g.pitch && !(*g.pitch > 0)) throw Error(where + ": Trans's element spacing is not a length");
    if (!g.pitch) note("the element pitch is not in the file (Trans.ElementPos with Trans.units, Trans.spacingMm): give --pitch");
  }
  // Element e is read from RcvData's channel Trans.Connector(e).
  if (!numbers(T[kConnector]).empty()) save.channel_map = "Trans.Connector";

  // The acquisitions of the first frame: the Receive entries from the first on that fill the
  // same buffer and frame. Each must read the rows after the one before, sampled alike.
  const std::vector<std::string> rcv_fields = {"bufnum",          "framenum",   "startSample", "endSample",
                                               "startDepth",      "samplesPerWave", "decimSampleRate",
                                               "sampleMode",      "aperture",   "mode"};
  enum { kBuf, kFrame, kStartSample, kEndSample, kStartDepth, kSamplesPerWave, kDecimRate, kSampleMode, kAperture, kMode };
  const auto same_frame_run = [](const MatStruct& s) {
    std::size_t k = 1;
    const auto key = [&](std::size_t i) {
      return std::pair(number(s.elements[i][kBuf]).value_or(1), number(s.elements[i][kFrame]).value_or(1));
    };
    while (k < s.elements.size() && key(k) == key(0)) ++k;
    return k;
  };
  const MatStruct rcv = read_until(path, "Receive", rcv_fields,
                                   [&](const MatStruct& s) { return !s.elements.empty() && same_frame_run(s) < s.elements.size(); });
  if (rcv.elements.empty()) throw Error(where + ": Receive holds no acquisition");
  const std::size_t acquisitions = same_frame_run(rcv);
  if (acquisitions > kMostAcquisitions)
    throw Error(where + ": Receive holds more than " + std::to_string(kMostAcquisitions) + " acquisitions a frame");
  const auto& R0 = rcv.elements.front();
  const double buffer = number(R0[kBuf]).value_or(1);
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
  for (std::size_t k = 0; k < acquisitions; ++k) {
    const auto& R = rcv.elements[k];
    const std::string which = where + ": Receive(" + std::to_string(k + 1) + ")";
    const std::optional<double> a = number(R[kStartSample]), b = number(R[kEndSample]);
    if (a != 1 + double(k) * rows || b != double(k + 1) * rows)
      throw Error(which + " reads rows " + (a ? number_text(*a) : "?") + " to " + (b ? number_text(*b) : "?") + " of " +
                  save.var + ", not " + number_text(1 + double(k) * rows) + " to " + number_text(double(k + 1) * rows) +
                  ": usrecon reads a frame's acquisitions from rows one after another, each as long as the first" +
                  (number(R[kMode]).value_or(0) != 0 ? " (its mode accumulates onto another acquisition's rows)" : ""));
    if (const auto aperture = number(R[kAperture]); aperture && *aperture != 1)
      throw Error(which + ".aperture is " + number_text(*aperture) + ": a multiplexed aperture is not read");
    if (k == 0) continue;
    for (const int f : {kStartDepth, kSamplesPerWave, kDecimRate})
      if (number(R[f]) != number(R0[f]) || text(R[kSampleMode]) != mode)
        throw Error(which + " is sampled or started unlike Receive(1) (startDepth, samplesPerWave, decimSampleRate, "
                    "sampleMode): usrecon beamforms a frame's acquisitions on one time axis");
  }
  // Evenly spaced samples only: the bandpass modes take theirs in pairs a quarter wave apart.
  if (mode && *mode != "NS200BW" && *mode != "custom")
    throw Error(where + ": Receive(1).sampleMode is '" + *mode + "'" +
                (mode->rfind("BS", 0) == 0 ? ", which samples in pairs a quarter wave apart (bandpass sampling)" : "") +
                ": usrecon beamforms evenly spaced samples (sampleMode 'NS200BW' or 'custom')");
  save.samples = static_cast<int>(rows);
  save.transmits = static_cast<int>(acquisitions);
  g.layout = "(samples,transmits),elements,frames";

  // The sampling rate: decimSampleRate (MHz), else samplesPerWave at Trans.frequency.
  if (const auto rate = number(R0[kDecimRate])) g.fs = *rate * 1e6;
  else if (const auto per_wave = number(R0[kSamplesPerWave]); per_wave && f0) g.fs = *per_wave * *f0;
  if (g.fs && !(*g.fs > 0)) throw Error(where + ": Receive(1)'s sampling rate is not a rate");
  if (!g.fs) note("the sampling rate is not in the file (Receive(1).decimSampleRate, or samplesPerWave with Trans.frequency): give --fs");

  // The transmits: which TX each acquisition fires (Event pairs them; without it TX(k) fires
  // acquisition k, or TX(1) fires them all).
  enum { kApod, kFocus, kSteer, kDelay, kWaveform };
  MatStruct tx;
  try {
    tx = io::read_mat_struct(path, "TX", {"Apod", "focus", "Steer", "Delay", "waveform"}, 0, kMostEntries);
  } catch (const io::InputError& e) {
    note(std::string("its TX is not read (") + e.what() + "): give the transmits");
  }
  std::vector<std::size_t> fired(acquisitions, SIZE_MAX);  // TX index of each acquisition
  bool paired = false;
  if (!tx.elements.empty()) {
    std::vector<std::string> names;
    for (const io::MatVariableInfo& v : io::list_mat_variables(path)) names.push_back(v.name);
    if (std::find(names.begin(), names.end(), "Event") != names.end()) {
      const auto found_all = [&](const MatStruct& s) {
        std::size_t found = 0;
        std::vector<bool> seen(acquisitions);
        for (const auto& e : s.elements)
          if (const auto r = number(e[1]); r && whole(*r, 1, double(acquisitions)) && !seen[std::size_t(*r) - 1]) {
            seen[std::size_t(*r) - 1] = true;
            ++found;
          }
        return found == acquisitions;
      };
      const MatStruct events = read_until(path, "Event", {"tx", "rcv"}, found_all);
      for (const auto& e : events.elements) {
        const auto t = number(e[0]), r = number(e[1]);
        if (t && r && whole(*r, 1, double(acquisitions)) && whole(*t, 1, double(tx.elements.size())) &&
            fired[std::size_t(*r) - 1] == SIZE_MAX)
          fired[std::size_t(*r) - 1] = std::size_t(*t) - 1;
      }
      paired = std::none_of(fired.begin(), fired.end(), [](std::size_t t) { return t == SIZE_MAX; });
      if (!paired) note("its Event does not pair every acquisition of the first frame with a TX: give the transmits");
    } else if (tx.elements.size() == acquisitions || tx.elements.size() == 1) {
      for (std::size_t k = 0; k < acquisitions; ++k) fired[k] = tx.elements.size() == 1 ? 0 : k;
      paired = true;
    } else {
      note("it pairs its " + std::to_string(tx.elements.size()) + " TX with its " + std::to_string(acquisitions) +
           " acquisitions a frame by no Event: give the transmits");
    }
  }

  // Plane waves (focus 0, several elements) or synthetic aperture (one element each, focus 0).
  // A TX's Delay (wavelengths) says when each element fires after the acquisition's trigger:
  // a plane wave's front crosses the array centre at D_ref, fitted over its active elements, so
  // its samples are timed on the centre clock (TimeZero::Center) with wave delay -D_ref; a
  // synthetic aperture's element fires at its delay.
  bool transmits_taken = paired;
  std::vector<double> angles, delays;
  std::vector<int> sa_elements;
  bool timed = true;  // every TX's Delay read (with the wavelength and the positions)
  for (std::size_t k = 0; paired && k < acquisitions; ++k) {
    const auto& X = tx.elements[fired[k]];
    const std::string which = "TX(" + std::to_string(fired[k] + 1) + ")";
    const std::vector<double> apod = numbers(X[kApod]);
    const std::size_t active = std::count_if(apod.begin(), apod.end(), [](double a) { return a != 0; });
    if (number(X[kFocus]).value_or(0) != 0) {
      note(which + ".focus is not 0: the file's focused or diverging waves are not read; give --model dw or fw with "
           "--sources-x/-z and --t0");
      transmits_taken = false;
      break;
    }
    const std::vector<double> steer = numbers(X[kSteer]);
    if (steer.size() > 1 && steer[1] != 0)
      throw Error(where + ": " + which + " is steered in elevation (" + number_text(steer[1]) + " rad)");
    const std::vector<double> delay = numbers(X[kDelay]);
    const bool single = active == 1 && apod.size() > 1;
    if (single) {
      const auto e = std::find_if(apod.begin(), apod.end(), [](double a) { return a != 0; }) - apod.begin();
      sa_elements.push_back(static_cast<int>(e));
      if (delay.size() == apod.size() && lambda) delays.push_back(-delay[std::size_t(e)] * *lambda / *c);
      else timed = false;
    } else {
      const double angle = steer.empty() ? 0.0 : steer[0];
      if (!(std::fabs(angle) < M_PI / 2)) throw Error(where + ": " + which + ".Steer(1) " + number_text(angle) + " rad is not a steering angle");
      angles.push_back(angle);
      if (delay.empty() || !lambda || !g.pitch || g.elements < 1 || delay.size() != std::size_t(g.elements) ||
          (!apod.empty() && apod.size() != delay.size())) {
        timed = false;
        continue;
      }
      // D_i = Delay_i lambda / c against x_i sin(angle) / c: the centre's crossing is their mean
      // difference; a difference off it by more than an eighth of a period is no such plane wave.
      double sum = 0;
      std::size_t used = 0;
      const auto x = [&](std::size_t i) { return (double(i) - 0.5 * (g.elements - 1)) * *g.pitch; };
      for (std::size_t i = 0; i < delay.size(); ++i)
        if (apod.empty() || apod[i] != 0) {
          sum += delay[i] * *lambda / *c - x(i) * std::sin(angle) / *c;
          ++used;
        }
      const double centre = used ? sum / double(used) : 0.0;
      double worst = 0;
      for (std::size_t i = 0; i < delay.size(); ++i)
        if (apod.empty() || apod[i] != 0)
          worst = std::max(worst, std::fabs(delay[i] * *lambda / *c - x(i) * std::sin(angle) / *c - centre));
      if (worst > 0.125 / *f0) {
        note(which + ".Delay is not a plane wave steered at its Steer(1) (" + number_text(worst * *f0) +
             " periods off): its transmits are timed from the first element firing at t = 0");
        timed = false;
        continue;
      }
      delays.push_back(-centre);
    }
  }
  if (transmits_taken && !sa_elements.empty() && !angles.empty()) {
    note("it mixes single-element transmits with plane waves: give the transmits");
    transmits_taken = false;
  }
  if (transmits_taken) {
    if (!angles.empty()) {
      g.model = Model::PlaneWave;
      g.angles = angles;
      g.time_zero = timed ? das::TimeZero::Center : das::TimeZero::FirstElement;
    } else {
      g.model = Model::SyntheticAperture;
      g.tx_elements = sa_elements;
      g.time_zero.reset();  // each element's firing
    }
    if (timed) g.wave_delays = delays;
  }

  // t0: sample 0 lies 2 startDepth wavelengths (there and back) after the trigger; the echo
  // of a point comes later by the waveform's time to its peak (TW.peak, wavelengths) and by the
  // lens, crossed twice (Trans.lensCorrection, one way, in Trans.units).
  const std::optional<double> start_depth = number(R0[kStartDepth]);
  if (!transmits_taken && paired) {
    note("its t0 is not taken with its transmits: give --t0");
  } else if (!start_depth || !lambda) {
    note("t0 is not in the file (Receive(1).startDepth, with Trans.frequency and the speed of sound): give --t0");
  } else {
    double t0 = 2 * *start_depth * *lambda / *c;
    std::optional<double> peak;
    try {
      const double w = paired ? number(tx.elements[fired[0]][kWaveform]).value_or(1) : 1;
      if (whole(w, 1, double(kMostEntries))) {
        const MatStruct tw = io::read_mat_struct(path, "TW", {"peak"}, std::size_t(w) - 1, 1);
        if (!tw.elements.empty()) peak = number(tw.elements[0][0]);
      }
    } catch (const io::InputError&) {
    }
    if (peak) t0 -= *peak / *f0;
    else note("TW.peak is not in the file: t0 leaves out the time to the transmit pulse's peak");
    if (const auto lens = number(T[kLens])) {
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
  // Trans, Receive and Resource structs make a save; a file the list cannot read is left for the
  // channel data's reader to refuse in its words.
  bool is_save = false;
  try {
    int structs = 0;
    for (const io::MatVariableInfo& v : io::list_mat_variables(path))
      if ((v.name == "Trans" || v.name == "Receive" || v.name == "Resource") && v.matlab_class == "struct") ++structs;
    is_save = structs == 3;
  } catch (const io::InputError&) {
    return nullptr;
  }
  std::shared_ptr<const VerasonicsSave> save;
  std::exception_ptr refusal;
  try {
    if (is_save) save = std::make_shared<const VerasonicsSave>(read_save(path));
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
  if (own.channel_map.empty()) own.channel_map = save.channel_map;
  return own;
}

}  // namespace usrecon::recon::detail
