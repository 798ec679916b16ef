// Channel data for the general models: source.txt, NPY, MAT and HDF5 files in any axis order;
// PICMUS's HDF5 layout here, USTB's UFF in das_input_ustb.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"
#include "das_input_formats.hpp"
#include "text_parts.hpp"
#include "usrecon/recon/das_pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

double parse_number(std::string_view text, const std::string& what) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    throw Error(what + ": '" + std::string(text) + "' is not a number");
  return value;
}

using detail::split;

/// A PICMUS parameter: `name` under kPicmusGroup.
std::string picmus_path(const char* name) { return std::string(io::kPicmusGroup) + "/" + name; }

/// The geometry of a PICMUS file: fs, c, initial time, angles and a centred uniform linear array
/// from probe_geometry ([3][N] or [N][3]: x, y, z per element, metres). Every parameter the file
/// has is read in one go (one reader process; io/hdf5.hpp).
FileGeometry picmus_geometry(const fs::path& path) {
  constexpr const char* kScalars[] = {"sampling_frequency", "sound_speed", "initial_time", "modulation_frequency"};
  std::vector<std::string> wanted;
  for (const io::Hdf5DatasetInfo& d : io::list_hdf5_datasets(path))
    for (const char* name : {"sampling_frequency", "sound_speed", "initial_time", "modulation_frequency",
                             "angles", "probe_geometry"})
      if (d.path == picmus_path(name)) wanted.push_back(d.path);
  const std::vector<io::Hdf5Array> arrays = io::read_hdf5(path, wanted);
  const auto find = [&](const char* name) -> const io::Hdf5Array* {
    for (const io::Hdf5Array& a : arrays)
      if (a.path == picmus_path(name)) return &a;
    return nullptr;
  };
  std::optional<double> scalars[std::size(kScalars)];
  for (std::size_t k = 0; k < std::size(kScalars); ++k)
    if (const io::Hdf5Array* a = find(kScalars[k])) {
      if (a->values.size() != 1 || !std::isfinite(a->values[0]))
        throw Error(path.string() + ": PICMUS '" + a->path + "' should hold one number");
      scalars[k] = a->values[0];
    }
  FileGeometry g;
  g.source = std::string("PICMUS ") + io::kPicmusGroup;
  g.model = Model::PlaneWave;  // PICMUS data sets are plane-wave acquisitions, and only those
  g.time_zero = das::TimeZero::Center;  // PICMUS/USTB: t = 0 when the wave crosses x = 0
  g.fs = scalars[0];
  g.sound_speed = scalars[1];
  g.t0 = scalars[2];
  g.modulation_frequency = scalars[3].value_or(0.0);
  if (const io::Hdf5Array* angles = find("angles")) g.angles = angles->values;
  if (const io::Hdf5Array* probe = find("probe_geometry")) {
    const io::Hdf5Array& p = *probe;
    const bool rows_are_axes = p.dims.size() == 2 && p.dims[0] == 3;
    const bool columns_are_axes = p.dims.size() == 2 && p.dims[1] == 3 && !rows_are_axes;
    if (!rows_are_axes && !columns_are_axes)
      throw Error(path.string() + ": PICMUS probe_geometry should be 3 x N or N x 3");
    const std::size_t n = rows_are_axes ? p.dims[1] : p.dims[0];
    const auto coord = [&](std::size_t element, int axis) {
      return rows_are_axes ? p.values[axis * n + element] : p.values[element * 3 + axis];
    };
    std::vector<double> xyz[3];
    for (int axis = 0; axis < 3; ++axis)
      for (std::size_t e = 0; e < n; ++e) xyz[axis].push_back(coord(e, axis));
    const double pitch = detail::centred_linear_array_pitch(xyz[0], xyz[1], xyz[2], path.string() + ": PICMUS probe_geometry");
    g.pitch = pitch;
    g.elements = static_cast<int>(n);
  }
  return g;
}

/// The axes --layout names, in order: each a name, or a group "(samples,transmits)" that names one
/// array axis holding both (split at the commas outside parentheses; checked by plan_axes).
std::vector<std::string_view> layout_axes(std::string_view layout) {
  std::vector<std::string_view> axes;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= layout.size(); ++i) {
    if (i == layout.size() || (layout[i] == ',' && depth == 0)) {
      axes.push_back(layout.substr(start, i - start));
      start = i + 1;
    } else if (layout[i] == '(') {
      ++depth;
    } else if (layout[i] == ')') {
      --depth;
    }
  }
  return axes;
}

bool names_frames_axis(std::string_view layout) {
  const auto names = layout_axes(layout);
  return std::find(names.begin(), names.end(), "frames") != names.end();
}

/// The extents of an array's axes as `names` takes them: MATLAB drops trailing singleton
/// dimensions, and so may the user's layout (an axis left out is 1). Empty when the array has
/// more axes than `names` (arrange_channels says so).
std::vector<std::size_t> layout_shape(const std::vector<std::size_t>& dims, std::size_t names) {
  std::vector<std::size_t> shape = dims;
  while (shape.size() > names && shape.back() == 1) shape.pop_back();
  if (shape.size() > names) return {};
  shape.resize(names, 1);
  return shape;
}

/// A file's array as it holds it, before arrange_channels takes a frame of it: the whole array,
/// or a block of its frames (read_frames_block).
struct StoredArray {
  std::vector<double> values;
  std::vector<std::size_t> dims;
  bool column_major = false;  ///< MAT: MATLAB's order
  std::string source;         ///< the MAT variable or HDF5 dataset read ("" for NPY)
  /// A PICMUS IQ file's data/imag beside data/real (its `values` and `dims`), else empty.
  std::optional<io::Hdf5Array> imag;
  /// A block of frames: the first it holds (1-based), how many, and how many the array has; 0, 0,
  /// 0 for a whole array (its dims say its frames).
  int first_frame = 0, frames_held = 0, frames = 0;
  std::optional<FileGeometry> picmus;  ///< a PICMUS file's geometry, when read on the way
};

/// The array of a file read frame by frame (--frame all with a 'frames' axis in --layout), or the
/// block of its frames read last, kept from its first read (its first frame's, or count_frames'
/// where the file's lists cannot say its dims) until its last frame is read: a batch goes through
/// one file's frames in order, so that it reads the file once, not once a frame. One file at a
/// time; a file changed on disk (size or time) is read again.
class StoredArrayCache {
 public:
  std::shared_ptr<const StoredArray> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    return key == key_ ? array_ : nullptr;
  }
  void keep(const std::string& key, std::shared_ptr<const StoredArray> array) {
    std::lock_guard lock(mutex_);
    key_ = key;
    array_ = std::move(array);
  }
  void drop(const std::string& key) {
    std::lock_guard lock(mutex_);
    if (key == key_) key_.clear(), array_.reset();
  }
  /// Drops what is kept: before a read, so that one array is in memory, not two (the block before,
  /// or a file's whose last frame the batch never read).
  void clear() {
    std::lock_guard lock(mutex_);
    key_.clear();
    array_.reset();
  }

 private:
  std::mutex mutex_;
  std::string key_;
  std::shared_ptr<const StoredArray> array_;
};

StoredArrayCache& stored_array_cache() {
  static StoredArrayCache cache;
  return cache;
}

/// What identifies a file's array for the cache: its path, --var, size and modification time.
std::string stored_array_key(const fs::path& path, const ChannelInput& in) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return fs::absolute(path, ec).string() + '\n' + in.var + '\n' + std::to_string(size) + '\n' + std::to_string(time);
}

/// Reads the array of a MAT, HDF5 (not USTB) or NPY file; through the cache for --frame all with
/// a 'frames' axis.
std::shared_ptr<const StoredArray> read_stored_array(const fs::path& path, const ChannelInput& in) {
  const bool cached = in.all_frames && names_frames_axis(in.layout);
  const std::string key = cached ? stored_array_key(path, in) : "";
  if (cached) {
    if (auto kept = stored_array_cache().find(key); kept && kept->first_frame == 0) return kept;
    stored_array_cache().clear();  // whatever is kept: this file's block, or another file's array
  }
  auto array = std::make_shared<StoredArray>();
  const std::string ext = io::lower_extension(path);
  if (ext == ".mat") {
    io::MatArray a = io::read_mat(path, in.var);
    array->values = std::move(a.values);
    array->dims = std::move(a.dims);
    array->column_major = true;
    array->source = std::move(a.name);
  } else if (io::has_hdf5_extension(path)) {
    io::Hdf5Array a = io::read_hdf5(path, in.var);
    array->values = std::move(a.values);
    array->dims = std::move(a.dims);
    array->source = std::move(a.path);
    // IQ: Q beside I, read with it (once for all frames, like I).
    if (array->source == io::kPicmusChannelData && picmus_geometry(path).modulation_frequency != 0)
      array->imag = io::read_hdf5(path, picmus_path("data/imag"));
  } else {
    if (!in.var.empty()) throw Error(path.string() + ": --var applies to MAT and HDF5 files only");
    const io::NpyArray a = io::read_npy(path);
    array->values = a.to_double();
    array->dims = a.shape;
  }
  if (cached) stored_array_cache().keep(key, array);
  return array;
}

}  // namespace

double detail::centred_linear_array_pitch(const std::vector<double>& x, const std::vector<double>& y,
                                          const std::vector<double>& z, const std::string& what) {
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n || z.size() != n) throw Error(what + " holds fewer than 2 elements");
  const double pitch = (x[n - 1] - x[0]) / double(n - 1);
  // This project's arrays are uniform, linear and centred on x = 0 (geometry.hpp). Files store
  // positions in float32 (USTB) or float64: a thousandth of the pitch absorbs either.
  for (std::size_t e = 0; e < n; ++e) {
    const double expected = (double(e) - 0.5 * double(n - 1)) * pitch;
    if (!(pitch > 0) || std::fabs(x[e] - expected) > 1e-3 * pitch || std::fabs(y[e]) > 1e-3 * pitch ||
        std::fabs(z[e]) > 1e-3 * pitch)
      throw Error(what + " is not a uniform linear array centred on x = 0 at z = 0 (element " + std::to_string(e) + ")");
  }
  return pitch;
}

Offset parse_offset(std::string_view name) {
  if (name == "none") return Offset::None;
  if (name == "mean") return Offset::Mean;
  throw Error("unknown offset '" + std::string(name) + "' (expected none or mean)");
}

std::pair<double, double> parse_range(std::string_view text, const std::string& what) {
  const auto parts = split(text, ':');
  if (parts.size() != 2) throw Error(what + ": expected MIN:MAX, got '" + std::string(text) + "'");
  const double lo = parse_number(parts[0], what), hi = parse_number(parts[1], what);
  if (hi < lo) throw Error(what + ": MIN is larger than MAX in '" + std::string(text) + "'");
  return {lo, hi};
}

std::vector<double> parse_number_list(std::string_view text, const std::string& what) {
  const auto colon = split(text, ':');
  if (colon.size() == 3) {
    const double start = parse_number(colon[0], what), step = parse_number(colon[1], what),
                 stop = parse_number(colon[2], what);
    if (step == 0 || (stop - start) / step < 0)
      throw Error(what + ": START:STEP:STOP '" + std::string(text) + "' never reaches STOP");
    const double count = std::floor((stop - start) / step + 1e-9) + 1;
    if (count > 100000) throw Error(what + ": '" + std::string(text) + "' gives too many values");
    std::vector<double> values;
    for (int k = 0; k < static_cast<int>(count); ++k) values.push_back(start + k * step);
    return values;
  }
  if (colon.size() != 1) throw Error(what + ": expected START:STEP:STOP or a comma-separated list");
  std::vector<double> values;
  for (std::string_view part : split(text, ',')) values.push_back(parse_number(part, what));
  return values;
}

std::pair<std::vector<double>, std::vector<double>> parse_virtual_sources(std::string_view x_text,
                                                                          std::string_view z_text, Model model) {
  const bool focused = model == Model::FocusedWave;
  if (x_text.empty() || z_text.empty())
    throw Error(std::string(focused ? "focused" : "diverging") + " waves: give both --sources-x and --sources-z (metres)");
  std::vector<double> x = parse_number_list(x_text, "--sources-x");
  std::vector<double> z = parse_number_list(z_text, "--sources-z");
  if (z.size() == 1) z.assign(x.size(), z.front());
  if (z.size() != x.size())
    throw Error("--sources-z: " + std::to_string(z.size()) + " depths for " + std::to_string(x.size()) +
                " sources (give one depth, or one per source)");
  for (double depth : z) {
    if (!focused && !(depth <= 0))
      throw Error("--sources-z: a diverging wave's virtual source lies behind the array (z <= 0), not at z = " +
                  std::to_string(depth) + " (focal points in front of it are --model fw)");
    if (focused && !(depth > 0 && std::isfinite(depth)))
      throw Error("--sources-z: a focused wave's focal point lies in front of the array (z > 0), not at z = " +
                  std::to_string(depth) + " (sources behind it are --model dw)");
  }
  return {std::move(x), std::move(z)};
}

namespace {

/// How an array's axes map onto ChannelData's: the extent (`size`) and the stride in the values
/// (`step`) of its samples, elements, transmits and frames, in that order, and how many values the
/// array holds (`values`: more than the four sizes' product where a (samples,transmits) axis has
/// rows past its last transmit). Throws as arrange_channels does for a layout or a shape it refuses.
struct AxisPlan {
  std::size_t size[4] = {1, 1, 1, 1}, step[4] = {0, 0, 0, 0};
  std::size_t values = 1;
  std::size_t rows_left = 0;  ///< of a (samples,transmits) axis: the rows past its last transmit
};

AxisPlan plan_axes(const std::vector<std::size_t>& dims, bool column_major, std::string_view layout,
                   const std::string& name, AxisSplit axis_split) {
  static const char* const kAxes[4] = {"samples", "elements", "transmits", "frames"};
  constexpr int kGroup = 4;  // role of a (samples,transmits) axis
  const std::string layout_text = layout.empty() ? "samples,elements,transmits" : std::string(layout);
  const std::string use = " (use samples, elements, transmits, frames, and (samples,transmits) for an axis holding "
                          "the transmits one after another)";
  const auto names = layout_axes(layout_text);
  if (std::find(names.begin(), names.end(), std::string_view()) != names.end())
    throw Error(name + ": --layout '" + layout_text + "' has an empty axis name" + use);
  if (names.size() > 4)
    throw Error(name + ": --layout '" + layout_text + "' names more than four axes");
  std::vector<int> role(names.size());  // role[axis] = 0 samples, 1 elements, 2 transmits, 3 frames, 4 both 0 and 2
  bool group_samples_fastest = true;  // within a (samples,transmits) axis
  bool named[4] = {false, false, false, false};
  const auto name_once = [&](int r) {
    if (named[r]) throw Error(name + ": --layout '" + layout_text + "' names an axis twice");
    named[r] = true;
  };
  for (std::size_t a = 0; a < names.size(); ++a) {
    const std::string_view token = names[a];
    if (token.front() == '(' && token.back() == ')' && token.size() > 2) {
      const auto inner = split(token.substr(1, token.size() - 2), ',');
      if (inner.size() != 2 || !((inner[0] == "samples" && inner[1] == "transmits") ||
                                 (inner[0] == "transmits" && inner[1] == "samples")))
        throw Error(name + ": --layout '" + layout_text + "': an axis in parentheses is (samples,transmits) or "
                    "(transmits,samples), not " + std::string(token));
      // Listed in the order of the array's axes: MATLAB's fastest first, C order's slowest first.
      group_samples_fastest = (inner[column_major ? 0 : 1] == "samples");
      role[a] = kGroup;
      name_once(0);
      name_once(2);
      continue;
    }
    const auto* found = std::find(std::begin(kAxes), std::end(kAxes), token);
    if (found == std::end(kAxes))
      throw Error(name + ": --layout '" + layout_text + "': unknown axis '" + std::string(token) + "'" + use);
    role[a] = static_cast<int>(found - std::begin(kAxes));
    name_once(role[a]);
  }
  const std::string dims_text = io::dims_text(dims);  // as the refusals below say them
  // A C-order array keeps its singleton axes (only MATLAB drops trailing ones): one with a frames
  // axis and fewer axes than --layout names was taken for hundreds of frames of a few samples.
  if (!column_major && dims.size() != names.size() && std::find(names.begin(), names.end(), "frames") != names.end())
    throw Error(name + ": the array is " + dims_text + " but --layout '" + layout_text + "' names " +
                std::to_string(names.size()) + " axes (an array with a frames axis has one for each name)");
  const std::vector<std::size_t> shape = layout_shape(dims, names.size());
  if (shape.empty()) {
    throw Error(name + ": the array is " + dims_text + " but --layout '" + layout_text + "' names only " +
                std::to_string(names.size()) + " axes");
  }
  // Strides of each array axis in `values`.
  std::vector<std::size_t> stride(shape.size(), 1);
  if (column_major)
    for (std::size_t a = 1; a < shape.size(); ++a) stride[a] = stride[a - 1] * shape[a - 1];
  else
    for (std::size_t a = shape.size() - 1; a-- > 0;) stride[a] = stride[a + 1] * shape[a + 1];
  AxisPlan plan;
  std::size_t(&size)[4] = plan.size;
  std::size_t group = shape.size();  // the (samples,transmits) axis, if any
  for (std::size_t a = 0; a < shape.size(); ++a) {
    plan.values *= shape[a];
    if (role[a] == kGroup) {
      group = a;
      continue;
    }
    size[role[a]] = shape[a];
    plan.step[role[a]] = stride[a];
  }
  if (group < shape.size()) {
    // One axis of `rows` values: the transmits one after another, each of axis_split.samples
    // samples, rows past the last left; or interleaved (transmits fastest), the axis holding
    // whole transmits, those past the acquisition's left.
    const std::size_t rows = shape[group];
    if (axis_split.samples < 1)
      throw Error(name + ": --layout '" + layout_text + "': give --samples, the samples of one transmit, to split "
                  "its (samples,transmits) axis of " + std::to_string(rows) + " rows");
    const std::size_t samples = std::size_t(axis_split.samples), whole = rows / samples;
    const bool per_element = axis_split.transmits == kOneTransmitPerElement;
    const std::size_t transmits = axis_split.transmits > 0 ? std::size_t(axis_split.transmits)
                                  : per_element            ? size[1]
                                                           : whole;
    const std::string counted = per_element ? " (synthetic aperture: one per element)" : "";
    if (transmits < 1 || transmits > whole)
      throw Error(name + ": the (samples,transmits) axis of the " + dims_text + " array holds " +
                  std::to_string(rows) + " rows, fewer than the " + std::to_string(std::max<std::size_t>(transmits, 1)) +
                  " transmit(s)" + counted + " of " + std::to_string(samples) + " samples (--samples) need");
    // Interleaved rows (row s * T + t) are read only where T is certain: the axis filled by the
    // acquisition's transmits. Fewer of them, or rows to spare, would be padding at its end (one
    // stride) or transmits the acquisition leaves out (another): either would read the other wrong.
    if (!group_samples_fastest && rows != samples * transmits)
      throw Error(name + ": the interleaved (transmits fastest) axis of the " + dims_text + " array holds " +
                  std::to_string(rows) + " rows, not " + std::to_string(transmits) + " transmit(s)" + counted + " of " +
                  std::to_string(samples) + " samples (--samples): interleaved transmits must fill the axis, with the "
                  "acquisition listing them all (transmits one after another are (samples,transmits) in MATLAB's "
                  "order, (transmits,samples) in C order, and may have rows to spare)");
    size[0] = samples;
    size[2] = transmits;
    plan.rows_left = rows - samples * transmits;
    if (group_samples_fastest) {
      plan.step[0] = stride[group];
      plan.step[2] = stride[group] * samples;
    } else {  // row s * transmits + t
      plan.step[2] = stride[group];
      plan.step[0] = stride[group] * transmits;
    }
  }
  if (size[0] < 2 || size[1] < 1 || size[2] < 1 || size[3] < 1 || size[0] > (1u << 26) || size[1] > 65536 ||
      size[2] > 65536 || size[3] > kMaxFramesInAnArray) {
    // Which axis is wrong, and how --layout reads the array: a transposed array (source.txt's
    // order saved as NPY, say) was told only "implausible".
    const std::string why = size[0] < 2                 ? std::to_string(size[0]) + " sample(s) per channel"
                            : size[1] < 1               ? "no elements"
                            : size[2] < 1               ? "no transmits"
                            : size[3] < 1               ? "no frames"
                            : size[0] > (1u << 26)      ? "more than 2^26 samples per channel"
                            : size[1] > 65536           ? "more than 65536 elements"
                            : size[2] > 65536           ? "more than 65536 transmits"
                                                        : "more than " + std::to_string(kMaxFramesInAnArray) + " frames";
    throw Error(name + ": implausible channel data shape: the " + dims_text +
                " array read as '" + layout_text + "' gives " + std::to_string(size[0]) + " samples x " +
                std::to_string(size[1]) + " elements x " + std::to_string(size[2]) + " transmits" +
                (size[3] != 1 ? " x " + std::to_string(size[3]) + " frames" : "") + " (" + why +
                "; --layout names the array's axes in order, as info shows its shape)");
  }
  return plan;
}

/// Throws, naming `name`, when frame `frame` (1-based) is not among the array's `frames`.
void check_frame(const std::string& name, int frame, std::size_t frames) {
  if (frame < 1 || std::size_t(frame) > frames)
    throw Error(name + ": --frame " + std::to_string(frame) + " is not among its " + std::to_string(frames) +
                " frame(s) (the 'frames' axis of --layout)");
}

/// arrange_channels with the array's axes planned: frame `frame` of `values`; with a channel map
/// (--channel-map, or what `map_name` names: the array's channel, from 1, of each element), its
/// channels only, in its order.
ChannelData arrange_planned(const std::vector<double>& values, const AxisPlan& plan, Offset offset,
                            const std::string& name, int frame, const std::vector<int>& channel_map = {},
                            const std::string& map_name = "--channel-map");

/// Frames of a file's array read without the others, where its 'frames' axis is the slowest the
/// file stores: an NPY file's first axis (C order) or last (Fortran order), an HDF5 dataset's
/// first (PICMUS's data/imag too, for IQ), a MAT v7.3 array's or v5 top-level array's last in
/// MATLAB's order. Frame
/// `in.frame`, and for --frame all (or FIRST:LAST) the frames after it up to the last wanted, as
/// many as kMostBytesOfFramesReadAtOnce holds as doubles: a small cine is read in one go, a large
/// one a block at a time, never all in memory (and an NPY cine may exceed the 4 GiB of a whole
/// read). A block is kept for the frames in it. The whole array's dims are checked, and the
/// frame's number, before anything is read. nullptr for any other file, which is read whole:
/// MAT v4, v5 inside structs and cells (matio reads such variables whole), a frames axis elsewhere, and what the whole read
/// refuses with its reasons (complex arrays, an array of another class, --var for NPY, ...).
std::shared_ptr<const StoredArray> read_frames_block(const fs::path& path, const ChannelInput& in,
                                                     const std::string& layout, int transmits) {
  const std::string key = in.all_frames ? stored_array_key(path, in) : "";
  if (in.all_frames)
    if (std::shared_ptr<const StoredArray> kept = stored_array_cache().find(key)) {
      if (kept->first_frame == 0) return nullptr;  // the whole array, kept (read_stored_array has it)
      if (in.frame >= kept->first_frame && in.frame < kept->first_frame + kept->frames_held) return kept;
    }
  // Before the next block is read: one block in memory, not two (this file's last, or another's).
  if (in.all_frames) stored_array_cache().clear();
  const auto names = layout_axes(layout);
  const std::string ext = io::lower_extension(path);
  // The array's dims and frames (checked as arrange_channels checks them), and how many frames to
  // read from in.frame on.
  struct Block {
    std::size_t first = 0, count = 1;
    int frames = 1;
  };
  const auto block_of = [&](const std::vector<std::size_t>& dims, bool column_major, const std::string& name,
                            std::size_t arrays = 1) {
    Block b;
    const AxisPlan plan = plan_axes(dims, column_major, layout, name, {in.samples, transmits});  // as read below
    const std::size_t frames = plan.size[3];
    check_frame(name, in.frame, frames);
    b.frames = static_cast<int>(frames);
    b.first = std::size_t(in.frame - 1);
    if (in.all_frames) {
      const std::size_t last = in.last_frame > 0 ? std::min<std::size_t>(std::size_t(in.last_frame), frames) : frames;
      const std::size_t frame_values = std::max<std::size_t>(1, plan.values / frames) * arrays;
      const std::size_t wanted = last > b.first ? last - b.first : 1;  // in.frame and those after it
      b.count = std::clamp<std::size_t>(kMostBytesOfFramesReadAtOnce / sizeof(double) / frame_values, 1, wanted);
    }
    return b;
  };
  auto out = std::make_shared<StoredArray>();
  const auto finish = [&](const Block& b) {
    out->first_frame = static_cast<int>(b.first) + 1;
    out->frames_held = static_cast<int>(b.count);
    out->frames = b.frames;
    if (in.all_frames) stored_array_cache().keep(key, out);
    return out;
  };
  if (ext == ".npy") {
    if (!in.var.empty()) return nullptr;
    const io::NpyArray head = io::read_npy_header(path);
    const bool fortran = head.file_fortran_order && head.shape.size() > 1;
    if (head.dtype == io::DType::c64 || head.dtype == io::DType::c128 || head.shape.size() != names.size() ||
        (fortran ? names.back() : names.front()) != "frames")
      return nullptr;
    const Block b = block_of(head.shape, false, path.string());
    const io::NpyArray a = io::read_npy_slab(path, b.first, b.count);
    out->values = a.to_double();
    out->dims = a.shape;
    return finish(b);
  }
  if (ext == ".mat") {
    const std::optional<io::MatVariableInfo> v = io::mat_variable_to_read(path, in.var);
    if (!v || !io::is_numeric_class(v->matlab_class) || v->is_complex || v->dims.size() != names.size() ||
        names.back() != "frames")
      return nullptr;
    const std::string name = path.string() + " (" + v->name + ")";
    const Block b = block_of(v->dims, true, name);
    out->column_major = true;
    out->source = v->name;
    if (!v->hdf5_object.empty()) {
      // v7.3: MATLAB's last axis is the dataset's first, its frames a run of rows, read alone from
      // the dataset the name was resolved to (not resolved again for each block).
      io::Hdf5Array h =
          std::move(io::read_hdf5(path, std::vector<io::Hdf5Selection>{{v->hdf5_object, b.first, b.count}}).front());
      out->values = std::move(h.values);
      out->dims.assign(h.dims.rbegin(), h.dims.rend());  // MATLAB's order; the values are column-major already
      return finish(b);
    }
    // v5: a top-level array's frames, read alone by matio where it can (a v7.3 empty array has no
    // frames: refused above); else the array is read whole, once (read_stored_array).
    std::optional<io::MatArray> m = io::read_mat_slabs_alone(path, v->name, b.first, b.count);
    if (!m) return nullptr;
    out->values = std::move(m->values);
    out->dims = std::move(m->dims);
    return finish(b);
  }
  if (!io::has_hdf5_extension(path)) return nullptr;
  const std::optional<io::Hdf5DatasetInfo> d = io::hdf5_dataset_to_read(path, in.var);
  if (!d || d->type.empty() || d->dims.size() != names.size() || names.front() != "frames") return nullptr;
  const bool picmus = d->path == io::kPicmusChannelData;
  if (picmus) out->picmus = picmus_geometry(path);
  const bool iq = picmus && out->picmus->modulation_frequency != 0;
  const Block b = block_of(d->dims, false, path.string() + " (" + d->path + ")", iq ? 2 : 1);
  if (iq) {  // Q beside I, as data/real's frames: its shape is checked whole, before the read
    const std::optional<io::Hdf5DatasetInfo> q = io::hdf5_dataset_to_read(path, picmus_path("data/imag"));
    if (q && q->dims != d->dims)
      throw Error(path.string() + ": PICMUS IQ data: data/imag is not shaped like data/real");
  }
  // One read each: a reply is kept as the array it brings, so I and Q are held once each (read
  // together, one reply's room held both).
  io::Hdf5Array real = std::move(io::read_hdf5(path, std::vector<io::Hdf5Selection>{{d->path, b.first, b.count}}).front());
  out->values = std::move(real.values);
  out->dims = std::move(real.dims);
  out->source = std::move(real.path);
  if (iq)  // missing: the read says so
    out->imag = std::move(
        io::read_hdf5(path, std::vector<io::Hdf5Selection>{{picmus_path("data/imag"), b.first, b.count}}).front());
  return finish(b);
}

}  // namespace

ChannelData arrange_channels(const std::vector<double>& values, const std::vector<std::size_t>& dims,
                             bool column_major, std::string_view layout, Offset offset,
                             const std::string& name, int frame, int* frames, AxisSplit split) {
  const AxisPlan plan = plan_axes(dims, column_major, layout, name, split);
  if (frames) *frames = static_cast<int>(plan.size[3]);
  return arrange_planned(values, plan, offset, name, frame);
}

namespace {

ChannelData arrange_planned(const std::vector<double>& values, const AxisPlan& plan, Offset offset,
                            const std::string& name, int frame, const std::vector<int>& channel_map,
                            const std::string& map_name) {
  const std::size_t(&size)[4] = plan.size;
  const std::size_t(&step)[4] = plan.step;
  check_frame(name, frame, size[3]);
  for (std::size_t e = 0; e < channel_map.size(); ++e)
    if (std::size_t(channel_map[e]) > size[1])
      throw Error(name + ": " + map_name + " reads element " + std::to_string(e + 1) + " from channel " +
                  std::to_string(channel_map[e]) + ", but the array holds " + std::to_string(size[1]) +
                  " channels (its elements axis" + (map_name == "--channel-map" ? ", as --layout names it)" : ")"));
  // The array's channel (0-based) that element e is read from.
  const auto channel_of = [&](std::size_t e) { return channel_map.empty() ? e : std::size_t(channel_map[e] - 1); };
  // The frame's values: all of them but for the offset of the frames axis.
  const double* const frame_values = values.data() + std::size_t(frame - 1) * step[3];
  ChannelData rf;
  rf.samples = static_cast<int>(size[0]);
  rf.elements = static_cast<int>(channel_map.empty() ? size[1] : channel_map.size());
  rf.transmits = static_cast<int>(size[2]);
  if (plan.values != values.size()) throw Error(name + ": array size does not match its shape");
  rf.data.resize(rf.size());
  // The beamformers take finite samples only: a NaN or infinity times an apodization weight of
  // zero is NaN in the vector kernels and skipped by the reference, so backends would differ.
  // Samples are counted as the file holds them (float's range included): a NaN in a channel whose
  // mean is removed would make the whole channel NaN, and the first one said would be its first.
  // Channels that a channel map leaves out are not read, nor checked.
  std::size_t non_finite = 0, first_non_finite = 0;
  bool past_range_after_mean = false;
  for (int t = 0; t < rf.transmits; ++t)
    for (int e = 0; e < rf.elements; ++e) {
      const double* src = frame_values + t * step[2] + channel_of(std::size_t(e)) * step[1];
      const std::size_t channel = std::size_t(t) * rf.elements + e;
      float* dst = rf.data.data() + channel * rf.samples;
      double mean = 0;
      for (int s = 0; s < rf.samples; ++s) {
        const double v = src[s * step[0]];
        if (!std::isfinite(static_cast<float>(v)) && non_finite++ == 0)
          first_non_finite = channel * rf.samples + std::size_t(s);
        if (offset == Offset::Mean) mean += v;
      }
      if (non_finite > 0) continue;  // refused below
      mean /= offset == Offset::Mean ? rf.samples : 1;
      for (int s = 0; s < rf.samples; ++s) {
        dst[s] = static_cast<float>(src[s * step[0]] - mean);
        past_range_after_mean |= !std::isfinite(dst[s]);
      }
    }
  const auto where = [&](std::size_t at) {
    const std::size_t samples = std::size_t(rf.samples), elements = std::size_t(rf.elements);
    const std::size_t element = at / samples % elements;
    return "sample " + std::to_string(at % samples) + " of element " + std::to_string(element) +
           (channel_map.empty() ? std::string()
                                : " (the array's channel " + std::to_string(channel_map[element]) + ", from 1)") +
           " in transmit " + std::to_string(at / samples / elements) + " (0-based)";
  };
  if (non_finite > 0)
    throw Error(name + ": " + std::to_string(non_finite) + " of " + std::to_string(rf.size()) +
                " samples are not finite (NaN, infinite, or past float's range); the first is " +
                where(first_non_finite));
  if (past_range_after_mean) {
    const auto first = std::find_if(rf.data.begin(), rf.data.end(), [](float v) { return !std::isfinite(v); });
    throw Error(name + ": samples pass float's range after removing their channel's mean (--offset mean); the "
                "first is " + where(std::size_t(first - rf.data.begin())));
  }
  return rf;
}

/// The channel numbers that variable `name` of a MAT or HDF5 input lists (--channel-map NAME):
/// a vector of whole numbers from 1 (Verasonics' Trans.Connector is a column of doubles).
std::vector<int> read_channel_map_variable(const fs::path& path, std::string name) {
  name.erase(0, name.find_first_not_of(" \t"));  // as a list's numbers are, spaces around it are not its
  name.erase(name.find_last_not_of(" \t") + 1);
  const std::string what = path.string() + ": --channel-map " + name;
  const std::string ext = io::lower_extension(path);
  const bool mat = ext == ".mat";
  if (!mat && !io::has_hdf5_extension(path))
    throw Error(what + ": a name is read from a MAT or HDF5 input; list the channels instead (1:64,...)");
  // The reader's words name the file: said as the map's refusal (the channel data are not at fault).
  const auto said_of_the_map = [&](const Error& e) {
    std::string_view reason = e.what();
    if (const std::string prefix = path.string() + ": "; reason.starts_with(prefix)) reason.remove_prefix(prefix.size());
    return Error(what + ": " + std::string(reason));
  };
  const auto check_size = [&](const std::vector<std::size_t>& d) {
    std::size_t n = 1;
    for (std::size_t k : d) n = k == 0 || n <= std::size_t(kMaxMappedChannels) ? n * k : n;
    if (n > std::size_t(kMaxMappedChannels))
      throw Error(what + ": holds more than " + std::to_string(kMaxMappedChannels) +
                  " values: a channel map lists one channel per element");
  };
  // The dims first where the file's list says them: a channel data array named by mistake is
  // refused without reading it.
  std::optional<std::vector<std::size_t>> listed;
  try {
    if (mat) {
      if (const auto v = io::mat_variable_to_read(path, name)) listed = v->dims;
    } else if (const auto d = io::hdf5_dataset_to_read(path, name)) {
      listed = d->dims;
    }
  } catch (const Error& e) {
    throw said_of_the_map(e);
  }
  if (listed) check_size(*listed);
  std::vector<std::size_t> dims;
  std::vector<double> values;
  try {
    if (mat) {
      io::MatArray a = io::read_mat(path, name);
      dims = std::move(a.dims);
      values = std::move(a.values);
    } else {
      io::Hdf5Array a = io::read_hdf5(path, name);
      dims = std::move(a.dims);
      values = std::move(a.values);
    }
  } catch (const Error& e) {
    throw said_of_the_map(e);
  }
  check_size(dims);
  if (std::count_if(dims.begin(), dims.end(), [](std::size_t d) { return d > 1; }) > 1)
    throw Error(what + ": the array is not a vector: a channel map lists one channel per element");
  if (values.empty()) throw Error(what + ": the array is empty: a channel map lists one channel per element");
  std::vector<int> channels;
  for (std::size_t e = 0; e < values.size(); ++e) {
    const double c = values[e];
    if (!(c >= 1 && c <= kMaxMappedChannels && c == std::floor(c))) {
      // Every digit: a map computed in MATLAB may miss a whole number by a rounding (3 + 1e-15),
      // which six digits would show as the whole number it is not.
      char digits[32];
      const auto end = std::to_chars(digits, digits + sizeof digits, c).ptr;
      throw Error(what + ": element " + std::to_string(e + 1) + "'s channel " + std::string(digits, end) +
                  (c >= 1 && c <= kMaxMappedChannels && std::isfinite(c)
                       ? " is not a whole number"
                       : " is not a channel number from 1 to " + std::to_string(kMaxMappedChannels)));
    }
    channels.push_back(static_cast<int>(c));
  }
  detail::check_distinct_channels(channels, what);
  return channels;
}

/// The channel map of --channel-map for `path`: listed, or read from the file's variable (once a
/// file: a cine's frames share it).
std::vector<int> channel_map_for(const fs::path& path, const std::string& spec) {
  if (!channel_map_names_variable(spec)) return parse_channel_numbers(spec, "--channel-map");
  // The map read last, or its refusal: a cine's frames are refused at once, not each after a read.
  static std::mutex mutex;
  static std::string kept_key;
  static std::vector<int> kept;
  static std::exception_ptr kept_refusal;
  ChannelInput key_input;
  key_input.var = spec;
  const std::string key = stored_array_key(path, key_input);
  {
    std::lock_guard lock(mutex);
    if (key == kept_key) {
      if (kept_refusal) std::rethrow_exception(kept_refusal);
      return kept;
    }
  }
  std::vector<int> channels;
  std::exception_ptr refusal;
  try {
    channels = read_channel_map_variable(path, spec);
  } catch (const Error&) {
    refusal = std::current_exception();
  }
  std::lock_guard lock(mutex);
  kept_key = key;
  kept = channels;
  kept_refusal = refusal;
  if (refusal) std::rethrow_exception(refusal);
  return channels;
}

/// count_frames of `in` as it is (a Verasonics save's defaults filled in).
int count_frames_as_given(const fs::path& path, const ChannelInput& in) {
  if (io::has_hdf5_extension(path)) {
    const std::optional<std::string> ustb = detail::ustb_channel_data_group(path, io::list_hdf5_groups(path), in.var);
    if (ustb) return detail::ustb_frames(path, *ustb);
  }
  const std::string ext = io::lower_extension(path);
  if (!names_frames_axis(in.layout) || (ext != ".mat" && ext != ".npy" && !io::has_hdf5_extension(path))) return 1;
  // The array's dims, from what the file says of it where it says them (an NPY header, a MAT
  // file's top-level variable, an HDF5 dataset): a batch counts every file's frames before it
  // reads the first, and the one array kept for the frames' reads would be the last file's.
  // Otherwise (a MAT struct's field or cell's element) the array is read, and kept for its
  // frames. An array that the read will refuse (complex, text, cut short) is one frame: its
  // refusal is said once, not once a frame.
  std::vector<std::size_t> dims;
  bool column_major = false;
  if (ext == ".npy") {
    const io::NpyArray header = io::read_npy_header(path);
    if (header.dtype == io::DType::c64 || header.dtype == io::DType::c128) return 1;
    dims = header.shape;
  } else if (ext == ".mat") {
    if (const std::optional<io::MatVariableInfo> v = io::mat_variable_to_read(path, in.var)) {
      if (!io::is_numeric_class(v->matlab_class) || v->is_complex) return 1;
      dims = v->dims;
    }
    column_major = true;
  } else if (const std::optional<io::Hdf5DatasetInfo> d = io::hdf5_dataset_to_read(path, in.var)) {
    if (d->type.empty()) return 1;
    dims = d->dims;
  }
  if (dims.empty()) {
    const std::shared_ptr<const StoredArray> array = read_stored_array(path, in);
    dims = array->dims;
    column_major = array->column_major;
  }
  // The extent of the axis as arrange_channels takes it; a shape it refuses is said once, when
  // the file (as one frame) is read.
  try {
    return static_cast<int>(plan_axes(dims, column_major, in.layout, path.string(), {in.samples, 0}).size[3]);
  } catch (const Error&) {
    return 1;
  }
}

/// read_channel_data of `in` as it is (a Verasonics save's defaults filled in).
ChannelData read_channel_data_as_given(const fs::path& path, const ChannelInput& in, int elements, int transmits,
                                       FileGeometry* geometry) {
  const std::string ext = io::lower_extension(path);
  if (io::has_hdf5_extension(path)) {
    const std::vector<io::Hdf5Group> groups = io::list_hdf5_groups(path);
    if (const auto ustb = detail::ustb_channel_data_group(path, groups, in.var)) {
      if (!in.channel_map.empty())
        throw Error(path.string() + ": --channel-map: a USTB file's channels are its probe's elements, in order, "
                    "with their positions");
      FileGeometry local;
      return detail::read_ustb_channel_data(path, groups, *ustb, in, geometry ? geometry : &local);
    }
  }
  // Such a file is one frame (--frame 1 and --frame all read it, a later frame is none of its),
  // unless --layout names a 'frames' axis of its array.
  const bool frames_axis = names_frames_axis(in.layout);
  if (in.frame != 1 && !frames_axis)
    throw Error(path.string() + ": --frame " + std::to_string(in.frame) +
                ": the file holds one frame (--frame picks among a USTB UFF file's frames, or along a "
                "'frames' axis that --layout names)");
  if (ext == ".mat" || ext == ".npy" || io::has_hdf5_extension(path)) {
    // The elements that --channel-map reads, in order (empty: the array's channels); synthetic
    // aperture's one transmit per element counts them, for a (samples,transmits) axis (the block
    // reads plan it too). Read before the array, and before the guard below is armed: a map
    // refused (for every frame alike) leaves a cine's frames kept, not read again to be refused.
    // (A PICMUS file's channels are its probe's: said before a map named is looked for in it.)
    if (!in.channel_map.empty() && io::has_hdf5_extension(path))
      if (const auto d = io::hdf5_dataset_to_read(path, in.var); d && d->path == io::kPicmusChannelData)
        throw Error(path.string() + ": --channel-map: a PICMUS file's channels are its probe's elements, in order, "
                    "with their positions");
    const std::vector<int> channel_map =
        in.channel_map.empty() ? std::vector<int>() : channel_map_for(path, in.channel_map);
    // A list's count was checked against --elements up front (validate_given); a named map's is here,
    // before the rows of a (samples,transmits) axis are counted for the elements' transmits.
    if (elements > 0 && !channel_map.empty() && channel_map.size() != std::size_t(elements))
      throw Error(path.string() + ": " + (in.channel_map_from.empty() ? "--channel-map " + in.channel_map : in.channel_map_from) +
                  " lists " + std::to_string(channel_map.size()) +
                  " element(s) but --elements says " + std::to_string(elements));
    const int axis_transmits = transmits == kOneTransmitPerElement && !channel_map.empty()
                                   ? static_cast<int>(channel_map.size())
                                   : transmits;
    // A block of frames read alone holds frame in.frame as its frame in.frame - first + 1.
    std::shared_ptr<const StoredArray> a =
        frames_axis ? read_frames_block(path, in, in.layout, axis_transmits) : nullptr;
    const bool block = a != nullptr;
    if (!block) a = read_stored_array(path, in);
    const int frame = block ? in.frame - a->first_frame + 1 : in.frame;
    const std::string name = path.string() + (a->source.empty() ? "" : " (" + a->source + ")");
    const bool picmus = io::has_hdf5_extension(path) && a->source == io::kPicmusChannelData;
    FileGeometry local;
    FileGeometry& g = geometry ? *geometry : local;
    if (picmus) g = a->picmus ? *a->picmus : picmus_geometry(path);
    // PICMUS stores [angles][channels][samples] (C order); written from MATLAB, a file of one
    // angle has lost that axis: [channels][samples].
    const std::string layout = !in.layout.empty() ? in.layout
                               : !picmus          ? ""
                               : a->dims.size() == 2 ? "elements,samples"
                                                     : "transmits,elements,samples";
    if (picmus && in.layout.empty()) g.layout = layout;
    const AxisSplit axis_split{in.samples, axis_transmits};  // for a (samples,transmits) axis
    // The last frame read (of all, or of FIRST:LAST), read or refused: the batch is done with the
    // array (or block) kept for its frames. Armed first, so that a shape refused drops it too.
    struct DropWhenDone {
      std::string key;
      ~DropWhenDone() {
        if (!key.empty()) stored_array_cache().drop(key);
      }
    } drop_when_done;
    if (frames_axis && in.all_frames) drop_when_done.key = stored_array_key(path, in);
    const AxisPlan plan = plan_axes(a->dims, a->column_major, layout, name, axis_split);
    const int frames = block ? a->frames : static_cast<int>(plan.size[3]);
    if (in.frame < (in.last_frame > 0 ? std::min(in.last_frame, frames) : frames)) drop_when_done.key.clear();
    ChannelData rf = arrange_planned(a->values, plan, in.offset, name, frame, channel_map,
                                     in.channel_map_from.empty() ? "--channel-map" : in.channel_map_from);
    g.rows_left = plan.rows_left;
    if (frames_axis) {
      g.frames_held = block ? a->frames_held : frames;
      g.frame = in.frame;
      g.frames = frames;
    }
    if (picmus && g.modulation_frequency != 0) {
      // IQ: Q beside I, with the demodulation's clock starting at initial_time.
      if (!a->imag) throw Error(path.string() + ": PICMUS IQ data: data/imag was not read");
      const io::Hdf5Array& q = *a->imag;
      if (q.dims != a->dims)
        throw Error(path.string() + ": PICMUS IQ data: data/imag is not shaped like data/real");
      rf.imag = arrange_channels(q.values, q.dims, false, layout, in.offset, path.string() + " (" + q.path + ")",
                                 frame, nullptr, axis_split).data;
      rf.modulation_frequency = g.modulation_frequency;
      rf.iq_time0 = g.t0.value_or(0.0);
    }
    if (!channel_map.empty()) {
      g.channel_map = channel_map;
      g.array_channels = static_cast<int>(plan.size[1]);
    }
    return rf;
  }
  if (!in.var.empty()) throw Error(path.string() + ": --var applies to MAT and HDF5 files only");
  if (!in.channel_map.empty())
    throw Error(path.string() + ": --channel-map applies to NPY, MAT and HDF5 arrays: a source.txt holds --elements "
                "channels a transmit, in element order");
  // source.txt: channel-major integers.
  if (elements < 1 || transmits < 1 || in.samples < 1) {
    std::vector<std::string> missing;  // only what was not given
    if (elements < 1) missing.push_back("--elements");
    if (in.samples < 1) missing.push_back("--samples");
    if (transmits < 1)
      missing.push_back("the transmits (planewave: --angles-deg; dw and fw: --sources-x/-z; sa: one per element, "
                        "or --tx-elements)");
    std::string list;
    for (std::size_t i = 0; i < missing.size(); ++i)
      list += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    throw Error(path.string() + ": a source.txt input says only its values: give " + list +
                " (values = elements x transmits x samples)");
  }
  const std::vector<std::int32_t> raw =
      io::read_source_txt(path, std::size_t(elements) * transmits, std::size_t(in.samples));
  const std::vector<double> values(raw.begin(), raw.end());
  // --layout names the axes in the order the values are written, slowest first (C order, as for
  // NPY); without it they are channel-major: transmits,elements,samples. (It was ignored.)
  const std::string layout = in.layout.empty() ? "transmits,elements,samples" : in.layout;
  if (geometry && in.layout.empty()) geometry->layout = layout;  // what the frame JSON records
  std::vector<std::size_t> dims;
  for (std::string_view axis : layout_axes(layout)) {
    if (axis.find('(') != std::string_view::npos)
      throw Error(path.string() + ": --layout '" + layout + "': a (samples,transmits) axis is one of an NPY, MAT or "
                  "HDF5 array; a source.txt's lines are its channels");
    dims.push_back(axis == "samples"    ? std::size_t(in.samples)
                   : axis == "elements" ? std::size_t(elements)
                   : axis == "transmits" ? std::size_t(transmits)
                                         : 1);  // an unknown name: arrange_channels says so
  }
  return arrange_channels(values, dims, false, layout, in.offset, path.string(), in.frame);  // one frame
}

/// A Verasonics save's parameters (null for other files). A save they cannot describe (a curved
/// probe, bandpass sampling, ...) is still read as a plain MAT array where --layout describes it
/// (`refusal` then says why its parameters are left, for the frame's warnings); without, the
/// refusal says how to read it so.
std::shared_ptr<const detail::VerasonicsSave> verasonics_save_for(const fs::path& path, const ChannelInput& in,
                                                                 std::string* refusal = nullptr) {
  try {
    return detail::verasonics_save(path);
  } catch (const Error& e) {
    if (in.layout.empty())
      throw Error(std::string(e.what()) + "; to read its array as a plain MAT array, give --var, --layout and the "
                                          "acquisition's options");
    if (refusal) {
      std::string_view reason = e.what();
      if (const std::string prefix = path.string() + " (a Verasonics save): "; reason.starts_with(prefix))
        reason.remove_prefix(prefix.size());
      *refusal = "its Verasonics parameters are not used (" + std::string(reason) + "); its array is read as --layout says";
    }
    return nullptr;
  }
}

}  // namespace

int count_frames(const fs::path& path, const ChannelInput& in) {
  (void)io::existing_input_status(path);  // said as every reader says it
  if (const std::shared_ptr<const detail::VerasonicsSave> save = verasonics_save_for(path, in))
    return count_frames_as_given(path, detail::with_verasonics_defaults(in, *save));
  return count_frames_as_given(path, in);
}

ChannelData read_channel_data(const fs::path& path, const ChannelInput& in, int elements, int transmits,
                              FileGeometry* geometry) {
  // A missing or misnamed file is said so first, in the words of every command (a source.txt was
  // told to give --elements, a MAT file "no such file").
  (void)io::existing_input_status(path);
  std::string refusal;
  const std::shared_ptr<const detail::VerasonicsSave> save = verasonics_save_for(path, in, &refusal);
  if (!save) {
    ChannelData rf = read_channel_data_as_given(path, in, elements, transmits, geometry);
    if (geometry && !refusal.empty()) geometry->notes.push_back(refusal);
    return rf;
  }
  // A Verasonics save: its array, layout and channel map where none were given, and its
  // acquisitions a frame as the transmits the rows hold; then its geometry beside what the read
  // found (frames, rows left, the map applied).
  const ChannelInput own = detail::with_verasonics_defaults(in, *save);
  const int own_transmits = transmits == 0 || transmits == kOneTransmitPerElement ? save->transmits : transmits;
  FileGeometry local;
  FileGeometry& g = geometry ? *geometry : local;
  ChannelData rf = read_channel_data_as_given(path, own, elements, own_transmits, &g);
  const FileGeometry& s = save->geometry;
  g.source = s.source;
  if (in.layout.empty() && own.layout == s.layout) g.layout = s.layout;
  g.fs = s.fs;
  g.sound_speed = s.sound_speed;
  g.t0 = s.t0;
  g.pitch = s.pitch;
  g.elements = s.elements;
  g.angles = s.angles;
  g.time_zero = s.time_zero;
  g.model = s.model;
  g.wave_delays = s.wave_delays;
  g.tx_elements = s.tx_elements;
  g.source_x = s.source_x;
  g.source_z = s.source_z;
  g.notes = s.notes;
  if (in.channel_map.empty() && !g.channel_map.empty()) g.channel_map_from_file = "Trans.Connector";
  return rf;
}

void write_picmus(const fs::path& path, const ChannelData& rf, const Acquisition& acq) {
  io::StagedFile out(path);
  write_picmus(out, rf, acq);
  out.commit();
}

void write_picmus(io::StagedFile& out, const ChannelData& rf, const Acquisition& acq) {
  const fs::path& path = out.target();
  if (acq.model != Model::PlaneWave || acq.time_zero != das::TimeZero::Center)
    throw Error(path.string() + ": a PICMUS file holds plane waves timed from the wavefront crossing the "
                                "array centre (--time-zero center)");
  const auto n = [](int v) { return std::size_t(v); };
  // rf.data is [t][e][s] already: PICMUS's [angles][channels][samples] in C order.
  io::Hdf5Array real{picmus_path("data/real"), "", {n(rf.transmits), n(rf.elements), n(rf.samples)},
                     std::vector<double>(rf.data.begin(), rf.data.end())};
  io::Hdf5Array imag{picmus_path("data/imag"), "", real.dims, std::vector<double>(real.values.size(), 0.0)};
  io::Hdf5Array probe{picmus_path("probe_geometry"), "", {3, n(rf.elements)},
                      std::vector<double>(3 * n(rf.elements), 0.0)};  // rows x, y, z
  for (int e = 0; e < rf.elements; ++e) probe.values[n(e)] = acq.probe.element_x(e);
  const auto scalar = [](const char* name, double v) { return io::Hdf5Array{picmus_path(name), "", {1}, {v}}; };
  io::write_hdf5(out, {real, imag, probe, io::Hdf5Array{picmus_path("angles"), "", {acq.angles.size()}, acq.angles},
                        scalar("sampling_frequency", acq.fs), scalar("sound_speed", acq.sound_speed),
                        scalar("initial_time", acq.t0), scalar("modulation_frequency", 0.0)});
}

bool looks_unsigned(const ChannelData& rf) {
  if (rf.is_iq() || rf.data.empty()) return false;
  const auto [lowest, highest] = std::minmax_element(rf.data.begin(), rf.data.end());
  return *lowest >= 0.0f && *highest > 0.0f;
}

bool all_zero(const ChannelData& rf) {
  const auto zero = [](float v) { return v == 0.0f; };
  return std::all_of(rf.data.begin(), rf.data.end(), zero) && std::all_of(rf.imag.begin(), rf.imag.end(), zero);
}

Grid GridRequest::resolve(const Acquisition& acq, int samples) const {
  const auto pick = [](double v, double fallback) { return std::isnan(v) ? fallback : v; };
  const double half_span = 0.5 * (acq.probe.elements - 1) * acq.probe.pitch;
  const double z_first = std::max(0.0, acq.t0 * acq.sound_speed / 2);
  const double t_last = acq.t0 + (samples - 1) / acq.fs;  // the last sample's time after the transmit (s)
  const double z_last = t_last * acq.sound_speed / 2;      // and its depth
  // The default depths need a record that reaches past the transmit: a --t0 (or a file's) that
  // puts every sample before it leaves none, which "the z range must be MIN <= MAX" did not say.
  if (std::isnan(z_min) && std::isnan(z_max) && z_last < z_first)
    throw Error("no depth to image by default: with t0 " + number_text(acq.t0) + " s, the last of " +
                std::to_string(samples) + " samples at " + number_text(acq.fs) + " Hz comes " +
                number_text(-t_last) + " s before the transmit (t0 is in seconds after it); give --z-range "
                "MIN:MAX in metres, or a --t0 that puts the record after the transmit");
  // And a record that lasts seconds (a --t0 in us or an --fs in MHz taken for s and Hz) reaches
  // kilometres deep, which "the image grid reaches more than 1 km" blamed on the grid.
  if (std::isnan(z_min) && std::isnan(z_max) && std::max(z_first, z_last) > 1000.0)
    throw Error("the default depths reach " + number_text(std::max(z_first, z_last)) +
                " m, past the grid's 1 km: the record, " + std::to_string(samples) + " samples at " +
                number_text(acq.fs) + " Hz from t0 " + number_text(acq.t0) + " s at " +
                number_text(acq.sound_speed) + " m/s, lasts till " + number_text(t_last) +
                " s after the transmit (--fs is in Hz, --t0 in seconds); give --z-range MIN:MAX in metres");
  return Grid::from_ranges(pick(x_min, -half_span), pick(x_max, half_span), pick(dx, acq.probe.pitch / 2),
                           pick(z_min, z_first), pick(z_max, z_last),
                           pick(dz, acq.sound_speed / (4 * acq.fs)));
}

}  // namespace usrecon::recon
