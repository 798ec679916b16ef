// A batch of inputs through three overlapping stages. The seed model:
//
//   reader thread:  plan outputs, read and parse input i into a free backend slot
//   calling thread: submit slots to the backend, collect the oldest when all slots are busy
//   writer threads: B-mode and staged writes of frames side by side (writer_threads()); at each
//                   frame's turn, in input order, its outputs renamed into place and done()
//
// The general models (reconstruct_batch_das): the reader also forms the analytic signal, the
// calling thread beamforms one frame at a time on the CPU or CUDA, the writers are the same.
//
// On CUDA the slots are page-locked buffers bound to their own streams, so while the GPU copies
// and beamforms frame i, frame i+1 is parsed on the CPU and frame i-1 is written. On the CPU the
// beamformer uses every core and parsing/writing fill the gaps. The seed model's device buffers,
// tables and slots are set up once, when the backend is built; a general model's beamformer when
// the first frame comes, again only when the geometry changes.
//
// stop() is asked on the reader thread, done() is called on the writer thread whose frame is
// next in input order, one call at a time. A failure of a
// thread itself (not of an input) closes the channels, so that no stage waits for ever, and is
// rethrown to the caller once all three have ended.
#include <algorithm>
#include <deque>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "batch_stages.hpp"
#include "stage_clock.hpp"
#include "usrecon/kernels/parallel.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {

// The stages' parts (batch_stages.hpp).
using detail::Channel;
using detail::Clock;
using detail::CloseOnExit;
using detail::FirstFailure;
using detail::Reports;
using detail::SlotPool;
using detail::release_queued;
using detail::run_stage;
using detail::run_writers;
using detail::seconds_since;
using detail::start_stage_thread;

// Holds the batch's inputs in Reconstructor::batch_inputs_ while the batch runs: plan_outputs
// then refuses an output that would replace any of them, not only its own input.
class BatchInputsGuard {
 public:
  template <class Inputs, class PathOf>
  BatchInputsGuard(Reconstructor& owner, const Inputs& inputs, PathOf path_of) : owner_(owner) {
    for (const auto& input : inputs)
      if (const auto id = detail::file_identity(path_of(input))) owner_.batch_inputs_.insert(*id);
  }
  ~BatchInputsGuard() { owner_.batch_inputs_.clear(); }
  BatchInputsGuard(const BatchInputsGuard&) = delete;
  BatchInputsGuard& operator=(const BatchInputsGuard&) = delete;

 private:
  Reconstructor& owner_;
};

int Reconstructor::writer_threads() const {
  if (options_.writers > 0) return options_.writers;
  return std::clamp(kernels::hardware_threads() / 4, 1, 4);
}

int Reconstructor::bmode_threads(int writers) const {
  const int threads = options_.threads > 0 ? options_.threads : kernels::hardware_threads();
  return std::max(1, threads / std::max(1, writers));
}

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
// beamformer from frame to frame while the problem stays the same), the writer threads do
// B-mode, writing and done().
std::size_t Reconstructor::reconstruct_batch_das(const std::vector<BatchInput>& inputs,
                                                 const std::function<void(std::size_t, const FrameReport&)>& done,
                                                 const std::function<bool()>& stop) {
  const BatchInputsGuard guard(*this, inputs, [](const BatchInput& in) { return in.path; });
  struct Job {
    FrameReport report;
    Targets targets;
    PreparedDas prepared;
    DasFrame das;
    std::vector<io::StagedFile> staged;  // outputs written, put in place at the frame's turn
    Clock::time_point start;
  };
  auto fail = [&](Job& job, const std::exception& e) {
    record_failure(job.report, e);
    if (!job.targets.stem.empty()) release_stem(job.targets.stem);
  };
  // A job that will not be finished drops its staged outputs and frees its output name (a
  // failed one already did).
  auto release = [&](Job& job) {
    job.staged.clear();
    if (job.report.error.empty() && !job.targets.stem.empty()) release_stem(job.targets.stem);
  };
  // The reader prepares a frame only when the queue has room: at most one prepared frame waits
  // beside the one being beamformed (an analytic signal is a job's largest buffer), at most two
  // images wait for the writer, whatever the batch's length.
  Channel<Job> prepared(1), beamformed(2);
  FirstFailure failure;
  Reports reports(done, failure);
  const int writers = writer_threads();
  std::jthread reader, writer;
  // Declared after the threads, so destroyed before them: on any exit (an exception too) the
  // channels are closed before the threads are joined, and none of them waits for ever.
  const CloseOnExit<Channel<Job>, Channel<Job>> close_on_exit{{prepared, beamformed}};

  reader = start_stage_thread("reader", [&] {
    run_stage(failure, prepared, [&] {
      for (std::size_t idx = 0; idx < inputs.size(); ++idx) {
        // Asked after the wait for room, just before reading: a Ctrl-C or a failed report during
        // the wait reads nothing more.
        if (!prepared.wait_for_space() || reports.abandoned() || stop()) break;
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
        if (!prepared.push(std::move(job))) {  // not taken: the batch is ending
          release(job);
          break;
        }
      }
    });
  });

  writer = start_stage_thread("writer", [&] {
    run_writers(
        writers, beamformed, reports, failure,
        [&](Job& job) {
          Frame frame = finish_das(job.report.input, std::move(job.das), job.report, bmode_threads(writers));
          job.staged = stage_outputs(job.targets, frame, job.report, job.start);
        },
        [](Job& job) { commit_outputs(job.staged, job.targets, job.report, job.start); }, fail, release);
  });

  // Beamform stage, on this thread.
  while (std::optional<Job> job = prepared.pop()) {
    if (reports.abandoned()) {  // nothing more is computed
      release(*job);
      continue;
    }
    if (job->report.error.empty()) {
      try {
        job->das = das_->beamform(std::move(job->prepared), &job->report.timing_s);
        last_backend_ = job->das.backend.value("name", "?");
      } catch (const std::exception& e) {
        fail(*job, e);
      }
    }
    job->prepared = PreparedDas{};  // the analytic signal is not needed past the beamformer
    if (!beamformed.push(std::move(*job))) {  // not taken: the writer is gone
      release(*job);
      break;
    }
  }
  prepared.close();
  beamformed.close();
  reader.join();
  writer.join();
  release_queued(prepared, release);
  release_queued(beamformed, release);
  failure.rethrow();
  return reports.count();
}

std::size_t Reconstructor::reconstruct_batch_seed(
    const std::vector<fs::path>& inputs,
    const std::function<void(std::size_t, const FrameReport&)>& done,
    const std::function<bool()>& stop) {
  const BatchInputsGuard guard(*this, inputs, [](const fs::path& path) { return path; });
  struct Job {
    std::size_t index = 0;
    int slot = -1;  // backend slot holding the parsed frame; -1 once released or never taken
    FrameReport report;
    Targets targets;
    Frame frame;
    std::vector<io::StagedFile> staged;  // outputs written, put in place at the frame's turn
    Clock::time_point start;
    double submit_s = 0.0;
  };
  const seed::Problem& p = options_.problem;
  const int n_slots = backend_->slots();

  // Free slots, handed to the reader; the beamform stage gives each back after collect.
  SlotPool slots(n_slots);

  // Parsed frames are bounded by the slots already; at most two images wait for the writer.
  Channel<Job> parsed(std::size_t(n_slots) + 1), beamformed(2);
  auto fail = [&](Job& job, const std::exception& e) {
    record_failure(job.report, e);
    if (!job.targets.stem.empty()) release_stem(job.targets.stem);
  };
  // A job that will not be finished drops its staged outputs and frees its output name (a
  // failed one already did).
  auto release = [&](Job& job) {
    job.staged.clear();
    if (job.report.error.empty() && !job.targets.stem.empty()) release_stem(job.targets.stem);
  };

  FirstFailure failure;
  Reports reports(done, failure);
  const int writers = writer_threads();
  std::jthread reader, writer;
  // Declared after the threads, so destroyed before them: on any exit (an exception too) the
  // channels and the slot pool are closed before the threads are joined.
  const CloseOnExit<Channel<Job>, Channel<Job>, SlotPool> close_on_exit{{parsed, beamformed, slots}};

  reader = start_stage_thread("reader", [&] {
    run_stage(failure, parsed, [&] {
      for (std::size_t idx = 0; idx < inputs.size(); ++idx) {
        Job job;
        if (!slots.take(job.slot)) break;  // the pool was closed: the batch is ending
        // Asked after the wait for a slot, just before reading (see reconstruct_batch_das).
        if (reports.abandoned() || stop()) {
          slots.give(job.slot);
          break;
        }
        job.index = idx;
        job.report.input = inputs[idx];
        job.start = Clock::now();
        try {
          job.targets = plan_outputs(inputs[idx], 0);
          read_seed(inputs[idx], [&] { return backend_->input(job.slot); }, job.report);
        } catch (const std::exception& e) {
          fail(job, e);
          slots.give(job.slot);
          job.slot = -1;
        }
        if (!parsed.push(std::move(job))) {  // not taken: the batch is ending
          release(job);
          break;
        }
      }
    });
  });

  writer = start_stage_thread("writer", [&] {
    run_writers(
        writers, beamformed, reports, failure,
        [&](Job& job) {
          Frame frame = std::move(job.frame);
          finish_seed(job.report.input, frame, job.report, bmode_threads(writers));
          job.staged = stage_outputs(job.targets, frame, job.report, job.start);
        },
        [](Job& job) { commit_outputs(job.staged, job.targets, job.report, job.start); }, fail, release);
  });

  // Beamform stage, on this thread: keep up to n_slots frames in flight, collect the oldest.
  std::deque<Job> in_flight;
  // A frame that will not be collected: its slot freed without computing it (on the CPU the
  // beamforming happens in collect), then given back.
  auto discard = [&](Job& job) {
    try {
      backend_->discard(job.slot);
    } catch (...) {  // the batch's own error, if any, is the one reported
    }
    slots.give(job.slot);
    job.slot = -1;
  };
  // Collects the oldest frame in flight and hands it to the writer; false once the writer is gone.
  // Once the batch is abandoned (a failed report) nothing more is computed: the frame is dropped.
  auto collect_oldest = [&] {
    Job job = std::move(in_flight.front());
    in_flight.pop_front();
    if (reports.abandoned()) {
      discard(job);
      release(job);
      return true;
    }
    try {
      job.frame.raw_real.resize(std::size_t(p.nx) * p.nz);
      const auto t = Clock::now();
      backend_->collect(job.slot, job.frame.raw_real);
      // Host time spent on this frame in the backend (submit + collect): on the CPU the
      // beamforming itself; on CUDA mostly waiting for the device, whose own stage times come
      // from CUDA events (h2d, kernel, d2h).
      job.report.timing_s["beamform"] = job.submit_s + seconds_since(t);
      // Named first: a range-for over a temporary's items() would outlive the temporary.
      const nlohmann::json device_times = backend_->last_timing_s();
      for (const auto& [stage, seconds] : device_times.items()) job.report.timing_s[stage] = seconds;
    } catch (const std::exception& e) {
      fail(job, e);
    }
    // A failure before collect waited (the image's allocation) leaves the slot busy on CUDA:
    // discard waits for it, so its pinned input is not refilled under a running copy.
    discard(job);
    if (beamformed.push(std::move(job))) return true;
    release(job);  // not taken: the writer is gone
    return false;
  };
  auto collect_all = [&] {
    while (!in_flight.empty())
      if (!collect_oldest()) return false;
    return true;
  };
  // On an early end, frames still on the backend are discarded (waited for on CUDA, never
  // computed on the CPU), so that no slot is left busy for a later batch of this Reconstructor.
  auto drain_in_flight = [&] {
    for (Job& job : in_flight) {
      discard(job);
      release(job);
    }
    in_flight.clear();
  };
  try {
    bool writing = true;
    while (writing) {
      std::optional<Job> job = parsed.pop();
      if (!job) break;
      if (reports.abandoned()) {  // nothing more is computed
        slots.give(job->slot);
        release(*job);
        continue;
      }
      if (!job->report.error.empty()) {
        // Keep input order: frames still on the device are reported first.
        writing = collect_all();
        if (writing && !beamformed.push(std::move(*job))) writing = false;
        continue;
      }
      try {
        const auto t = Clock::now();
        backend_->submit(job->slot);
        job->submit_s = seconds_since(t);
      } catch (const std::exception& e) {
        fail(*job, e);
        slots.give(job->slot);
        job->slot = -1;
        writing = collect_all();
        if (writing && !beamformed.push(std::move(*job))) writing = false;
        continue;
      }
      in_flight.push_back(std::move(*job));
      if (int(in_flight.size()) >= n_slots) writing = collect_oldest();
    }
    if (writing) collect_all();
  } catch (...) {
    drain_in_flight();
    throw;
  }
  // Closed before the joins: when the writers went away (`writing` false) the reader may still be
  // reading, or waiting in slots.take() for a slot that only close() gives it.
  slots.close();
  parsed.close();
  drain_in_flight();  // empty unless the writer went away
  beamformed.close();
  reader.join();
  writer.join();
  release_queued(parsed, release);
  release_queued(beamformed, release);
  failure.rethrow();
  return reports.count();
}

}  // namespace usrecon::recon
