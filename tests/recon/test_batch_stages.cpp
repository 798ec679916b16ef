// The writer stage of a batch (recon/pipeline/batch_stages.hpp) driven directly, with jobs that
// only record what happens to them: reports and commits in input order whatever order the
// writes end in, nothing committed past a failed report, a commit failure reported as the
// input's, and a writer ended by an exception that is no std::exception (the stage's own
// failure) releasing every other job instead of leaving the batch waiting.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../recon/pipeline/batch_stages.hpp"

namespace recon = usrecon::recon;
namespace detail = usrecon::recon::detail;

namespace {

struct Job {
  std::size_t index = 0;
  recon::FrameReport report;
  detail::Clock::time_point start;
};

// What the stage did, one entry per call, in the order of the calls (guarded by `mutex`).
struct Log {
  std::mutex mutex;
  std::vector<std::size_t> written, committed, failed, released, reported;
  std::atomic<int> in_turn{0};  // commits and reports under way: never more than one
  std::atomic<bool> overlapped = false;  // set by any writer thread
  void add(std::vector<std::size_t>& list, std::size_t index) {
    std::lock_guard lock(mutex);
    list.push_back(index);
  }
};

// Feeds `n` jobs into `channel` from a thread of its own, then closes it; jobs the channel no
// longer takes are released, as the beamform stage does.
std::jthread feed(detail::Channel<Job>& channel, std::size_t n, Log& log) {
  return std::jthread([&channel, n, &log] {
    for (std::size_t i = 0; i < n; ++i) {
      Job job;
      job.index = i;
      job.report.input = "in" + std::to_string(i);
      job.start = detail::Clock::now();
      if (!channel.push(std::move(job))) {
        log.add(log.released, i);
        for (std::size_t rest = i + 1; rest < n; ++rest) log.add(log.released, rest);
        return;
      }
    }
    channel.close();
  });
}

// run_writers with the given write and done, recording every call in `log`.
template <class Write, class Commit>
void run(int writers, std::size_t n, Log& log, Write write, Commit commit,
         const std::function<void(std::size_t, const recon::FrameReport&)>& done, detail::FirstFailure& failure) {
  detail::Channel<Job> beamformed(2);
  // Named: Reports keeps a reference to it.
  const std::function<void(std::size_t, const recon::FrameReport&)> logged_done =
      [&](std::size_t index, const recon::FrameReport& report) {
        if (log.in_turn.fetch_add(1) != 0) log.overlapped = true;
        log.add(log.reported, index);
        try {
          done(index, report);
        } catch (...) {
          log.in_turn.fetch_sub(1);
          throw;
        }
        log.in_turn.fetch_sub(1);
      };
  detail::Reports reports(logged_done, failure);
  std::jthread feeder = feed(beamformed, n, log);
  detail::run_writers(
      writers, beamformed, reports, failure,
      [&](Job& job) {
        write(job);
        log.add(log.written, job.index);
      },
      [&](Job& job) {
        // The window spans the commit itself: two commits (or a commit and a report) at once set
        // `overlapped`.
        if (log.in_turn.fetch_add(1) != 0) log.overlapped = true;
        try {
          commit(job);
        } catch (...) {
          log.in_turn.fetch_sub(1);
          throw;
        }
        log.add(log.committed, job.index);
        log.in_turn.fetch_sub(1);
      },
      [&](Job& job, const std::exception& e) {
        job.report.ok = false;
        job.report.error = e.what();
        log.add(log.failed, job.index);
      },
      [&](Job& job) { log.add(log.released, job.index); });
  feeder.join();
  detail::release_queued(beamformed, [&](Job& job) { log.add(log.released, job.index); });
}

// Waits (up to 30 s, polling: a starved machine may take long) until some job for which `wanted`
// holds has been written and logged. Returns whether one was.
template <class Wanted>
bool wait_until_written(Log& log, Wanted wanted) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    {
      std::lock_guard lock(log.mutex);
      if (std::any_of(log.written.begin(), log.written.end(), wanted)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::vector<std::size_t> sorted(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Writes of random lengths (0 to 3 ms) on several writers end out of order; commits and reports
// must still come in input order, one at a time, each job's commit before its report. With more
// than one writer, job 0's write ends only once job 1's is logged, so that the writes end out of
// order for certain, not only when the sleeps happen to overlap (on a starved machine the writer
// threads can run one after the other, and did).
TEST(ReconBatchStages, WritersCommitAndReportInInputOrderWhateverOrderTheWritesEndIn) {
  for (const int writers : {1, 2, 4, 7}) {
    SCOPED_TRACE("writers " + std::to_string(writers));
    const std::size_t n = 60;
    Log log;
    detail::FirstFailure failure;
    std::vector<int> sleep_us(n);
    std::mt19937 rng(writers);
    for (int& us : sleep_us) us = std::uniform_int_distribution<int>(0, 3000)(rng);
    std::vector<bool> ok_when_reported(n, false);
    std::vector<bool> committed_when_reported(n, false);
    run(
        writers, n, log,
        [&](Job& job) {
          std::this_thread::sleep_for(std::chrono::microseconds(sleep_us[job.index]));
          if (writers > 1 && job.index == 0) {
            EXPECT_TRUE(wait_until_written(log, [](std::size_t i) { return i == 1; })) << "job 1 was never written";
          }
        },
        // A commit that takes time, so that one outside its turn would overlap another.
        [](Job&) { std::this_thread::sleep_for(std::chrono::microseconds(200)); },
        [&](std::size_t index, const recon::FrameReport& report) {
          ok_when_reported[index] = report.ok;
          std::lock_guard lock(log.mutex);
          committed_when_reported[index] = !log.committed.empty() && log.committed.back() == index;
        },
        failure);
    EXPECT_NO_THROW(failure.rethrow());
    EXPECT_FALSE(log.overlapped) << "two commits or reports at once";
    EXPECT_EQ(log.reported, iota(n));
    EXPECT_EQ(log.committed, iota(n));
    EXPECT_EQ(sorted(log.written), iota(n));
    EXPECT_TRUE(log.released.empty());
    EXPECT_TRUE(std::all_of(ok_when_reported.begin(), ok_when_reported.end(), [](bool b) { return b; }));
    EXPECT_TRUE(std::all_of(committed_when_reported.begin(), committed_when_reported.end(), [](bool b) { return b; }));
    if (writers > 1) {
      EXPECT_NE(log.written, iota(n)) << "the writes never overlapped: the test proves nothing";
    }
  }
}

// done() throws for job 2 once another writer has written a later job: those are released
// (their staged outputs dropped), never committed, and nothing more is written or reported.
// (It waits for that write rather than sleeping: 100 ms were once too few on a starved machine.)
TEST(ReconBatchStages, NothingIsCommittedPastAFailedReport) {
  for (const int writers : {1, 3}) {
    SCOPED_TRACE("writers " + std::to_string(writers));
    const std::size_t n = 20;
    Log log;
    detail::FirstFailure failure;
    run(
        writers, n, log, [](Job&) {}, [](Job&) {},
        [&](std::size_t index, const recon::FrameReport&) {
          if (index == 2) {
            if (writers > 1) {
              EXPECT_TRUE(wait_until_written(log, [](std::size_t i) { return i > 2; })) << "no later job was written";
            }
            throw std::runtime_error("the caller gave up");
          }
        },
        failure);
    EXPECT_THROW(failure.rethrow(), std::runtime_error);
    EXPECT_EQ(log.reported, iota(3));
    EXPECT_EQ(log.committed, iota(3));  // job 2 was committed before its report threw
    if (writers > 1) {
      EXPECT_GT(log.written.size(), 3u) << "no later job was written meanwhile";
    }
    // Every job is accounted for once: reported, or released (by a writer or as never taken).
    std::vector<std::size_t> all = log.reported;
    all.insert(all.end(), log.released.begin(), log.released.end());
    EXPECT_EQ(sorted(all), iota(n));
  }
}

// A commit that fails (a rename refused) fails that input only: it is reported as failed, the
// others as written.
TEST(ReconBatchStages, ACommitFailureIsThatInputsFailure) {
  const std::size_t n = 9;
  Log log;
  detail::FirstFailure failure;
  std::vector<recon::FrameReport> reports(n);
  run(
      3, n, log, [](Job&) {},
      [](Job& job) {
        if (job.index == 4) throw std::runtime_error("rename refused");
      },
      [&](std::size_t index, const recon::FrameReport& report) { reports[index] = report; }, failure);
  EXPECT_NO_THROW(failure.rethrow());
  EXPECT_EQ(log.reported, iota(n));
  EXPECT_EQ(log.failed, std::vector<std::size_t>{4});
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(reports[i].ok, i != 4) << i;
    EXPECT_EQ(reports[i].error, i == 4 ? "rename refused" : "") << i;
  }
}

// A write or commit that throws something other than a std::exception is no input's problem: it
// ends the stage. Its job is released (its output name freed: a Reconstructor reused would
// otherwise refuse that input as a name collision), the other writers stop waiting for their
// turns and release their jobs, the channel is closed (the feeder's push fails, it releases the
// rest), the exception is the batch's failure; every job is reported or released exactly once,
// and the reports are a prefix of the inputs.
TEST(ReconBatchStages, AWriterEndedByAForeignExceptionReleasesTheOthers) {
  for (const bool in_commit : {false, true}) {
    for (const int writers : {1, 4}) {
      SCOPED_TRACE(std::string(in_commit ? "commit" : "write") + " throws, writers " + std::to_string(writers));
      const std::size_t n = 200;
      Log log;
      detail::FirstFailure failure;
      run(
          writers, n, log,
          [&](Job& job) {
            if (!in_commit && job.index == 5) throw 42;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          },
          [&](Job& job) {
            if (in_commit && job.index == 5) throw 42;
          },
          [](std::size_t, const recon::FrameReport&) {}, failure);
      try {
        failure.rethrow();
        ADD_FAILURE() << "the writer's exception was lost";
      } catch (int e) {
        EXPECT_EQ(e, 42);
      }
      // A commit runs at its job's turn, so every job before it was reported; a write runs
      // before its turn, and writers still waiting for theirs release their jobs unreported.
      if (in_commit) {
        EXPECT_EQ(log.reported, iota(5));
      } else {
        EXPECT_LE(log.reported.size(), 5u);
        EXPECT_EQ(log.reported, iota(log.reported.size()));
      }
      EXPECT_EQ(log.committed, log.reported);
      EXPECT_NE(std::find(log.released.begin(), log.released.end(), 5u), log.released.end())
          << "the job whose " << (in_commit ? "commit" : "write") << " threw kept its output name";
      std::vector<std::size_t> all = log.reported;
      all.insert(all.end(), log.released.begin(), log.released.end());
      EXPECT_EQ(sorted(all), iota(n));
      EXPECT_LT(log.written.size(), n - 1) << "the stage went on writing after a writer ended";
    }
  }
}

}  // namespace
