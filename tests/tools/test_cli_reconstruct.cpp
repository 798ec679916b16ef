// The usrecon executable end to end: batches mixing good and bad files, exit codes, messages on
// stderr naming the file, and nothing written for a failed file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/simulate.hpp"

namespace fs = std::filesystem;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

class CliReconstruct : public usrecon::testing::CliTempDir {
 protected:
  // A small valid input: 8 channels x 300 samples (the grid stays the seed's 1200 x 762).
  void write_good(const fs::path& path, double x_mm) {
    usrecon::recon::SimulationOptions sim;
    sim.problem.channels = 8;
    sim.problem.samples = 300;
    sim.points = {{x_mm, 5.0, 1.0}};
    usrecon::io::write_source_txt(path, usrecon::recon::simulate_seed_channels(sim), 8, 300);
  }
  std::string reconstruct(const std::string& args) {
    return exe_ + " reconstruct --channels 8 --samples 300 --backend cpu " + args;
  }
};

}  // namespace

TEST_F(CliReconstruct, BatchWithBadFilesReconstructsTheGoodOnesAndFails) {
  write_good(dir_ / "a.txt", 2.0);
  write_good(dir_ / "c.txt", 4.0);
  std::ofstream(dir_ / "b.txt") << "1 2 x3\n";  // a bad token
  std::ofstream(dir_ / "d.txt") << "";          // empty
  // One writer, and three writing frames side by side: the same outputs and messages.
  for (const std::string writers : {"1", "3"}) {
    SCOPED_TRACE("--writers " + writers);
    const fs::path out = dir_ / ("out" + writers);
    const auto r = run_command(reconstruct(quote(dir_) + " " + quote(dir_ / "nope.txt") + " -o " + quote(out) +
                                           " --writers " + writers));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("b.txt"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("line 1, column 5"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("d.txt"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("nope.txt"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("2 of 5 reconstructed, 3 failed"), std::string::npos) << r.output;
    for (const char* stem : {"a", "c"})
      for (const char* ext : {".png", ".json"})
        EXPECT_TRUE(fs::exists(out / (std::string(stem) + ext))) << stem << ext;
    for (const char* stem : {"b", "d", "nope"})
      for (const char* ext : {".png", ".json", ".npy"})
        EXPECT_FALSE(fs::exists(out / (std::string(stem) + ext))) << stem << ext;
  }
  const auto too_many = run_command(reconstruct(quote(dir_ / "a.txt") + " -o " + quote(dir_ / "o") + " --writers 65"));
  EXPECT_NE(too_many.exit_code, 0) << too_many.output;
  EXPECT_NE(too_many.output.find("--writers"), std::string::npos) << too_many.output;
}

TEST_F(CliReconstruct, AllGoodExitsZeroWithSummaryAndRaw) {
  write_good(dir_ / "one.txt", 3.0);
  const auto r = run_command(reconstruct(quote(dir_ / "one.txt") + " -o " + quote(dir_ / "o") +
                                         " --save-raw --threads 1 --dynamic-range 50"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 of 1 reconstructed, 0 failed"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "o" / "one.npy"));
  EXPECT_GT(fs::file_size(dir_ / "o" / "one.npy"), 762u * 1200u * 8u);
  // A second run keeps existing outputs unless --overwrite.
  const auto again = run_command(reconstruct(quote(dir_ / "one.txt") + " -o " + quote(dir_ / "o")));
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("already exists"), std::string::npos) << again.output;
  const auto forced = run_command(reconstruct(quote(dir_ / "one.txt") + " -o " + quote(dir_ / "o") + " --overwrite"));
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  // Without --save-raw the new one.json names no raw image: the older one.npy, which metrics
  // would read with the new JSON's grid, is gone with the rest of the older outputs.
  EXPECT_FALSE(fs::exists(dir_ / "o" / "one.npy"));
  EXPECT_TRUE(fs::exists(dir_ / "o" / "one.json"));
}

// The output directory is made with the first output (an unusable -o is said before any input is
// read): a run that writes nothing leaves none, nor the parents it would have made.
TEST_F(CliReconstruct, AnOutputDirectoryThatReceivedNothingIsNotLeftBehind) {
  write_good(dir_ / "good.txt", 3.0);
  const auto r = run_command(reconstruct(quote(dir_ / "nope.txt") + " -o " + quote(dir_ / "new" / "sub") + "/"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("nope.txt"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "new" / "sub"));
  EXPECT_FALSE(fs::exists(dir_ / "new"));
  // A directory that was there already stays, empty or not.
  fs::create_directories(dir_ / "had" / "sub");
  const auto had = run_command(reconstruct(quote(dir_ / "nope.txt") + " -o " + quote(dir_ / "had" / "sub")));
  EXPECT_EQ(had.exit_code, 1) << had.output;
  EXPECT_TRUE(fs::is_directory(dir_ / "had" / "sub"));
  // The report (whose directory must exist) is written beside the removed one.
  fs::create_directories(dir_ / "rep");
  const auto reported = run_command(reconstruct(quote(dir_ / "nope.txt") + " -o " + quote(dir_ / "rep" / "sub") +
                                                " --report " + quote(dir_ / "rep" / "report.json")));
  EXPECT_EQ(reported.exit_code, 1) << reported.output;
  EXPECT_TRUE(fs::exists(dir_ / "rep" / "report.json")) << reported.output;
  EXPECT_FALSE(fs::exists(dir_ / "rep" / "sub"));
  // A directory that cannot be made (a name past NAME_MAX) fails each input, and leaves none of
  // the directories above it behind.
  const auto long_name = run_command(reconstruct(quote(dir_ / "nope.txt") + " " + quote(dir_ / "good.txt") + " -o " +
                                                 quote(dir_ / "newA" / std::string(300, 'x'))));
  EXPECT_EQ(long_name.exit_code, 1) << long_name.output;
  EXPECT_NE(long_name.output.find("cannot create output directory"), std::string::npos) << long_name.output;
  EXPECT_FALSE(fs::exists(dir_ / "newA")) << long_name.output;
  // A run with an output keeps its directory.
  const auto good = run_command(reconstruct(quote(dir_ / "good.txt") + " " + quote(dir_ / "nope.txt") + " -o " +
                                            quote(dir_ / "made" / "sub")));
  EXPECT_EQ(good.exit_code, 1) << good.output;
  EXPECT_TRUE(fs::exists(dir_ / "made" / "sub" / "good.png")) << good.output;
}

// One path spelt two ways is one path: "out/" is the directory "out" (the README's spelling) and
// a relative name that does not exist yet is the absolute one, for the report's checks and for
// simulate's refusal to write data and truth into one file.
TEST_F(CliReconstruct, TwoSpellingsOfOnePathAreOnePath) {
  write_good(dir_ / "good.txt", 3.0);
  const std::string in_dir = "cd " + quote(dir_) + " && ";
  const auto r = run_command(in_dir + reconstruct("good.txt -o out/ --report out/report.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "report.json")) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "good.png")) << r.output;
  const auto over = run_command(in_dir + reconstruct("good.txt -o out2/ --report out2/good.json"));
  EXPECT_NE(over.exit_code, 0) << over.output;
  EXPECT_NE(over.output.find("is the output good.json"), std::string::npos) << over.output;
  EXPECT_FALSE(fs::exists(dir_ / "out2")) << over.output;
  const auto truth = run_command(in_dir + exe_ + " simulate -o s.txt --truth " + quote(dir_ / "s.txt") +
                                 " --channels 4 --samples 100 --point 1,2");
  EXPECT_NE(truth.exit_code, 0) << truth.output;
  EXPECT_FALSE(fs::exists(dir_ / "s.txt")) << truth.output;
}

// With --overwrite and no --save-raw, an older raw <stem>.npy that cannot be removed once the
// new outputs are in place fails the input, naming the file: the new <stem>.json does not
// describe it (a preloaded remove/unlink refuses *.npy: tests/tools/preload/fail_remove.cpp).
TEST_F(CliReconstruct, AnOlderRawImageThatCannotBeRemovedFailsTheInput) {
  write_good(dir_ / "good.txt", 3.0);
  const fs::path out = dir_ / "out";
  const auto first = run_command(reconstruct(quote(dir_ / "good.txt") + " --save-raw -o " + quote(out)));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(fs::exists(out / "good.npy"));
  const auto second = run_command("USRECON_TEST_FAIL_REMOVE_SUFFIX=.npy " +
                                  usrecon::testing::preload(USRECON_FAIL_REMOVE_SO) +
                                  reconstruct(quote(dir_ / "good.txt") + " --overwrite -o " + quote(out)));
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("good.npy: cannot remove this older raw image"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("0 of 1 reconstructed, 1 failed"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("outputs in"), std::string::npos) << "its new outputs are in place: " << second.output;
  EXPECT_TRUE(fs::exists(out / "good.npy"));
  // The new JSON is in place and names no raw image, so metrics and view refuse the old one.
  std::ifstream json_file(out / "good.json");
  const nlohmann::json meta = nlohmann::json::parse(json_file, nullptr, false);
  ASSERT_TRUE(meta.is_object()) << second.output;
  EXPECT_FALSE(meta.at("outputs").contains("raw")) << meta.dump();
  const auto metrics = run_command(exe_ + " metrics " + quote(out / "good.npy") + " --point 3e-3,5e-3");
  EXPECT_NE(metrics.exit_code, 0) << metrics.output;
}

// ... but an input of that name is never removed (channel data x.npy reconstructed into its own
// directory), nor any .npy that no older JSON named as its raw image (channel data y.npy beside
// y.uff, reconstructed into the same directory).
TEST_F(CliReconstruct, OverwriteWithoutRawKeepsAnInputNamedLikeTheRawImage) {
  const auto simulate = [&](const char* name, const char* point) {
    const auto sim = run_command(exe_ + " simulate --model planewave --elements 16 --samples 400 --point " + point +
                                 " -o " + quote(dir_ / name));
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
  };
  const auto reconstruct_twice_keeping = [&](const char* input, const char* options, const char* kept) {
    const auto size = fs::file_size(dir_ / kept);
    for (int run = 0; run < 2; ++run) {
      const auto r = run_command(exe_ + " reconstruct " + quote(dir_ / input) + " --model planewave" + options +
                                 " --x-range -3e-3:3e-3 --z-range 4e-3:12e-3 --overwrite -o " + quote(dir_));
      EXPECT_EQ(r.exit_code, 0) << r.output;
      ASSERT_TRUE(fs::exists(dir_ / kept)) << kept << ", run " << run;
      EXPECT_EQ(fs::file_size(dir_ / kept), size) << kept;
    }
  };
  simulate("x.npy", "0,8");
  reconstruct_twice_keeping("x.npy", " --angles-deg 0 --fs 20e6 --pitch 0.3e-3", "x.npy");
  EXPECT_TRUE(fs::exists(dir_ / "x.png"));
  simulate("y.uff", "0,6");
  simulate("y.npy", "0,8");
  reconstruct_twice_keeping("y.uff", "", "y.npy");
}

// A file name that is not UTF-8 (Latin-1's "caf\xe9") is reconstructed like any other; in the
// JSON it contains (the frame's, the report's) the byte reads as U+FFFD. It failed that input
// ("invalid UTF-8 byte"), and with --report it ended the batch and lost the report.
TEST_F(CliReconstruct, AFileNameThatIsNotUtf8IsReconstructedAndReported) {
  fs::create_directories(dir_ / "in");
  for (const std::string name : {"a.txt", "caf\xe9.txt", "z.txt"}) write_good(dir_ / "in" / name, 3.0);
  const auto r = run_command(reconstruct(quote(dir_ / "in") + " -o " + quote(dir_ / "o") + " --report " +
                                         quote(dir_ / "report.json")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 of 3 reconstructed, 0 failed"), std::string::npos) << r.output;
  std::ifstream report_file(dir_ / "report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file, nullptr, false);
  ASSERT_TRUE(report.is_array() && report.size() == 3u) << report;
  for (const nlohmann::json& entry : report) EXPECT_EQ(entry["status"], "ok") << entry;
  EXPECT_NE(report[1]["input"].get<std::string>().find("caf\xef\xbf\xbd.txt"), std::string::npos) << report[1];
  std::ifstream frame_file(dir_ / "o" / "caf_.json");
  const nlohmann::json frame = nlohmann::json::parse(frame_file, nullptr, false);
  ASSERT_TRUE(frame.is_object()) << "caf_.json is not JSON";
  EXPECT_NE(frame["input"].get<std::string>().find("caf\xef\xbf\xbd.txt"), std::string::npos) << frame["input"];
}

namespace {

// --profile: frames per second of wall time, then each stage's median over the frames, in the
// pipeline's order.
void expect_profile(const std::string& output, std::size_t frames, const std::vector<std::string>& stages) {
  EXPECT_NE(output.find("profile: " + std::to_string(frames) + " frames in "), std::string::npos) << output;
  std::size_t at = 0;
  for (const std::string& stage : stages) {
    std::string line = "profile: " + stage;
    line.resize(std::max<std::size_t>(line.size(), 17), ' ');  // "%-8s" pads the stage to 8
    const std::size_t found = output.find(line + " median ", at);
    EXPECT_NE(found, std::string::npos) << "no '" << stage << "' line after the earlier ones:\n" << output;
    if (found != std::string::npos) at = found;
  }
}

}  // namespace

TEST_F(CliReconstruct, ProfilePrintsEachStagesMedianInPipelineOrder) {
  write_good(dir_ / "a.txt", 2.0);
  write_good(dir_ / "b.txt", 3.0);
  const auto seed = run_command(reconstruct(quote(dir_ / "a.txt") + " " + quote(dir_ / "b.txt") + " -o " +
                                            quote(dir_ / "seed") + " --profile"));
  ASSERT_EQ(seed.exit_code, 0) << seed.output;
  expect_profile(seed.output, 2, {"read", "beamform", "bmode", "write", "total"});
  EXPECT_EQ(seed.output.find("profile: analytic"), std::string::npos) << seed.output;  // no such stage
  EXPECT_NE(seed.output.find(" frames/s (start-up before the batch "), std::string::npos) << seed.output;
  // Of two frames the median is their mean (it was the larger).
  for (const char* stage : {"read", "beamform", "total"}) {
    const std::size_t at = seed.output.find("profile: " + std::string(stage));
    ASSERT_NE(at, std::string::npos) << stage;
    double median = 0, min = 0, max = 0;
    ASSERT_EQ(std::sscanf(seed.output.c_str() + at + 17, " median %lf ms (min %lf, max %lf)", &median, &min, &max), 3)
        << seed.output.substr(at, 80);
    EXPECT_NEAR(median, (min + max) / 2, 0.0011) << seed.output.substr(at, 80);
  }

  // The general models add the analytic signal after reading.
  const std::string geometry = " --model planewave --elements 16 --pitch 0.3e-3 --fs 20e6 --angles-deg -5,0,5";
  fs::create_directories(dir_ / "das");
  for (const char* name : {"p.npy", "q.npy"}) {
    const auto sim = run_command(exe_ + " simulate" + geometry + " --samples 400 --point 0,6 -o " +
                                 quote(dir_ / "das" / name));
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
  }
  const auto das = run_command(exe_ + " reconstruct " + quote(dir_ / "das") + geometry +
                               " --z-range 2e-3:10e-3 --backend cpu --profile -o " + quote(dir_ / "das_out"));
  ASSERT_EQ(das.exit_code, 0) << das.output;
  expect_profile(das.output, 2, {"read", "analytic", "beamform", "bmode", "write", "total"});
  // Building the beamformer is the first frame's "setup", not its "beamform": the second frame,
  // of the same geometry, reuses it.
  const auto timing_of = [&](const char* name) {
    std::ifstream in(dir_ / "das_out" / name);
    return nlohmann::json::parse(in, nullptr, false).value("timing_s", nlohmann::json::object());
  };
  EXPECT_TRUE(timing_of("p.json").contains("setup")) << timing_of("p.json");
  EXPECT_FALSE(timing_of("q.json").contains("setup")) << timing_of("q.json");
  EXPECT_TRUE(timing_of("q.json").contains("beamform")) << timing_of("q.json");
  // points_per_s counts pixels x receive elements x transmits over the beamform stage alone.
  for (const char* name : {"p.json", "q.json"}) {
    std::ifstream in(dir_ / "das_out" / name);
    const nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
    const double points = meta["grid"]["nx"].get<double>() * meta["grid"]["nz"].get<double>() * 16 * 3;
    const double beamform_s = meta["timing_s"]["beamform"].get<double>();
    ASSERT_GT(beamform_s, 0) << meta.dump();
    EXPECT_NEAR(meta["backend"]["points_per_s"].get<double>() / (points / beamform_s), 1.0, 1e-3)
        << name << ": " << meta.dump();
  }
}

TEST_F(CliReconstruct, CudaBackendRequestFailsClearlyWithoutADevice) {
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  write_good(dir_ / "one.txt", 3.0);
  const auto r = run_command(exe_ + " reconstruct --channels 8 --samples 300 --backend cuda " +
                             quote(dir_ / "one.txt") + " -o " + quote(dir_ / "o"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cuda"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "one.png"));
}

// More memory than the machine gives is said in words, not as "std::bad_alloc": here a 4 GB
// address-space limit against a source.txt of 2^32 - 1 bytes (sparse, as long as the smallest
// text of 128 x 2^24 values) that reading alone cannot hold.
TEST_F(CliReconstruct, OutOfMemoryIsSaidInWords) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start-up, which ulimit -v forbids";
#endif
  const fs::path big = dir_ / "big.txt";
  { std::ofstream{big}; }
  fs::resize_file(big, (std::uintmax_t{1} << 32) - 1);
  const auto r = run_command("ulimit -v 4000000; " + exe_ + " reconstruct --samples 16777216 --backend cpu " +
                             quote(big) + " -o " + quote(dir_ / "o"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("big.txt: out of memory: this input, or the options (--channels, --samples"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "big.png"));
  fs::remove(big);
}

// A --samples far beyond what the files hold costs no frame-sized memory: a file too short for
// the frame has its values counted, and is refused, before a frame's buffer is allocated. Under a 4 GB address-space limit, the
// backend's slots for 1024 x 2^24 samples (64 GiB each) would fail at once, and without the limit
// they were allocated and zeroed until the machine killed the process.
TEST_F(CliReconstruct, SamplesBeyondWhatTheFilesHoldAllocateNoFrame) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start-up, which ulimit -v forbids";
#endif
  write_good(dir_ / "one.txt", 3.0);
  write_good(dir_ / "two.txt", 2.0);
  const auto r = run_command("ulimit -v 4000000; " + exe_ + " reconstruct --channels 1024 --samples 16777216 " +
                             "--backend cpu " + quote(dir_ / "one.txt") + " " + quote(dir_ / "two.txt") + " -o " +
                             quote(dir_ / "o"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("one.txt: found 2400 values, expected 17179869184 (1024 channels x 16777216 samples)"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("two.txt: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0 of 2 reconstructed, 2 failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("out of memory"), std::string::npos) << r.output;
  // The general models read source.txt through the same check (they allocated the frame, and a
  // copy in double, first).
  const auto das = run_command("ulimit -v 4000000; " + exe_ + " reconstruct --model planewave --elements 128 " +
                               "--samples 16777216 --angles-deg 0 --fs 40e6 --pitch 3e-4 --backend cpu " +
                               quote(dir_ / "one.txt") + " -o " + quote(dir_ / "o"));
  EXPECT_EQ(das.exit_code, 1) << das.output;
  EXPECT_NE(das.output.find("one.txt: found 2400 values, expected 2147483648 (128 channels x 16777216 samples)"),
            std::string::npos) << das.output;
}

TEST_F(CliReconstruct, UsageErrorsAndHelp) {
  const auto help = run_command(exe_ + " reconstruct --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--output", "--backend", "--threads", "--writers", "--dynamic-range", "--save-raw",
                             "--overwrite", "--channels", "--samples"})
    EXPECT_NE(help.output.find(option), std::string::npos) << option;
  EXPECT_NE(run_command(exe_ + " reconstruct").exit_code, 0);
  EXPECT_NE(run_command(exe_ + " reconstruct x.txt -o o --backend gpu").exit_code, 0);
  EXPECT_NE(run_command(exe_ + " reconstruct x.txt -o o --threads -1").exit_code, 0);
  EXPECT_NE(run_command(exe_).exit_code, 0);
  const auto empty_dir = run_command(exe_ + " reconstruct " + quote(dir_) + " -o " + quote(dir_ / "o"));
  EXPECT_EQ(empty_dir.exit_code, 1);
  EXPECT_NE(empty_dir.output.find("no input files"), std::string::npos) << empty_dir.output;
  // --precision chooses the CUDA kernel's arithmetic; the CPU is always exact, so asking it for
  // single precision is refused, not ignored (it was: exit 0, nothing said).
  write_good(dir_ / "p.txt", 3.0);
  const auto single_cpu = run_command(reconstruct(quote(dir_ / "p.txt") + " --precision single -o " + quote(dir_ / "p")));
  EXPECT_EQ(single_cpu.exit_code, 1) << single_cpu.output;
  EXPECT_NE(single_cpu.output.find("--precision single applies to the CUDA backend; --backend cpu is always exact"),
            std::string::npos)
      << single_cpu.output;
  EXPECT_FALSE(fs::exists(dir_ / "p"));
  EXPECT_EQ(run_command(reconstruct(quote(dir_ / "p.txt") + " --precision double -o " + quote(dir_ / "p"))).exit_code, 0);
}

TEST_F(CliReconstruct, SimulateWritesDataAndTruth) {
  const auto r = run_command(exe_ + " simulate -o " + quote(dir_ / "s.txt") + " --truth " +
                             quote(dir_ / "s.json") + " --channels 4 --samples 100 --point 1,2 --point 0.5,1,2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rf = usrecon::io::read_source_txt(dir_ / "s.txt", 4, 100);
  EXPECT_EQ(rf.size(), 400u);
  EXPECT_TRUE(fs::exists(dir_ / "s.json"));
  EXPECT_NE(run_command(exe_ + " simulate -o " + quote(dir_ / "s.txt") + " --point 1,2").exit_code, 0)
      << "existing output must be kept without --overwrite";
  EXPECT_NE(run_command(exe_ + " simulate -o " + quote(dir_ / "t.txt") + " --point 1,x").exit_code, 0);
  EXPECT_NE(run_command(exe_ + " simulate -o " + quote(dir_ / "t.txt")).exit_code, 0);
}
