// The general DAS models in the read -> beamform pipeline: channel data from source.txt, NPY or
// MAT files (any axis order), the geometry from options, and one call that turns a file into an
// Image. The seed model keeps its own path (pipeline.hpp); Reconstructor dispatches on the model.
#pragma once

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/io/file.hpp"
#include "usrecon/recon/das.hpp"
#include "usrecon/recon/geometry.hpp"

namespace usrecon::recon {

enum class Offset { None, Mean };
Offset parse_offset(std::string_view name);  // "none" | "mean", else throws Error

/// How to read channel data. `layout` names the array's axes in order, from samples, elements
/// and transmits (e.g. "samples,elements,transmits"): for NPY in C order (the last axis varies
/// fastest), for MAT in MATLAB's order (column-major: the first axis varies fastest), so that a
/// MATLAB [samples x elements x transmits] array and an NPY [samples][elements][transmits] array
/// are both "samples,elements,transmits". Trailing axes the array lacks count as length 1.
/// source.txt files are channel-major unless `layout` says otherwise (for them in C order, as for
/// NPY): one channel of `samples` values per line, transmit by transmit (channel = transmit *
/// elements + element), i.e. "transmits,elements,samples".
struct ChannelInput {
  std::string layout;        ///< empty: samples,elements,transmits (source.txt: transmits,elements,samples)
  std::string var;           ///< MAT variable (empty: the file's only numeric array)
  Offset offset = Offset::None;  ///< Mean: subtract each channel's mean (MATLAB's RF - mean(RF))
  int samples = 0;           ///< samples per channel: required for source.txt; for other files,
                             ///< when given (> 0), what the file must hold
  int frame = 1;             ///< which frame to read (1 = the first) of a USTB UFF file, or of an
                             ///< array whose `layout` names a "frames" axis
  bool all_frames = false;   ///< --frame all, or FIRST:LAST: a batch reconstructs every frame from
                             ///< `frame` to `last_frame` (expand_frames); an array with a frames axis
                             ///< is then read once for all its frames (where the file stores
                             ///< them slowest, kMostBytesOfFramesReadAtOnce at a time)
  int last_frame = 0;        ///< with all_frames, the last frame wanted (0: each file's last)
  /// --channel-map: the array's channel that each element is read from, as channel numbers from 1
  /// and ranges ("128:1", "1:32,65:96"; parse_channel_numbers), or the name of a variable of the
  /// same MAT or HDF5 file that lists them (Verasonics' Trans.Connector). Empty: the array's
  /// channels are the elements, in order. Channels the map leaves out are not beamformed.
  std::string channel_map;
  /// Who chose channel_map where the user did not ("Trans.Connector" of a Verasonics save), named
  /// in its errors instead of --channel-map.
  std::string channel_map_from;
};

/// --channel-map's numbers: comma-separated channel numbers from 1 and ranges FIRST:LAST (both
/// included; LAST < FIRST counts down, as "128:1" reverses a probe), at most kMaxMappedChannels in
/// all and none twice. Throws Error naming `what` for anything else.
std::vector<int> parse_channel_numbers(std::string_view text, const std::string& what);
/// Whether a --channel-map value names a variable of the input file (it starts with a letter,
/// '_' or '/', after spaces) rather than listing channels (anything else, a sign included, is
/// read, and refused, as a list).
bool channel_map_names_variable(std::string_view text);
/// The most elements a channel map may list, and the highest channel number it may name.
inline constexpr int kMaxMappedChannels = 65536;
namespace detail {
/// Throws Error naming `what` and the two elements (from 1) when a channel is listed twice.
void check_distinct_channels(const std::vector<int>& channels, const std::string& what);
}  // namespace detail

/// Acquisition parameters that an input file carries: a PICMUS HDF5 file (the layout of the 2016
/// IEEE IUS plane-wave challenge, /US/US_DATASET0000/...) or a USTB UFF file (a uff.channel_data
/// object of plane waves, synthetic aperture, diverging or focused waves) holds its sampling frequency,
/// sound speed, initial time, steering angles or sources and element positions, with time zero
/// when the wavefront crosses the array centre. `source` is empty when the file carries none.
struct FileGeometry {
  std::string source;  ///< e.g. "PICMUS /US/US_DATASET0000", "USTB UFF /channel_data"
  /// The axes the file's array was read in when --layout is not given (source.txt: channel-major; "" for files without a
  /// convention, which are read as samples,elements,transmits).
  std::string layout;
  std::optional<double> fs, sound_speed, t0, pitch;
  int elements = 0;
  std::vector<double> angles;  ///< radians
  std::optional<das::TimeZero> time_zero;
  /// USTB: the waves' own sound speed when it differs from the channel data's (USTB times the
  /// transmit with the one and the receive with the other; we use one: the user must choose).
  std::optional<double> transmit_sound_speed;
  int frame = 0, frames = 0;  ///< USTB, or a frames axis: the frame read (1-based) and how many there are
  /// A (samples,transmits) axis of --layout: how many of its rows lie past its last transmit (left)
  std::size_t rows_left = 0;
  /// A frames axis: how many of the array's frames were in memory with the one read (1: read
  /// alone; all of them: the array read whole; a block of them for --frame all of a large cine)
  int frames_held = 0;
  /// --channel-map applied: the array's channel (from 1) each element was read from, and how many
  /// channels the array holds; empty and 0 without a map.
  std::vector<int> channel_map;
  int array_channels = 0;
  /// The map's name when the file chose it without --channel-map (a Verasonics save's
  /// "Trans.Connector"), else "".
  std::string channel_map_from_file;
  double modulation_frequency = 0;  ///< IQ files: the demodulation frequency (Hz); 0 for RF
  /// USTB: what the sequence holds, and per transmit its wave's delay (s) and, for synthetic
  /// aperture, the element firing and its distance from the origin (m). Sample k of transmit t is
  /// at t0 + wave_delays[t] + k / fs on USTB's clock, on which the element of a synthetic-aperture
  /// transmit fires at source_distances[t] / c (its spherical wave passes the origin at t = 0).
  std::optional<Model> model;
  std::vector<double> wave_delays, source_distances;
  std::vector<int> tx_elements;
  std::vector<double> source_x, source_z;  ///< diverging and focused waves: the virtual sources (m)
  /// What the file's parameters leave out or cannot give (a Verasonics save without TW.peak, say),
  /// said as warnings of the frames read from it.
  std::vector<std::string> notes;
};

/// Writes plane-wave RF data as a PICMUS file (read back by read_channel_data with its geometry):
/// data/real [angles][channels][samples] and data/imag (zeros), angles (rad), probe_geometry
/// [3][N] (x, y, z), and the one-value parameters. The acquisition must use TimeZero::Center.
void write_picmus(const std::filesystem::path& path, const ChannelData& rf, const Acquisition& acquisition);
/// The same file written into `out`, staged (commit_staged puts it in place, with other files).
void write_picmus(io::StagedFile& out, const ChannelData& rf, const Acquisition& acquisition);

/// Writes plane-wave, synthetic-aperture or diverging-wave RF data as a USTB UFF file (read back
/// by read_channel_data, and by USTB's uff.read_object): /channel_data of class uff.channel_data
/// with data {waves, channels, samples}, the scalars, probe (uff.linear_array: geometry {7, N},
/// N, pitch) and sequence (uff.wave: a plane wave's source at distance Inf, azimuth = angle; a
/// synthetic-aperture wave's at its element, with delay |x| / c; a diverging or focused wave's at
/// its virtual source), in USTB's MATLAB layout (dims reversed, scalars {1, 1}). Plane, diverging
/// and focused waves must use TimeZero::Center, USTB's convention.
void write_ustb_uff(const std::filesystem::path& path, const ChannelData& rf, const Acquisition& acquisition);
/// The same file written into `out`, staged (commit_staged puts it in place, with other files).
void write_ustb_uff(io::StagedFile& out, const ChannelData& rf, const Acquisition& acquisition);

/// Reads channel data; `elements` and `transmits` are the acquisition's where known (0 where not),
/// which source.txt needs (for the others they come from the array) and a (samples,transmits)
/// axis splits by (AxisSplit; transmits may be kOneTransmitPerElement). Of an array with a 'frames' axis, frame `input.frame` is read alone
/// where that axis is the slowest the file stores (an NPY file's first, or last in Fortran order;
/// an HDF5 dataset's first; a MAT v7.3 array's or a v5 top-level array's last, in MATLAB's order),
/// with the frames after it for --frame all, up to kMostBytesOfFramesReadAtOnce; other MAT v4 and
/// v5 arrays are read whole. HDF5
/// files (.h5, .hdf5, .uff) are read by dataset path (`input.var`), in C order like NPY; a PICMUS file's default layout is transmits,elements,samples, and its
/// geometry goes to *geometry when given. A USTB UFF file (a group of class uff.channel_data,
/// chosen with `input.var` when there are several) is read with its geometry, frame `input.frame`.
/// Errors name the file.
ChannelData read_channel_data(const std::filesystem::path& path, const ChannelInput& input,
                              int elements = 0, int transmits = 0, FileGeometry* geometry = nullptr);

/// How many frames read_channel_data can read from the file with `input` (its --var and
/// --layout): a USTB UFF file's frames (reading no channel data); the extent of the "frames" axis
/// of a MAT, NPY or HDF5 array whose layout names one (from an NPY header, or a MAT or HDF5 file's
/// list when input.var names the array; else the array is read, and kept for the frames' reads
/// when input.all_frames); 1 for any other file. Errors name the file.
int count_frames(const std::filesystem::path& path, const ChannelInput& input);

/// The most frames one array's 'frames' axis, or one USTB file, may hold.
inline constexpr std::size_t kMaxFramesInAnArray = 100000;

/// --frame all reads the frames of an array with a 'frames' axis that the file stores slowest in
/// blocks of at most this many bytes as doubles (as they are held), each read once and kept for
/// its frames (read_channel_data): a small cine in one read, a large one never all in memory.
inline constexpr std::size_t kMostBytesOfFramesReadAtOnce = std::size_t{1} << 30;

/// AxisSplit::transmits for a synthetic-aperture acquisition whose elements come from the data:
/// one transmit per element of the array.
inline constexpr int kOneTransmitPerElement = -1;

/// The extents of an axis that --layout names (samples,transmits): one array axis holding the
/// transmits one after another, each of `samples` samples, as a Verasonics RcvData{1} holds its
/// acquisitions in its rows, or interleaved, transmits fastest (row s * T + t: (transmits,samples)
/// in MATLAB's order, (samples,transmits) in C order; the rows are then whole transmits).
/// `samples` is --samples (required for such an axis); `transmits` the acquisition's transmits
/// where known (0: as many as the axis holds whole; kOneTransmitPerElement). Rows past the last
/// transmit (a Verasonics buffer's padding), or transmits past the acquisition's, are left.
struct AxisSplit {
  int samples = 0;
  int transmits = 0;
};

/// Rearranges an array into ChannelData: dims in the order named by `layout` (samples, elements,
/// transmits and frames, any of them left out being 1, and (samples,transmits) for one axis
/// holding both: AxisSplit), values with the first axis fastest (column_major) or the last axis
/// fastest (C order). Of an array with a 'frames' axis, frame `frame` (1 = the first) is read,
/// and `*frames` is set to how many it holds (1 without one).
/// Throws Error when a sample is not finite as a float (NaN, infinite, or past float's range),
/// saying how many and where the first is: the beamformers take finite samples only; and when
/// `frame` is not among the array's frames.
ChannelData arrange_channels(const std::vector<double>& values, const std::vector<std::size_t>& dims,
                             bool column_major, std::string_view layout, Offset offset,
                             const std::string& name, int frame = 1, int* frames = nullptr, AxisSplit split = {});

/// Whether RF channel data look like an unsigned recording's: every sample >= 0 and some > 0 (RF
/// is signed around zero; RFdata1's uint8 samples lie around 128). IQ data never do.
bool looks_unsigned(const ChannelData& rf);
/// What reconstruct and info say of such data.
inline constexpr const char* kLooksUnsigned =
    "every sample is >= 0, as an unsigned recording's are: --offset mean removes each channel's mean";
/// True when every sample (I and Q) is 0: such data beamform to a black image.
bool all_zero(const ChannelData& rf);
/// What reconstruct and info say of such data.
inline constexpr const char* kAllZero = "every sample is 0, so the image is black";

/// The image grid as asked for; NaN fields take defaults from the geometry: x over the array's
/// span, z from max(0, t0 c / 2) to the depth of the last sample, dx = pitch / 2, dz = c / (4 fs).
struct GridRequest {
  static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();
  double x_min = kUnset, x_max = kUnset, z_min = kUnset, z_max = kUnset, dx = kUnset, dz = kUnset;
  Grid resolve(const Acquisition& acquisition, int samples) const;
};

/// Which acquisition parameters the user gave: those win over what an input file carries
/// (FileGeometry); the others are taken from the file when it has them.
struct GivenParameters {
  bool elements = false, pitch = false, sound_speed = false, fs = false, t0 = false, angles = false,
       time_zero = false, tx_elements = false, sources = false;
  /// --upsample given (even as 1): the interpolation's loss at the data's rate is then not warned of
  bool upsample = false;
};

/// Everything the general models need besides the backend.
struct DasSetup {
  Acquisition acquisition;  ///< probe.elements = 0: taken from the data
  GridRequest grid;
  DasOptions options;
  ChannelInput input;
  GivenParameters given;
  /// --upsample: RF channel data's analytic signal is beamformed at this multiple of their rate
  /// (analytic_signal's band-limited interpolation; 1 to 16). Baseband IQ data have their own.
  int upsample = 1;
};

/// Checks what the user gave before any file is read: the given acquisition parameters (those a
/// file cannot replace) for `setup.acquisition.model`, the options, and the grid ranges. A run
/// calls it once, so a bad option is one error up front, not the same error for every input.
/// Throws Error naming the first invalid parameter; Acquisition::validate and DasProblem::validate
/// check the same again on the geometry each file completes.
void validate_given(const DasSetup& setup);

/// What reconstruct_das returns: the image, and the description of how it was made for the
/// frame's JSON (model, geometry, options, backend).
struct DasFrame {
  Image image;
  nlohmann::json parameters;
  nlohmann::json backend;
};

enum class BackendKind;

/// A frame ready for the beamformer: the job (geometry completed from the file and checked), the
/// analytic signal, and the parameters for the frame's JSON.
struct PreparedDas {
  DasProblem problem;
  AnalyticData analytic;
  nlohmann::json parameters;          ///< for the frame's JSON; "warnings" too when there are any
  std::vector<std::string> warnings;  ///< what the data suggest is amiss, naming the file
};

/// Reads `input`, completes the geometry from the data, checks it and forms the analytic signal
/// (the stages before the beamformer). Stage times go into *timing when given.
PreparedDas prepare_das(const std::filesystem::path& input, const DasSetup& setup, int threads,
                        nlohmann::json* timing = nullptr);

/// The beamformer of a run of frames on one backend (Auto: CUDA when a device is there, else the
/// CPU). The beamformer built for a frame is kept for the next while the problem stays the same,
/// so a batch of like frames plans its tables and allocates its device buffers once.
class DasBeamformers {
 public:
  /// cuda_kernel: the CUDA kernel to use (Auto: the default for the model).
  DasBeamformers(BackendKind backend, int threads, DasCudaKernel cuda_kernel = DasCudaKernel::Auto);
  ~DasBeamformers();
  DasBeamformers(const DasBeamformers&) = delete;
  DasBeamformers& operator=(const DasBeamformers&) = delete;
  /// Beamforms the prepared frame: its image, its parameters, and the backend's description for
  /// the JSON (name, device or threads, kernel, points_per_s, and on CUDA kernel_s). Stage time
  /// "beamform" goes into *timing when given.
  DasFrame beamform(PreparedDas&& frame, nlohmann::json* timing = nullptr);

 private:
  BackendKind backend_;
  int threads_;
  DasCudaKernel cuda_kernel_;
  std::unique_ptr<DasCpuBeamformer> cpu_;
  std::unique_ptr<DasCudaBeamformer> cuda_;
  /// With Auto: why CUDA could not serve (CudaUnavailable's message) the problem it last failed
  /// on; later frames of that problem go to the CPU at once rather than build a CUDA beamformer to
  /// fail again (a frame of another geometry tries again: memory may suffice for it), and their
  /// JSON says why ("cuda_unavailable").
  std::string cuda_unavailable_;
  std::unique_ptr<DasProblem> cuda_failed_problem_;
};

/// prepare_das, then DasBeamformers::beamform: one file on its own.
DasFrame reconstruct_das(const std::filesystem::path& input, const DasSetup& setup,
                         BackendKind backend, int threads, nlohmann::json* timing = nullptr);

/// `v` as messages and `usrecon info` print a file's values: printf's %.6g.
std::string number_text(double v);
/// "MIN:MAX" -> {MIN, MAX}. Throws Error naming `what`.
std::pair<double, double> parse_range(std::string_view text, const std::string& what);
/// "START:STEP:STOP" (inclusive, MATLAB style) or "A,B,C" or one number. Throws Error.
std::vector<double> parse_number_list(std::string_view text, const std::string& what);
/// The virtual sources of diverging (`model` DivergingWave) or focused waves (FocusedWave) from
/// --sources-x (a number list, metres) and --sources-z (one depth for every source, or one per
/// source; metres, <= 0 behind the array for diverging waves, > 0 for focal points): {x, z}, one
/// pair per transmit. Throws Error naming the options.
std::pair<std::vector<double>, std::vector<double>> parse_virtual_sources(std::string_view x_text,
                                                                          std::string_view z_text,
                                                                          Model model = Model::DivergingWave);

}  // namespace usrecon::recon
