// The stages of a batch (batch.cpp) and how they hand frames on: bounded channels, the seed
// backend's slot pool, the first failure of any thread, the in-order reports and the writer
// threads. Internal header; tests/recon/test_batch_stages.cpp drives the writer stage directly.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "stage_clock.hpp"
#include "usrecon/recon/pipeline.hpp"

namespace usrecon::recon::detail {

// A minimal bounded blocking queue: push waits while `capacity` items are queued, so a fast
// stage cannot pile up frames (7 MB each) ahead of a slow one. close() ends it from either side:
// the consumer still drains what is queued, then pop() returns nothing; a producer waiting for
// space (or pushing later) is told false and keeps its item, so a stage that ends early never
// leaves another waiting for ever.
template <class T>
class Channel {
 public:
  explicit Channel(std::size_t capacity) : capacity_(capacity) {}
  /// Moves `item` in, or leaves it untouched and returns false once the channel is closed.
  bool push(T&& item) {
    {
      std::unique_lock lock(mutex_);
      space_.wait(lock, [&] { return items_.size() < capacity_ || closed_; });
      if (closed_) return false;
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
    return true;
  }
  /// Waits until a push would not wait (a producer that holds nothing while it waits: memory
  /// then holds at most `capacity` queued items plus the one being made). False once closed.
  bool wait_for_space() {
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return items_.size() < capacity_ || closed_; });
    return !closed_;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
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

// The seed backend's free slots: the reader takes one per frame, the beamform stage gives it back
// after collecting. close() makes a waiting take() give up.
class SlotPool {
 public:
  explicit SlotPool(int slots) {
    for (int s = 0; s < slots; ++s) free_.push_back(s);
  }
  /// Waits for a free slot; false once closed.
  bool take(int& slot) {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return !free_.empty() || closed_; });
    if (closed_) return false;
    slot = free_.front();
    free_.pop_front();
    return true;
  }
  void give(int slot) {
    if (slot < 0) return;
    {
      std::lock_guard lock(mutex_);
      free_.push_back(slot);
    }
    freed_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    freed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  std::deque<int> free_;
  bool closed_ = false;
};

// Closes the channels when the scope ends, also by an exception: the stages' threads then finish
// (jthread joins them) instead of waiting for ever on a stage that is gone.
template <class... Channels>
struct CloseOnExit {
  std::tuple<Channels&...> channels;
  ~CloseOnExit() {
    std::apply([](auto&... c) { (c.close(), ...); }, channels);
  }
};

// The first failure of a batch's threads (a stage that ended early, or done() throwing), kept
// for the caller: rethrown once every stage has ended. Later failures are consequences of the
// first (the stages shutting down) and are dropped.
class FirstFailure {
 public:
  void record(std::exception_ptr e) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(e);
  }
  void rethrow() {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

// The writers' in-order reports: done(index, report) for each job. Once done() throws
// (its exception goes to `failure`) the batch is abandoned: the later reports are silenced, the
// reader reads no more inputs, the beamform stage and the writers drop what is still in the
// stages (nothing more is computed or written, as a sequential run would have stopped there).
class Reports {
 public:
  Reports(const std::function<void(std::size_t, const FrameReport&)>& done, FirstFailure& failure)
      : done_(done), failure_(failure) {}
  void report(FrameReport& report, Clock::time_point start) {
    if (!report.timing_s.contains("total")) report.timing_s["total"] = seconds_since(start);
    if (abandoned_) return;
    try {
      done_(count_++, report);
    } catch (...) {
      failure_.record(std::current_exception());
      abandoned_ = true;
    }
  }
  bool abandoned() const { return abandoned_; }
  std::size_t count() const { return count_; }  // after the writers have ended

 private:
  const std::function<void(std::size_t, const FrameReport&)>& done_;
  FirstFailure& failure_;
  std::size_t count_ = 0;                // written by the writer whose turn it is (run_writers)
  std::atomic<bool> abandoned_ = false;  // read by every stage
};

// Starts a batch stage's thread. A thread the system will not start (EAGAIN: out of threads or
// memory) ends the batch with a message that says so; the bare std::system_error said only
// "Resource temporarily unavailable".
template <class Body>
std::jthread start_stage_thread(const char* stage, Body body) {
  try {
    return std::jthread(std::move(body));
  } catch (const std::system_error& e) {
    throw Error(std::string("could not start the batch's ") + stage + " thread: " + e.what());
  }
}

// Runs a stage on its thread: an exception that ends it goes to `failure`; `out` is closed at the
// end either way, so that the next stage ends.
template <class Out, class Body>
void run_stage(FirstFailure& failure, Out& out, Body body) {
  try {
    body();
  } catch (...) {
    failure.record(std::current_exception());
  }
  out.close();
}

// The writer stage of a batch, on `writers` threads (Reconstructor::writer_threads): each takes
// the next beamformed job and writes it (write(job): B-mode and the outputs under hidden staged
// names; the job's image is freed once written, so memory stays flat over a batch; a failure is
// recorded by fail), then waits for its turn, puts its outputs in place (commit(job), renames;
// a failure is recorded by fail) and reports it: reports stay in input order whatever order the
// writes end in, and so do the outputs' appearances. Once the batch is abandoned nothing more is
// written, and a job written meanwhile by another writer (a sequential run would not have
// written it) is never committed: release(job) drops its staged outputs and frees its output
// name, so an existing file of that name (--overwrite) keeps its contents. Closing `beamformed`
// at the end makes a beamform stage still pushing give up.
//
// write, commit and fail report an input's problems as std::exception. Anything else a writer
// throws ends the stage: its job is released, the other writers stop waiting for turns, release
// their jobs and end, `beamformed` is closed, and the exception is recorded in `failure`.
template <class Job, class Write, class Commit, class Fail, class Release>
void run_writers(int writers, Channel<Job>& beamformed, Reports& reports, FirstFailure& failure, Write write,
                 Commit commit, Fail fail, Release release) {
  std::mutex take_mutex, turn_mutex;
  std::condition_variable turn;
  std::size_t next_ticket = 0, next_report = 0;
  std::atomic<bool> broken = false;  // set under turn_mutex (the turn waits read it there)
  auto writer = [&] {
    for (;;) {
      std::optional<Job> job;
      std::size_t ticket = 0;
      {
        std::lock_guard lock(take_mutex);  // jobs and tickets in the same order
        job = beamformed.pop();
        if (!job) return;
        ticket = next_ticket++;
      }
      bool written = false;
      if (!reports.abandoned() && !broken && job->report.error.empty()) {
        try {
          write(*job);
          written = true;
        } catch (const std::exception& e) {
          fail(*job, e);
        } catch (...) {  // ends the stage (below); the job's output name is freed first
          release(*job);
          throw;
        }
      }
      std::unique_lock lock(turn_mutex);
      turn.wait(lock, [&] { return next_report == ticket || broken; });
      if (broken) {
        release(*job);
        return;
      }
      if (reports.abandoned()) {
        release(*job);  // its staged outputs are dropped, never put in place
      } else {
        if (written) {
          try {
            commit(*job);
            job->report.ok = true;
          } catch (const std::exception& e) {
            fail(*job, e);
          } catch (...) {
            release(*job);
            throw;
          }
        }
        reports.report(job->report, job->start);
      }
      ++next_report;
      lock.unlock();
      turn.notify_all();
    }
  };
  // A writer ended by an exception: the others stop waiting for turns, and the beamform stage
  // for room.
  auto break_off = [&] {
    {
      std::lock_guard lock(turn_mutex);
      broken = true;
    }
    turn.notify_all();
    beamformed.close();
  };
  run_stage(failure, beamformed, [&] {
    std::vector<std::jthread> others;
    // A writer thread the system will not start (EAGAIN) leaves the batch fewer writers, not
    // failed: each writer takes the next job, and turns go by job, not by writer.
    try {
      for (int w = 1; w < writers; ++w) {
        others.emplace_back([&] {
          try {
            writer();
          } catch (...) {
            failure.record(std::current_exception());
            break_off();
          }
        });
      }
    } catch (const std::system_error&) {
    }
    try {
      writer();
    } catch (...) {
      break_off();
      throw;  // to run_stage, which records it
    }
  });  // the other writers are joined here
}

// After the threads have ended: jobs still queued in a closed channel (the batch ended early)
// free their output names.
template <class Job, class Release>
void release_queued(Channel<Job>& channel, Release release) {
  while (std::optional<Job> job = channel.pop()) release(*job);
}

}  // namespace usrecon::recon::detail
