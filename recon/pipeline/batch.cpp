// A batch of inputs through three overlapping stages. The seed model:
//
//   reader thread:  plan outputs, read and parse input i into a free backend slot
//   calling thread: submit slots to the backend, collect the oldest when all slots are busy
//   writer thread:  B-mode, atomic writes and the done() report of each frame, in input order
//
// The general models (reconstruct_batch_das): the reader also forms the analytic signal, the
// calling thread beamforms one frame at a time on the CPU or CUDA, the writer is the same.
//
// On CUDA the slots are page-locked buffers bound to their own streams, so while the GPU copies
// and beamforms frame i, frame i+1 is parsed on the CPU and frame i-1 is written. On the CPU the
// beamformer uses every core and parsing/writing fill the gaps. Device buffers, tables and
// slots are set up once, when the backend is built.
#include <algorithm>
#include <atomic>
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

// The writer thread's in-order reports: done(index, report) for each job. The first exception
// from done() is kept for the caller (rethrow, once the stages stopped), silences the later
// reports and tells the reader to read no more inputs.
class Reports {
 public:
  explicit Reports(const std::function<void(std::size_t, const FrameReport&)>& done) : done_(done) {}
  void report(FrameReport& report, Clock::time_point start) {
    if (!report.timing_s.contains("total")) report.timing_s["total"] = seconds_since(start);
    if (error_) return;
    try {
      done_(count_++, report);
    } catch (...) {
      error_ = std::current_exception();
      abandoned_ = true;
    }
  }
  bool abandoned() const { return abandoned_; }
  std::size_t count() const { return count_; }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  const std::function<void(std::size_t, const FrameReport&)>& done_;
  std::size_t count_ = 0;           // written by the writer thread only
  std::exception_ptr error_;        // likewise
  std::atomic<bool> abandoned_ = false;  // read by the reader thread
};

}  // namespace

std::size_t Reconstructor::reconstruct_batch(
    const std::vector<fs::path>& inputs,
    const std::function<void(std::size_t, const FrameReport&)>& done,
    const std::function<bool()>& stop) {
  if (options_.model == ReconModel::Seed) return reconstruct_batch_seed(inputs, done, stop);
  std::vector<BatchInput> jobs;
  jobs.reserve(inputs.size());
  for (const fs::path& input : inputs) jobs.push_back({input, 0});
  return reconstruct_batch_das(jobs, done, stop);
}

std::size_t Reconstructor::reconstruct_batch(const std::vector<BatchInput>& inputs,
                                             const std::function<void(std::size_t, const FrameReport&)>& done,
                                             const std::function<bool()>& stop) {
  if (options_.model != ReconModel::Seed) return reconstruct_batch_das(inputs, done, stop);
  if (std::none_of(inputs.begin(), inputs.end(), [](const BatchInput& in) { return in.frame > 0; })) {
    std::vector<fs::path> paths;
    for (const BatchInput& in : inputs) paths.push_back(in.path);
    return reconstruct_batch_seed(paths, done, stop);
  }
  // The seed model has no frames: each such job is reported as failed by reconstruct().
  std::size_t reported = 0;
  for (std::size_t idx = 0; idx < inputs.size() && !stop(); ++idx)
    done(reported++, reconstruct(inputs[idx].path, inputs[idx].frame));
  return reported;
}

// The general models' batch (see the top of this file): the reader thread reads each input and
// forms its analytic signal (prepare_das_frame), this thread beamforms (das_, which keeps its
// beamformer from frame to frame while the problem stays the same), the writer thread does
// B-mode, writing and done().
std::size_t Reconstructor::reconstruct_batch_das(const std::vector<BatchInput>& inputs,
                                                 const std::function<void(std::size_t, const FrameReport&)>& done,
                                                 const std::function<bool()>& stop) {
  struct Job {
    FrameReport report;
    Targets targets;
    PreparedDas prepared;
    DasFrame das;
    Clock::time_point start;
  };
  auto fail = [&](Job& job, const std::exception& e) {
    record_failure(job.report, e);
    if (!job.targets.stem.empty()) release_stem(job.targets.stem);
  };
  // One prepared frame waits for the beamformer (its analytic signal is the largest buffer of a
  // job), at most two images for the writer: memory stays bounded whatever the batch's length.
  Channel<Job> prepared(1), beamformed(2);
  Reports reports(done);

  std::jthread reader([&] {
    for (std::size_t idx = 0; idx < inputs.size() && !reports.abandoned() && !stop(); ++idx) {
      Job job;
      job.report.input = inputs[idx].path;
      job.report.frame = inputs[idx].frame;
      job.start = Clock::now();
      try {
        job.targets = plan_outputs(inputs[idx].path, inputs[idx].frame);
        job.prepared = prepare_das_frame(inputs[idx].path, inputs[idx].frame, job.report);
      } catch (const std::exception& e) {
        fail(job, e);
      }
      prepared.push(std::move(job));
    }
    prepared.close();
  });

  std::jthread writer([&] {
    while (std::optional<Job> job = beamformed.pop()) {
      if (job->report.error.empty()) {
        try {
          Frame frame = finish_das(job->report.input, std::move(job->das), job->report);
          job->report.outputs = write_frame(job->targets, frame, job->report, job->start);
          job->report.ok = true;
        } catch (const std::exception& e) {
          fail(*job, e);
        }
      }
      job->das = DasFrame{};  // free the image before reporting: memory stays flat over a batch
      reports.report(job->report, job->start);
    }
  });

  // Beamform stage, on this thread.
  while (std::optional<Job> job = prepared.pop()) {
    if (job->report.error.empty()) {
      try {
        job->das = das_->beamform(std::move(job->prepared), &job->report.timing_s);
        last_backend_ = job->das.backend.value("name", "?");
      } catch (const std::exception& e) {
        fail(*job, e);
      }
    }
    job->prepared = PreparedDas{};  // the analytic signal is not needed past the beamformer
    beamformed.push(std::move(*job));
  }
  beamformed.close();
  reader.join();
  writer.join();
  reports.rethrow();
  return reports.count();
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

  Reports reports(done);
  std::jthread reader([&] {
    for (std::size_t idx = 0; idx < inputs.size() && !reports.abandoned() && !stop(); ++idx) {
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
      job->frame = Frame{};  // free the image before reporting: memory stays flat over a batch
      reports.report(job->report, job->start);
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
  reports.rethrow();
  return reports.count();
}

}  // namespace usrecon::recon
