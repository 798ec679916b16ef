// USTB's UFF files (the UltraSound ToolBox's HDF5 format, also PICMUS's .uff files): a
// uff.channel_data object (plane waves, synthetic aperture, diverging or focused waves, RF or IQ) read
// with its geometry. The layout, as USTB's MATLAB writer
// (+uff/write_object.m) makes it:
// - each object is a group whose "class" attribute names it (uff.channel_data, uff.wave, ...);
// - every number is a dataset with MATLAB's dims reversed: a scalar is {1, 1}, data
//   [samples x channels x waves x frames] is {frames, waves, channels, samples} in C order, with
//   MATLAB's trailing singleton dims dropped; complex arrays are groups holding real and imag;
// - `sequence` holds sequence_0001, sequence_0002, ... (or is itself the wave when there is one);
//   a wave's `source` is a uff.point (distance, azimuth, elevation; metres, radians), and a plane
//   wave has distance = Inf (MATLAB's writer stores no `wavefront`; pyuff's does: 0 = plane);
// - probe/geometry is MATLAB's N x 7 [x y z theta phi width height], so {7, N} here.
// Timing, as USTB's DAS reads it: t = 0 when a wave crosses the origin (for plane, diverging and
// focused waves our TimeZero::Center; a synthetic-aperture element fires at |x| / c), and sample k of wave w is at
// initial_time + k / fs + sequence(w).delay.
// tests/corpus/valid/uff/make_ustb_uff.py writes such files independently, with h5py.
#include <algorithm>
#include <cmath>
#include <map>

#include "das_input_formats.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon::detail {
namespace {

std::string with_slash(const std::string& name) { return name.empty() || name.front() == '/' ? name : "/" + name; }

/// A file's claim of more frames than an array's frames axis may hold is refused (its listing
/// alone would make a batch of --frame all that large); real acquisitions hold thousands at most.
constexpr std::size_t kMaxFrames = kMaxFramesInAnArray;

void check_frame_count(const std::string& where, std::size_t frames) {
  if (frames > kMaxFrames)
    throw Error(where + ": its data claim " + std::to_string(frames) + " frames, more than the " +
                std::to_string(kMaxFrames) + " a file may hold here");
}

/// The datasets wanted from a channel_data object, read in one go (one reader process).
class UstbObject {
 public:
  UstbObject(const fs::path& path, std::string group) : path_(path), group_(std::move(group)) {
    for (io::Hdf5DatasetInfo& d : io::list_hdf5_datasets(path)) datasets_.emplace(d.path, std::move(d.dims));
  }
  bool has(const std::string& name) const { return datasets_.count(group_ + "/" + name) > 0; }
  /// The dims the file lists for `name` (before reading it); empty when it lacks it.
  std::vector<std::size_t> dims(const std::string& name) const {
    const auto it = datasets_.find(group_ + "/" + name);
    return it == datasets_.end() ? std::vector<std::size_t>{} : it->second;
  }
  /// Queues `name` (relative to the group) for reading if the file has it: whole, or only rows
  /// [first_row, first_row + rows) of its first axis.
  void want(const std::string& name, std::size_t first_row = 0, std::size_t rows = io::Hdf5Selection::kAllRows) {
    if (has(name)) wanted_.push_back({group_ + "/" + name, first_row, rows});
  }
  void read() {
    for (io::Hdf5Array& a : io::read_hdf5(path_, wanted_)) arrays_.push_back(std::move(a));
  }
  const io::Hdf5Array* array(const std::string& name) const {
    for (const io::Hdf5Array& a : arrays_)
      if (a.path == group_ + "/" + name) return &a;
    return nullptr;
  }
  /// A one-number dataset, or `fallback` when the file lacks it.
  std::optional<double> scalar(const std::string& name, std::optional<double> fallback = std::nullopt) const {
    const io::Hdf5Array* a = array(name);
    if (!a) return fallback;
    if (a->values.size() != 1 || std::isnan(a->values[0]))
      throw Error(where() + ": '" + a->path + "' should hold one number");
    return a->values[0];
  }
  std::string where() const { return path_.string() + ": USTB " + group_; }
  const std::string& group() const { return group_; }

 private:
  fs::path path_;
  std::string group_;
  std::map<std::string, std::vector<std::size_t>> datasets_;  // every dataset's path and dims
  std::vector<io::Hdf5Selection> wanted_;
  std::vector<io::Hdf5Array> arrays_;
};

const io::Hdf5Group* find_group(const std::vector<io::Hdf5Group>& groups, const std::string& path) {
  for (const io::Hdf5Group& g : groups)
    if (g.path == path) return &g;
  return nullptr;
}

std::string class_of(const io::Hdf5Group& g) {
  const io::Hdf5Attribute* c = g.attribute("class");
  return c ? c->text : "";
}

/// The waves of `sequence` (relative paths under the channel_data group), in order.
std::vector<std::string> wave_paths(const std::vector<io::Hdf5Group>& groups, const std::string& cd,
                                    const std::string& where) {
  const std::string sequence = cd + "/sequence";
  const io::Hdf5Group* seq = find_group(groups, sequence);
  if (!seq) throw Error(where + " has no sequence (its transmitted waves)");
  std::vector<std::string> waves;
  for (const io::Hdf5Group& g : groups) {
    const std::string prefix = sequence + "/sequence_";
    if (g.path.size() == prefix.size() + 4 && g.path.compare(0, prefix.size(), prefix) == 0 &&
        std::all_of(g.path.end() - 4, g.path.end(), [](char c) { return c >= '0' && c <= '9'; }))
      waves.push_back(g.path.substr(cd.size() + 1));
  }
  // A sequence of one wave is the wave itself.
  if (waves.empty() && class_of(*seq) == "uff.wave") waves.push_back("sequence");
  if (waves.empty()) throw Error(where + ": its sequence holds no uff.wave");
  // sequence_0001, sequence_0002, ... must run without gaps (listed in name order already).
  for (std::size_t k = 0; k < waves.size() && waves.size() > 1; ++k) {
    char expected[64];
    std::snprintf(expected, sizeof expected, "sequence/sequence_%04zu", k + 1);
    if (waves[k] != expected) throw Error(where + ": its sequence lacks " + std::string(expected));
  }
  return waves;
}

}  // namespace

std::optional<std::string> ustb_channel_data_group(const fs::path& path, const std::vector<io::Hdf5Group>& groups,
                                                   const std::string& var) {
  std::vector<std::string> candidates;
  for (const io::Hdf5Group& g : groups)
    if (class_of(g) == "uff.channel_data") candidates.push_back(g.path);
  if (!var.empty()) {
    const std::string wanted = with_slash(var);
    if (std::find(candidates.begin(), candidates.end(), wanted) != candidates.end()) return wanted;
    return std::nullopt;
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() > 1) {
    std::string list;
    for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
    throw Error(path.string() + ": name the USTB channel data to read with --var (uff.channel_data here: " + list + ")");
  }
  return candidates.front();
}

int ustb_frames(const fs::path& path, const std::string& group) {
  for (const io::Hdf5DatasetInfo& d : io::list_hdf5_datasets(path))
    if ((d.path == group + "/data" || d.path == group + "/data/real") && d.dims.size() == 4) {
      check_frame_count(path.string() + ": USTB " + group, d.dims[0]);
      return static_cast<int>(d.dims[0]);
    }
  return 1;
}

ChannelData read_ustb_channel_data(const fs::path& path, const std::vector<io::Hdf5Group>& groups,
                                   const std::string& group, const ChannelInput& in, FileGeometry* geometry) {
  UstbObject cd(path, group);
  const std::string where = cd.where();
  if (!in.layout.empty())
    throw Error(where + ": --layout does not apply: a USTB file's data are [frames][waves][channels][samples]");
  const std::vector<std::string> waves = wave_paths(groups, group, where);
  const bool complex_data = !cd.has("data") && cd.has("data/real");
  if (!cd.has("data") && !complex_data) throw Error(where + " has no data");
  for (const char* name : {"sampling_frequency", "initial_time", "sound_speed", "modulation_frequency",
                           "probe/geometry", "probe/N", "probe/pitch"})
    cd.want(name);
  // Only the frame asked for is read from a multi-frame file ({frames, waves, channels, samples};
  // with one frame MATLAB drops that axis and the whole array is the frame).
  const char* const data_name = complex_data ? "data/real" : "data";
  const std::vector<std::size_t> listed = cd.dims(data_name);
  if (listed.size() == 4) {
    check_frame_count(where, listed[0]);
    if (in.frame < 1 || std::size_t(in.frame) > listed[0])  // refused before reading anything
      throw Error(where + ": --frame " + std::to_string(in.frame) + " is not among its " + std::to_string(listed[0]) +
                  " frame(s)");
  }
  const bool one_frame_read = listed.size() == 4 && in.frame >= 1 && std::size_t(in.frame) <= listed[0];
  const std::size_t first_row = one_frame_read ? std::size_t(in.frame - 1) : 0;
  const std::size_t rows = one_frame_read ? 1 : io::Hdf5Selection::kAllRows;
  cd.want(data_name, first_row, rows);
  if (cd.dims("data/imag") == listed) cd.want("data/imag", first_row, rows);
  else cd.want("data/imag");  // misshapen: read whole, to be refused below
  for (const std::string& w : waves)
    for (const char* name : {"/source/distance", "/source/azimuth", "/source/elevation", "/delay", "/sound_speed",
                             "/wavefront"})
      cd.want(w + name);
  cd.read();

  FileGeometry g;
  g.source = "USTB UFF " + group;
  g.layout = "transmits,elements,samples";
  g.time_zero = das::TimeZero::Center;  // USTB: t = 0 when the wave crosses the origin, x = 0
  g.fs = cd.scalar("sampling_frequency");
  g.sound_speed = cd.scalar("sound_speed");
  if (!g.fs || !(*g.fs > 0)) throw Error(where + " has no positive sampling_frequency");
  // IQ data (a modulation frequency): I in data/real, Q in data/imag, demodulated on a clock that
  // starts at initial_time (USTB's DAS rotates each sample by exp(j 2 pi f_mod tau) at the tau
  // it reads it for: tau = initial_time + k / fs). Complex data without one are analytic RF: the
  // real part is the RF.
  g.modulation_frequency = cd.scalar("modulation_frequency", 0.0).value();
  if (!std::isfinite(g.modulation_frequency)) throw Error(where + ": its modulation_frequency is not finite");
  if (g.modulation_frequency != 0 && !(complex_data && cd.has("data/imag")))
    throw Error(where + ": IQ data (modulation frequency " + number_text(g.modulation_frequency) +
                " Hz) without an imaginary part (data/imag)");

  // The probe: element positions from geometry ({7, N}: rows x, y, z, ...), or N and pitch.
  if (const io::Hdf5Array* p = cd.array("probe/geometry")) {
    if (p->dims.size() != 2 || p->dims[0] < 3 || p->dims[1] < 2)
      throw Error(where + ": probe/geometry is " + std::to_string(p->dims.size()) +
                  "-D; expected MATLAB's N x 7 (x, y, z, ... per element), stored 7 x N");
    const std::size_t n = p->dims[1];
    const auto row = [&](std::size_t r) {
      return std::vector<double>(p->values.begin() + r * n, p->values.begin() + (r + 1) * n);
    };
    g.pitch = centred_linear_array_pitch(row(0), row(1), row(2), where + ": probe/geometry");
    g.elements = static_cast<int>(n);
  } else if (const auto n = cd.scalar("probe/N"), pitch = cd.scalar("probe/pitch"); n && pitch) {
    if (!(*n >= 1 && *n <= 65536 && *n == std::floor(*n)) || !(*pitch > 0))
      throw Error(where + ": probe N = " + number_text(*n) + ", pitch = " + number_text(*pitch) + " make no array");
    g.elements = static_cast<int>(*n);
    g.pitch = *pitch;
  } else {
    throw Error(where + " has no probe geometry (probe/geometry, or probe/N and probe/pitch)");
  }

  // The waves: plane waves (source at infinity, or pyuff's wavefront = 0), synthetic aperture
  // (a spherical wave from each element's own position), diverging waves (spherical waves from
  // virtual sources behind the array) or focused waves (converging on focal points in front of
  // it); one transmit sound speed between them. Each wave's delay, and for synthetic aperture its
  // source's distance from the origin (USTB fires the element at t = distance / c), time its
  // samples; reconstruct_das aligns them. Diverging and focused waves keep USTB's clock (t = 0
  // when the wave crosses the origin: TimeZero::Center).
  std::optional<double> transmit_speed;
  int plane_waves = 0, focused_waves = 0;
  bool all_on_elements = true;
  std::vector<double> sphere_x, sphere_z;  // every spherical wave's source
  for (std::size_t k = 0; k < waves.size(); ++k) {
    const std::string& w = waves[k];
    const std::string which = where + ": wave " + std::to_string(k + 1) + " (" + w + ")";
    const double distance = cd.scalar(w + "/source/distance", 0.0).value();
    const double azimuth = cd.scalar(w + "/source/azimuth", 0.0).value();
    const double elevation = cd.scalar(w + "/source/elevation", 0.0).value();
    const std::optional<double> wavefront = cd.scalar(w + "/wavefront");
    const bool plane = (wavefront && *wavefront == 0) || std::isinf(distance);
    if (elevation != 0) throw Error(which + " is steered in elevation (" + number_text(elevation) + " rad)");
    if (!std::isfinite(azimuth)) throw Error(which + ": its azimuth is not finite");
    if (plane) {
      if (std::fabs(azimuth) >= M_PI / 2)
        throw Error(which + ": its azimuth " + number_text(azimuth) + " rad is not a steering angle");
      g.angles.push_back(azimuth);
      ++plane_waves;
    } else {
      // A spherical wave from (x, z) = distance (sin az, cos az): an element's (synthetic
      // aperture), a virtual source behind the array (diverging wave) or a focal point in front
      // of it (focused wave).
      // A source straight behind the array (azimuth pi) is at x = 0, but sin(pi) is not 0: USTB's
      // writer stores float32, whose pi gives -8.7e-8 (info showed -6.99e-07 mm for a source
      // 8 mm behind), and a double's 1.2e-16. Azimuths within 4e-7 rad (float's rounding of
      // pi, twice over) of straight behind or ahead are x = 0: 4 nm at 10 mm.
      double x = distance * std::sin(azimuth);
      if (std::fabs(x) <= 4e-7 * distance) x = 0;
      const double z = distance * std::cos(azimuth);
      const double pitch = *g.pitch;
      const bool on_array_line = std::fabs(z) <= 1e-3 * pitch;
      if (!std::isfinite(distance) || distance < 0)
        throw Error(which + ": its source distance " + number_text(distance) + " m is not a distance");
      if (!on_array_line && z > 0) ++focused_waves;
      const double index = x / pitch + 0.5 * (g.elements - 1);
      const double nearest = std::round(index);
      all_on_elements = all_on_elements && on_array_line && nearest >= 0 && nearest <= g.elements - 1 &&
                        std::fabs(index - nearest) <= 1e-3;
      if (all_on_elements) g.tx_elements.push_back(static_cast<int>(nearest));
      g.source_distances.push_back(distance);
      sphere_x.push_back(x);
      sphere_z.push_back(on_array_line ? 0.0 : z);
    }
    const double delay = cd.scalar(w + "/delay", 0.0).value();
    if (!std::isfinite(delay)) throw Error(which + ": its delay is not finite");
    g.wave_delays.push_back(delay);
    if (const std::optional<double> c = cd.scalar(w + "/sound_speed")) {
      if (transmit_speed && *c != *transmit_speed)
        throw Error(which + ": its sound speed differs from the first wave's");
      transmit_speed = *c;
    }
  }
  if (plane_waves != 0 && plane_waves != int(waves.size()))
    throw Error(where + ": its sequence mixes plane waves and spherical waves");
  if (plane_waves) {
    g.model = Model::PlaneWave;
  } else if (all_on_elements) {
    g.model = Model::SyntheticAperture;
    g.time_zero.reset();  // timed by the firing, from source_distances
  } else if (focused_waves) {
    // Focused waves, on USTB's clock: the wave crosses the origin at t = 0 and reaches its focal
    // point f at |f| / c (das.m: +|f| for a source at z >= -1 mm), our TimeZero::Center.
    if (focused_waves != int(waves.size()))
      throw Error(where + ": its sequence mixes focused waves with waves from sources on or behind the array");
    g.model = Model::FocusedWave;
    g.tx_elements.clear();
    g.source_distances.clear();
    g.source_x = std::move(sphere_x);
    g.source_z = std::move(sphere_z);
  } else {
    // Diverging waves: time zero where USTB has it, so the sources' distances are no shift.
    // (USTB's das.m subtracts |s| for a source behind the array: by the sign of cos(azimuth) in
    // older releases, for z < -1 mm in newer ones, which add it for -1 mm <= z < 0. This follows
    // the older rule, the geometric one, for every source behind the array.)
    g.model = Model::DivergingWave;
    g.tx_elements.clear();
    g.source_distances.clear();
    g.source_x = std::move(sphere_x);
    g.source_z = std::move(sphere_z);
  }
  g.t0 = cd.scalar("initial_time", 0.0).value();
  if (transmit_speed && g.sound_speed && *transmit_speed != *g.sound_speed) g.transmit_sound_speed = transmit_speed;

  // The data: {frames, waves, channels, samples} once MATLAB's dropped trailing dims are back.
  const io::Hdf5Array& data = *cd.array(complex_data ? "data/real" : "data");
  if (data.dims.size() < 1 || data.dims.size() > 4)
    throw Error(where + ": data are " + std::to_string(data.dims.size()) + "-D; expected up to 4-D");
  std::vector<std::size_t> dims(4 - data.dims.size(), 1);
  dims.insert(dims.end(), data.dims.begin(), data.dims.end());
  const std::size_t frames = one_frame_read ? listed[0] : dims[0], per_frame = dims[1] * dims[2] * dims[3];
  if (dims[1] != waves.size() || dims[2] != std::size_t(g.elements))
    throw Error(where + ": data are " + std::to_string(dims[1]) + " waves x " + std::to_string(dims[2]) +
                " channels but the file describes " + std::to_string(waves.size()) + " waves and " +
                std::to_string(g.elements) + " elements");
  if (in.frame < 1 || std::size_t(in.frame) > frames)
    throw Error(where + ": --frame " + std::to_string(in.frame) + " is not among its " + std::to_string(frames) +
                " frame(s)");
  g.frame = in.frame;
  g.frames = static_cast<int>(frames);
  // (The frame's rows alone were read when the file has several.)
  const std::size_t frame_start = one_frame_read ? 0 : std::size_t(in.frame - 1) * per_frame;
  const auto first = data.values.begin() + std::ptrdiff_t(frame_start);
  const std::vector<double> frame(first, first + std::ptrdiff_t(per_frame));
  ChannelData rf = arrange_channels(frame, {dims[1], dims[2], dims[3]}, false, "transmits,elements,samples",
                                    in.offset, path.string() + " (" + data.path + ")");
  if (g.modulation_frequency != 0) {
    const io::Hdf5Array& q = *cd.array("data/imag");
    if (q.dims != data.dims) throw Error(where + ": data/imag is not shaped like data/real");
    const auto q_first = q.values.begin() + std::ptrdiff_t(frame_start);
    rf.imag = arrange_channels(std::vector<double>(q_first, q_first + std::ptrdiff_t(per_frame)),
                               {dims[1], dims[2], dims[3]}, false, "transmits,elements,samples", in.offset,
                               path.string() + " (" + q.path + ")")
                  .data;
    rf.modulation_frequency = g.modulation_frequency;
    rf.iq_time0 = cd.scalar("initial_time", 0.0).value();
  }
  if (geometry) *geometry = std::move(g);
  return rf;
}

}  // namespace usrecon::recon::detail

namespace usrecon::recon {

void write_ustb_uff(const fs::path& path, const ChannelData& rf, const Acquisition& acq) {
  io::StagedFile out(path);
  write_ustb_uff(out, rf, acq);
  out.commit();
}

void write_ustb_uff(io::StagedFile& out, const ChannelData& rf, const Acquisition& acq) {
  const fs::path& path = out.target();
  const bool plane = acq.model == Model::PlaneWave, diverging = acq.model == Model::DivergingWave;
  const bool virtual_sources = has_virtual_sources(acq.model);
  if ((plane || virtual_sources) && acq.time_zero != das::TimeZero::Center)
    throw Error(path.string() + ": a USTB file counts time from the wavefront crossing the origin, the "
                                "array centre (--time-zero center)");
  if (diverging) {
    // The reader takes spherical waves that all start on elements for synthetic aperture (USTB
    // keeps no other mark), which counts time from the firing: such a file would read back
    // on another clock. Diverging waves come from behind the array.
    bool all_on_elements = true;
    for (std::size_t t = 0; t < acq.source_x.size(); ++t) {
      const double index = acq.source_x[t] / acq.probe.pitch + 0.5 * (acq.probe.elements - 1);
      all_on_elements = all_on_elements && std::fabs(acq.source_z[t]) <= 1e-3 * acq.probe.pitch &&
                        std::fabs(index - std::round(index)) <= 1e-3 && index >= -0.5 &&
                        index <= acq.probe.elements - 0.5;
    }
    if (all_on_elements)
      throw Error(path.string() + ": every virtual source lies on an element at z = 0, which a USTB file "
                                  "cannot tell from synthetic aperture; put the sources behind the array "
                                  "(z < 0) or use --model sa");
    // USTB's newer das.m times a spherical wave from a source less than 1 mm behind the array
    // like a focused one (adding |s| where a diverging wave subtracts it): USTB would read such a
    // file on another clock than the one it was written with.
    for (std::size_t t = 0; t < acq.source_z.size(); ++t)
      if (acq.source_z[t] >= -1e-3)
        throw Error(path.string() + ": virtual source " + std::to_string(t + 1) + " lies less than 1 mm behind "
                    "the array (z = " + number_text(acq.source_z[t] * 1e3) + " mm), where USTB's das.m times a "
                    "wave as a focused one; put the sources at least 1 mm behind the array for a USTB file");
  }
  const auto n = [](int v) { return std::size_t(v); };
  std::vector<io::Hdf5Array> arrays;
  std::vector<io::Hdf5Group> groups = {{"/", {{"version", "v1.2.0", {}}}}};
  // An object: a group with USTB's attributes (class, name, size, array).
  const auto object = [&](const std::string& at, const std::string& cls, std::size_t count = 1) {
    const std::string name = at.substr(at.rfind('/') + 1);
    groups.push_back({at,
                      {{"class", cls, {}},
                       {"name", name, {}},
                       {"size", "", {1.0, double(count)}},
                       {"array", "", {count > 1 ? 1.0 : 0.0}}}});
  };
  const auto scalar = [&](const std::string& at, double v) { arrays.push_back({at, "", {1, 1}, {v}}); };
  const std::string cd = "/channel_data";
  object(cd, "uff.channel_data");
  // rf.data is [t][e][s]: MATLAB's [samples x channels x waves] reversed.
  arrays.push_back({cd + "/data", "", {n(rf.transmits), n(rf.elements), n(rf.samples)},
                    std::vector<double>(rf.data.begin(), rf.data.end())});
  scalar(cd + "/sampling_frequency", acq.fs);
  scalar(cd + "/initial_time", acq.t0);
  scalar(cd + "/sound_speed", acq.sound_speed);
  scalar(cd + "/modulation_frequency", 0.0);
  object(cd + "/probe", "uff.linear_array");
  io::Hdf5Array geometry{cd + "/probe/geometry", "", {7, n(rf.elements)}, std::vector<double>(7 * n(rf.elements), 0.0)};
  for (int e = 0; e < rf.elements; ++e) {
    geometry.values[n(e)] = acq.probe.element_x(e);                       // x
    geometry.values[5 * n(rf.elements) + n(e)] = acq.probe.pitch;         // width
    geometry.values[6 * n(rf.elements) + n(e)] = 10 * acq.probe.pitch;    // height (USTB's default)
  }
  arrays.push_back(std::move(geometry));
  scalar(cd + "/probe/N", rf.elements);
  scalar(cd + "/probe/pitch", acq.probe.pitch);
  const std::size_t waves = n(rf.transmits);
  if (plane ? acq.angles.size() != waves : std::size_t(acq.transmits()) != waves)
    throw Error(path.string() + ": the acquisition does not describe the data's " + std::to_string(waves) + " transmits");
  if (waves > 1) object(cd + "/sequence", "uff.wave", waves);
  for (std::size_t k = 0; k < waves; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "/sequence/sequence_%04zu", k + 1);
    const std::string w = cd + (waves > 1 ? name : "/sequence");
    object(w, "uff.wave");
    object(w + "/source", "uff.point");
    // Plane wave: a source at infinity in the steering direction. Synthetic aperture: the firing
    // element; USTB's clock has it fire at |x| / c (its wave passes the origin at t = 0), so the
    // wave's delay says that sample k is recorded at initial_time + k / fs + |x| / c. Diverging
    // or focused wave: its virtual source (focal point), timed from the origin crossing already
    // (delay 0).
    if (plane) {
      scalar(w + "/source/distance", INFINITY);
      scalar(w + "/source/azimuth", acq.angles[k]);
      scalar(w + "/delay", 0.0);
    } else if (virtual_sources) {
      scalar(w + "/source/distance", std::hypot(acq.source_x[k], acq.source_z[k]));
      scalar(w + "/source/azimuth", std::atan2(acq.source_x[k], acq.source_z[k]));
      scalar(w + "/delay", 0.0);
    } else {
      const double x = acq.probe.element_x(acq.tx_elements.empty() ? int(k) : acq.tx_elements[k]);
      scalar(w + "/source/distance", std::fabs(x));
      scalar(w + "/source/azimuth", x > 0 ? M_PI / 2 : x < 0 ? -M_PI / 2 : 0.0);
      scalar(w + "/delay", std::fabs(x) / acq.sound_speed);
    }
    scalar(w + "/source/elevation", 0.0);
    scalar(w + "/sound_speed", acq.sound_speed);
  }
  io::write_hdf5(out, arrays, groups);
}

}  // namespace usrecon::recon
