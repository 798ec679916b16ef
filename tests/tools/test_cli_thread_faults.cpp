// Threads the system will not start (pthread_create's EAGAIN, as when a user's thread limit or
// memory runs out), injected by a preloaded pthread_create (tests/tools/preload/
// fail_thread_start.cpp) at every start number in turn:
// - a worker or extra writer thread that does not start costs speed only: the outputs are byte
//   for byte those of a run without faults;
// - a batch stage's thread that does not start ends the run with exit 1 and a message that says
//   so; the --report still lists every input, as not processed, and no output is written.
// Both the general models' batch (plane wave, NPY in) and the seed's (source.txt in) are swept.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../test_support.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

std::string bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class CliThreadFaults : public usrecon::testing::CliTempDir {
 protected:
  struct Case {
    std::string reconstruct;          // the command's arguments after `reconstruct`, without -o
    std::vector<std::string> stems;   // one per input, in input order
  };

  // Runs `reconstruct ... -o out --report report.json` with FAULT=N set (and OpenBLAS on one
  // thread, so that its start-up starts none and the numbering begins at usrecon's own).
  usrecon::testing::CommandResult run_with(const Case& c, const std::string& fault, const fs::path& out) {
    fs::remove_all(out);
    fs::remove(dir_ / "report.json");
    return run_command("OPENBLAS_NUM_THREADS=1 " + fault + " " + usrecon::testing::preload(USRECON_FAIL_THREAD_START_SO) +
                       exe_ + " reconstruct " + c.reconstruct + " --save-raw -o " + quote(out) + " --report " +
                       quote(dir_ / "report.json"));
  }

  // Sweeps the start numbers, in both modes, and checks each run; returns how many runs failed.
  void sweep(const Case& c) {
    const fs::path reference = dir_ / "reference";
    const auto clean = run_with(c, "", reference);
    ASSERT_EQ(clean.exit_code, 0) << clean.output;
    int failed_runs = 0, degraded_runs = 0;
    int first_success = -1;
    for (const char* mode : {"USRECON_TEST_FAIL_THREADS_FROM", "USRECON_TEST_FAIL_THREAD_AT"}) {
      const bool from_mode = std::string(mode).find("FROM") != std::string::npos;
      // FROM: up to the first start number that lets the run through (every later one does too);
      // AT: each start up to a few past that.
      const int last = from_mode ? 64 : first_success + 4;
      for (int n = 0; n <= last; ++n) {
        SCOPED_TRACE(std::string(mode) + "=" + std::to_string(n));
        const fs::path out = dir_ / "out";
        const auto r = run_with(c, std::string(mode) + "=" + std::to_string(n), out);
        std::ifstream report_file(dir_ / "report.json");
        const json report = json::parse(report_file, nullptr, false);
        ASSERT_TRUE(report.is_array() && report.size() == c.stems.size()) << r.output;
        if (r.exit_code == 0) {
          ++degraded_runs;
          for (std::size_t i = 0; i < c.stems.size(); ++i) {
            EXPECT_EQ(report[i]["status"], "ok") << report[i];
            for (const char* ext : {".png", ".npy"})
              EXPECT_EQ(bytes_of(out / (c.stems[i] + ext)), bytes_of(reference / (c.stems[i] + ext)))
                  << c.stems[i] << ext << " differs from the fault-free run's";
            EXPECT_TRUE(fs::exists(out / (c.stems[i] + ".json")));
          }
          if (from_mode) {
            first_success = n;
            break;
          }
          continue;
        }
        ++failed_runs;
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find("usrecon: error: could not start the batch's "), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("thread: Resource temporarily unavailable"), std::string::npos) << r.output;
        for (const json& entry : report) {
          EXPECT_EQ(entry["status"], "not_processed") << entry;
        }
        // Nothing written, not even a hidden staged file.
        if (fs::exists(out)) {
          for (const auto& e : fs::directory_iterator(out)) ADD_FAILURE() << e.path() << " was left";
        }
      }
      if (from_mode) {
        ASSERT_GE(first_success, 0) << "no run got through with up to 64 thread starts refused";
      }
    }
    // Both outcomes were reached: some start was a stage's thread, and some start was one the
    // run could do without (a worker or an extra writer, or the sweep reached no fault at all).
    EXPECT_GT(failed_runs, 0);
    EXPECT_GT(degraded_runs, 1);
  }
};

}  // namespace

TEST_F(CliThreadFaults, GeneralModelBatchDegradesOrFailsCleanly) {
  fs::create_directories(dir_ / "in");
  for (const char* stem : {"f1", "f2", "f3"}) {
    const auto sim = run_command(exe_ + " simulate --model planewave --elements 32 --samples 600 --point 0,10 "
                                        "--point 2,12 --speckle 50 -o " + quote(dir_ / "in" / (std::string(stem) + ".npy")));
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
  }
  sweep({quote(dir_ / "in") + " --model planewave --angles-deg 0 --fs 20e6 --pitch 0.3e-3 --x-range -5e-3:5e-3 --z-range 5e-3:15e-3",
         {"f1", "f2", "f3"}});
}

TEST_F(CliThreadFaults, SeedBatchDegradesOrFailsCleanly) {
  fs::create_directories(dir_ / "in");
  for (const char* name : {"a.txt", "b.txt"})
    fs::copy_file(fs::path(USRECON_SOURCE_DIR) / "data/example.txt", dir_ / "in" / name);
  sweep({quote(dir_ / "in") + " --backend cpu", {"a", "b"}});
}
