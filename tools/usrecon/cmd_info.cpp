// usrecon info FILE... [--var NAME] [--frame N] [--json]: what a channel-data file holds (its
// arrays, with type and dims) and how `reconstruct` would read it: the channel data's transmits x
// elements x samples and the acquisition parameters the file carries (PICMUS, USTB UFF), or the
// reason it cannot be read as it stands (a --layout or --var to give, say). Nothing is written.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "same_file.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/viewer/frame.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace usrecon::cli {
namespace {

struct InfoArgs {
  std::vector<std::string> files;
  std::string var;
  std::string layout;
  std::string frame = "1";  // a frame number, all or FIRST:LAST (as reconstruct takes them: the first is described)
  int samples = 0;          // the samples of one transmit, for a (samples,transmits) axis of --layout
  std::string channel_map;  // --channel-map, as reconstruct takes it
  bool as_json = false;
};

constexpr double kPi = 3.14159265358979323846;
constexpr std::size_t kArraysShown = 40;  // text output lists this many arrays (--json: all)

json array_entry(const std::string& name, const std::string& type, const std::vector<std::size_t>& dims) {
  return {{"name", name}, {"type", type}, {"dims", dims}};
}

/// source.txt: whitespace-separated integers, channel-major; counts them (without checking them:
/// reconstruct does, naming line and column).
std::size_t count_values(const fs::path& path) {
  const std::string text = io::read_file(path);
  std::size_t values = 0;
  bool in_value = false;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
    if (!blank && !in_value) ++values;
    in_value = !blank;
  }
  return values;
}

json geometry_json(const recon::FileGeometry& g) {
  json j = {{"source", g.source}};
  const auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  if (g.model) j["model"] = recon::to_string(*g.model);
  put("sampling_hz", g.fs);
  put("sound_speed_m_per_s", g.sound_speed);
  put("transmit_sound_speed_m_per_s", g.transmit_sound_speed);
  put("t0_s", g.t0);
  if (g.elements > 0) j["elements"] = g.elements;
  put("element_pitch_m", g.pitch);
  if (g.time_zero) j["time_zero"] = recon::to_string(*g.time_zero);
  if (!g.angles.empty()) {
    std::vector<double> degrees;
    for (double a : g.angles) degrees.push_back(a * 180.0 / kPi);
    j["angles_deg"] = degrees;
  }
  if (!g.tx_elements.empty()) j["tx_elements"] = g.tx_elements;
  if (!g.source_x.empty()) {
    j["sources_x_m"] = g.source_x;
    j["sources_z_m"] = g.source_z;
  }
  if (!g.wave_delays.empty()) j["wave_delays_s"] = g.wave_delays;
  if (g.modulation_frequency != 0) j["modulation_frequency_hz"] = g.modulation_frequency;
  if (g.frames > 0) {
    j["frame"] = g.frame;
    j["frames"] = g.frames;
  }
  return j;
}

/// Everything `info` says about one file. Throws when the file cannot be listed at all.
json describe(const fs::path& path, const InfoArgs& args) {
  json d = {{"file", path.string()}, {"arrays", json::array()}};
  // Said as it is: missing, a directory, or "Not a directory" (a file named with a trailing '/'),
  // before the name's extension is looked at.
  const fs::file_status status = io::existing_input_status(path);
  if (fs::is_directory(status))
    throw io::InputError(path.string() + ": a directory; info lists files (name them, e.g. " +
                         (path / "*.mat").string() + ")");
  const std::string ext = io::lower_extension(path);
  if (ext == ".mat") {
    d["format"] = "MAT";
    for (const io::MatVariableInfo& v : io::list_mat_variables(path)) {
      json a = array_entry(v.name, v.matlab_class, v.dims);
      if (v.is_complex) a["complex"] = true;
      d["arrays"].push_back(a);
    }
  } else if (io::has_hdf5_extension(path)) {
    d["format"] = "HDF5";
    for (const io::Hdf5DatasetInfo& info : io::list_hdf5_datasets(path))
      d["arrays"].push_back(array_entry(info.path, info.type.empty() ? "non-numeric" : info.type, info.dims));
    std::vector<std::string> ustb;
    for (const io::Hdf5Group& g : io::list_hdf5_groups(path))
      if (const io::Hdf5Attribute* c = g.attribute("class"); c && c->text == "uff.channel_data") ustb.push_back(g.path);
    if (!ustb.empty()) d["ustb_channel_data"] = ustb;
  } else if (ext == ".npy") {
    d["format"] = "NPY";
    const io::NpyArray a = io::read_npy_header(path);  // a cine of frames read alone may be past a whole read's 4 GiB
    // The dtype and order the file stores ('>i2' was listed as '<i2', the order it is read into).
    json entry = array_entry(path.filename().string(), a.file_descr, a.shape);
    if (a.file_fortran_order) entry["fortran_order"] = true;
    d["arrays"].push_back(entry);
    // An image reconstruct wrote reads as channel data of one transmit: say what it is.
    if (recon::is_written_raw_image(path))
      d["note"] = "a raw image that reconstruct wrote (" + fs::path(path).replace_extension(".json").filename().string() +
                  " names it as outputs.raw), not channel data: metrics and view read it";
  } else if (ext != ".txt") {
    // A PNG, a JSON, ...: listing its "values" as source.txt tokens said nothing true.
    throw io::InputError(path.string() + ": not a channel-data file by its name (" + (ext.empty() ? "no extension" : ext) +
                         "): info lists .txt (source.txt), .npy, .mat, .h5, .hdf5 and .uff files");
  } else {
    d["format"] = "source.txt";
    const std::size_t values = count_values(path);
    d["values"] = values;
    d["reads_as"] = values == 128 * 2000
                        ? "the seed model (the default) reads it as 128 channels x 2000 samples"
                        : "not the seed's default 128 x 2000 values; the seed model reads it with --channels and "
                          "--samples (values = channels x samples), --model planewave, sa, dw or fw with --elements, "
                          "--samples and the transmits given (values = elements x transmits x samples)";
    return d;
  }
  // How reconstruct reads it, with the options given here.
  recon::ChannelInput input;
  input.var = args.var;
  input.layout = args.layout;
  // "all", N or FIRST:LAST (the validator's forms): the first frame reconstruct would read.
  input.frame = args.frame == "all" ? 1 : std::stoi(args.frame.substr(0, args.frame.find(':')));
  input.samples = args.samples;
  input.channel_map = args.channel_map;
  try {
    recon::FileGeometry geometry;
    const recon::ChannelData rf = recon::read_channel_data(path, input, 0, 0, &geometry);
    json c = {{"transmits", rf.transmits}, {"elements", rf.elements}, {"samples", rf.samples},
              {"iq", rf.is_iq()},
              {"layout", !args.layout.empty()      ? args.layout
                         : !geometry.layout.empty() ? geometry.layout
                                                    : "samples,elements,transmits"},
              {"layout_is_default", args.layout.empty() && geometry.layout.empty()}};
    if (!geometry.source.empty()) c["from_file"] = geometry_json(geometry);
    if (!geometry.channel_map.empty())
      c["channel_map"] = {{"channels", geometry.channel_map}, {"array_channels", geometry.array_channels},
                          {"from_file", geometry.channel_map_from_file}};
    if (geometry.source.empty() && geometry.frames > 0) {  // a 'frames' axis named in --layout
      c["frame"] = geometry.frame;
      c["frames"] = geometry.frames;
    }
    // What reconstruct warns of, said here too (one line each).
    std::vector<std::string> notes = geometry.notes;  // what the file's parameters leave out
    if (recon::all_zero(rf)) notes.push_back(recon::kAllZero);
    if (recon::looks_unsigned(rf)) notes.push_back(recon::kLooksUnsigned);
    if (rf.elements > rf.samples && geometry.source.empty())
      notes.push_back("more elements than samples per channel: were the axes named in order? (--layout)");
    if (!notes.empty()) c["notes"] = notes;
    d["channel_data"] = c;
  } catch (const std::exception& e) {
    d["not_read_because"] = e.what();
  }
  return d;
}

/// A list's items with commas; of more than 10, the first 4, "...", and the last 2.
std::string elided(const std::vector<std::string>& items) {
  std::string s;
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (items.size() > 10 && k == 4) {
      s += ", ...";
      k = items.size() - 3;
      continue;
    }
    s += (k == 0 ? "" : ", ") + items[k];
  }
  return s;
}

std::string dims_text(const json& dims) {
  std::string s;
  for (const auto& n : dims) s += (s.empty() ? "" : " x ") + std::to_string(n.get<std::size_t>());
  return s.empty() ? "scalar" : s;
}

void print_text(const json& d) {
  std::printf("%s: %s\n", d["file"].get<std::string>().c_str(), d["format"].get<std::string>().c_str());
  if (d.contains("values")) std::printf("  %zu values\n", d["values"].get<std::size_t>());
  // Arrays of more than one value (USTB files hold hundreds of one-value parameters).
  std::vector<const json*> shown;
  for (const json& a : d["arrays"]) {
    std::size_t count = 1;
    for (const auto& n : a["dims"]) count *= n.get<std::size_t>();
    if (count > 1 || d["arrays"].size() <= kArraysShown) shown.push_back(&a);
  }
  std::size_t width = 0;
  for (const json* a : shown) width = std::max(width, io::printable((*a)["name"].get<std::string>()).size());
  for (std::size_t k = 0; k < shown.size() && k < kArraysShown; ++k) {
    const json& a = *shown[k];
    std::printf("  %-*s  %-11s %s%s\n", int(width), io::printable(a["name"].get<std::string>()).c_str(),
                a["type"].get<std::string>().c_str(), dims_text(a["dims"]).c_str(),
                a.value("complex", false) ? " (complex)" : a.value("fortran_order", false) ? " (Fortran order)" : "");
  }
  const std::size_t hidden = d["arrays"].size() - std::min(shown.size(), kArraysShown);
  if (hidden > 0) std::printf("  and %zu more arrays, one-value ones among them (--json lists them all)\n", hidden);
  if (d.contains("ustb_channel_data")) {
    std::string list;
    for (const auto& g : d["ustb_channel_data"]) list += (list.empty() ? "" : ", ") + g.get<std::string>();
    std::printf("  USTB uff.channel_data: %s\n", list.c_str());
  }
  if (d.contains("note")) std::printf("  %s\n", d["note"].get<std::string>().c_str());
  if (d.contains("reads_as")) std::printf("  reconstruct: %s\n", d["reads_as"].get<std::string>().c_str());
  if (d.contains("not_read_because"))
    std::printf("  reconstruct cannot read it as it stands: %s\n", d["not_read_because"].get<std::string>().c_str());
  if (!d.contains("channel_data")) return;
  const json& c = d["channel_data"];
  std::printf("  reconstruct reads %d transmit(s) x %d element(s) x %d samples, %s\n", c["transmits"].get<int>(),
              c["elements"].get<int>(), c["samples"].get<int>(), c["iq"].get<bool>() ? "baseband IQ" : "RF");
  if (c.contains("channel_map")) {
    const json& m = c["channel_map"];
    std::vector<std::string> channels;
    for (const auto& channel : m["channels"]) channels.push_back(std::to_string(channel.get<int>()));
    const std::string list = elided(channels);
    const std::string from = m["from_file"].get<std::string>();
    std::printf("  elements 1 to %zu read from channels %s of the array's %d (%s)\n", m["channels"].size(),
                list.c_str(), m["array_channels"].get<int>(),
                from.empty() ? "--channel-map" : (from + ", the file's; --channel-map replaces it").c_str());
  }
  if (c.contains("frames"))
    std::printf("  frame %d of the %d along its 'frames' axis (reconstruct --frame all reads each)\n",
                c["frame"].get<int>(), c["frames"].get<int>());
  if (c.contains("notes"))
    for (const auto& note : c["notes"]) std::printf("  %s\n", note.get<std::string>().c_str());
  if (!c.contains("from_file")) {
    std::printf("  (axes as --layout %s%s; usrecon reads no geometry from it: give --fs and --pitch, and "
                "--sound-speed and --t0 unless 1540 m/s and 0)\n",
                c["layout"].get<std::string>().c_str(), c["layout_is_default"].get<bool>() ? ", the default" : "");
    return;
  }
  const json& g = c["from_file"];
  std::printf("  parameters from %s:\n", g["source"].get<std::string>().c_str());
  const auto line = [&](const char* key, const char* label, double scale, const char* unit) {
    if (g.contains(key)) std::printf("    %-22s %s %s\n", label, recon::number_text(g[key].get<double>() * scale).c_str(), unit);
  };
  if (g.contains("model")) std::printf("    %-22s %s\n", "model", g["model"].get<std::string>().c_str());
  line("sampling_hz", "sampling frequency", 1e-6, "MHz");
  line("sound_speed_m_per_s", "sound speed", 1, "m/s");
  line("transmit_sound_speed_m_per_s", "transmit sound speed", 1, "m/s");
  line("t0_s", "t0", 1e6, "us");
  line("element_pitch_m", "pitch", 1e3, "mm");
  if (g.contains("time_zero")) std::printf("    %-22s %s\n", "time zero", g["time_zero"].get<std::string>().c_str());
  // Lists: one value when all are equal, the ends of a long one.
  const auto list = [&](const char* key, const char* label, double scale, const char* unit) {
    if (!g.contains(key)) return;
    std::vector<double> v;
    for (const auto& x : g[key]) v.push_back(x.get<double>() * scale);
    std::string s;
    if (std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); }) && v.size() > 1) {
      s = recon::number_text(v.front()) + unit + " (all " + std::to_string(v.size()) + ")";
    } else {
      std::vector<std::string> numbers;
      for (double x : v) numbers.push_back(recon::number_text(x));
      s = elided(numbers) + unit;
      if (v.size() > 10) s += " (" + std::to_string(v.size()) + ")";
    }
    std::printf("    %-22s %s\n", label, s.c_str());
  };
  list("angles_deg", "angles", 1, " deg");
  list("tx_elements", "firing elements", 1, "");
  list("sources_x_m", "virtual sources x", 1e3, " mm");
  list("sources_z_m", "virtual sources z", 1e3, " mm");
  list("wave_delays_s", "wave delays", 1e6, " us");
  line("modulation_frequency_hz", "modulation frequency", 1e-6, "MHz");
  if (g.contains("frames"))
    std::printf("    %-22s %d of %d\n", "frame", g["frame"].get<int>(), g["frames"].get<int>());
}

int run(const InfoArgs& args) {
  json all = json::array();
  int failed = 0;
  for (const std::string& file : args.files) {
    try {
      const json d = describe(file, args);
      if (args.as_json) all.push_back(d);
      else print_text(d);
    } catch (const std::exception& e) {
      ++failed;
      if (args.as_json) all.push_back({{"file", file}, {"error", e.what()}});
      std::fprintf(stderr, "usrecon: error: %s\n", e.what());
    }
  }
  // Names need not be UTF-8 (file names, MAT and HDF5 names): replace bad bytes, do not throw.
  if (args.as_json) std::printf("%s\n", all.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  return failed ? 1 : 0;
}

}  // namespace

Command add_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  // Not CLI::ExistingFile: a missing file is one failed file, listed with the others.
  app.add_option("files", args->files, "Channel data files (.mat, .h5/.hdf5/.uff, .npy, source.txt)")->required();
  app.add_option("--var", args->var, "MAT variable, HDF5 dataset or USTB channel_data group to read, as for reconstruct");
  app.add_option("--layout", args->layout, "The array's axes in order, as for reconstruct (samples,elements,transmits "
                 "by default; PICMUS and USTB files say their own)");
  app.add_option("--samples", args->samples, "The samples of one transmit, where --layout names a (samples,transmits) "
                 "axis, as for reconstruct")
      ->transform(in_range(1, 1 << 24));
  app.add_option("--channel-map", args->channel_map, "The array's channel that each element is read from (numbers "
                 "from 1 and ranges, or a variable of the file, e.g. Trans.Connector), as for reconstruct");
  app.add_option("--frame", args->frame, "USTB UFF files, and arrays whose --layout names a frames axis: the frame "
                 "to describe (1 = the first; the frame count is listed, and reconstruct --frame all reads each), "
                 "or all or FIRST:LAST, as reconstruct takes them: the first frame they read is described")
      ->transform(frame_number_or_all(true));
  app.add_flag("--json", args->as_json, "Print one JSON array (an object per file) instead of text");
  app.footer("Exit status 1 when a file cannot be listed at all; a file that lists but that reconstruct "
             "cannot read as it stands says why (and what to give) and counts as success.");
  return [args] { return run(*args); };
}

}  // namespace usrecon::cli
