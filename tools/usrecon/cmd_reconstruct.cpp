// usrecon reconstruct FILE... -o DIR
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "batch_control.hpp"
#include "commands.hpp"
#include "das_options.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

struct ReconstructArgs {
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string backend = "auto";
  std::string report;  // --report FILE: JSON list of every input's status and timings
  std::string precision = "double";
  bool profile = false;
  recon::ReconstructOptions options;
  DasArgs das;  // --model and the general models' options (das_options.hpp)
};

// One line per file; on a terminal a progress bar redrawn in place instead.
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), tty_(isatty(STDERR_FILENO) == 1) {}

  void done(std::size_t index, const recon::FrameReport& r) {
    if (!r.ok) {
      clear_bar();
      // The frame's refusal less the " (frame N)" its report ends with, which say() adds back: a
      // refusal every frame of a cine meets is said once. (One that names its frame otherwise,
      // "--frame 4 ...", is said as it is.)
      const std::string suffix = " (frame " + std::to_string(r.frame) + ")";
      if (r.frame > 0 && r.error.ends_with(suffix)) say("error", r.error.substr(0, r.error.size() - suffix.size()), r.frame);
      else say("error", r.error, 0);
    } else if (!r.warnings.empty()) {
      clear_bar();
      for (const std::string& warning : r.warnings) say("warning", warning, r.frame);
    }
    if (r.ok && !tty_) {
      std::printf("[%zu/%zu] %s%s -> %s (%.2f s)\n", index + 1, total_, r.input.string().c_str(),
                  r.frame > 0 ? (" frame " + std::to_string(r.frame)).c_str() : "",
                  r.outputs.empty() ? "" : r.outputs.front().string().c_str(),
                  r.timing_s.value("total", 0.0));
      std::fflush(stdout);
    }
    if (tty_) draw(index + 1, r.input.filename().string());
  }
  void finish() {
    if (tty_ && drawn_) std::fputc('\n', stderr);
    for (const auto& [kind_and_text, frames] : repeats_) {
      if (frames.empty()) continue;
      std::string which;
      for (std::size_t k = 0; k < frames.size() && k < 10; ++k) which += (k ? ", " : "") + std::to_string(frames[k]);
      if (frames.size() > 10) which += " and " + std::to_string(frames.size() - 10) + " more";
      std::fprintf(stderr, "usrecon: %s: again for %zu more frame(s) (%s): %s\n", kind_and_text.first.c_str(),
                   frames.size(), which.c_str(), kind_and_text.second.c_str());
    }
  }

 private:
  // Once each: a cine's frames share their file's warnings, and a refusal that holds for every
  // frame (too few rows for the angles, a channel map that does not fit) was said once a frame;
  // the frames that repeat one are listed with it at the end (each frame's JSON and --report
  // entry keep their own).
  void say(const std::string& kind, const std::string& text, int frame) {
    if (kind == "error" && frame <= 0) {  // an input of its own: said as it is
      std::fprintf(stderr, "usrecon: error: %s\n", text.c_str());
      return;
    }
    const auto [at, first] = said_.try_emplace({kind, text}, said_.size());
    if (!first) {
      repeats_[at->second].second.push_back(frame);
      return;
    }
    std::fprintf(stderr, "usrecon: %s: %s%s\n", kind.c_str(), text.c_str(),
                 frame > 0 ? (" (frame " + std::to_string(frame) + ")").c_str() : "");
    repeats_.emplace_back(std::pair{kind, text}, std::vector<int>{});
  }
  void draw(std::size_t done, const std::string& name) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / std::max<std::size_t>(total_, 1));
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r\033[K[%s] %zu/%zu %s", bar.c_str(), done, total_, name.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  void clear_bar() {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  }
  std::size_t total_;
  bool tty_;
  // The warnings and errors printed (kind, text): their place in repeats_.
  std::map<std::pair<std::string, std::string>, std::size_t> said_;
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<int>>> repeats_;  // each, with the frames
                                                                                              // that repeated it
  bool drawn_ = false;
};

// --profile: the median of each stage over the frames that succeeded.
class StageProfile {
 public:
  void add(const nlohmann::json& timing_s) {
    for (const auto& [stage, seconds] : timing_s.items())
      if (seconds.is_number()) stages_[stage].push_back(seconds.get<double>());
  }
  // wall_s: the batch's, from its start; startup_s: before it (options, inputs listed, backend made:
  // a CUDA context, tables uploaded), which short batches would otherwise count as slow frames.
  void print(double wall_s, double startup_s, std::size_t frames) const {
    std::printf("profile: %zu frames in %.3f s wall = %.2f frames/s (start-up before the batch %.3f s)\n", frames, wall_s,
                wall_s > 0 ? double(frames) / wall_s : 0.0, startup_s);
    // The pipeline's stages in their order (the general models' analytic signal after reading;
    // CUDA's event-timed h2d, kernel, d2h within beamform), then any other stage a report has.
    std::vector<std::string> order = {"read", "analytic", "setup", "beamform", "h2d", "kernel", "d2h", "bmode", "write"};
    for (const auto& [stage, seconds] : stages_)
      if (stage != "total" && std::find(order.begin(), order.end(), stage) == order.end()) order.push_back(stage);
    order.push_back("total");
    for (const std::string& stage : order) {
      const auto it = stages_.find(stage);
      if (it == stages_.end() || it->second.empty()) continue;
      std::vector<double> v = it->second;
      std::sort(v.begin(), v.end());
      const std::size_t n = v.size();
      const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;  // of an even count: the middle two's mean
      std::printf("profile: %-8s median %9.3f ms  (min %9.3f, max %9.3f)\n", stage.c_str(), median * 1e3,
                  v.front() * 1e3, v.back() * 1e3);
    }
  }

 private:
  std::map<std::string, std::vector<double>> stages_;
};

// The options as the command line and --config give them, with the unit warnings they earn
// (options.option_warnings; run says them).
recon::ReconstructOptions options_given(const ReconstructArgs& args) {
  recon::ReconstructOptions options = args.options;
  finish_das_options(args.das, options);
  if (args.das.app) options.option_warnings = unlikely_units(*args.das.app);
  return options;
}

// The rest of the options' checks, all that need no input: before any input is listed, any output
// made or the --report file opened (ReconstructCommand::options stops here).
void check_options(const ReconstructArgs& args, recon::ReconstructOptions& options) {
  if (args.out_dir.empty())
    throw Error("--output (-o) is required: the output directory, on the command line or as output = \"DIR\" in "
                "--config");
  options.backend = recon::parse_backend(args.backend);
  if (options.model == recon::ReconModel::Seed && options.backend == recon::BackendKind::Cpu &&
      args.precision != "double")
    throw Error("--precision " + args.precision + " applies to the CUDA backend; --backend cpu is always exact");
  if (!args.report.empty() && !args.das.config.empty()) {
    std::error_code ec;
    if (fs::equivalent(args.report, args.das.config, ec))
      throw Error("--report " + args.report + " is the --config file; it would be overwritten");
  }
  recon::check_das_cuda_kernel(options);
  options.precision = recon::seed::parse_precision(args.precision);  // CLI11 let double or single through
}

int run(const ReconstructArgs& args) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Ctrl-C / SIGTERM: from here on a signal is noted; once the inputs are known, the report still
  // lists them (none processed if the signal came before the batch), and the batch finishes the
  // frames already read, then stops.
  const StopOnSignal stop;
  recon::ReconstructOptions options = options_given(args);
  // Said once, here; kept in every frame's JSON and --report entry (option_warnings).
  for (const std::string& warning : options.option_warnings)
    std::fprintf(stderr, "usrecon: warning: %s\n", warning.c_str());
  check_options(args, options);
  std::vector<fs::path> paths(args.inputs.begin(), args.inputs.end());
  // --var names a MAT variable or HDF5 dataset: a directory's NPY and text files are not listed.
  const bool variable_named = !options.das.input.var.empty();
  const std::vector<fs::path> files = recon::expand_inputs(paths, options.model, variable_named);
  if (files.empty()) {
    std::string wanted;
    for (const std::string& ext : recon::input_extensions(options.model, variable_named))
      wanted += (wanted.empty() ? "*" : ", *") + ext;
    std::fprintf(stderr, "usrecon: error: no input files (the directories given hold no %s%s)\n", wanted.c_str(),
                 variable_named ? ", which --var reads" : "");
    return 1;
  }
  // --frame all: a multi-frame file is one input per frame from here on.
  const std::vector<recon::BatchInput> inputs = recon::expand_frames(files, options.das.input);
  // The report first: a run that fails before any input (no CUDA device for --backend cuda, an
  // output directory that cannot be made) still leaves one, every input not processed.
  std::optional<BatchReport> batch_report;
  if (!args.report.empty()) batch_report.emplace(args.report, inputs, args.out_dir, options.option_warnings);
  // When the run fails as a whole, the report still says what was done and what not; its own
  // failure is printed, the run's error is the one that ends it.
  const auto write_report_before_failing = [&] {
    if (!batch_report) return;
    try {
      batch_report->write();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "usrecon: error: %s\n", e.what());
    }
  };
  std::optional<recon::Reconstructor> made;
  try {
    made.emplace(options, args.out_dir);
  } catch (...) {
    write_report_before_failing();
    throw;
  }
  recon::Reconstructor& reconstructor = *made;
  if (!reconstructor.backend_notice().empty())
    std::fprintf(stderr, "usrecon: %s\n", reconstructor.backend_notice().c_str());

  Progress progress(inputs.size());
  std::size_t failed = 0, wrote = 0;
  double beamform_s = 0.0;
  StageProfile profile;
  std::size_t processed = 0;
  const auto batch_start = Clock::now();
  try {
    processed = reconstructor.reconstruct_batch(
        inputs,
        [&](std::size_t idx, const recon::FrameReport& report) {
          if (!report.ok) ++failed;
          if (!report.outputs.empty()) ++wrote;  // a failed frame may have put its outputs in place
          // Summed over the frames it is divided by: a failed frame's time would inflate it.
          if (report.ok) beamform_s += report.timing_s.value("beamform", 0.0);
          if (report.ok) profile.add(report.timing_s);
          progress.done(idx, report);
          if (batch_report) batch_report->add(report);
        },
        [&] { return stop.requested(); });
  } catch (...) {
    write_report_before_failing();  // the batch itself failed, not an input
    throw;
  }
  progress.finish();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const std::size_t ok = processed - failed;
  if (args.profile)
    profile.print(std::chrono::duration<double>(Clock::now() - batch_start).count(),
                  std::chrono::duration<double>(batch_start - start).count(), ok);
  // A run that wrote nothing has made no output directory to point to.
  const std::string where = wrote ? "outputs in " + fs::absolute(args.out_dir).lexically_normal().string()
                                  : std::string("no outputs written");
  // The beamforming time per frame, of the frames made (none made: none to say).
  char beamforming[128] = "";
  if (ok > 0)
    std::snprintf(beamforming, sizeof beamforming, " (beamforming %.2f s per frame on %s)", beamform_s / double(ok),
                  reconstructor.backend_name().c_str());
  std::printf("usrecon: %zu of %zu reconstructed, %zu failed, in %.2f s%s; %s\n", ok, inputs.size(), failed, wall,
              beamforming, where.c_str());
  bool report_failed = false;
  if (batch_report) {
    try {
      batch_report->write();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "usrecon: error: %s\n", e.what());
      report_failed = true;
    }
  }
  // A signal after the last input was read changed nothing: the run ends as it would have.
  if (stop.requested() && processed < inputs.size()) {
    // Jobs are frames where a file gave several (--frame all or FIRST:LAST): "3 of 5 inputs" of
    // one cine read as files.
    const bool frames = std::any_of(inputs.begin(), inputs.end(), [](const recon::BatchInput& b) { return b.frame > 0; });
    std::fprintf(stderr, "usrecon: interrupted after %zu of %zu %s; the rest were not processed\n", processed,
                 inputs.size(), frames ? "frames" : "inputs");
    return 128 + stop.signal();
  }
  return failed == 0 && !report_failed ? 0 : 1;
}

}  // namespace

ReconstructCommand add_reconstruct(CLI::App& app) {
  auto args = std::make_shared<ReconstructArgs>();
  app.add_option("inputs", args->inputs,
                 "Channel data files, or directories: their *.txt (--model seed), also *.npy, *.mat, *.h5, "
                 "*.hdf5, *.uff (the general models), sorted by name")
      ->required();
  // Required, but checked after --config is read (output = "DIR" there serves).
  app.add_option("-o,--output", args->out_dir, "Output directory (made with the first output if missing, checked before any input is read; required)");
  app.add_option("--backend", args->backend, "Where to beamform: auto (CUDA if a device is there, else CPU), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", args->precision,
                 "CUDA index arithmetic of the seed model: double (bit-exact with the seed) or single "
                 "(float32 with an exactness guard)")
      ->check(CLI::IsMember({"double", "single"}))
      ->capture_default_str();
  app.add_flag("--profile", args->profile,
               "Print a per-stage time summary at the end (median ms per frame: read, analytic "
               "signal (general models), beamform, CUDA-event h2d/kernel/d2h, bmode, write, total (read start to "
               "files in place, waits in the batch's queues included), and "
               "setup: building a beamformer for a new geometry, general models, not counted in beamform) "
               "and the batch throughput, with the start-up before the batch apart");
  app.add_option("--threads", args->options.threads, "CPU threads (0 = all hardware threads)")
      ->transform(in_range(0, 4096))
      ->capture_default_str();
  app.add_option("--writers", args->options.writers,
                 "Frames of a batch given B-mode and written side by side (0 = a quarter of the hardware "
                 "threads, 1 to 4: one writer falls behind a GPU); outputs and reports stay in input order")
      ->transform(in_range(0, 64))
      ->capture_default_str();
  app.add_option("--dynamic-range", args->options.dynamic_range_db, "B-mode dynamic range in dB")
      ->transform(in_range(1.0, 300.0))
      ->capture_default_str();
  app.add_flag("--save-raw", args->options.save_raw,
               "Also write <stem>.npy: the raw beamformed array [lateral][depth] (the seed model: float64, "
               "the seed's out; the general models: complex64 IQ)");
  app.add_option("--report", args->report,
                 "Write a JSON list of every input's status (ok, failed, not_processed), error, "
                 "outputs and stage times to this file (replaced if it exists), also when stopped by Ctrl-C");
  app.add_flag("--overwrite", args->options.overwrite, "Replace existing outputs (otherwise they are kept and the file is reported); without --save-raw an "
               "older raw <stem>.npy (one the older <stem>.json names) is removed, since the new <stem>.json does "
               "not describe it");
  // The defaults are the seed's (128 x 2000): said in the text, not as "=2000", which would read as
  // every model's.
  app.add_option("--channels", args->options.problem.channels, "The seed model: channels (= elements) per file "
                 "(default 128)")
      ->transform(in_range(1, 1024));
  app.add_option("--samples", args->options.problem.samples, "Samples per channel (the seed model: default 2000; the "
                 "general models: required for source.txt, and for a (samples,transmits) axis of --layout, the samples "
                 "of one transmit; for other files, if given, it must match the file's count)")
      ->transform(in_range(1, 1 << 24));
  add_das_options(app, args->das, args->options);
  app.footer(
      "Each input <stem> gives <stem>.png (8-bit B-mode, depth down the rows), <stem>.json (grid in "
      "metres, parameters, backend, stage times) and with --save-raw <stem>.npy. A bad file is "
      "reported and skipped; the exit code is 1 when any file failed. Inputs larger than 32 bytes per "
      "value plus 1 MiB are refused unread. Ctrl-C (or SIGTERM) reads no more inputs and stops "
      "once the frames already read are written, with exit code 130 (143).");
  return {[args] { return run(*args); },
          [args] {
            recon::ReconstructOptions options = options_given(*args);
            check_options(*args, options);
            return options;
          }};
}

}  // namespace usrecon::cli
