#include "batch_control.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <string>
#include <system_error>

#include "same_file.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/kernels/common.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

// Written by the handler on whichever thread took the signal, read by the batch's reader thread:
// an atomic (lock-free, so safe in a handler), not a volatile sig_atomic_t, which orders nothing
// between threads.
std::atomic<int> received_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal_number) {
  if (received_signal != 0) {
    // Second signal: the user insists. Default action, i.e. die now.
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  received_signal = signal_number;
}

}  // namespace

StopOnSignal::StopOnSignal() {
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads, writes and fsync carry on; only the flag changes
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int StopOnSignal::signal() const { return received_signal; }

BatchReport::BatchReport(fs::path path, const std::vector<recon::BatchInput>& inputs, const fs::path& out_dir,
                         std::vector<std::string> option_warnings)
    : path_(std::move(path)), inputs_(inputs), option_warnings_(std::move(option_warnings)) {
  std::error_code ec;
  // Checked now, not after the batch: a report that cannot be written would fail the run at its end.
  // The output directory may not exist yet (the run makes it): the report may be neither it nor
  // one of the directories above it, and may lie in it.
  const fs::path report_path = comparable_path(path_), outputs_path = comparable_path(out_dir);
  if (fs::is_directory(path_, ec) || !path_.has_filename())
    throw Error("--report " + path_.string() + " is a directory; give a file name");
  if (std::mismatch(report_path.begin(), report_path.end(), outputs_path.begin(), outputs_path.end()).first ==
      report_path.end())
    throw Error("--report " + path_.string() + " is the output directory (-o " + out_dir.string() +
                ") or one above it; give the report a file name");
  const fs::path directory = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  create_directory_ = !fs::is_directory(directory, ec) && comparable_path(directory) == outputs_path;
  if (!fs::is_directory(directory, ec) && !create_directory_)
    throw Error("--report " + path_.string() + ": its directory " + directory.string() + " does not exist");
  if (!create_directory_ && ::access(directory.c_str(), W_OK | X_OK) != 0)
    throw Error("--report " + path_.string() + ": its directory " + directory.string() +
                " cannot be written: " + std::error_code(errno, std::generic_category()).message());
  for (const recon::BatchInput& input : inputs_) {
    if (fs::exists(path_, ec) && fs::exists(input.path, ec) && fs::equivalent(path_, input.path, ec))
      throw Error("--report " + path_.string() + " is one of the inputs; it would be overwritten");
  }
  // Nor one of this run's outputs (the report is written last, over it).
  if (report_path.parent_path() == outputs_path) {
    const std::string name = report_path.filename().string();
    for (const recon::BatchInput& input : inputs_) {
      const std::string stem = recon::output_stem(input.path, input.frame);
      for (const char* ext : {".png", ".json", ".npy"})
        if (name == stem + ext)
          throw Error("--report " + path_.string() + " is the output " + name + " of " + input.path.string() +
                      "; it would replace it");
    }
  }
}

void BatchReport::add(const recon::FrameReport& report) {
  nlohmann::json entry = recon::to_json(report);
  if (!option_warnings_.empty()) entry["option_warnings"] = option_warnings_;
  entries_ += entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  entries_ += ",\n";
  ++added_;
}

void BatchReport::write() const {
  std::string text = "[\n" + entries_;
  for (std::size_t idx = added_; idx < inputs_.size(); ++idx) {
    nlohmann::json entry = {{"input", inputs_[idx].path.string()},
                            {"status", "not_processed"},
                            {"error", nullptr},
                            {"outputs", nlohmann::json::array()},
                            {"timing_s", nlohmann::json::object()}};
    if (inputs_[idx].frame > 0) entry["frame"] = inputs_[idx].frame;
    if (!option_warnings_.empty()) entry["option_warnings"] = option_warnings_;
    text += entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += ",\n";
  }
  if (text.size() > 2) text.resize(text.size() - 2);  // the last ",\n"
  text += "\n]\n";
  // In the output directory, which a run that failed before making it has not made.
  std::error_code ec;
  if (create_directory_ && !fs::is_directory(path_.parent_path(), ec)) fs::create_directories(path_.parent_path(), ec);
  io::write_file_atomic(path_, text);
}

}  // namespace usrecon::cli
