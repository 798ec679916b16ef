// What `usrecon reconstruct` needs around its batch loop: stopping cleanly on Ctrl-C / SIGTERM
// and the --report file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "usrecon/recon/pipeline.hpp"

namespace usrecon::cli {

/// While alive, SIGINT and SIGTERM only raise a flag, which the batch loop checks between
/// frames: the frame in progress is finished (its outputs are written atomically, so nothing is
/// ever half-written) and the loop stops. A second signal gets the default action (the process
/// dies at once; at most a hidden ".<name>.tmp-<pid>-<n>" temporary can then remain, never a
/// truncated output).
/// The handler is not taken down on destruction: the command has then done its work and only
/// returns to exit, and the default action restored there turned a Ctrl-C in those last instants
/// into a death by SIGINT (exit 130) after a run that had written everything and was to exit 0.
/// A first signal after destruction is noted and changes nothing.
class StopOnSignal {
 public:
  StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  /// The signal received (SIGINT or SIGTERM), 0 while none.
  int signal() const;
  bool requested() const { return signal() != 0; }
};

/// The JSON list written by --report: one entry per input (a frame, with --frame all), in batch
/// order, each {"input", "status", "error", "outputs", "timing_s"[, "frame"]} (see
/// recon::to_json), one entry a line.
/// Inputs a stopped batch never reached are listed with status "not_processed". Entries are kept
/// as compact text (a few hundred bytes each), not as JSON trees, so that memory stays flat over
/// long batches.
class BatchReport {
 public:
  /// Refuses (usrecon::Error), before any work, a path that is a directory (or the output
  /// directory, or one above it), lies in a directory that does not exist (but the output
  /// directory, which write() makes if the run has not) or cannot be written, or names one of the
  /// inputs or one of their outputs in out_dir.
  /// `option_warnings` (the options' own, said once for the run) go into every entry, as
  /// "option_warnings", as into every frame's JSON.
  BatchReport(std::filesystem::path path, const std::vector<recon::BatchInput>& inputs,
              const std::filesystem::path& out_dir, std::vector<std::string> option_warnings = {});

  void add(const recon::FrameReport& report);
  /// Writes the file atomically (temp file + rename), listing every input; throws io::OutputError.
  void write() const;

 private:
  std::filesystem::path path_;
  std::vector<recon::BatchInput> inputs_;
  std::vector<std::string> option_warnings_;
  std::string entries_;  // the entries so far, each followed by ",\n"
  std::size_t added_ = 0;
  bool create_directory_ = false;  // the report lies in the output directory, not made yet
};

}  // namespace usrecon::cli
