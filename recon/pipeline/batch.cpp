// A batch of inputs through three overlapping stages (seed model):
//
//   reader thread:  plan outputs, read and parse input i into a free backend slot
//   calling thread: submit slots to the backend, collect the oldest when all slots are busy
//   writer thread:  B-mode, atomic writes and the done() report of each frame, in input order
//
// On CUDA the slots are page-locked buffers bound to their own streams, so while the GPU copies
// and beamforms frame i, frame i+1 is parsed on the CPU and frame i-1 is written. On the CPU the
// beamformer uses every core and parsing/writing fill the gaps. Device buffers, tables and
// slots are set up once, when the backend is built.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <optional>
#include <thread>

#include "stage_clock.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

using detail::Clock;
using detail::seconds_since;

// A minimal bounded blocking queue: push waits while `capacity` items are queued, so a fast
// stage cannot pile up frames (7 MB each) ahead of a slow one; close() wakes the consumer once
// it is drained.
template <class T>
class Channel {
 public:
  explicit Channel(std::size_t capacity) : capacity_(capacity) {}
  void push(T item) {
    {
      std::unique_lock lock(mutex_);
      space_.wait(lock, [&] { return items_.size() < capacity_; });
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    lock.unlock();
    space_.notify_one();
    return item;
  }

 private:
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace

std::size_t Reconstructor::reconstruct_batch(
    const std::vector<fs::path>& inputs,
    const std::function<void(std::size_t, const FrameReport&)>& done,
    const std::function<bool()>& stop) {
  if (options_.model == ReconModel::Seed) return reconstruct_batch_seed(inputs, done, stop);
  std::size_t reported = 0;
  for (std::size_t idx = 0; idx < inputs.size() && !stop(); ++idx) done(reported++, reconstruct(inputs[idx]));
  return reported;
}

std::size_t Reconstructor::reconstruct_batch(const std::vector<BatchInput>& inputs,
                                             const std::function<void(std::size_t, const FrameReport&)>& done,
                                             const std::function<bool()>& stop) {
  // Whole files only: the batch above (for the seed model, its overlapped stages).
  if (std::none_of(inputs.begin(), inputs.end(), [](const BatchInput& in) { return in.frame > 0; })) {
    std::vector<fs::path> paths;
    for (const BatchInput& in : inputs) paths.push_back(in.path);
    return reconstruct_batch(paths, done, stop);
  }
  std::size_t reported = 0;
  for (std::size_t idx = 0; idx < inputs.size() && !stop(); ++idx)
    done(reported++, reconstruct(inputs[idx].path, inputs[idx].frame));
  return reported;
}

std::size_t Reconstructor::reconstruct_batch_seed(
    const std::vector<fs::path>& inputs,
    const std::function<void(std::size_t, const FrameReport&)>& done,
    const std::function<bool()>& stop) {
  struct Job {
    std::size_t index = 0;
    int slot = -1;  // backend slot holding the parsed frame; -1 once released or never taken
    FrameReport report;
    Targets targets;
    Frame frame;
    Clock::time_point start;
    double submit_s = 0.0;
  };
  const seed::Problem& p = options_.problem;
  const int n_slots = backend_->slots();

  // Free slots, handed to the reader; the beamform stage gives each back after collect.
  std::mutex slot_mutex;
  std::condition_variable slot_freed;
  std::deque<int> free_slots;
  for (int s = 0; s < n_slots; ++s) free_slots.push_back(s);
  auto release_slot = [&](int slot) {
    {
      std::lock_guard lock(slot_mutex);
      free_slots.push_back(slot);
    }
    slot_freed.notify_one();
  };

  // Parsed frames are bounded by the slots already; at most two images wait for the writer.
  Channel<Job> parsed(std::size_t(n_slots) + 1), beamformed(2);
  auto fail = [&](Job& job, const std::exception& e) {
    record_failure(job.report, e);
    if (!job.targets.stem.empty()) release_stem(job.targets.stem);
  };

  std::jthread reader([&] {
    for (std::size_t idx = 0; idx < inputs.size() && !stop(); ++idx) {
      Job job;
      job.index = idx;
      job.report.input = inputs[idx];
      job.start = Clock::now();
      {
        std::unique_lock lock(slot_mutex);
        slot_freed.wait(lock, [&] { return !free_slots.empty(); });
        job.slot = free_slots.front();
        free_slots.pop_front();
      }
      try {
        job.targets = plan_outputs(inputs[idx], 0);
        read_seed(inputs[idx], backend_->input(job.slot), job.report);
      } catch (const std::exception& e) {
        fail(job, e);
        release_slot(job.slot);
        job.slot = -1;
      }
      parsed.push(std::move(job));
    }
    parsed.close();
  });

  std::size_t reported = 0;
  std::exception_ptr done_error;  // an exception from done(), rethrown once the stages stopped
  std::jthread writer([&] {
    while (std::optional<Job> job = beamformed.pop()) {
      if (job->report.error.empty()) {
        try {
          finish_seed(job->report.input, job->frame, job->report);
          job->report.outputs = write_frame(job->targets, job->frame, job->report, job->start);
          job->report.ok = true;
        } catch (const std::exception& e) {
          fail(*job, e);
        }
      }
      if (!job->report.timing_s.contains("total"))
        job->report.timing_s["total"] = seconds_since(job->start);
      job->frame = Frame{};  // free the image before reporting: memory stays flat over a batch
      if (done_error) continue;
      try {
        done(reported++, job->report);
      } catch (...) {
        done_error = std::current_exception();
      }
    }
  });

  // Beamform stage, on this thread: keep up to n_slots frames in flight, collect the oldest.
  std::deque<Job> in_flight;
  auto collect_oldest = [&] {
    Job job = std::move(in_flight.front());
    in_flight.pop_front();
    try {
      job.frame.raw_real.resize(std::size_t(p.nx) * p.nz);
      const auto t = Clock::now();
      backend_->collect(job.slot, job.frame.raw_real);
      // Host time spent on this frame in the backend (submit + collect): on the CPU the
      // beamforming itself; on CUDA mostly waiting for the device, whose own stage times come
      // from CUDA events (h2d, kernel, d2h).
      job.report.timing_s["beamform"] =
          job.submit_s + seconds_since(t);
      // Named first: a range-for over a temporary's items() would outlive the temporary.
      const nlohmann::json device_times = backend_->last_timing_s();
      for (const auto& [stage, seconds] : device_times.items()) job.report.timing_s[stage] = seconds;
    } catch (const std::exception& e) {
      fail(job, e);
    }
    release_slot(job.slot);
    job.slot = -1;
    beamformed.push(std::move(job));
  };
  while (std::optional<Job> job = parsed.pop()) {
    if (!job->report.error.empty()) {
      // Keep input order: frames still on the device are reported first.
      while (!in_flight.empty()) collect_oldest();
      beamformed.push(std::move(*job));
      continue;
    }
    try {
      const auto t = Clock::now();
      backend_->submit(job->slot);
      job->submit_s = seconds_since(t);
    } catch (const std::exception& e) {
      fail(*job, e);
      release_slot(job->slot);
      job->slot = -1;
      while (!in_flight.empty()) collect_oldest();
      beamformed.push(std::move(*job));
      continue;
    }
    in_flight.push_back(std::move(*job));
    if (int(in_flight.size()) >= n_slots) collect_oldest();
  }
  while (!in_flight.empty()) collect_oldest();
  beamformed.close();
  reader.join();
  writer.join();
  if (done_error) std::rethrow_exception(done_error);
  return reported;
}

}  // namespace usrecon::recon
