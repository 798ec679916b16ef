#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <new>
#include <optional>
#include <system_error>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/bmode.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "das_input_formats.hpp"
#include "stage_clock.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

using detail::Clock;
using detail::seconds_since;

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// Whether `json`, an earlier run's <stem>.json, names `npy` as its raw image (outputs.raw): only
// then is that .npy a raw image the new outputs replace. Any other file of the name (channel data
// simulated as <stem>.npy, a file of the user's) is kept. A JSON that cannot be read says no.
bool names_its_raw_image(const fs::path& json, const fs::path& npy) {
  try {
    const nlohmann::json meta = nlohmann::json::parse(io::read_file(json, 1u << 20));
    return meta.at("outputs").at("raw").get<std::string>() == npy.filename().string();
  } catch (const std::exception&) {  // no such file, too large, not JSON, no outputs.raw string
    return false;
  }
}

}  // namespace

std::optional<std::pair<std::uintmax_t, std::uintmax_t>> detail::file_identity(const fs::path& path) {
  struct ::stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair<std::uintmax_t, std::uintmax_t>{std::uintmax_t(st.st_dev), std::uintmax_t(st.st_ino)};
}

std::uintmax_t input_byte_limit(const seed::Problem& problem) {
  constexpr std::uintmax_t kBytesPerValue = 32, kSlackBytes = std::uintmax_t{1} << 20;
  return std::uintmax_t(problem.channels) * std::uintmax_t(problem.samples) * kBytesPerValue +
         kSlackBytes;
}

nlohmann::json to_json(const FrameReport& report) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const fs::path& output : report.outputs) outputs.push_back(output.string());
  nlohmann::json entry = {{"input", report.input.string()},
                          {"status", report.ok ? "ok" : "failed"},
                          {"error", report.ok ? nlohmann::json(nullptr) : nlohmann::json(report.error)},
                          {"outputs", std::move(outputs)},
                          {"timing_s", report.timing_s}};
  if (report.frame > 0) entry["frame"] = report.frame;
  if (!report.warnings.empty()) entry["warnings"] = report.warnings;
  return entry;
}

bool is_written_raw_image(const fs::path& npy) {
  if (io::lower_extension(npy) != ".npy") return false;
  fs::path json = npy;
  return names_its_raw_image(json.replace_extension(".json"), npy);
}

std::vector<std::string> input_extensions(ReconModel model, bool variable_named) {
  if (model == ReconModel::Seed) return {".txt"};
  if (variable_named) return {".mat", ".h5", ".hdf5", ".uff"};
  return {".txt", ".npy", ".mat", ".h5", ".hdf5", ".uff"};
}

std::vector<fs::path> expand_inputs(const std::vector<fs::path>& paths, ReconModel model, bool variable_named) {
  const std::vector<std::string> extensions = input_extensions(model, variable_named);
  const auto is_input = [&](const fs::path& path) {
    return std::find(extensions.begin(), extensions.end(), io::lower_extension(path)) != extensions.end();
  };
  // A raw image an earlier run wrote beside its inputs (<stem>.npy, which <stem>.json names as
  // outputs.raw) is no channel data: a directory's listing leaves it out, so that a run into the
  // inputs' own directory can be repeated. Named on the command line, it is read.
  std::vector<fs::path> inputs;
  for (const fs::path& path : paths) {
    std::error_code ec;
    // A path named like an input file is taken as one, even when it is a directory (a shell glob
    // such as in/*.txt that matched one is not asking for its contents); "frames.txt/" is listed.
    if ((is_input(path) && path.has_filename()) || !fs::is_directory(path, ec)) {
      inputs.push_back(path);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      std::error_code entry_ec;
      // Hidden files (.name: editors' backups, macOS's ._ resource forks, half-written copies)
      // are no acquisitions; named on the command line, they are read.
      const bool hidden = entry.path().filename().string().starts_with('.');
      if (!hidden && is_input(entry.path()) && entry.is_regular_file(entry_ec) && !is_written_raw_image(entry.path()))
        found.push_back(entry.path());
    }
    if (ec) {
      inputs.push_back(path);  // a directory that cannot be listed: plan_outputs says why
      continue;
    }
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  return inputs;
}

std::vector<BatchInput> expand_frames(const std::vector<fs::path>& paths, const ChannelInput& input) {
  std::vector<BatchInput> jobs;
  for (const fs::path& path : paths) {
    int frames = 1;
    if (input.all_frames) {
      try {
        frames = count_frames(path, input);
      } catch (const std::exception&) {
        frames = 1;  // reading it will say what is wrong
      }
    }
    if (frames <= 1) {  // --frame N > 1 (or FIRST:LAST past 1): that frame, refused when read
      jobs.push_back({path, input.frame > 1 ? input.frame : 0});
      continue;
    }
    // FIRST:LAST: the file's frames among them. One it has not (FIRST past its last) is read
    // all the same, to be refused as --frame FIRST is.
    const int first = input.frame, last = input.last_frame > 0 ? std::min(input.last_frame, frames) : frames;
    if (first > last) {
      jobs.push_back({path, first});
      continue;
    }
    // Each file's frames are capped when it is read (100 000); the batch as a whole here.
    constexpr std::size_t kMaxJobs = 1000000;
    if (jobs.size() + std::size_t(last - first + 1) > kMaxJobs)
      throw Error(std::string(input.last_frame > 0 ? "--frame FIRST:LAST" : "--frame all") + ": the inputs hold more than " +
                  std::to_string(kMaxJobs) +
                  " frames in all; reconstruct them in smaller batches");
    for (int f = first; f <= last; ++f) jobs.push_back({path, f});
  }
  return jobs;
}

std::string output_stem(const fs::path& input, int frame) {
  std::string stem = input.stem().string();
  for (char& c : stem) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  if (stem.empty()) stem = "_";
  if (stem.front() == '.') stem.front() = '_';
  if (frame > 0) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "_frame%04d", frame);
    stem += suffix;
  }
  return stem;
}

void check_das_cuda_kernel(const ReconstructOptions& options) {
  const DasCudaKernel kernel = options.das_cuda_kernel;
  if (kernel == DasCudaKernel::Auto) return;
  const std::string name = "--cuda-kernel " + to_string(kernel);
  if (options.model == ReconModel::Seed)
    throw Error(name + " applies to the general models (--model planewave, sa, dw or fw)");
  if (kernel != DasCudaKernel::PixelPerThread && options.model != ReconModel::PlaneWave)
    throw Error(name + " applies to --model planewave only");
  if (options.backend == BackendKind::Cpu) throw Error(name + " applies to the CUDA backend, not --backend cpu");
}

Reconstructor::Reconstructor(ReconstructOptions options, fs::path out_dir)
    : options_(std::move(options)), out_dir_(std::move(out_dir)) {
  if (!(options_.dynamic_range_db > 0.0))
    throw Error("the dynamic range must be a positive number of dB");
  check_das_cuda_kernel(options_);
  if (options_.model == ReconModel::Seed)
    backend_ = make_seed_backend(options_.backend, options_.problem, options_.threads, &notice_,
                                 options_.precision);
  else {
    // Options the user gave that no file can mend, and --backend cuda without a usable device,
    // are refused now, as the seed model's backend does, not once per input after each is read.
    DasSetup given = options_.das;
    given.acquisition.model = das_model(options_.model);
    validate_given(given);
    if (options_.backend == BackendKind::Cuda) require_cuda("--backend cuda");
    das_ = std::make_unique<DasBeamformers>(options_.backend, options_.threads, options_.das_cuda_kernel);
    // auto on a machine without CUDA runs on the CPU from the start; said as the seed model says it.
    if (options_.backend == BackendKind::Auto && cuda_device_count() == 0)
      notice_ = std::string("no CUDA device (") + (built_with_cuda() ? "none found" : "built without CUDA") +
                "); using the CPU";
  }
  if (!notice_.empty() && options_.model == ReconModel::Seed && options_.precision == seed::Precision::Single)
    notice_ += " (--precision single is the CUDA kernel's: the CPU is exact)";
  if (!notice_.empty() && options_.das_cuda_kernel != DasCudaKernel::Auto)
    notice_ += " (--cuda-kernel " + to_string(options_.das_cuda_kernel) + " is the CUDA backend's; the CPU runs its own)";
  // The output directory is made with the first output (make_output_dir): a run whose inputs all
  // fail leaves none behind, and no run removes one that another run is about to write into.
  // What can be said now, before any input is read, is said: the nearest existing directory on
  // the way (out_dir itself, or one above it) must be a directory that can be written.
  std::error_code ec;
  const io::DirectoriesToMake to_make = io::directories_to_make(out_dir_);
  const fs::path& existing = to_make.nearest_existing;
  const bool there = to_make.missing.empty();  // out_dir exists already
  if (!fs::is_directory(existing, ec)) {
    const bool link = fs::is_symlink(fs::symlink_status(existing, ec));
    throw io::OutputError("cannot create output directory " + out_dir_.string() + ": " +
                          (there ? std::string(link ? "a link of that name leads to no directory"
                                                    : "a file of that name exists")
                                 : existing.string() + (link ? " is a link that leads to no directory" : " is a file")));
  }
  // A directory to make whose name the file system cannot hold ("File name too long") was found
  // only when the first frame was written, after the whole batch was beamformed.
  const long most = ::pathconf(existing.c_str(), _PC_NAME_MAX);
  for (const fs::path& missing : to_make.missing)
    if (const std::size_t length = missing.filename().string().size(); most > 0 && length > std::size_t(most))
      throw io::OutputError("cannot create output directory " + out_dir_.string() + ": the name " +
                            missing.filename().string().substr(0, 40) + "... has " + std::to_string(length) +
                            " bytes, more than the file system's " + std::to_string(most));
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    throw io::OutputError(there ? "cannot write into output directory " + out_dir_.string() + ": " +
                                     std::error_code(errno, std::generic_category()).message()
                               : "cannot create output directory " + out_dir_.string() + ": " + existing.string() +
                                     ": " + std::error_code(errno, std::generic_category()).message());
}

Reconstructor::~Reconstructor() = default;

void Reconstructor::make_output_dir() const {
  std::error_code ec;
  if (fs::is_directory(out_dir_, ec)) return;
  // The directories about to be made, to be removed again if the deepest cannot be
  // ("newA/<a name past NAME_MAX>" made newA first).
  const std::vector<fs::path> missing = io::directories_to_make(out_dir_).missing;
  fs::create_directories(out_dir_, ec);  // safe beside other writers and runs: an existing one is fine
  std::error_code is_dir_ec;
  if (fs::is_directory(out_dir_, is_dir_ec)) return;
  std::error_code ignored;
  for (const fs::path& dir : missing) fs::remove(dir, ignored);  // only while empty
  throw io::OutputError("cannot create output directory " + out_dir_.string() + ": " +
                        (ec ? ec.message() : is_dir_ec ? is_dir_ec.message() : "a file of that name exists"));
}

Reconstructor::Targets Reconstructor::plan_outputs(const fs::path& input, int frame) {
  // expand_inputs lists every directory it can; one among the inputs could not be listed.
  std::error_code listing;
  if (fs::is_directory(input, listing)) {
    (void)fs::directory_iterator(input, listing);
    if (listing) throw Error(input.string() + ": cannot list this directory: " + listing.message());
    throw Error(input.string() + ": is a directory, not a file (one named like an input file is not listed: write " +
                (input / "").string() + " to list it)");
  }
  Targets t;
  t.stem = output_stem(input, frame);
  std::lock_guard lock(stems_mutex_);
  const auto earlier = std::find_if(stems_done_.begin(), stems_done_.end(),
                                    [&](const auto& done) { return done.first == t.stem; });
  if (earlier != stems_done_.end()) {
    if (same_file(input, earlier->second))
      throw Error(input.string() + ": the same file as the earlier input " + earlier->second.string() +
                  " of this run (given twice)");
    throw Error(input.string() + ": its outputs would be named '" + t.stem +
                ".*', like those of an earlier input of this run; rename one of them");
  }
  t.png = out_dir_ / (t.stem + ".png");
  t.npy = out_dir_ / (t.stem + ".npy");
  t.json = out_dir_ / (t.stem + ".json");
  std::vector<fs::path> targets = {t.png, t.json};
  if (options_.save_raw) targets.push_back(t.npy);
  const auto is_an_input = [&](const fs::path& target) {
    if (same_file(target, input)) return true;
    const auto id = batch_inputs_.empty() ? std::nullopt : detail::file_identity(target);
    return id && batch_inputs_.contains(*id);
  };
  std::error_code ec;
  if (!options_.save_raw && options_.overwrite && fs::is_regular_file(t.npy, ec) && !is_an_input(t.npy) &&
      names_its_raw_image(t.json, t.npy))
    t.stale_raw = t.npy;
  for (const fs::path& target : targets) {
    if (same_file(target, input))
      throw Error(input.string() + ": output " + target.string() + " would overwrite the input" +
                  (target == t.npy ? std::string(" (--save-raw's raw image is <stem>.npy): give -o another directory")
                                   : std::string(": give -o another directory")));
    if (!batch_inputs_.empty()) {
      const auto id = detail::file_identity(target);
      if (id && batch_inputs_.contains(*id))
        throw Error(input.string() + ": output " + target.string() + " would overwrite another input of this batch");
    }
    // symlink_status: a link at the name is kept too, dangling or not (exists follows it).
    if (!options_.overwrite && fs::exists(fs::symlink_status(target, ec)))
      throw Error(input.string() + ": output " + target.string() +
                  " already exists (kept; use --overwrite to replace it)");
  }
  stems_done_.emplace_back(t.stem, input);
  return t;
}

void Reconstructor::release_stem(const std::string& stem) {
  std::lock_guard lock(stems_mutex_);
  const auto it = std::find_if(stems_done_.begin(), stems_done_.end(), [&](const auto& done) { return done.first == stem; });
  if (it != stems_done_.end()) stems_done_.erase(it);
}

void Reconstructor::record_failure(FrameReport& report, const std::exception& e) {
  report.ok = false;
  // std::bad_alloc's own text ("std::bad_alloc") says nothing to a user.
  report.error = dynamic_cast<const std::bad_alloc*>(&e)
                     ? "out of memory: this input, or the options (--channels, --samples, the image grid), need "
                       "more memory than this machine could give"
                     : e.what();
  // Every message names the input; io errors already do, others get it prefixed.
  const std::string name = report.input.string();
  if (report.error.find(name) == std::string::npos) report.error = name + ": " + report.error;
  // The frame is said unless the message names it already ("--frame 2: the file holds one frame",
  // "--frame 2 is not among ..."), not "--frame 21" for 2.
  const auto names_frame = [&] {
    const std::string said = "--frame " + std::to_string(report.frame);
    for (std::size_t at = report.error.find(said); at != std::string::npos; at = report.error.find(said, at + 1)) {
      const std::size_t after = at + said.size();
      if (after == report.error.size() || !std::isdigit(static_cast<unsigned char>(report.error[after]))) return true;
    }
    return false;
  };
  if (report.frame > 0 && !names_frame()) report.error += " (frame " + std::to_string(report.frame) + ")";
}

void Reconstructor::read_seed(const fs::path& input, const std::function<std::span<std::int32_t>()>& destination,
                              FrameReport& report) const {
  const seed::Problem& p = options_.problem;
  const auto t = Clock::now();
  // The general models' formats, said as such rather than parsed as text ("\x89HDF" at line 1).
  const std::string ext = io::lower_extension(input);
  if (ext == ".npy" || ext == ".mat" || io::has_hdf5_extension(input)) {
    // Only a PICMUS or USTB file, or a Verasonics save, names its model; info was offered for NPY
    // and MAT files too.
    std::string saved;
    try {
      if (const auto save = detail::verasonics_save(input); save && save->geometry.model)
        saved = to_string(*save->geometry.model);
    } catch (const Error&) {
    }
    if (!saved.empty())
      throw io::InputError(input.string() + ": --model seed reads source.txt text, not a .mat file; this Verasonics "
                           "save's TX describes --model " + saved);
    throw io::InputError(input.string() + ": --model seed reads source.txt text, not a " + ext +
                         " file; give the general model " +
                         (io::has_hdf5_extension(input)
                              ? "the file holds (--model planewave, sa, dw or fw: usrecon info " +
                                    input.filename().string() + " says which)"
                              : "the data were recorded with (--model planewave, sa, dw or fw; a " + ext +
                                    " file does not say which)"));
  }
  const std::string text = io::read_file(input, input_byte_limit(p));
  io::check_source_txt_size(text, std::size_t(p.channels), std::size_t(p.samples), input.string());
  io::parse_source_txt_into(text, destination(), p.channels, p.samples, input.string());
  report.timing_s["read"] = seconds_since(t);
}

Reconstructor::Frame Reconstructor::beamform_seed(const fs::path& input, FrameReport& report) {
  const seed::Problem& p = options_.problem;
  std::vector<std::int32_t> rf;
  read_seed(input, [&] {
    rf.resize(std::size_t(p.channels) * p.samples);
    return std::span<std::int32_t>(rf);
  }, report);
  const auto t = Clock::now();
  Frame frame;
  frame.raw_real.resize(std::size_t(p.nx) * p.nz);
  backend_->beamform(rf, frame.raw_real);
  report.timing_s["beamform"] = seconds_since(t);
  // Named first: a range-for over a temporary's items() would outlive the temporary.
  const nlohmann::json device_times = backend_->last_timing_s();
  for (const auto& [stage, seconds] : device_times.items()) report.timing_s[stage] = seconds;
  finish_seed(input, frame, report, bmode_threads(1));
  return frame;
}

void Reconstructor::finish_seed(const fs::path& input, Frame& frame, FrameReport& report,
                                int bmode_threads) const {
  const seed::Problem& p = options_.problem;
  const auto t = Clock::now();
  frame.nx = p.nx;
  frame.nz = p.nz;
  const std::vector<double> env = envelope_along_depth(frame.raw_real, p.nx, p.nz, bmode_threads);
  frame.pixels = log_compress(env, p.nx, p.nz, options_.dynamic_range_db, 0.0, bmode_threads);
  report.timing_s["bmode"] = seconds_since(t);

  const double step_m = seed::Problem::kGridStepMm * 1e-3;
  frame.meta = {
      {"input", input.string()},
      {"model", "seed"},
      {"grid", {{"x0", 0.0}, {"dx", step_m}, {"nx", p.nx}, {"z0", 0.0}, {"dz", step_m}, {"nz", p.nz}}},
      {"grid_note", "x is lateral along the raw array's first axis (the seed's j), z is depth "
                    "(the seed's i); element k sits at x = 6 k dx, z = 0"},
      {"parameters",
       {{"channels", p.channels},
        {"samples", p.samples},
        {"element_pitch_m", seed::Problem::kElementStep * step_m},
        {"sound_speed_m_per_s", seed::Problem::kSoundSpeedMmPerUs * 1e3},
        {"sampling_hz", seed::Problem::kSamplingMhz * 1e6},
        {"dynamic_range_db", options_.dynamic_range_db}}},
      {"backend", backend_->describe()}};
  frame.raw_layout = "float64 [nx][nz], the seed's out[j][i]";
}


std::vector<io::StagedFile> Reconstructor::stage_outputs(const Targets& targets, Frame& frame,
                                                         FrameReport& report, Clock::time_point start) const {
  const auto t = Clock::now();
  make_output_dir();
  nlohmann::json& meta = frame.meta;
  meta["outputs"] = {{"png", targets.png.filename().string()}};
  if (options_.save_raw) {
    meta["outputs"]["raw"] = targets.npy.filename().string();
    meta["outputs"]["raw_layout"] = frame.raw_layout;
  }
  if (!options_.option_warnings.empty()) meta["option_warnings"] = options_.option_warnings;
  // In the order they are committed: png, npy, json. If one fails, `staged` going out of scope
  // removes those already written.
  std::vector<io::StagedFile> staged;
  staged.emplace_back(targets.png);
  staged.back().write(io::encode_png_gray8(frame.nx, frame.nz, frame.pixels));
  if (options_.save_raw) {
    staged.emplace_back(targets.npy);
    const std::size_t shape[2] = {std::size_t(frame.nx), std::size_t(frame.nz)};
    staged.back().write(frame.raw_iq.empty() ? io::encode_npy(io::DType::f64, shape, frame.raw_real.data())
                                             : io::encode_npy(io::DType::c64, shape, frame.raw_iq.data()));
  }
  // The frame's JSON holds the times up to its own writing; the report (--report, --profile)
  // counts that too, and putting the files in place (commit_outputs).
  report.timing_s["write"] = seconds_since(t);
  report.timing_s["total"] = seconds_since(start);
  meta["timing_s"] = report.timing_s;
  staged.emplace_back(targets.json);
  staged.back().write(meta.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  report.timing_s["write"] = seconds_since(t);
  report.timing_s["total"] = seconds_since(start);
  return staged;
}

void Reconstructor::commit_outputs(std::vector<io::StagedFile>& staged, const Targets& targets, FrameReport& report,
                                   Clock::time_point start) {
  const auto t = Clock::now();
  report.outputs = io::commit_staged(staged);
  std::error_code ec;
  if (!targets.stale_raw.empty() && !fs::remove(targets.stale_raw, ec) && ec)
    throw io::OutputError(targets.stale_raw.string() + ": cannot remove this older raw image, which the new " +
                          targets.json.filename().string() + " does not describe: " + ec.message());
  report.timing_s["write"] = report.timing_s.value("write", 0.0) + seconds_since(t);
  report.timing_s["total"] = seconds_since(start);
}

FrameReport Reconstructor::reconstruct(const fs::path& input, int frame_number) {
  FrameReport report;
  report.input = input;
  report.frame = frame_number;
  const auto start = Clock::now();
  std::string claimed;
  try {
    if (frame_number > 0 && options_.model == ReconModel::Seed)
      throw Error("frames apply to the general models' USTB files only");
    const Targets targets = plan_outputs(input, frame_number);
    claimed = targets.stem;
    Frame frame = options_.model == ReconModel::Seed ? beamform_seed(input, report)
                                                     : beamform_das(input, frame_number, report);
    std::vector<io::StagedFile> staged = stage_outputs(targets, frame, report, start);
    commit_outputs(staged, targets, report, start);
    report.ok = true;
  } catch (const std::exception& e) {
    record_failure(report, e);
    if (!claimed.empty()) release_stem(claimed);
  }
  if (!report.timing_s.contains("total")) report.timing_s["total"] = seconds_since(start);
  return report;
}

}  // namespace usrecon::recon
