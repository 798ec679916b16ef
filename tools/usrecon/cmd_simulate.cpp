// usrecon simulate -o FILE --point X_MM,Z_MM ...: the seed's source.txt, or the general models'
// channel data (NPY, USTB .uff, PICMUS .h5)
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "das_options.hpp"
#include "number_fields.hpp"
#include "same_file.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/recon/das_simulate.hpp"
#include "usrecon/recon/simulate.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

// The help group of the general models' options.
constexpr const char* kGeneralGroup =
    "General models (--model planewave | sa | dw | fw; output NPY float32 [samples][elements][transmits], USTB UFF or PICMUS HDF5)";

struct SimulateArgs {
  CLI::App* app = nullptr;  // the subcommand: with --model seed, the general models' options are refused
  std::string output;
  std::string truth;
  std::vector<std::string> points;
  bool overwrite = false;
  recon::SimulationOptions options;
  // General models (--model planewave | sa | dw | fw): output is NPY float32 [samples][elements][transmits].
  std::string model = "seed";
  std::string angles_deg = "0";
  std::string time_zero;  // "" = first-element, or center for HDF5 (PICMUS) output
  std::string sources_x, sources_z;  // diverging and focused waves (metres)
  std::vector<std::string> tx_elements;  // synthetic aperture: whole_number_list's canonical lists
  std::vector<std::string> cysts;
  std::string speckle_x_range, speckle_z_range;  // millimetres, MIN:MAX
  recon::DasSimulationOptions das;
};

// simulate's positions are millimetres, reconstruct's and metrics' metres: a --point 0.001,0.02
// meant in metres was simulated 20 um deep without a word. Every position given is gathered here;
// when none reaches 1 mm and the same numbers read as metres would lie within the record, that is
// said once, with the rewrite (a point's amplitude kept as it is).
struct GivenPositions {
  std::string given, in_metres;  // "--point 0.001,0.02 --cyst ..." and "--point 1,20 --cyst ..."
  bool any_reaches_1mm = false;
  // Each option given, for the regions' own check (warn_regions_under_1mm).
  struct Given {
    std::string option, text, rewritten;
    bool reaches_1mm = false;
    std::vector<double> values;  // as given (mm)
  };
  std::vector<Given> each;
  // `values` as given (mm); the first `lengths` of them are positions or radii, the rest as is.
  void add(const std::string& option, const std::string& text, const std::vector<double>& values,
           std::size_t lengths, char separator = ',') {
    Given g{option, text, "", false, values};
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (k < lengths) g.reaches_1mm |= std::fabs(values[k]) >= 1.0;
      g.rewritten += (k ? std::string(1, separator) : std::string()) +
                     recon::number_text(k < lengths ? values[k] * 1e3 : values[k]);
    }
    any_reaches_1mm |= g.reaches_1mm;
    given += (given.empty() ? "" : " ") + option + " " + text;
    in_metres += (in_metres.empty() ? "" : " ") + option + " " + g.rewritten;
    each.push_back(std::move(g));
  }
  // Where other positions reach 1 mm (no warning above), a cyst or a speckle range that stays
  // within 1 mm is still most likely metres (--point 0,20 --speckle-z-range 0.005:0.03 put the
  // speckle in a 25 um layer): said for each whose numbers, read as metres, lie within `region`
  // (the default speckle region, metres: the array's breadth, down to the last sample).
  void warn_regions_under_1mm(const recon::SpeckleRegion& region) const {
    if (all_under_1mm()) return;
    for (const Given& g : each) {
      if (g.reaches_1mm || g.option == "--point") continue;  // a point may lie within 1 mm of the array
      bool inside = false;
      if (g.option == "--cyst")
        inside = g.values[0] >= region.x_min && g.values[0] <= region.x_max && g.values[1] + g.values[2] <= region.z_max;
      else if (g.option == "--speckle-x-range")
        inside = g.values[0] >= region.x_min && g.values[1] <= region.x_max;
      else if (g.option == "--speckle-z-range")
        inside = g.values[1] <= region.z_max;
      if (inside)
        std::fprintf(stderr, "usrecon: warning: %s %s stays within 1 mm, where the other positions given reach it: "
                     "simulate's positions are in mm; for metres give %s %s\n",
                     g.option.c_str(), g.text.c_str(), g.option.c_str(), g.rewritten.c_str());
    }
  }
  [[nodiscard]] bool all_under_1mm() const { return !given.empty() && !any_reaches_1mm; }
  void warn() const {
    std::fprintf(stderr, "usrecon: warning: no position given reaches 1 mm (%s): simulate's positions are in mm; "
                 "for metres give %s\n", given.c_str(), in_metres.c_str());
  }
};

// Whether some point of `options`, its x and z read as metres (1000 times the numbers), would echo
// within the record: a metres reading that would not is no reason to warn.
template <class Options, class Point>
bool echoes_in_record_as_metres(Options options, double Point::*x, double Point::*z) {
  for (Point& point : options.points) {
    point.*x *= 1e3;
    point.*z *= 1e3;
  }
  return recon::points_outside_record(options).points.size() < options.points.size();
}

// One --point, checked, and added to `positions` as given (with its amplitude or not).
recon::Scatterer parse_point(const std::string& text, GivenPositions& positions) {
  const std::vector<double> values = number_fields(text, "--point");
  if (values.size() < 2 || values.size() > 3)
    throw Error("--point '" + text + "': expected X_MM,Z_MM or X_MM,Z_MM,AMPLITUDE");
  // Both were simulated without a word: a point above the array echoed at sample 0, and one of
  // amplitude 0 gave data of zeros.
  if (!(values[1] > 0)) throw Error("--point '" + text + "': z is the depth below the array, > 0 mm");
  if (values.size() == 3 && values[2] == 0) throw Error("--point '" + text + "': an amplitude of 0 echoes nothing");
  positions.add("--point", text, values, 2);
  return {values[0], values[1], values.size() == 3 ? values[2] : 1.0};
}

// Whether the option `name` was given on the command line (not just its default).
bool given(const SimulateArgs& args, const std::string& name) {
  if (!args.app) return false;
  const CLI::Option* opt = args.app->get_option_no_throw(name);
  return opt && opt->count() > 0;
}

std::vector<double> millimetres(const std::string& text, const std::string& option, std::size_t n) {
  std::vector<double> v;
  for (double mm : number_fields(text, option)) v.push_back(mm * 1e-3);
  if (v.size() != n) throw Error(option + " '" + text + "': expected " + std::to_string(n) + " numbers (mm)");
  return v;
}

// Puts the channel data (written, staged) and, when truth_path names a file, the truth JSON in
// place together: all or none, so that a truth that cannot be written leaves no data behind
// (which a rerun without --overwrite would then refuse to replace).
void put_in_place(io::StagedFile data, const std::string& truth_path, const nlohmann::json& truth) {
  std::vector<io::StagedFile> staged;
  staged.push_back(std::move(data));
  if (!truth_path.empty()) {
    staged.emplace_back(truth_path);
    staged.back().write(truth.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  io::commit_staged(staged);
}

// Some points outside the record (a depth past the last sample): simulated as asked, with a
// warning naming them. All of them: the simulators refuse.
// "1 point", "2 points".
std::string counted(std::size_t n, const std::string& thing) {
  return std::to_string(n) + " " + thing + (n == 1 ? "" : "s");
}

void warn_of_points_outside_record(const recon::PointsOutsideRecord& outside, std::size_t points) {
  if (!outside.points.empty() && outside.points.size() < points)
    std::fprintf(stderr, "usrecon: warning: %s; the other points are simulated\n", outside.message.c_str());
  if (!outside.partly.empty()) std::fprintf(stderr, "usrecon: warning: %s\n", outside.partly_message.c_str());
}

// Plane-wave, synthetic-aperture, diverging- or focused-wave channel data with the geometry of
// das_simulate.hpp.
// The directories of the channel data and the truth file, made just before they are written.
void make_output_directories(const SimulateArgs& args, MadeDirectories& directories) {
  directories.make_for(args.output, args.output);
  if (!args.truth.empty()) directories.make_for(args.truth, "--truth " + args.truth);
}

int run_das(SimulateArgs& args) {
  recon::DasSimulationOptions& o = args.das;
  recon::Acquisition& acq = o.acquisition;
  acq.model = recon::das_model(recon::parse_model(args.model));
  // Options of the seed's forward model or of another general model would be silently ignored.
  if (given(args, "--peak"))
    throw Error("--peak applies to --model seed only (the general models' data are normalised to a peak of 1)");
  if (given(args, "--channels"))
    throw Error("--channels applies to --model seed only (the general models take --elements)");
  if (acq.model != recon::Model::PlaneWave && given(args, "--angles-deg"))
    throw Error("--angles-deg applies to --model planewave only");
  if (acq.model == recon::Model::SyntheticAperture && given(args, "--time-zero"))
    throw Error("--time-zero applies to --model planewave, dw and fw only (a synthetic-aperture transmit "
                "is timed from its element's firing)");
  if (acq.model == recon::Model::PlaneWave)
    for (double deg : recon::parse_number_list(args.angles_deg, "--angles-deg"))
      acq.angles.push_back(deg * 3.14159265358979323846 / 180.0);
  if (recon::has_virtual_sources(acq.model))
    std::tie(acq.source_x, acq.source_z) = recon::parse_virtual_sources(args.sources_x, args.sources_z, acq.model);
  else if (!args.sources_x.empty() || !args.sources_z.empty())
    throw Error("--sources-x and --sources-z apply to --model dw and fw only");
  acq.tx_elements = whole_numbers(args.tx_elements);
  if (acq.model != recon::Model::SyntheticAperture && !acq.tx_elements.empty())
    throw Error("--tx-elements applies to --model sa only");
  // HDF5 output: a .uff file is USTB's layout (any of the four models), a .h5/.hdf5 file PICMUS's
  // (plane waves only); both count time from the wavefront crossing the array centre.
  const bool hdf5 = io::has_hdf5_extension(args.output);
  const bool ustb = hdf5 && io::lower_extension(args.output) == ".uff";
  // Otherwise NPY, which the name must say: reconstruct takes a file's format from its extension.
  if (!hdf5 && io::lower_extension(args.output) != ".npy")
    throw Error(args.output + ": --model " + args.model + " writes NPY (.npy), a USTB UFF file (.uff) or, for "
                "planewave, a PICMUS file (.h5, .hdf5): name the output so");
  const std::string format = ustb ? "a USTB UFF file" : "a PICMUS file";
  if (hdf5 && !ustb && acq.model != recon::Model::PlaneWave)
    throw Error(args.output + ": HDF5 output is " + format + ", which holds plane waves only");
  if (hdf5 && args.time_zero == "first-element")
    throw Error(args.output + ": " + format + " counts time from the wavefront crossing the array centre "
                              "(--time-zero center)");
  acq.time_zero = recon::parse_time_zero(args.time_zero.empty() ? (hdf5 ? "center" : "first-element")
                                                                : args.time_zero);
  o.samples = args.options.problem.samples;
  o.speckle = args.options.speckle;
  o.speckle_amplitude = args.options.speckle_amplitude;
  o.center_frequency = args.options.center_mhz * 1e6;
  o.cycles = args.options.cycles;
  o.seed = args.options.seed;
  o.noise = args.options.noise;  // the data peak at 1: noise in output units is relative to the peak
  GivenPositions positions;
  for (const std::string& text : args.points) {
    const recon::Scatterer p = parse_point(text, positions);  // as the seed model's: one point, no range
    o.points.push_back({p.x_mm * 1e-3, p.z_mm * 1e-3, p.amplitude});
  }
  double deepest = 0;  // metres: of the cysts and the speckle region given
  for (const std::string& text : args.cysts) {
    const std::vector<double> v = millimetres(text, "--cyst", 3);
    if (!(v[2] > 0)) throw Error("--cyst '" + text + "': the radius must be > 0 mm");  // metrics refuses it later
    o.cysts.push_back({v[0], v[1], v[2]});
    positions.add("--cyst", text, {v[0] * 1e3, v[1] * 1e3, v[2] * 1e3}, 3);
    deepest = std::max(deepest, v[1] + v[2]);
  }
  for (auto [text, option, lo, hi] : {std::tuple{&args.speckle_x_range, "--speckle-x-range", &o.x_min, &o.x_max},
                                      std::tuple{&args.speckle_z_range, "--speckle-z-range", &o.z_min, &o.z_max}}) {
    if (text->empty()) continue;
    const auto [min_mm, max_mm] = recon::parse_range(*text, option);
    if (!(max_mm > min_mm)) throw Error(std::string(option) + " '" + *text + "': MAX must exceed MIN");
    *lo = min_mm * 1e-3;
    *hi = max_mm * 1e-3;
    positions.add(option, *text, {min_mm, max_mm}, 2, ':');
  }
  deepest = std::max(deepest, o.z_max);
  recon::DasSimulationOptions whole = o;
  whole.x_min = whole.x_max = whole.z_min = whole.z_max = 0;  // the default region: to the last sample
  const recon::SpeckleRegion default_region = recon::speckle_region(whole);
  if (positions.all_under_1mm()) {
    // Read as metres, would they lie within the record? Points: some echo in it; otherwise the
    // deepest cyst edge or speckle depth within the record's depth.
    const bool plausible = !o.points.empty()
                               ? echoes_in_record_as_metres(o, &recon::PointTarget::x, &recon::PointTarget::z)
                               : deepest * 1e3 <= default_region.z_max;
    if (plausible) positions.warn();
  } else {
    positions.warn_regions_under_1mm(default_region);
  }
  // A cyst is where the speckle is not: without speckle, or outside its region, it was accepted
  // and changed nothing.
  if (!o.cysts.empty() && o.speckle == 0)
    throw Error("--cyst needs --speckle: a cyst is a region that the speckle leaves empty");
  if (o.points.empty() && o.speckle == 0) throw Error("nothing to simulate: give --point and/or --speckle");
  const recon::SpeckleRegion region = recon::speckle_region(o);
  const std::string region_text = "x " + recon::number_text(region.x_min * 1e3) + " to " +
                                  recon::number_text(region.x_max * 1e3) + " mm, z " +
                                  recon::number_text(region.z_min * 1e3) + " to " +
                                  recon::number_text(region.z_max * 1e3) + " mm";
  for (std::size_t k = 0; k < o.cysts.size(); ++k) {
    const recon::Cyst& c = o.cysts[k];
    const double dx = std::max({region.x_min - c.x, 0.0, c.x - region.x_max});
    const double dz = std::max({region.z_min - c.z, 0.0, c.z - region.z_max});
    if (std::hypot(dx, dz) >= c.radius)
      std::fprintf(stderr, "usrecon: warning: --cyst %s lies outside the speckle region (%s): it changes nothing\n",
                   args.cysts[k].c_str(), region_text.c_str());
  }
  // A speckle region whose echoes all miss the record (its default starts 2 mm down, past a
  // short record): "10 speckle scatterers" were reported over data of zeros. Where echoes arrive
  // is the model's own timing (a steered or focused wave's is not 2 z / c), at 9 x 9 points.
  if (o.speckle > 0) {
    recon::DasSimulationOptions grid = o;
    grid.points.clear();
    for (int i = 0; i <= 8; ++i)
      for (int j = 0; j <= 8; ++j)
        grid.points.push_back({region.x_min + (region.x_max - region.x_min) * i / 8,
                               region.z_min + (region.z_max - region.z_min) * j / 8, 1.0});
    if (recon::points_outside_record(grid).points.size() == grid.points.size())
      std::fprintf(stderr, "usrecon: warning: the speckle region (%s) echoes outside the recorded time: few or no "
                   "speckle echoes are in the data (--samples, --t0, --speckle-z-range)\n", region_text.c_str());
  }
  warn_of_points_outside_record(recon::points_outside_record(o), o.points.size());
  const recon::ChannelData rf = recon::simulate_das_channels(o);
  MadeDirectories directories;  // removed again unless both files are put in place
  make_output_directories(args, directories);
  io::StagedFile data(args.output);
  if (ustb) {
    recon::write_ustb_uff(data, rf, acq);
  } else if (hdf5) {
    recon::write_picmus(data, rf, acq);
  } else {
    // [samples][elements][transmits] in C order: the default --layout of reconstruct.
    std::vector<float> out(rf.size());
    for (int t = 0; t < rf.transmits; ++t)
      for (int e = 0; e < rf.elements; ++e)
        for (int k = 0; k < rf.samples; ++k)
          out[(std::size_t(k) * rf.elements + e) * rf.transmits + t] = rf.channel(t, e)[k];
    const std::size_t shape[3] = {std::size_t(rf.samples), std::size_t(rf.elements), std::size_t(rf.transmits)};
    data.write(io::encode_npy(io::DType::f32, shape, out.data()));
  }
  nlohmann::json truth;
  if (!args.truth.empty()) {
    truth = {{"channel_data", fs::path(args.output).filename().string()},
             {"model", args.model},
             {"units", "metres; x from the array centre, z depth"},
             {"layout", hdf5 ? "transmits,elements,samples" : "samples,elements,transmits"},
             {"time_zero", recon::to_string(acq.time_zero)},
             {"elements", acq.probe.elements},
             {"pitch", acq.probe.pitch},
             {"sound_speed", acq.sound_speed},
             {"fs", acq.fs},
             {"t0", acq.t0},
             {"center_frequency", o.center_frequency},
             {"cycles", o.cycles},  // the pulse's Gaussian envelope FWHM: axial FWHM c cycles / (2 f)
             {"samples", o.samples},
             {"noise", o.noise},
             {"speckle", o.speckle},
             {"speckle_amplitude", o.speckle_amplitude},
             {"seed", o.seed},
             {"points", nlohmann::json::array()},
             {"cysts", nlohmann::json::array()}};
    if (acq.model == recon::Model::SyntheticAperture) truth.erase("time_zero");  // no wavefront to time
    if (o.speckle > 0) {
      const recon::SpeckleRegion r = recon::speckle_region(o);
      truth["speckle_region"] = {{"x_min", r.x_min}, {"x_max", r.x_max}, {"z_min", r.z_min}, {"z_max", r.z_max}};
    }
    if (acq.model == recon::Model::PlaneWave) truth["angles_deg"] = recon::parse_number_list(args.angles_deg, "--angles-deg");
    // Synthetic aperture: the firing element of each transmit, which the acquisition cannot be
    // rebuilt without (all elements in order when --tx-elements was not given).
    if (acq.model == recon::Model::SyntheticAperture) {
      std::vector<int> tx = acq.tx_elements;
      if (tx.empty())
        for (int e = 0; e < acq.probe.elements; ++e) tx.push_back(e);
      truth["tx_elements"] = tx;
    }
    if (recon::has_virtual_sources(acq.model)) {
      truth["sources_x"] = acq.source_x;
      truth["sources_z"] = acq.source_z;
    }
    for (const recon::PointTarget& p : o.points)
      truth["points"].push_back({{"x", p.x}, {"z", p.z}, {"amplitude", p.amplitude}});
    for (const recon::Cyst& c : o.cysts) truth["cysts"].push_back({{"x", c.x}, {"z", c.z}, {"radius", c.radius}});
  }
  put_in_place(std::move(data), args.truth, truth);
  directories.keep();
  std::printf("usrecon: wrote %s (%s: %s x %s x %s, %s, %s, %s)%s%s\n", args.output.c_str(), args.model.c_str(),
              counted(rf.samples, "sample").c_str(), counted(rf.elements, "element").c_str(),
              counted(rf.transmits, "transmit").c_str(), counted(o.points.size(), "point").c_str(),
              counted(o.cysts.size(), "cyst").c_str(), counted(o.speckle, "speckle scatterer").c_str(),
              args.truth.empty() ? "" : "; truth in ", args.truth.c_str());
  // An NPY file holds the samples alone: reconstruct needs the geometry given again, in full
  // (reconstruct has no default angles or sources) and to the last digit (%.6g would round a rate
  // of 41666666.67 Hz).
  if (!hdf5) {
    const auto exact = [](double v) {
      char buffer[32];
      const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
      return std::string(buffer, end);
    };
    std::string options = "--model " + args.model + " --fs " + exact(acq.fs) + " --pitch " + exact(acq.probe.pitch) +
                          " --sound-speed " + exact(acq.sound_speed) + " --t0 " + exact(acq.t0);
    if (acq.model != recon::Model::SyntheticAperture)
      options += " --time-zero " + recon::to_string(acq.time_zero);
    if (acq.model == recon::Model::PlaneWave) options += " --angles-deg " + args.angles_deg;
    if (recon::has_virtual_sources(acq.model)) options += " --sources-x " + args.sources_x + " --sources-z " + args.sources_z;
    if (acq.model == recon::Model::SyntheticAperture && !acq.tx_elements.empty()) {
      options += " --tx-elements ";
      for (std::size_t i = 0; i < acq.tx_elements.size(); ++i)
        options += (i ? "," : "") + std::to_string(acq.tx_elements[i]);
    }
    std::printf("usrecon: %s holds no geometry: reconstruct it with %s\n", args.output.c_str(), options.c_str());
  }
  return 0;
}

// The channel data and the truth file: names a file may be written at (check_output_file).
void check_outputs(const SimulateArgs& args) {
  check_output_file(args.output, args.overwrite, args.output);
  check_output_directory(args.output, args.output);
  if (!args.truth.empty()) {
    check_output_file(args.truth, args.overwrite, "--truth " + args.truth);
    check_output_directory(args.truth, "--truth " + args.truth);
  }
}

int run(SimulateArgs& args) {
  // The truth written last would replace the channel data just written.
  if (!args.truth.empty() && same_file(args.output, args.truth))
    throw Error("--truth " + args.truth + " names the same file as -o " + args.output +
                ": give the truth JSON a file of its own");
  if (args.model != "seed") {
    check_outputs(args);
    if (args.app)
      for (const std::string& warning : unlikely_units(*args.app))
        std::fprintf(stderr, "usrecon: warning: %s\n", warning.c_str());
    return run_das(args);
  }
  // The seed's geometry is fixed: an option of the general models would be silently ignored.
  if (args.app)
    for (const CLI::Option* opt : args.app->get_options())
      if (opt->get_group() == kGeneralGroup && opt->count() > 0)
        throw Error(opt->get_name() + " applies to the general models (--model planewave, sa, dw or fw); "
                                      "--model seed has the seed's fixed geometry");
  // The seed writes source.txt text whatever the name: a binary format's extension would mislabel it.
  const std::string ext = io::lower_extension(args.output);
  for (const char* binary : {".npy", ".h5", ".hdf5", ".uff", ".mat"})
    if (ext == binary)
      throw Error(args.output + ": --model seed writes source.txt text, not " + ext +
                  " (name the output .txt, or give --model planewave, sa, dw or fw)");
  GivenPositions positions;
  for (const std::string& text : args.points) args.options.points.push_back(parse_point(text, positions));
  if (positions.all_under_1mm() &&
      echoes_in_record_as_metres(args.options, &recon::Scatterer::x_mm, &recon::Scatterer::z_mm))
    positions.warn();
  if (args.options.points.empty() && args.options.speckle == 0)
    throw Error("nothing to simulate: give --point and/or --speckle");
  check_outputs(args);
  const recon::seed::Problem& p = args.options.problem;
  warn_of_points_outside_record(recon::points_outside_record(args.options), args.options.points.size());
  const std::vector<std::int32_t> rf = recon::simulate_seed_channels(args.options);
  MadeDirectories directories;  // removed again unless both files are put in place
  make_output_directories(args, directories);
  io::StagedFile data(args.output);
  data.write(io::encode_source_txt(rf, p.channels, p.samples, args.output));
  nlohmann::json truth;
  if (!args.truth.empty()) {
    truth = {{"channel_data", fs::path(args.output).filename().string()},
             {"model", "seed"},
             {"grid_step_mm", recon::seed::Problem::kGridStepMm},
             {"channels", p.channels},
             {"samples", p.samples},
             {"center_frequency", args.options.center_mhz * 1e6},
             {"cycles", args.options.cycles},
             {"peak", args.options.peak},
             {"noise", args.options.noise},
             {"speckle", args.options.speckle},
             {"speckle_amplitude", args.options.speckle_amplitude},
             {"seed", args.options.seed},
             {"points", nlohmann::json::array()}};
    for (const recon::Scatterer& s : args.options.points)
      truth["points"].push_back({{"x_mm", s.x_mm}, {"z_mm", s.z_mm}, {"amplitude", s.amplitude},
                                 {"j", s.x_mm / recon::seed::Problem::kGridStepMm},
                                 {"i", s.z_mm / recon::seed::Problem::kGridStepMm}});
  }
  put_in_place(std::move(data), args.truth, truth);
  directories.keep();
  std::printf("usrecon: wrote %s (%s x %s, %s, %s)%s%s\n", args.output.c_str(), counted(p.channels, "channel").c_str(),
              counted(p.samples, "sample").c_str(), counted(args.options.points.size(), "point").c_str(),
              counted(args.options.speckle, "speckle scatterer").c_str(), args.truth.empty() ? "" : "; truth in ",
              args.truth.c_str());
  // Not the seed's own 128 x 2000: reconstruct must be told, or it refuses the value count.
  if (p.channels != recon::seed::Problem{}.channels || p.samples != recon::seed::Problem{}.samples)
    std::printf("usrecon: reconstruct it with --channels %d --samples %d\n", p.channels, p.samples);
  return 0;
}

}  // namespace

Command add_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto& o = args->options;
  app.add_option("-o,--output", args->output, "Channel data file to write: source.txt (--model seed); for planewave/sa/dw/fw NPY float32 [samples][elements][transmits] or USTB's UFF layout (.uff), or for planewave PICMUS's HDF5 layout (.h5, .hdf5)")->required();
  app.add_option("--point", args->points,
                 "Point target X_MM,Z_MM[,AMPLITUDE]: x lateral from element 0 (seed) or from the "
                 "array centre (planewave, sa, dw, fw), z depth (repeatable; numbers, not ranges). "
                 "Refused when no point's echo is centred in the record (a warning when some are not), "
                 "at z <= 0 or of amplitude 0");
  app.add_option("--speckle", o.speckle, "Number of random weak scatterers")->transform(in_range(0, 1000000))->capture_default_str();
  app.add_option("--speckle-amplitude", o.speckle_amplitude, "Amplitude a >= 0 of speckle scatterers: uniform in [-a, a] (seed); normal with standard deviation a (planewave, sa, dw, fw)")->check(positive_number(/*allow_zero=*/true))->capture_default_str();
  app.add_option("--noise", o.noise, "White noise standard deviation, in output units (seed: of data peaking at --peak; planewave, sa, dw, fw: of data peaking at 1)")->check(positive_number(/*allow_zero=*/true))->capture_default_str();
  app.add_option("--center-mhz", o.center_mhz, "Pulse centre frequency in MHz, below fs / 2 (the seed's fs: 30 MHz)")->check(positive_number())->capture_default_str();
  app.add_option("--cycles", o.cycles, "Pulse length (Gaussian envelope FWHM) in cycles")->check(positive_number())->capture_default_str();
  app.add_option("--peak", o.peak, "Largest absolute value written (--model seed only; the general models' data peak at 1)")->transform(in_range(1.0, 1e9))->capture_default_str();
  // CLI11 reads "-1" (and any number past 2^64 - 1) into the unsigned seed as 2^64 - 1 without a word.
  app.add_option("--seed", o.seed, "Random seed for speckle and noise (0 to 2^64 - 1)")
      ->check(CLI::Validator(
          [](std::string& text) {
            std::uint64_t value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            return ec == std::errc() && end == text.data() + text.size()
                       ? std::string()
                       : "a seed is a whole number from 0 to 18446744073709551615, not " + text;
          },
          "UINT64"))
      ->capture_default_str();
  app.add_option("--channels", o.problem.channels, "Channels (= elements; --model seed only, the general models take --elements)")->transform(in_range(1, 1024))->capture_default_str();
  app.add_option("--samples", o.problem.samples, "Samples per channel")->transform(in_range(1, 1 << 24))->capture_default_str();
  app.add_option("--truth", args->truth, "Also write the true target positions as JSON");
  app.add_flag("--overwrite", args->overwrite, "Replace existing files");
  args->app = &app;
  const std::string g = kGeneralGroup;
  auto& acq = args->das.acquisition;
  app.add_option("--model", args->model, "seed (the seed's geometry, source.txt out), planewave, sa, dw or fw (dw and fw: one spherical wave from each virtual source, the beamformer's own model, not a real probe's beam: see the README)")
      ->check(CLI::IsMember({"seed", "planewave", "sa", "dw", "fw"}))->capture_default_str();
  app.add_option("--elements", acq.probe.elements, "Array elements")->transform(in_range(1, 4096))->capture_default_str()->group(g);
  app.add_option("--pitch", acq.probe.pitch, "Element pitch, metres")->check(positive_number())->capture_default_str()->group(g);
  app.add_option("--sound-speed", acq.sound_speed, "Speed of sound, m/s")->check(positive_number())->capture_default_str()->group(g);
  app.add_option("--fs", acq.fs, "Sampling frequency, Hz")->check(positive_number())->capture_default_str()->group(g);
  app.add_option("--t0", acq.t0, "Time of sample 0 after the transmit, s")
      ->check(finite_number())->capture_default_str()->group(g);
  app.add_option("--angles-deg", args->angles_deg, "Plane-wave angles (--model planewave only): START:STEP:STOP or A,B,C")->check(parsed_by("--angles-deg", recon::parse_number_list, "LIST"))->capture_default_str()->group(g);
  app.add_option("--time-zero", args->time_zero,
                 "Plane, diverging and focused waves (not sa): t = 0 at the first element's firing (default) or when the wavefront "
                 "crosses the array centre (center: the default, and the only choice, for HDF5 and UFF output)")
      ->check(CLI::IsMember({"first-element", "center"}))->group(g);
  app.add_option("--tx-elements", args->tx_elements, "Synthetic aperture: transmitting elements, from 0: A,B,C or START:STEP:STOP (default: all)")->transform(whole_number_list(0, 65535))->group(g);
  app.add_option("--sources-x", args->sources_x, "Diverging and focused waves: virtual sources' (focal points') x, metres (START:STEP:STOP or A,B,C)")->check(parsed_by("--sources-x", recon::parse_number_list, "LIST"))->group(g);
  app.add_option("--sources-z", args->sources_z, "Diverging and focused waves: their depth, metres, <= 0 for dw, > 0 for fw (one, or one per source)")->check(parsed_by("--sources-z", recon::parse_number_list, "LIST"))->group(g);
  app.add_option("--cyst", args->cysts, "Anechoic cyst X_MM,Z_MM,R_MM (x from the array centre; repeatable)")->group(g);
  app.add_option("--speckle-x-range", args->speckle_x_range,
                 "Where --speckle scatterers lie laterally, MIN_MM:MAX_MM (default: the array's span)")->check(parsed_by("--speckle-x-range", recon::parse_range, "MIN_MM:MAX_MM"))->group(g);
  app.add_option("--speckle-z-range", args->speckle_z_range,
                 "Where --speckle scatterers lie in depth, MIN_MM:MAX_MM (default: 2 mm to the last sample's depth)")->check(parsed_by("--speckle-z-range", recon::parse_range, "MIN_MM:MAX_MM"))->group(g);
  app.footer("--model seed: the seed's forward model (all elements fire at once and channel k records every "
             "element's two-way path). The general models: each transmit's wave (plane wave, one element, or a "
             "virtual source) with the delays reconstruct uses, elements as points without directivity; a Gaussian "
             "pulse of --cycles at --center-mhz. So `usrecon reconstruct` focuses the points back. The data and --truth "
             "are put in place together or not at all.");
  return [args] { return run(*args); };
}

}  // namespace usrecon::cli
