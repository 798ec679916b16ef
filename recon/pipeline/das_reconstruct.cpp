// One file through the general DAS: read, complete and check the geometry, analytic signal,
// beamform on the chosen backend.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <numbers>

#include "usrecon/recon/bmode.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "stage_clock.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

// Transmit lists, the file's and the given: the same where each value is within 1e-6 of the other
// relatively (files store angles and positions as float32), or 1e-12 absolutely (an angle of 0).
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= 1e-6 * std::max(std::abs(a[i]), std::abs(b[i])) + 1e-12)) return false;
  return true;
}

// "-1.5, -1, 0 degrees"; a long list as its first three and last two values and the count.
std::string values_text(const std::vector<double>& values, double scale, const char* unit) {
  std::string text;
  const std::size_t n = values.size();
  // A position the file stores as 6e-19 (a sine's rounding) is said as 0.
  double largest = 0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 8 && i == 3) {
      text += ", ...";
      i = n - 3;
      continue;
    }
    const double shown = std::abs(values[i]) <= 1e-12 * largest ? 0.0 : values[i];
    text += (i == 0 ? "" : ", ") + number_text(shown * scale);
  }
  if (n == 0) text = "none";
  text += unit;
  if (n > 8) text += ", " + std::to_string(n) + " in all";
  return text;
}

using detail::Clock;
using detail::seconds_since;

}  // namespace

ReconModel parse_model(std::string_view name) {
  if (name == "seed") return ReconModel::Seed;
  if (name == "planewave") return ReconModel::PlaneWave;
  if (name == "sa") return ReconModel::SyntheticAperture;
  if (name == "dw") return ReconModel::DivergingWave;
  if (name == "fw") return ReconModel::FocusedWave;
  throw Error("unknown model '" + std::string(name) + "' (expected seed, planewave, sa, dw or fw)");
}

std::string to_string(ReconModel model) {
  switch (model) {
    case ReconModel::Seed: return "seed";
    case ReconModel::PlaneWave: return "planewave";
    case ReconModel::SyntheticAperture: return "sa";
    case ReconModel::DivergingWave: return "dw";
    case ReconModel::FocusedWave: return "fw";
  }
  return "?";
}

Model das_model(ReconModel model) {
  switch (model) {
    case ReconModel::PlaneWave: return Model::PlaneWave;
    case ReconModel::SyntheticAperture: return Model::SyntheticAperture;
    case ReconModel::DivergingWave: return Model::DivergingWave;
    case ReconModel::FocusedWave: return Model::FocusedWave;
    case ReconModel::Seed: break;
  }
  throw Error("the seed model has no general delay model");
}

std::string Reconstructor::backend_name() const {
  if (backend_) return backend_->describe().value("name", "?");
  if (!last_backend_.empty()) return last_backend_;
  return options_.backend == BackendKind::Cuda ? "cuda" : "cpu";
}

PreparedDas Reconstructor::prepare_das_frame(const fs::path& input, int frame_number, FrameReport& report) const {
  DasSetup setup = options_.das;
  if (frame_number > 0) setup.input.frame = frame_number;
  setup.acquisition.model = das_model(options_.model);
  PreparedDas prepared = prepare_das(input, setup, options_.threads, &report.timing_s);
  report.warnings = prepared.warnings;
  return prepared;
}

Reconstructor::Frame Reconstructor::beamform_das(const fs::path& input, int frame_number, FrameReport& report) {
  DasFrame das = das_->beamform(prepare_das_frame(input, frame_number, report), &report.timing_s);
  last_backend_ = das.backend.value("name", "?");
  return finish_das(input, std::move(das), report, bmode_threads(1));
}

Reconstructor::Frame Reconstructor::finish_das(const fs::path& input, DasFrame&& das, FrameReport& report,
                                               int bmode_threads) const {
  const Grid& g = das.image.grid;

  // Finite samples (read_channel_data checks them) can still overflow float on the way: the
  // analytic signal's FFT and the sum over elements and transmits grow them, so samples near
  // float's largest gave an image of NaN, written as a black PNG without a word.
  const std::size_t not_finite = static_cast<std::size_t>(std::count_if(
      das.image.data.begin(), das.image.data.end(),
      [](const std::complex<float>& v) { return !std::isfinite(v.real()) || !std::isfinite(v.imag()); }));
  if (not_finite > 0)
    throw Error(input.string() + ": the beamformed image has " + std::to_string(not_finite) + " of " +
                std::to_string(das.image.data.size()) + " pixels that are not finite: the channel data's values overflow float in the "
                "analytic signal or the sum over elements and transmits; scale them down");
  const auto t = Clock::now();
  Frame frame;
  frame.nx = g.nx;
  frame.nz = g.nz;
  const std::vector<double> env = envelope_of_iq(das.image.data, bmode_threads);
  frame.pixels = log_compress(env, g.nx, g.nz, options_.dynamic_range_db, 0.0, bmode_threads);
  report.timing_s["bmode"] = seconds_since(t);

  frame.meta = {
      {"input", input.string()},
      {"model", to_string(options_.model)},
      {"grid", {{"x0", g.x0}, {"dx", g.dx}, {"nx", g.nx}, {"z0", g.z0}, {"dz", g.dz}, {"nz", g.nz}}},
      {"grid_note", "metres; x lateral from the array centre along the raw array's first axis, z "
                    "depth along its second; element i sits at x = (i - (N - 1) / 2) pitch, z = 0"},
      {"parameters", das.parameters},
      {"backend", das.backend}};
  frame.meta["parameters"]["dynamic_range_db"] = options_.dynamic_range_db;
  // A grid wholly outside what the record reaches (a --z-range past its last sample) beamformed
  // to a black image without a word; data of zeros are said already (kAllZero).
  const auto zero = [](const std::complex<float>& v) { return v == std::complex<float>(0, 0); };
  const nlohmann::json& p = das.parameters;
  if (std::all_of(das.image.data.begin(), das.image.data.end(), zero) && p.contains("t0_s") &&
      p.contains("sampling_hz") && p.contains("samples") && p.contains("sound_speed_m_per_s") &&
      std::none_of(report.warnings.begin(), report.warnings.end(),
                   [](const std::string& w) { return w.find(kAllZero) != std::string::npos; })) {
    const double t0 = p["t0_s"].get<double>(), fs = p["sampling_hz"].get<double>(), c = p["sound_speed_m_per_s"].get<double>();
    const double last = (t0 + (p["samples"].get<double>() - 1) / fs) * c / 2;
    const std::string warning = input.string() + ": the image is black: no pixel's echo delays fall within the record, "
                                "which reaches depths of about " + number_text(std::max(0.0, t0 * c / 2) * 1e3) + " to " +
                                number_text(last * 1e3) + " mm (the grid's z is " + number_text(g.z0 * 1e3) + " to " +
                                number_text((g.z0 + (g.nz - 1) * g.dz) * 1e3) + " mm)";
    report.warnings.push_back(warning);
    frame.meta["parameters"]["warnings"].push_back(warning);
  }
  frame.raw_iq = std::move(das.image.data);
  frame.raw_layout = "complex64 [nx][nz]: the beamformed analytic (IQ) signal; its modulus is the envelope";
  return frame;
}

PreparedDas prepare_das(const fs::path& input, const DasSetup& setup, int threads, nlohmann::json* timing) {
  nlohmann::json local;
  nlohmann::json& times = timing ? *timing : local;
  auto t = Clock::now();
  Acquisition acq = setup.acquisition;
  FileGeometry file;
  // The acquisition's transmits, for source.txt and a (samples,transmits) axis: synthetic
  // aperture's one per element, where the data say how many elements.
  const int transmits = acq.model == Model::SyntheticAperture && acq.tx_elements.empty() && acq.probe.elements < 1
                            ? kOneTransmitPerElement
                            : acq.transmits();
  const ChannelData rf = read_channel_data(input, setup.input, acq.probe.elements, transmits, &file);
  times["read"] = seconds_since(t);
  // What the file carries fills what the user did not give.
  nlohmann::json from_file = nlohmann::json::array();
  const GivenParameters& given = setup.given;
  const auto take = [&](const char* name, bool is_given, bool present, auto apply) {
    if (!is_given && present) {
      apply();
      from_file.push_back(name);
    }
  };
  take("fs", given.fs, file.fs.has_value(), [&] { acq.fs = *file.fs; });
  take("sound_speed", given.sound_speed, file.sound_speed.has_value(), [&] { acq.sound_speed = *file.sound_speed; });
  take("t0", given.t0, file.t0.has_value(), [&] { acq.t0 = *file.t0; });
  take("pitch", given.pitch, file.pitch.has_value(), [&] { acq.probe.pitch = *file.pitch; });
  take("elements", given.elements, file.elements > 0, [&] { acq.probe.elements = file.elements; });
  take("time_zero", given.time_zero, file.time_zero.has_value(), [&] { acq.time_zero = *file.time_zero; });
  // A value given wins over the file's, for every input of the run: where they differ, the file
  // (one of a batch mixing rates, say) is beamformed with the given one, which is said.
  std::vector<std::string> warnings;
  // A note that asks for an option given is said no more.
  const auto answered = [&](const std::string& note) {
    for (const auto& [asks, is_given] :
         {std::pair{"give --sound-speed", given.sound_speed}, std::pair{"give --fs", given.fs},
          std::pair{"give --pitch", given.pitch}, std::pair{"give --t0", given.t0},
          std::pair{"give the transmits", given.angles || given.tx_elements || given.sources}})
      if (is_given && note.find(asks) != std::string::npos) return true;
    return false;
  };
  for (const std::string& note : file.notes)
    if (!answered(note)) warnings.push_back(input.string() + ": " + note);
  const auto overridden = [&](const char* option, bool is_given, std::optional<double> in_file, double used) {
    if (is_given && in_file && !(std::abs(*in_file - used) <= 1e-9 * std::abs(*in_file)))
      warnings.push_back(input.string() + ": the file says " + option + " " + number_text(*in_file) + ", but " +
                         option + " " + number_text(used) + " was given, and is used");
  };
  overridden("--fs", given.fs, file.fs, acq.fs);
  overridden("--sound-speed", given.sound_speed, file.sound_speed, acq.sound_speed);
  overridden("--t0", given.t0, file.t0, acq.t0);
  overridden("--pitch", given.pitch, file.pitch, acq.probe.pitch);
  if (given.time_zero && file.time_zero && *file.time_zero != acq.time_zero)
    warnings.push_back(input.string() + ": the file times its waves with --time-zero " + to_string(*file.time_zero) +
                       ", but --time-zero " + to_string(acq.time_zero) + " was given, and is used" +
                       (std::any_of(file.wave_delays.begin(), file.wave_delays.end(), [](double d) { return d != 0; })
                            ? " (its waves' own delays on its clock are left out; its t0 is taken as it is)"
                            : ""));
  // The sampling rate and the pitch have no value that fits most data (unlike c = 1540 m/s and
  // t0 = 0): data beamformed with another's are an image of nothing, so a file that says neither
  // needs them given. (One element has no pitch to know when the grid's lateral step is given.)
  std::string missing;
  if (!given.fs && !file.fs) missing += " --fs HZ (the sampling rate)";
  const bool pitch_matters = rf.elements != 1 || std::isnan(setup.grid.dx) || std::isnan(setup.grid.x_min) ||
                             std::isnan(setup.grid.x_max);
  if (!given.pitch && !file.pitch && pitch_matters)
    missing += std::string(missing.empty() ? "" : " and") + " --pitch M (the element pitch)";
  // What a file's parameters left out (a save's notes) says why, where a refusal follows from it.
  std::string because;
  for (const std::string& note : file.notes) because += (because.empty() ? " (the file: " : "; ") + note;
  if (!because.empty()) because += ")";
  if (!missing.empty())
    throw Error(input.string() + (file.source.empty() ? ": usrecon reads no acquisition geometry from this file"
                                                      : ": the file's parameters (" + file.source + ") lack some") +
                ": give" + missing + ", on the command line or in --config (for every input of the run; info shows what a file "
                "carries)" + because);
  if (file.model && *file.model != acq.model)
    throw Error(input.string() +
                (*file.model == Model::SyntheticAperture
                     ? ": the file holds synthetic-aperture data (a spherical wave from each element): use --model sa"
                 : *file.model == Model::DivergingWave
                     ? ": the file holds diverging waves (spherical waves from behind the array): use --model dw"
                 : *file.model == Model::FocusedWave
                     ? ": the file holds focused waves (focal points in front of the array): use --model fw"
                     : ": the file holds plane waves: use --model planewave"));
  // The transmits given likewise win over the file's, and are said where they differ.
  const auto overridden_list = [&](const char* what, const char* option, const std::vector<double>& in_file,
                                   const std::vector<double>& used, double scale, const char* unit) {
    if (in_file.empty() || same_values(in_file, used)) return;
    warnings.push_back(input.string() + ": the file's " + what + " (" + values_text(in_file, scale, unit) +
                       ") differ from " + option + "'s (" + values_text(used, scale, unit) + "), which are used");
  };
  if (acq.model == Model::PlaneWave && given.angles)
    overridden_list("angles", "--angles-deg", file.angles, acq.angles, 180.0 / std::numbers::pi, " degrees");
  if (has_virtual_sources(acq.model) && given.sources) {
    overridden_list("virtual sources' x", "--sources-x", file.source_x, acq.source_x, 1.0, " m");
    overridden_list("virtual sources' z", "--sources-z", file.source_z, acq.source_z, 1.0, " m");
  }
  if (acq.model == Model::SyntheticAperture && given.tx_elements)
    overridden_list("transmitting elements", "--tx-elements",
                    std::vector<double>(file.tx_elements.begin(), file.tx_elements.end()),
                    std::vector<double>(acq.tx_elements.begin(), acq.tx_elements.end()), 1.0, "");
  if (acq.model == Model::PlaneWave)
    take("angles", given.angles, !file.angles.empty(), [&] { acq.angles = file.angles; });
  else if (has_virtual_sources(acq.model))
    take("sources", given.sources, !file.source_x.empty(), [&] {
      acq.source_x = file.source_x;
      acq.source_z = file.source_z;
    });
  else
    take("tx_elements", given.tx_elements, !file.tx_elements.empty(), [&] { acq.tx_elements = file.tx_elements; });
  // USTB and Verasonics: each transmit's samples start at its own moment on the file's clock (its
  // wave's delay; for synthetic aperture also the firing at distance / c on USTB's clock). t0
  // becomes the earliest start and the later transmits are delayed onto it, after the analytic
  // signal. A --t0 given replaces the file's t0 on the same clock (t0 + the earliest start is
  // used: a given t0 that was taken as the earliest start's moved a save's points by 1 mm).
  // The delays are the file's clock's: with another --time-zero given they would count the
  // difference twice, so that clock's own timing (none) is used, and said.
  std::vector<double> transmit_starts;  // s after the firing, relative to the file's t0
  const bool own_clock = !(given.time_zero && file.time_zero && *file.time_zero != acq.time_zero);
  for (std::size_t n = 0; own_clock && n < file.wave_delays.size(); ++n)
    transmit_starts.push_back(file.wave_delays[n] -
                              (n < file.source_distances.size() ? file.source_distances[n] / acq.sound_speed : 0.0));
  const double earliest =
      transmit_starts.empty() ? 0.0 : *std::min_element(transmit_starts.begin(), transmit_starts.end());
  if (given.t0 && earliest != 0)
    warnings.push_back(input.string() + ": --t0 " + number_text(acq.t0) + " is on the file's clock, to which its "
                       "waves' earliest start (" + number_text(earliest) + " s) is added: t0_s is " +
                       number_text(acq.t0 + earliest) + " s");
  acq.t0 += earliest;
  if (file.transmit_sound_speed && !given.sound_speed)
    throw Error(input.string() + ": its waves travel at " + std::to_string(*file.transmit_sound_speed) +
                " m/s but its channel data say " + std::to_string(*file.sound_speed) +
                " m/s; give --sound-speed to beamform with one speed");
  if (setup.input.samples > 0 && rf.samples != setup.input.samples)
    throw Error(input.string() + ": the data hold " + std::to_string(rf.samples) + " samples per channel but --samples says " +
                std::to_string(setup.input.samples));
  // Axes counted wrong are most often axes named in the wrong order: where --layout or its default
  // decided them (not a USTB or PICMUS file's own), say how they were read.
  const std::string layout = !setup.input.layout.empty() ? setup.input.layout
                             : !file.layout.empty()      ? file.layout
                                                         : "samples,elements,transmits";
  const std::string read_as = !file.source.empty()
                                  ? std::string()
                                  : "; the array read as " + layout + " gave " + std::to_string(rf.samples) +
                                        " samples x " + std::to_string(rf.elements) + " elements x " +
                                        std::to_string(rf.transmits) + " transmits" +
                                        (file.channel_map.empty()
                                             ? std::string()
                                             : " (the elements of --channel-map, of its " +
                                                   std::to_string(file.array_channels) + " channels)") +
                                        " (--layout names its axes in order; info shows the array's shape)";
  if (acq.probe.elements == 0) acq.probe.elements = rf.elements;
  if (rf.elements != acq.probe.elements)
    throw Error(input.string() + ": the data hold " + std::to_string(rf.elements) + " receive elements but " +
                (!given.elements && file.elements > 0 ? "the file's parameters (" + file.source + ") say "
                                                      : std::string("--elements says ")) +
                std::to_string(acq.probe.elements) + read_as);
  try {
    acq.validate(rf.transmits);
  } catch (const Error& e) {
    if (acq.transmits() < 1 || rf.transmits == acq.transmits()) throw Error(e.what() + because);  // no count that disagrees
    throw Error(e.what() + read_as + because);
  }

  // Baseband IQ data are beamformed as their analytic signal at a multiple of their rate
  // (analytic_from_baseband); RF data at theirs.
  // --upsample multiplies IQ's own (4 samples a cycle of the modulation frequency) too.
  const int own_upsample = rf.is_iq() ? iq_upsampling(rf.modulation_frequency, acq.fs) : 1;
  if (own_upsample * setup.upsample > 64)
    throw Error(input.string() + ": --upsample " + std::to_string(setup.upsample) + " on the " +
                std::to_string(own_upsample) + "x that its IQ data need exceeds 64x");
  const int upsample = own_upsample * setup.upsample;
  std::vector<double> shifts;  // samples at the beamformed rate, per transmit
  double largest_shift = 0;
  for (double start : transmit_starts) {
    shifts.push_back((start - earliest) * acq.fs * upsample);
    largest_shift = std::max(largest_shift, shifts.back());
  }
  const bool shifted = largest_shift > 1e-3;  // a thousandth of a sample: equal delays need none
  // Every transmit is padded by the latest start's shift: waves starting further apart than the
  // record lasts (4 times over) are a wrong delay in the file, not data to pad (a delay of -5 s
  // at 20 MHz padded every channel by 1e8 samples, 14 GB and growing; 1000 s passed int's range).
  const double record = double(rf.samples) * upsample;
  if (!(largest_shift <= 4 * record))
    throw Error(input.string() + ": its transmits start up to " + number_text(largest_shift / (acq.fs * upsample)) +
                " s apart (" + number_text(largest_shift) + " samples at " + number_text(acq.fs * upsample) +
                " Hz), more than 4 times the " + std::to_string(rf.samples * upsample) +
                " samples each records: the file's wave delays (or a synthetic aperture's distances) are wrong");
  const int extra = shifted ? static_cast<int>(std::ceil(largest_shift)) : 0;
  if (rf.transmits != int(shifts.size()) && shifted)
    throw Error(input.string() + ": the file times " + std::to_string(shifts.size()) + " transmits but holds " +
                std::to_string(rf.transmits));
  DasProblem problem;
  problem.acquisition = acq;
  problem.acquisition.fs = acq.fs * upsample;
  problem.samples = rf.samples * upsample + extra;
  // The default depth range ends at the last sample recorded: for IQ upsampled k times, sample
  // (samples - 1) k (the rows past it are the interpolation's wrap-around).
  // The default depth step stays the data's c / (4 fs) (IQ's at their own upsampled rate):
  // --upsample refines the interpolation, not the grid (K times the pixels, in time and memory).
  GridRequest request = setup.grid;
  if (std::isnan(request.dz)) request.dz = acq.sound_speed / (4 * acq.fs * own_upsample);
  problem.grid = request.resolve(problem.acquisition, (rf.samples - 1) * upsample + 1 + extra);
  problem.options = setup.options;
  problem.validate();

  t = Clock::now();
  AnalyticData analytic =
      rf.is_iq() ? analytic_from_baseband(rf, acq.fs, upsample, threads) : analytic_signal(rf, threads, upsample);
  // The samples a cycle of the echoes' centre frequency, as beamformed: linear interpolation dips
  // the envelope midway between samples by cos(pi / that) (3 dB at 4), which metrics warns of.
  const double phase_step = mean_phase_step(analytic);
  if (shifted) analytic = delay_transmits(analytic, shifts, extra, threads);
  times["analytic"] = seconds_since(t);

  PreparedDas frame;
  std::vector<double> angles_deg;
  for (double a : acq.angles) angles_deg.push_back(a * 180.0 / 3.14159265358979323846);
  frame.parameters = {
      {"elements", acq.probe.elements},
      {"element_pitch_m", acq.probe.pitch},
      {"samples", rf.samples},
      {"transmits", rf.transmits},
      {"sound_speed_m_per_s", acq.sound_speed},
      {"sampling_hz", acq.fs},
      {"t0_s", acq.t0},
      {"fnumber", problem.options.fnumber},
      {"window", to_string(problem.options.window)},
      {"interp", to_string(problem.options.interp)},
      {"offset", setup.input.offset == Offset::Mean ? "mean" : "none"},
      {"layout", layout}};
  // A synthetic-aperture transmit starts when its element fires: no wavefront to time.
  if (acq.model != Model::SyntheticAperture) frame.parameters["time_zero"] = to_string(acq.time_zero);
  if (acq.model == Model::PlaneWave) frame.parameters["angles_deg"] = angles_deg;
  if (problem.options.tx_apodization != TxApodization::None)
    frame.parameters["tx_apodization"] = to_string(problem.options.tx_apodization);
  if (problem.options.tx_fnumber > 0) frame.parameters["tx_fnumber"] = problem.options.tx_fnumber;
  frame.parameters["upsample"] = setup.upsample;
  // As beamformed (after --upsample or IQ's own), from the data's mean phase step.
  if (phase_step > 2 * std::numbers::pi / 1e4) frame.parameters["samples_per_cycle"] = 2 * std::numbers::pi / phase_step;
  if (!setup.input.var.empty()) frame.parameters["var"] = setup.input.var;
  if (!file.channel_map.empty()) {
    frame.parameters["channel_map"] = {
        {"given", setup.input.channel_map}, {"channels", file.channel_map}, {"array_channels", file.array_channels}};
    if (!file.channel_map_from_file.empty()) frame.parameters["channel_map"]["from_file"] = file.channel_map_from_file;
  }
  if (!file.source.empty()) frame.parameters["from_file"] = {{"source", file.source}, {"parameters", from_file}};
  if (shifted) {
    std::vector<double> relative;
    for (double start : transmit_starts) relative.push_back(start - earliest);
    frame.parameters["transmit_starts_s"] = relative;  // after t0_s, per transmit
  }
  if (acq.model == Model::SyntheticAperture && !acq.tx_elements.empty())
    frame.parameters["tx_elements"] = acq.tx_elements;
  if (has_virtual_sources(acq.model)) {
    frame.parameters["sources_x_m"] = acq.source_x;
    frame.parameters["sources_z_m"] = acq.source_z;
  }
  if (rf.is_iq())
    frame.parameters["iq"] = {{"modulation_frequency_hz", rf.modulation_frequency},
                              {"upsampled_to_hz", problem.acquisition.fs},
                              {"time0_s", rf.iq_time0}};
  frame.warnings = std::move(warnings);
  // RF is signed around zero; samples all >= 0 are an unsigned recording's (RFdata1's uint8
  // around 128) whose offset, beamformed, swamps the echoes: an image of one bright blur.
  // A recording of zeros (a variable never filled, a constant channel with its mean removed)
  // beamformed to a black image without a word.
  if (all_zero(rf)) frame.warnings.push_back(input.string() + ": " + kAllZero);
  if (setup.input.offset == Offset::None && looks_unsigned(rf))
    frame.warnings.push_back(input.string() + ": " + kLooksUnsigned + ", without which the offset swamps the echoes");
  // A record is longer than the array is wide (RFdata1: 2688 samples, 128 elements); the other
  // way round, axes that --layout decided were most likely named out of order.
  if (rf.elements > rf.samples && !read_as.empty())
    frame.warnings.push_back(input.string() + ": more elements than samples per channel" + read_as);
  // Rows past the last transmit are a Verasonics buffer's padding, or transmits that the
  // acquisition (its angles or sources) does not list: a whole transmit's worth is said.
  if (file.rows_left >= std::size_t(rf.samples) && file.source.rfind("Verasonics", 0) != 0)  // its Receive lists them
    frame.warnings.push_back(input.string() + ": " + std::to_string(file.rows_left) +
                             " rows of its (samples,transmits) axis, besides its " + std::to_string(rf.transmits) +
                             " transmit(s) of " + std::to_string(rf.samples) +
                             " samples, are left (a scanner's padding, or transmits the acquisition does not list?)");
  if (!setup.given.upsample && phase_step > 0)
    if (const auto loss = interpolation_loss(problem.options.interp, 2 * std::numbers::pi / phase_step, setup.upsample))
      frame.warnings.push_back(input.string() + ": " + loss->what + ": --upsample " + std::to_string(loss->upsample) +
                               " gives at least 8 (or give --upsample 1 to keep the data's rate without this warning)");
  if (!frame.warnings.empty()) frame.parameters["warnings"] = frame.warnings;
  if (file.frames > 0) {
    frame.parameters["frame"] = file.frame;
    frame.parameters["frames"] = file.frames;
  }
  frame.problem = std::move(problem);
  frame.analytic = std::move(analytic);
  return frame;
}

DasBeamformers::DasBeamformers(BackendKind backend, int threads, DasCudaKernel cuda_kernel)
    : backend_(backend), threads_(threads), cuda_kernel_(cuda_kernel) {}
DasBeamformers::~DasBeamformers() = default;

DasFrame DasBeamformers::beamform(PreparedDas&& prepared, nlohmann::json* timing) {
  const DasProblem& problem = prepared.problem;
  DasFrame frame;
  frame.parameters = std::move(prepared.parameters);
  frame.image.grid = problem.grid;
  frame.image.data.resize(problem.grid.pixels());
  // Building a beamformer for a new geometry (delay tables, device buffers, uploads) is timed as
  // "setup", apart from "beamform" and points_per_s: a batch's first frame looked slower than
  // its frames are.
  double setup_s = 0.0, beamform_s = 0.0;
  const bool failed_before = cuda_failed_problem_ && *cuda_failed_problem_ == problem;
  bool use_cuda = backend_ == BackendKind::Cuda ||
                  (backend_ == BackendKind::Auto && !failed_before && cuda_device_count() > 0);
  if (use_cuda) {
    try {
      if (!cuda_ || cuda_->problem() != problem) {
        const auto setup = Clock::now();
        cuda_.reset();  // its device memory first, then the new one's
        cuda_ = std::make_unique<DasCudaBeamformer>(problem, cuda_kernel_);
        setup_s += seconds_since(setup);
      }
      const auto t = Clock::now();
      cuda_->beamform(prepared.analytic, frame.image.data.data());
      beamform_s = seconds_since(t);
      frame.backend = {{"name", "cuda"}, {"device", cuda_->device()}, {"kernel", to_string(cuda_->kernel())},
                       {"kernel_s", cuda_->last_kernel_seconds()}, {"lateral_lanes", cuda_->lateral_lanes()}};
      // 0: one launch; past the L2 the transmit-blocked kernel takes the transmits in launches.
      if (cuda_->kernel() == DasCudaKernel::TransmitBlocked)
        frame.backend["transmits_per_launch"] = cuda_->transmits_per_launch();
    } catch (const CudaUnavailable& e) {
      cuda_.reset();
      if (backend_ == BackendKind::Cuda) throw;
      cuda_unavailable_ = e.what();
      cuda_failed_problem_ = std::make_unique<DasProblem>(problem);
      use_cuda = false;
    }
  }
  if (!use_cuda) {
    if (!cpu_ || cpu_->problem() != problem) {
      const auto setup = Clock::now();
      cpu_ = std::make_unique<DasCpuBeamformer>(problem, threads_);
      setup_s += seconds_since(setup);
    }
    const auto t = Clock::now();
    cpu_->beamform(prepared.analytic, frame.image.data.data());
    beamform_s = seconds_since(t);
    frame.backend = {{"name", "cpu"}, {"kernel", to_string(cpu_->kernel())}, {"threads", cpu_->threads()}};
    if (cuda_failed_problem_ && *cuda_failed_problem_ == problem) frame.backend["cuda_unavailable"] = cuda_unavailable_;
  }
  if (timing) {
    (*timing)["beamform"] = beamform_s;
    if (setup_s > 0) (*timing)["setup"] = setup_s;
  }
  frame.backend["points_per_s"] = problem.points() / std::max(beamform_s, 1e-12);
  return frame;
}

DasFrame reconstruct_das(const fs::path& input, const DasSetup& setup, BackendKind backend, int threads,
                         nlohmann::json* timing) {
  return DasBeamformers(backend, threads).beamform(prepare_das(input, setup, threads, timing), timing);
}

}  // namespace usrecon::recon
