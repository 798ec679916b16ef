// read -> beamform -> B-mode -> write, for one file at a time of a batch.
#pragma once

#include <chrono>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "usrecon/io/file.hpp"
#include "usrecon/recon/das_pipeline.hpp"
#include "usrecon/recon/delay/seed.hpp"
#include "usrecon/recon/seed_cuda.hpp"

namespace usrecon::recon {

enum class BackendKind { Auto, Cpu, Cuda };
BackendKind parse_backend(std::string_view name);  // "auto" | "cpu" | "cuda", else throws Error

/// A seed-model beamformer on one device. Built once per batch: geometry tables and device
/// buffers are set up in the constructor, not per frame.
class SeedBackend {
 public:
  virtual ~SeedBackend() = default;
  /// rf[k * samples + s] -> out[j * nz + i] (the seed's out[j][i]).
  virtual void beamform(std::span<const std::int32_t> rf, std::span<double> out) = 0;
  /// What ran, for the per-frame JSON: {"name": ..., and backend-specific details}.
  virtual nlohmann::json describe() const = 0;
  /// Device stage times of the last frame in seconds, measured with CUDA events
  /// ({"h2d", "kernel", "d2h"}; in a batch, in-flight times: see seed::GpuTiming); empty for
  /// the CPU.
  virtual nlohmann::json last_timing_s() const { return nlohmann::json::object(); }

  /// Pipelined use, as the batch path drives it: frames live in numbered slots [0, slots()).
  /// The caller parses a frame straight into input(slot) — page-locked memory on CUDA, so the
  /// host-to-device copy is truly asynchronous —, submit(slot) starts it (on CUDA: copy, kernel
  /// and copy back queued on the slot's own stream, so consecutive frames overlap), and
  /// collect(slot, out) waits for it and stores the image in out; last_timing_s() then describes
  /// that frame. A slot is refilled only after its collect. The CPU backend beamforms inside
  /// collect, while the caller parses the next frame into the other slot.
  virtual int slots() const = 0;
  virtual std::span<std::int32_t> input(int slot) = 0;
  virtual void submit(int slot) = 0;
  virtual void collect(int slot, std::span<double> out) = 0;
  /// Frees a submitted slot without its image (a batch ending early, or a collect that failed
  /// before it waited): waits for what the device still does with the slot, computes nothing
  /// more (the CPU backend, which beamforms in collect, does nothing). A slot with no frame is
  /// left as it is.
  virtual void discard(int slot) = 0;
};

/// Chooses and builds a backend. `Cuda` throws CudaUnavailable when it cannot be served; `Auto`
/// uses CUDA when a device is there and otherwise the CPU, putting a one-line explanation in
/// *notice when it fell back. `precision` selects the CUDA kernel (the CPU is always exact).
std::unique_ptr<SeedBackend> make_seed_backend(BackendKind kind, const seed::Problem& problem,
                                               int threads, std::string* notice = nullptr,
                                               seed::Precision precision = seed::Precision::Double);

/// The delay model: the seed's (its fixed geometry, source.txt input, real float64 image) or the
/// general ones of das.hpp (any geometry, IQ beamforming, complex image).
enum class ReconModel { Seed, PlaneWave, SyntheticAperture, DivergingWave, FocusedWave };
ReconModel parse_model(std::string_view name);  // "seed" | "planewave" | "sa" | "dw" | "fw", else throws Error
std::string to_string(ReconModel model);
/// The delay model of das.hpp that a general model beamforms with; throws Error for Seed.
Model das_model(ReconModel model);

struct ReconstructOptions {
  ReconModel model = ReconModel::Seed;
  seed::Problem problem;             ///< seed model: channels, samples and grid of every input
  DasSetup das;                      ///< general models: geometry, grid, apodization, input
  BackendKind backend = BackendKind::Auto;
  seed::Precision precision = seed::Precision::Double;  ///< CUDA index arithmetic (--precision)
  DasCudaKernel das_cuda_kernel = DasCudaKernel::Auto;  ///< general models on CUDA (--cuda-kernel)
  int threads = 0;                   ///< CPU threads, 0 = all
  double dynamic_range_db = 60.0;    ///< B-mode dynamic range
  bool save_raw = false;             ///< also write <stem>.npy, the raw beamformed array (seed:
                                     ///< float64; general models: complex64 IQ), [nx][nz]
  bool overwrite = false;            ///< replace existing outputs (otherwise they are kept)
  int writers = 0;                   ///< frames a batch B-modes and writes at once, 0 = auto
                                     ///< (Reconstructor::writer_threads)
  std::vector<std::string> option_warnings;  ///< what the options' values suggest is amiss (a
                                             ///< value that reads as another unit): every frame's
                                             ///< JSON keeps them, as "option_warnings"
};

/// Throws Error when options.das_cuda_kernel (not Auto) cannot run the job: the seed model, a
/// plane-wave kernel on another model, or the CPU backend. The Reconstructor checks it; the CLI
/// too, before it lists the inputs.
void check_das_cuda_kernel(const ReconstructOptions& options);

/// What happened to one input.
struct FrameReport {
  std::filesystem::path input;
  int frame = 0;                              ///< the frame of a multi-frame file (--frame all), else 0
  bool ok = false;
  std::string error;                          ///< the reason, naming the file, when !ok
  std::vector<std::filesystem::path> outputs; ///< files written
  std::vector<std::string> warnings;          ///< the frame was made, but its data look amiss
  nlohmann::json timing_s;                    ///< seconds per stage; "total" from the start of
                                              ///< reading to the outputs written (in a batch
                                              ///< that includes waiting between stages)
};

/// {"input", "status": "ok" | "failed", "error" (null when ok), "outputs", "timing_s"}, and
/// "frame" for a frame of a multi-frame file, "warnings" when there are any: one entry of
/// `usrecon reconstruct --report`.
nlohmann::json to_json(const FrameReport& report);

/// Largest source.txt accepted for a problem, in bytes: 32 bytes per value (an int32 needs at most
/// 11 characters plus separators) plus 1 MiB of slack for blank lines and padding. A bigger file
/// is refused before it is read, with a message that states this limit.
std::uintmax_t input_byte_limit(const seed::Problem& problem);

/// The extensions (lower case, with the dot) of the files a directory contributes for a model:
/// source.txt files for the seed model; also NPY, MAT and HDF5 (.h5, .hdf5, .uff) for the others,
/// or only MAT and HDF5 where a variable is named (--var names a MAT variable or an HDF5 dataset:
/// a directory's NPY and text files, which have none, are not its inputs).
std::vector<std::string> input_extensions(ReconModel model, bool variable_named = false);

/// Whether `npy` is a raw image an earlier reconstruct wrote: the <stem>.json beside it names it as
/// its outputs.raw (a directory's listing leaves such a file out; info says what it is).
bool is_written_raw_image(const std::filesystem::path& npy);

/// Files stay as given; a directory contributes its regular files, not hidden (.name), with one of the model's
/// input_extensions (in any case), sorted by name. Paths that do not exist are kept, so that
/// processing reports them. A path whose name has such an extension is always taken as a file: a
/// directory named like a file is reported when processed, not scanned.
std::vector<std::filesystem::path> expand_inputs(const std::vector<std::filesystem::path>& paths,
                                                 ReconModel model = ReconModel::Seed, bool variable_named = false);

/// One job of a batch: a file, or one frame of a multi-frame file (USTB UFF with --frame all).
struct BatchInput {
  std::filesystem::path path;
  int frame = 0;  ///< 1-based frame read from the file; 0: the file as ChannelInput::frame says
};

/// The jobs for `paths`: one per file, except that with input.all_frames (--frame all, or
/// FIRST:LAST: input.frame to input.last_frame) a file holding several frames (count_frames) gives
/// one job per frame asked for that it holds, in order (one job for frame FIRST when it holds none
/// of them, refused when read). A file that cannot
/// be inspected stays one job, to be reported when processed. With input.frame N > 1 (--frame N)
/// each job is that frame, so that its outputs are <stem>_frameNNNN.* (runs of --frame 2 and
/// --frame 3 into one directory wrote the same names). Throws Error past a million jobs.
std::vector<BatchInput> expand_frames(const std::vector<std::filesystem::path>& paths, const ChannelInput& input);

/// Output file stem for an input: its stem with every character outside [A-Za-z0-9._-] replaced
/// by '_' and no leading '.', so outputs always land inside the output directory; a frame of a
/// multi-frame file (frame > 0) adds "_frame" and its number in at least four digits.
std::string output_stem(const std::filesystem::path& input, int frame = 0);

/// Reconstructs inputs into <out_dir>/<stem>.png, .json and (save_raw) .npy. Every output is
/// written atomically; a file that fails leaves nothing behind.
class Reconstructor {
 public:
  /// Checks out_dir before any input is read: it, or when it does not exist yet the nearest
  /// directory above it, must be a directory that can be written (io::OutputError otherwise).
  /// out_dir and its missing parents are made with the first output, so a run whose inputs all
  /// fail leaves no output directory behind.
  Reconstructor(ReconstructOptions options, std::filesystem::path out_dir);
  ~Reconstructor();

  /// Never throws for a problem with one input: it is reported in the FrameReport.
  FrameReport reconstruct(const std::filesystem::path& input, int frame = 0);

  /// A whole batch, in input order, each input reported to done(index, report) once its outputs
  /// are written (done is called one call at a time, in input order). The stages overlap: a
  /// reader thread reads the next inputs (for the seed model into the backend's slots; for the
  /// general models with their analytic signal) while the backend beamforms, and writer threads
  /// (writer_threads()) do B-mode and writing of the frames before, side by side. stop() is
  /// asked (on the reader thread) before each new input is read; frames already read are
  /// finished. done() runs on the writer thread whose frame is next; if it throws, nothing more
  /// is read or written and the exception reaches the caller. A frame's outputs are written
  /// under hidden names and renamed into place just before its report, so a batch that ends
  /// early leaves exactly the outputs of the frames it reported (a frame a writer had already
  /// written past that point never replaces an existing file). Returns the number of inputs
  /// reported.
  std::size_t reconstruct_batch(const std::vector<std::filesystem::path>& inputs,
                                const std::function<void(std::size_t, const FrameReport&)>& done,
                                const std::function<bool()>& stop);
  /// The writer threads of a batch: options.writers, or when that is 0 a quarter of the hardware
  /// threads, 1 to 4. One writer (B-mode ~15 ms and PNG, NPY, JSON with fsync ~10-30 ms a seed
  /// frame on the 2-core machine) falls far behind a GPU that beamforms a frame in ~3 ms; on
  /// the CPU the beamformer takes the cores, and the extra writers wait.
  int writer_threads() const;
  /// The threads of one frame's B-mode when `writers` frames are B-moded side by side: the CPU
  /// threads (options.threads, 0 = all) shared out, at least 1, so that writers do not
  /// oversubscribe the cores.
  int bmode_threads(int writers) const;
  /// The same over jobs that may be frames of multi-frame files (expand_frames; general models).
  std::size_t reconstruct_batch(const std::vector<BatchInput>& inputs,
                                const std::function<void(std::size_t, const FrameReport&)>& done,
                                const std::function<bool()>& stop);

  /// The seed model's backend (only with ReconModel::Seed).
  const SeedBackend& backend() const { return *backend_; }
  /// Name of the backend that ran (or will run) the frames: "cpu" or "cuda".
  std::string backend_name() const;
  /// Set when `auto` fell back to the CPU (why), empty otherwise.
  const std::string& backend_notice() const { return notice_; }

 private:
  ReconstructOptions options_;
  std::filesystem::path out_dir_;
  // Makes out_dir_ and its missing parents, if they are not there (before a frame's outputs).
  void make_output_dir() const;
  // One input, whatever the model: where its outputs go (checked before any work)...
  struct Targets {
    std::string stem;
    std::filesystem::path png, npy, json;
    /// With --overwrite and no --save-raw: an older <stem>.npy that the older <stem>.json named as
    /// its raw image and the new JSON will not describe, removed once the new outputs are in place
    /// (metrics would read it with the new grid). Empty when there is none, when it is an input,
    /// or when no older JSON names it (another file of that name is kept).
    std::filesystem::path stale_raw;
  };
  // Also claims the stem for this run (released again by release_stem if the input fails).
  Targets plan_outputs(const std::filesystem::path& input, int frame);
  // ...what the model made of it...
  struct Frame {
    int nx = 0, nz = 0;
    std::vector<std::uint8_t> pixels;            ///< B-mode, depth down the rows
    nlohmann::json meta;                         ///< the JSON, less "outputs" and "timing_s"
    std::vector<double> raw_real;                ///< seed: float64 RF image [nx][nz]
    std::vector<std::complex<float>> raw_iq;     ///< general models: complex64 IQ image [nx][nz]
    std::string raw_layout;
  };
  Frame beamform_seed(const std::filesystem::path& input, FrameReport& report);
  // The seed model in stages (beamform_seed is read -> backend -> finish_seed on one thread).
  // `destination` is asked for the frame's memory only once the text is read and long enough to
  // hold the frame, so that a wrong --samples costs no frame-sized allocation.
  void read_seed(const std::filesystem::path& input, const std::function<std::span<std::int32_t>()>& destination,
                 FrameReport& report) const;
  void finish_seed(const std::filesystem::path& input, Frame& frame, FrameReport& report, int bmode_threads) const;
  std::size_t reconstruct_batch_seed(const std::vector<std::filesystem::path>& inputs,
                                     const std::function<void(std::size_t, const FrameReport&)>& done,
                                     const std::function<bool()>& stop);
  // An input that failed: its message names it.
  static void record_failure(FrameReport& report, const std::exception& e);
  void release_stem(const std::string& stem);
  // The general models (das_reconstruct.cpp): beamform_das is prepare -> das_->beamform ->
  // finish_das on one thread; reconstruct_batch_das runs the three on three threads.
  Frame beamform_das(const std::filesystem::path& input, int frame, FrameReport& report);
  PreparedDas prepare_das_frame(const std::filesystem::path& input, int frame, FrameReport& report) const;
  Frame finish_das(const std::filesystem::path& input, DasFrame&& das, FrameReport& report, int bmode_threads) const;
  std::size_t reconstruct_batch_das(const std::vector<BatchInput>& inputs,
                                    const std::function<void(std::size_t, const FrameReport&)>& done,
                                    const std::function<bool()>& stop);
  // ...and writing it: png, npy, json under hidden staged names (a failure drops what was
  // written), put in place by io::commit_staged (all or none) at the frame's turn.
  std::vector<io::StagedFile> stage_outputs(const Targets& targets, Frame& frame, FrameReport& report,
                                            std::chrono::steady_clock::time_point start) const;
  // Puts them in place (io::commit_staged), removes targets.stale_raw, and adds that time to the
  // report's "write" and "total".
  static void commit_outputs(std::vector<io::StagedFile>& staged, const Targets& targets, FrameReport& report,
                             std::chrono::steady_clock::time_point start);
  std::string last_backend_;  // general models: the backend of the last frame

  std::unique_ptr<SeedBackend> backend_;  // seed model only
  std::unique_ptr<DasBeamformers> das_;   // general models only
  std::string notice_;
  // Stems claimed in this run, to refuse collisions; claimed when an input's outputs are
  // planned, released if it fails. Guarded by stems_mutex_ (the batch plans on its reader thread).
  std::vector<std::pair<std::string, std::filesystem::path>> stems_done_;  // (stem, input)
  mutable std::mutex stems_mutex_;
  // (device, inode) of the running batch's inputs, which no output may replace; set before a
  // batch's threads start and cleared after they end (BatchInputsGuard in batch.cpp).
  std::set<std::pair<std::uintmax_t, std::uintmax_t>> batch_inputs_;
  friend class BatchInputsGuard;
};

}  // namespace usrecon::recon
