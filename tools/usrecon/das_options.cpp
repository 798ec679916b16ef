#include "das_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "usrecon/io/file.hpp"

namespace usrecon::cli {

void add_das_options(CLI::App& app, DasArgs& args, recon::ReconstructOptions& options) {
  recon::DasSetup& das = options.das;
  recon::Acquisition& acq = das.acquisition;
  acq.probe.elements = 0;  // from the data unless given
  const std::string g = kGeneralModelsGroup;
  args.app = &app;
  args.bound = &options;
  app.add_option("--config", args.config,
                 "Read options from a TOML or INI file (.ini: ';' comments): `name = value` lines with the long "
                 "option names (e.g. pitch = 0.298e-3, angles-deg = [-5, 0, 5], x-range = \"-0.02:0.02\", "
                 "output = \"DIR\"), any option but the inputs; options on the command line take precedence");
  app.add_option("--model", args.model,
                 "Delay model: seed (the seed's fixed geometry), planewave (steered plane waves, "
                 "coherent compounding), sa (synthetic aperture / full matrix capture), dw "
                 "(diverging waves from virtual sources behind the array), fw (focused waves: focal "
                 "points in front of the array); dw and fw compound coherently")
      ->check(CLI::IsMember({"seed", "planewave", "sa", "dw", "fw"}))
      ->capture_default_str();
  app.add_option("--elements", acq.probe.elements, "Array elements (default: from the data)")
      ->transform(in_range(1, 65536))->group(g);
  // --pitch and --fs have no default: a file that does not say them needs them given.
  app.add_option("--pitch", acq.probe.pitch,
                 "Element pitch in metres; element i at x = (i - (N-1)/2) pitch (required unless the file says it: "
                 "USTB and PICMUS files)")
      ->check(positive_number())->group(g);
  app.add_option("--sound-speed", acq.sound_speed, "Speed of sound, m/s")
      ->check(positive_number())->capture_default_str()->group(g);
  app.add_option("--fs", acq.fs, "Sampling frequency, Hz (required unless the file says it)")
      ->check(positive_number())->group(g);
  app.add_option("--t0", acq.t0, "Time of sample 0 after the transmit (s); for a file that times its own waves (USTB, Verasonics), its t0 on its clock, to which the earliest wave's start is added")
      ->check(finite_number())->capture_default_str()->group(g);
  app.add_option("--angles-deg", args.angles_deg,
                 "Plane-wave steering angles in degrees: START:STEP:STOP or A,B,C; angle > 0 means "
                 "element 0 fires first (required for --model planewave unless the file says them: PICMUS, USTB, "
                 "Verasonics)")
      ->check(parsed_by("--angles-deg", recon::parse_number_list, "LIST"))->group(g);
  app.add_option("--time-zero", args.time_zero,
                 "Plane, diverging and focused waves: t = 0 (and --t0) counts from the first element's firing, "
                 "or from the wavefront crossing the array centre (USTB, PICMUS)")
      ->check(CLI::IsMember({"first-element", "center"}))->capture_default_str()->group(g);
  app.add_option("--tx-elements", args.tx_elements,
                 "Synthetic aperture: the element firing in each transmit, from 0: A,B,C or START:STEP:STOP "
                 "(default: every element in order)")
      ->transform(whole_number_list(0, 65535))->group(g);  // the array's own count later
  app.add_option("--sources-x", args.sources_x,
                 "Diverging and focused waves: the virtual sources' (focal points') x in metres, "
                 "START:STEP:STOP or A,B,C (one transmit each)")
      ->check(parsed_by("--sources-x", recon::parse_number_list, "LIST"))->group(g);
  app.add_option("--sources-z", args.sources_z,
                 "Diverging and focused waves: the sources' depth in metres, <= 0 behind the array (dw), "
                 "> 0 in front of it (fw): one for all, or one per source")
      ->check(parsed_by("--sources-z", recon::parse_number_list, "LIST"))->group(g);
  app.add_option("--x-range", args.x_range, "Image lateral range MIN:MAX in metres (default: the array's span)")
      ->check(parsed_by("--x-range", recon::parse_range, "MIN:MAX"))->group(g);
  app.add_option("--z-range", args.z_range, "Image depth range MIN:MAX in metres (default: from max(0, c t0 / 2) to the last sample's depth, c (t0 + (samples - 1) / fs) / 2)")
      ->check(parsed_by("--z-range", recon::parse_range, "MIN:MAX"))->group(g);
  app.add_option("--dx", das.grid.dx, "Lateral pixel step in metres (default: pitch / 2)")->check(positive_number())->group(g);
  app.add_option("--dz", das.grid.dz, "Depth pixel step in metres (default: c / (4 fs))")->check(positive_number())->group(g);
  app.add_option("--fnumber", das.options.fnumber, "Receive F-number (aperture z / F); 0 = full aperture")
      ->transform(in_range(0.0, 100.0))->capture_default_str()->group(g);
  app.add_option("--window", args.window, "Apodization window over the receive aperture of --fnumber (and the transmit cone of --tx-fnumber); "
                 "needs one of them > 0")
      ->check(CLI::IsMember({"rect", "hann", "tukey"}))->capture_default_str()->group(g);
  app.add_option("--tukey-alpha", args.tukey_alpha, "Tapered fraction of the Tukey window")
      ->transform(in_range(0.01, 1.0))->capture_default_str()->group(g);
  app.add_option("--tx-apodization", args.tx_apodization,
                 "Transmit apodization: none (every transmit at every pixel), or scanline (focused waves: "
                 "each image column takes the transmit focused nearest to it, line-by-line imaging)")
      ->check(CLI::IsMember({"none", "scanline"}))->capture_default_str()->group(g);
  app.add_option("--tx-fnumber", das.options.tx_fnumber,
                 "Diverging and focused waves: transmit F-number; a pixel takes a transmit within the cone "
                 "|x - xs| <= |z - zs| / (2 F) around its virtual source (focused: the hourglass through the focal "
                 "point; never narrower than the distance to the next source), weighted by --window; 0 = every "
                 "transmit everywhere")
      ->transform(in_range(0.0, 100.0))->capture_default_str()->group(g);
  app.add_option("--interp", args.interp, "Interpolation of the delayed samples. The record is taken as zero before sample 0 and after the last: "
                 "nearest reads an edge sample up to half a sample outside, linear ramps from it to zero over one sample")
      ->check(CLI::IsMember({"nearest", "linear"}))->capture_default_str()->group(g);
  app.add_option("--upsample", das.upsample,
                 "Form the channel data's analytic signal at K times their sampling rate (FFT, band-limited; for "
                 "baseband IQ files on top of their own) before beamforming. Linear interpolation between samples a "
                 "quarter cycle apart (4 samples a cycle) dips each channel's envelope by up to 3 dB midway; K = 2 "
                 "leaves 0.7 dB, K = 4 0.17 dB, at K times the memory and more beamforming time. The grid's default "
                 "dz is unchanged. The frame JSON gives samples_per_cycle; below 8 a cycle, a run without --upsample "
                 "warns, naming the K that reaches 8 (--upsample 1 keeps the data's rate without the warning).")
      ->transform(in_range(1, 16))->capture_default_str()->group(g);
  app.add_option("--cuda-kernel", args.cuda_kernel,
                 "CUDA backend: the beamforming kernel. auto (for plane waves transmit-blocked while the "
                 "channel data fit in 1.25 x the GPU's L2 cache, else element-outer; otherwise "
                 "pixel-per-thread), pixel-per-thread (any model), element-outer or transmit-blocked "
                 "(plane waves; past the cache it runs in launches of a multiple of 8 transmits, as many as fit in "
                 "0.6 x the L2); the "
                 "frame's JSON names the one that ran")
      ->check(CLI::IsMember({"auto", "pixel-per-thread", "element-outer", "transmit-blocked"}))
      ->capture_default_str()->group(g);
  app.add_option("--layout", das.input.layout,
                 "Axes of the channel-data array in order, e.g. samples,elements,transmits, and frames for "
                 "an array of several (--frame picks one, or all), and (samples,transmits) for one axis holding "
                 "the transmits one after another, each of --samples samples (Verasonics' RcvData{1}; in C order "
                 "(transmits,samples), the pair too slowest first) (NPY, HDF5 and "
                 "source.txt: C order, slowest first; MAT: MATLAB's order) [default: samples,elements,transmits; "
                 "source.txt: transmits,elements,samples; USTB and PICMUS files: their own]")->group(g);
  app.add_option("--var", das.input.var,
                 "MAT file: the variable holding the channel data, in MATLAB's syntax (rf, P.rx.data, "
                 "RcvData{1}, S(2).data); HDF5 file: the dataset's path, or "
                 "a USTB file's uff.channel_data group (default: the file's only uff.channel_data, a "
                 "PICMUS file's /US/US_DATASET0000/data/real, or the only numeric array)")->group(g);
  app.add_option("--channel-map", das.input.channel_map,
                 "The array's channel that each element is read from, as channel numbers from 1 and ranges "
                 "(128:1 reverses the probe; 1:32,65:96 takes two banks), or the name of a variable of the same "
                 "MAT or HDF5 file that lists them (Verasonics: Trans.Connector); channels left out are not "
                 "beamformed [default: the array's channels in order]")->group(g);
  app.add_option("--frame", args.frame,
                 "USTB UFF file, or an array whose --layout names a frames axis: the frame to reconstruct "
                 "(1 = the first; a frame N > 1 is written to "
                 "<stem>_frameNNNN.*); all: every frame, each to <stem>_frameNNNN.* (a file of one "
                 "frame keeps <stem>); FIRST:LAST: those frames, both included, as all does (a file's "
                 "frames past LAST are left, and a file that has fewer is read as far as it goes)")
      ->transform(frame_number_or_all(true))->capture_default_str()->group(g);
  app.add_option("--offset", args.offset, "mean: subtract each channel's mean (unsigned data)")
      ->check(CLI::IsMember({"none", "mean"}))->capture_default_str()->group(g);
}

namespace {

// CLI11's own --config only reaches the top-level app; a subcommand reads its file here. Every
// `name = value` item (in any section) sets option --name unless the command line already did.
void apply_config(const DasArgs& args) {
  if (args.config.empty() || !args.app) return;
  // Read once, as every input is: a missing, misnamed or unreadable file, a directory (CLI11 read
  // one as an empty file) or a FIFO (it waited for ever) is said in the same words. A config file
  // of a megabyte is no config file (a data file given by mistake).
  std::string text;
  try {
    text = io::read_file(args.config, std::uintmax_t{1} << 20);
  } catch (const io::InputError& e) {
    throw Error(std::string("--config: ") + e.what());
  }
  // CLI11's message quotes the offending line whole: a binary or data file given by mistake made
  // it a megabyte long.
  const auto shortened = [](std::string text) {
    if (text.size() > 300) text = text.substr(0, 300) + "... (cut)";
    return text;
  };
  std::vector<CLI::ConfigItem> items;
  try {
    // INI's comments start with ';' (also after a value), TOML's with '#'.
    std::istringstream stream(text);
    items = io::lower_extension(args.config) == ".ini" ? CLI::ConfigINI().from_config(stream)
                                                      : CLI::ConfigTOML().from_config(stream);
  } catch (const CLI::Error& e) {
    throw Error("--config " + args.config + ": " + shortened(e.what()));
  }
  // CLI11 merges a key given twice into one item of two values, which read as a list ("2e-4,3e-4"
  // for --pitch): the file's lines say whether a key was written more than once.
  const auto times_written = [&](const std::string& key) {
    // Lines "key = ...", also spelt "\"key\" = ..." or "section.key = ..." (TOML's dotted keys).
    const auto unquoted = [](std::string_view t) {
      while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
      if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) t = t.substr(1, t.size() - 2);
      return t;
    };
    int count = 0;
    std::size_t line_start = 0;
    while (line_start < text.size()) {
      const std::size_t line_end = std::min(text.find('\n', line_start), text.size());
      const std::string_view line(text.data() + line_start, line_end - line_start);
      const std::size_t equals = line.find('=');
      if (equals != std::string_view::npos) {
        std::string_view name = unquoted(line.substr(0, equals));
        if (!name.empty() && name.front() != '#' && name.front() != ';' && name.front() != '[') {
          if (const std::size_t dot = name.rfind('.'); dot != std::string_view::npos && name.back() != '"' &&
                                                       name.back() != '\'')
            name = unquoted(name.substr(dot + 1));
          if (name == key) ++count;
        }
      }
      line_start = line_end + 1;
    }
    // And items of one name in different sections, which CLI11 keeps apart.
    int items_named = 0;
    for (const CLI::ConfigItem& other : items) items_named += other.name == key;
    return std::max(count, items_named);
  };
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--" || item.name.empty()) continue;  // section markers
    // Sections may group the keys as the user likes, but one named after another command holds
    // that command's options: a [view] dynamic-range was taken for reconstruct's.
    for (const std::string& section : item.parents)
      for (const char* other : {"simulate", "metrics", "view", "info"})
        if (section == other)
          throw Error("--config " + args.config + ": [" + section + "] " + shortened(item.name) + ": a section named "
                      "after another command is refused (only reconstruct takes --config); give reconstruct's "
                      "options at the top or under [reconstruct]");
    if (const int times = times_written(item.name); times > 1)
      throw Error("--config " + args.config + ": " + shortened(item.name) + " is given " + std::to_string(times) +
                  " times; give it once");
    // The command line's own options: a config naming another config, help or version was read
    // as nothing (or as a version banner for an error).
    if (item.name == "config" || item.name == "help" || item.name == "version")
      throw Error("--config " + args.config + ": " + item.name + " is an option of the command line only" +
                  (item.name == "config" ? ": a config file does not read another (give its options in this one)"
                                         : ": a config file sets reconstruct's options"));
    CLI::Option* opt = nullptr;
    try {
      opt = args.app->get_option("--" + item.name);
    } catch (const CLI::OptionNotFound&) {
      // The inputs are the command line's (a key that names them was "unknown option 'inputs'").
      if (item.name == "inputs" || item.name == "input" || item.name == "files")
        throw Error("--config " + args.config + ": " + shortened(item.name) + ": the inputs are not options: "
                    "give them on the command line (usrecon reconstruct --config " + args.config + " FILE...)");
      // A "key: value" line (YAML, or a typo of '='), which the reader takes whole as a key.
      const std::size_t colon = item.name.find(':');
      std::string key = colon == std::string::npos ? std::string() : item.name.substr(0, colon);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();  // "model : sa"
      if (!key.empty() && args.app->get_option_no_throw("--" + key))
        throw Error("--config " + args.config + ": unknown option '" + shortened(item.name) +
                    "': write key = value (TOML or INI), not key: value");
      throw Error("--config " + args.config + ": unknown option '" + shortened(item.name) + "'");
    }
    if (opt->count() > 0) continue;
    // A list (TOML's [-5, 0, 5], or -5,0,5 unquoted) for an option of one value: that value is
    // the list written with commas, as on the command line (--angles-deg -5,0,5).
    std::vector<std::string> inputs = item.inputs;
    // As on the command line (refuse_empty_values): "" is no value, and no default either.
    if (inputs.empty() || std::find(inputs.begin(), inputs.end(), std::string()) != inputs.end())
      throw Error("--config " + args.config + ": " + item.name + " (from the file): must not be empty "
                  "(leave it out for its default)");
    if (inputs.size() > 1 && opt->get_items_expected_max() == 1) {
      std::string joined;
      for (const std::string& part : inputs) joined += (joined.empty() ? "" : ",") + part;
      inputs = {joined};
    }
    try {
      opt->add_result(inputs);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      throw Error("--config " + args.config + ": " + item.name + " (from the file): " + shortened(e.what()));
    }
  }
}

}  // namespace

void finish_das_options(const DasArgs& args, recon::ReconstructOptions& options) {
  apply_config(args);
  if (args.bound && args.bound != &options) options = *args.bound;  // with what the file set
  options.model = recon::parse_model(args.model);
  if (options.model == recon::ReconModel::Seed) {
    // The seed's geometry is fixed: an option of the general models would be silently ignored.
    if (args.app)
      for (const CLI::Option* opt : args.app->get_options())
        if (opt->get_group() == kGeneralModelsGroup && opt->count() > 0)
          throw Error(opt->get_name() + " applies to the general models (--model planewave, sa, dw or fw); "
                                        "--model seed has the seed's fixed geometry");
    return;
  }
  options.das.acquisition.tx_elements = whole_numbers(args.tx_elements);
  if (options.model != recon::ReconModel::SyntheticAperture && !options.das.acquisition.tx_elements.empty())
    throw Error("--tx-elements applies to --model sa only");
  // Whether the user gave an option (here or in --config), not just its default.
  const auto given = [&](const char* name) {
    const CLI::Option* opt = args.app ? args.app->get_option_no_throw(name) : nullptr;
    return opt != nullptr && opt->count() > 0;
  };
  // Options that the general models would silently ignore.
  if (given("--channels")) throw Error("--channels applies to --model seed only (the general models take --elements)");
  if (given("--precision")) throw Error("--precision applies to --model seed only (the general models beamform in float)");
  if (options.model == recon::ReconModel::SyntheticAperture && given("--time-zero"))
    throw Error("--time-zero applies to plane, diverging and focused waves (--model planewave, dw, fw): "
                "a synthetic-aperture transmit starts when its element fires");
  if (given("--tukey-alpha") && args.window != "tukey")
    throw Error("--tukey-alpha applies to --window tukey only");
  // NaN marks a step not given (a default from the geometry); a NaN given is refused, not taken
  // for that.
  for (const auto& [name, step] : {std::pair{"--dx", options.das.grid.dx}, std::pair{"--dz", options.das.grid.dz}})
    if (given(name) && !(step > 0 && std::isfinite(step)))
      throw Error(std::string(name) + " must be a positive number of metres");
  recon::DasSetup& das = options.das;
  das.options.window = recon::parse_window(args.window);
  das.options.interp = recon::parse_interp(args.interp);
  das.options.tx_apodization = recon::parse_tx_apodization(args.tx_apodization);
  if (das.options.tx_apodization != recon::TxApodization::None && options.model != recon::ReconModel::FocusedWave)
    throw Error("--tx-apodization " + args.tx_apodization + " applies to --model fw only");
  if (das.options.tx_fnumber > 0 && !recon::has_virtual_sources(recon::das_model(options.model)))
    throw Error("--tx-fnumber applies to --model dw and fw only");
  das.options.tukey_alpha = args.tukey_alpha;
  // A window weighs elements across an aperture (--fnumber) or transmits across a cone
  // (--tx-fnumber); with neither there is none to weigh, and every weight would be 1.
  if (given("--window") && das.options.window != recon::Window::Rect && !(das.options.fnumber > 0) &&
      !(das.options.tx_fnumber > 0))
    throw Error("--window " + args.window + " weighs the receive aperture of --fnumber F > 0" +
                (recon::has_virtual_sources(recon::das_model(options.model))
                     ? std::string(" or the transmit cone of --tx-fnumber F > 0")
                     : std::string()) +
                "; with --fnumber 0 every element takes part with weight 1, as with rect");
  options.das_cuda_kernel = recon::parse_das_cuda_kernel(args.cuda_kernel);
  das.input.offset = recon::parse_offset(args.offset);
  // Given or not: 0 lets the file say (a source.txt needs it given); the seed's default of 2000
  // is no general model's.
  const CLI::Option* samples_option = args.app ? args.app->get_option_no_throw("--samples") : nullptr;
  das.input.samples = samples_option && samples_option->count() > 0 ? options.problem.samples : 0;
  // The option's validator (frame_number_or_all) let through "all", a whole number from 1 to 2^30
  // in decimal only (no 1e3), or two such, FIRST:LAST with FIRST <= LAST.
  const std::size_t colon = args.frame.find(':');
  das.input.all_frames = args.frame == "all" || colon != std::string::npos;
  das.input.frame = args.frame == "all" ? 1 : std::stoi(args.frame.substr(0, colon));
  das.input.last_frame = colon == std::string::npos ? 0 : std::stoi(args.frame.substr(colon + 1));
  if (!args.x_range.empty())
    std::tie(das.grid.x_min, das.grid.x_max) = recon::parse_range(args.x_range, "--x-range");
  if (!args.z_range.empty())
    std::tie(das.grid.z_min, das.grid.z_max) = recon::parse_range(args.z_range, "--z-range");
  das.acquisition.time_zero = recon::parse_time_zero(args.time_zero);
  das.acquisition.angles.clear();
  if (options.model == recon::ReconModel::PlaneWave) {
    // Without --angles-deg the angles must come from the input file (PICMUS); reconstruct says so.
    if (!args.angles_deg.empty())
      for (double deg : recon::parse_number_list(args.angles_deg, "--angles-deg"))
        das.acquisition.angles.push_back(deg * std::numbers::pi / 180.0);
  } else if (!args.angles_deg.empty()) {
    throw Error("--angles-deg applies to --model planewave only");
  }
  das.acquisition.source_x.clear();
  das.acquisition.source_z.clear();
  if (recon::has_virtual_sources(recon::das_model(options.model))) {
    // Without --sources-x/-z the sources must come from the input file (USTB); reconstruct says so.
    if (!args.sources_x.empty() || !args.sources_z.empty())
      std::tie(das.acquisition.source_x, das.acquisition.source_z) =
          recon::parse_virtual_sources(args.sources_x, args.sources_z, recon::das_model(options.model));
  } else if (!args.sources_x.empty() || !args.sources_z.empty()) {
    throw Error("--sources-x and --sources-z apply to --model dw and fw only");
  }
  // What the user gave (here or in --config) wins over what an input file carries.
  das.given.elements = given("--elements");
  das.given.pitch = given("--pitch");
  das.given.sound_speed = given("--sound-speed");
  das.given.fs = given("--fs");
  das.given.t0 = given("--t0");
  das.given.angles = given("--angles-deg");
  das.given.time_zero = given("--time-zero");
  das.given.tx_elements = given("--tx-elements");
  das.given.sources = given("--sources-x") || given("--sources-z");
  das.given.upsample = given("--upsample");
}

std::vector<std::string> unlikely_units(const CLI::App& app) {
  enum class Kind { Step, Position, Time, Frequency, Speed };
  // Steps past 1 cm, positions past 1 m, |t0| past 1 ms, rates under 100 kHz, speeds under 100 m/s.
  static constexpr std::pair<const char*, Kind> kOptions[] = {
      {"--pitch", Kind::Step},        {"--dx", Kind::Step},           {"--dz", Kind::Step},
      {"--x-range", Kind::Position},  {"--z-range", Kind::Position},  {"--sources-x", Kind::Position},
      {"--sources-z", Kind::Position}, {"--t0", Kind::Time},          {"--fs", Kind::Frequency},
      {"--sound-speed", Kind::Speed}};
  std::vector<std::string> warnings;
  for (const auto& [name, kind] : kOptions) {
    const CLI::Option* opt = app.get_option_no_throw(name);
    if (opt == nullptr || opt->count() == 0) continue;
    std::string text;
    for (const std::string& result : opt->results()) text += (text.empty() ? "" : ",") + result;
    // The numbers of a value, a MIN:MAX range or a START:STEP:STOP / A,B,C list; the same text
    // with each written in the smaller unit ("5:90" -> "5e-3:90e-3"), where none has an exponent.
    double largest = 0, farthest = 0, smallest = std::numeric_limits<double>::infinity();  // farthest: signed
    std::string smaller_unit;
    bool has_exponent = false;
    std::size_t start = 0;
    const char* suffix = kind == Kind::Time ? "e-6" : kind == Kind::Frequency ? "e6" : "e-3";
    bool readable = true;
    for (std::size_t i = 0; i <= text.size() && readable; ++i) {
      if (i < text.size() && text[i] != ':' && text[i] != ',') continue;
      std::string token = text.substr(start, i - start);  // " 0.006" in "0.002 : 0.006" too
      token.erase(0, token.find_first_not_of(" \t"));
      token.erase(token.find_last_not_of(" \t") + 1);
      double value = 0;
      readable = CLI::detail::lexical_cast(token, value) && std::isfinite(value);
      if (std::fabs(value) > largest) farthest = value;
      largest = std::max(largest, std::fabs(value));
      smallest = std::min(smallest, value);
      has_exponent |= token.find_first_of("eE") != std::string::npos;
      smaller_unit += token + suffix + (i < text.size() ? std::string(1, text[i]) : "");
      start = i + 1;
    }
    if (!readable) continue;  // refused where the option is parsed
    const std::string given = std::string(name) + " " + text;
    // The rewrite is offered where the smaller unit gives a value ultrasound uses (up to 1 m, 1 ms,
    // 1 GHz): --fs 50000 (a sonar's 50 kHz) is not told to be 50000 MHz.
    const bool plausible = largest <= 1e3;
    // "--pitch 0.3 is in metres (30 cm): for 0.3 mm give 0.3e-3"; no rewrite where it is "".
    const auto warn = [&](const std::string& unit, const std::string& smaller, const std::string& rewritten) {
      const bool offer = !has_exponent && plausible && !rewritten.empty();
      warnings.push_back(given + " is in " + unit + (offer ? ": for " + text + " " + smaller + " give " + rewritten : ""));
    };
    switch (kind) {
      case Kind::Step:
        if (largest >= 1e-2) warn("metres (" + recon::number_text(largest * 100) + " cm)", "mm", smaller_unit);
        // No array's pitch, nor a useful grid step, is under a micrometre (0.3e-6 for 0.3 mm
        // imaged a strip 19 um wide without a word); no unit makes it right, so none is offered.
        else if (smallest > 0 && smallest < 1e-6)
          warn("metres (" + recon::number_text(smallest * 1e6) + " um, under the micrometre of any array or grid)", "", "");
        break;
      case Kind::Position:
        if (largest >= 1) warn("metres (reaching " + recon::number_text(largest) + " m)", "mm", smaller_unit);
        break;
      case Kind::Time:
        // In the unit that reads best: 5 s, -1 ms (chosen as six digits show it: 0.9999999 is 1 s).
        if (largest >= 1e-3)
          warn("seconds (" + (largest >= 0.9999995 ? recon::number_text(farthest) + " s" : recon::number_text(farthest * 1e3) + " ms") + ")",
               "us", smaller_unit);
        break;
      case Kind::Frequency:
        // 20 Hz, 50 kHz (999.9999 is 1 kHz, as six digits show it).
        if (smallest < 1e5)
          warn("Hz (" + (smallest >= 999.9995 ? recon::number_text(smallest / 1e3) + " kHz" : recon::number_text(smallest) + " Hz") + ")",
               "MHz", smaller_unit);
        break;
      case Kind::Speed:  // one speed; below 0.5 mm/us (500 m/s) no medium is meant
        if (smallest < 100) warn("m/s", "mm/us", smallest < 0.5 ? "" : recon::number_text(smallest * 1000));
        break;
    }
  }
  return warnings;
}

}  // namespace usrecon::cli
