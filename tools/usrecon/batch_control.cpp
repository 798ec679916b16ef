#include "batch_control.hpp"

#include <signal.h>

#include <atomic>
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

struct sigaction previous_int {}, previous_term {};

}  // namespace

StopOnSignal::StopOnSignal() {
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads, writes and fsync carry on; only the flag changes
  ::sigaction(SIGINT, &action, &previous_int);
  ::sigaction(SIGTERM, &action, &previous_term);
}

StopOnSignal::~StopOnSignal() {
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
}

int StopOnSignal::signal() const { return received_signal; }

BatchReport::BatchReport(fs::path path, const std::vector<recon::BatchInput>& inputs, const fs::path& out_dir)
    : path_(std::move(path)), inputs_(inputs) {
  std::error_code ec;
  if (fs::is_directory(path_, ec))
    throw Error("--report " + path_.string() + " is a directory; give a file name");
  // Checked now, not after the batch: a report that cannot be written would fail the run at its end.
  // The output directory itself may not exist yet (the run makes it).
  const fs::path directory = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  if (!fs::is_directory(directory, ec) && comparable_path(directory) != comparable_path(out_dir))
    throw Error("--report " + path_.string() + ": its directory " + directory.string() + " does not exist");
  for (const recon::BatchInput& input : inputs_) {
    if (fs::exists(path_, ec) && fs::exists(input.path, ec) && fs::equivalent(path_, input.path, ec))
      throw Error("--report " + path_.string() + " is one of the inputs; it would be overwritten");
  }
  // Nor one of this run's outputs (the report is written last, over it).
  const fs::path report = comparable_path(path_);
  const fs::path outputs = comparable_path(out_dir);
  if (report.parent_path() == outputs) {
    const std::string name = report.filename().string();
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
  entries_ += recon::to_json(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
    text += entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += ",\n";
  }
  if (text.size() > 2) text.resize(text.size() - 2);  // the last ",\n"
  text += "\n]\n";
  io::write_file_atomic(path_, text);
}

}  // namespace usrecon::cli
