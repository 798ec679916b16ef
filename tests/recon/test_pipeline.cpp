// The reconstruction pipeline: B-mode maths, outputs and their formats, and the bundled
// example's targets found where the simulator put them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/png.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/bmode.hpp"
#include "usrecon/recon/pipeline.hpp"
#include "usrecon/recon/seed_cpu.hpp"
#include "usrecon/recon/simulate.hpp"

namespace fs = std::filesystem;
namespace recon = usrecon::recon;
namespace seed = usrecon::recon::seed;

TEST(ReconBmode, EnvelopeOfAModulatedToneIsItsAmplitude) {
  // Two lines of 256 depths: a cosine of amplitude 3 (a whole number of cycles, so the DFT sees
  // no leakage) and a sine of amplitude 0.5: the envelope is flat at the amplitude.
  const int nx = 2, nz = 256;
  std::vector<double> img(nx * nz);
  for (int z = 0; z < nz; ++z) {
    img[z] = 3.0 * std::cos(2 * std::numbers::pi * 16 * z / nz);
    img[nz + z] = 0.5 * std::sin(2 * std::numbers::pi * 40 * z / nz);
  }
  const auto env = recon::envelope_along_depth(img, nx, nz);
  for (int z = 0; z < nz; ++z) {
    EXPECT_NEAR(env[z], 3.0, 1e-9) << z;
    EXPECT_NEAR(env[nz + z], 0.5, 1e-9) << z;
  }
}

TEST(ReconBmode, EnvelopeOfOddLengthMatchesScipyDefinition) {
  // Gaussian-windowed tone, odd length: envelope peaks at the centre with the window's height.
  const int nz = 301;
  std::vector<double> line(nz);
  for (int z = 0; z < nz; ++z) {
    const double u = z - 150.0;
    line[z] = 2.0 * std::exp(-u * u / (2 * 15.0 * 15.0)) * std::cos(0.9 * u);
  }
  const auto env = recon::envelope_along_depth(line, 1, nz);
  EXPECT_NEAR(env[150], 2.0, 1e-3);
  EXPECT_NEAR(env[165], 2.0 * std::exp(-0.5), 2e-3);
  EXPECT_LT(env[0], 1e-3);
}

TEST(ReconBmode, LogCompressionMapsDecibelsAndTransposes) {
  // nx = 2 laterals, nz = 3 depths; env[x * nz + z].
  const std::vector<double> env = {1.0, 0.1, 0.001, 0.01, 0.0, 0.5};
  const auto px = recon::log_compress(env, 2, 3, 60.0);
  ASSERT_EQ(px.size(), 6u);
  // pixels[z * nx + x]
  EXPECT_EQ(px[0 * 2 + 0], 255);                          // 0 dB
  EXPECT_EQ(px[1 * 2 + 0], std::lround(255.0 * 40 / 60));  // -20 dB
  EXPECT_EQ(px[2 * 2 + 0], 0);                            // -60 dB
  EXPECT_EQ(px[0 * 2 + 1], std::lround(255.0 * 20 / 60));  // -40 dB
  EXPECT_EQ(px[1 * 2 + 1], 0);                            // zero
  EXPECT_EQ(px[2 * 2 + 1], std::lround(255.0 * (60 + 20 * std::log10(0.5)) / 60));
  EXPECT_THROW(recon::log_compress(env, 2, 3, 0.0), usrecon::Error);
  EXPECT_THROW(recon::log_compress(env, 3, 3, 60.0), usrecon::Error);
  const auto black = recon::log_compress(std::vector<double>(6, 0.0), 2, 3, 60.0);
  for (auto v : black) EXPECT_EQ(v, 0);
}

class ReconPipeline : public usrecon::testing::TempDir {};

TEST_F(ReconPipeline, BundledExampleTargetsAtTheirTruePositions) {
  const fs::path data = fs::path(USRECON_SOURCE_DIR) / "data";
  recon::ReconstructOptions options;
  options.backend = recon::BackendKind::Cpu;
  options.save_raw = true;
  recon::Reconstructor reconstructor(options, dir_);
  const auto report = reconstructor.reconstruct(data / "example.txt");
  ASSERT_TRUE(report.ok) << report.error;

  const auto raw = usrecon::io::read_npy(dir_ / "example.npy");
  ASSERT_EQ(raw.shape, (std::vector<std::size_t>{762, 1200}));
  const auto values = raw.as<double>();
  const auto env = recon::envelope_along_depth(values, 762, 1200);

  std::ifstream truth_file(data / "example.targets.json");
  const auto truth = nlohmann::json::parse(truth_file);
  ASSERT_EQ(truth["points"].size(), 6u);
  for (const auto& point : truth["points"]) {
    const int ti = static_cast<int>(std::lround(point["i"].get<double>()));
    const int tj = static_cast<int>(std::lround(point["j"].get<double>()));
    // Brightest envelope value within 3 mm (60 steps) of the target; targets are >= 8 mm apart.
    int best_i = -1, best_j = -1;
    double best = -1.0;
    for (int j = std::max(0, tj - 60); j <= std::min(761, tj + 60); ++j)
      for (int i = std::max(0, ti - 60); i <= std::min(1199, ti + 60); ++i)
        if (env[std::size_t(j) * 1200 + i] > best) best = env[std::size_t(j) * 1200 + i], best_i = i, best_j = j;
    EXPECT_LE(std::abs(best_i - ti), 2) << "target at i=" << ti << " j=" << tj << ": peak at i=" << best_i;
    EXPECT_LE(std::abs(best_j - tj), 2) << "target at i=" << ti << " j=" << tj << ": peak at j=" << best_j;
  }
}

TEST_F(ReconPipeline, WritesPngJsonAndRawThatMatchTheBeamformer) {
  recon::SimulationOptions sim;
  sim.problem.channels = 16;
  sim.problem.samples = 600;
  sim.points = {{3.0, 10.0, 1.0}};
  const auto rf = recon::simulate_seed_channels(sim);
  usrecon::io::write_source_txt(dir_ / "in put.txt", rf, 16, 600);

  recon::ReconstructOptions options;
  options.problem = sim.problem;
  options.backend = recon::BackendKind::Cpu;
  options.save_raw = true;
  options.dynamic_range_db = 40;
  recon::Reconstructor reconstructor(options, dir_ / "out");
  const auto report = reconstructor.reconstruct(dir_ / "in put.txt");
  ASSERT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.outputs.size(), 3u);
  // source.txt has no frames: asking the seed model for one is a failure, not an ignored number.
  const auto framed = reconstructor.reconstruct(dir_ / "in put.txt", 2);
  EXPECT_FALSE(framed.ok);
  EXPECT_NE(framed.error.find("frames apply to the general models' USTB files only (frame 2)"), std::string::npos)
      << framed.error;

  // Raw array: exactly the beamformer's output, shape [762][1200].
  const auto raw = usrecon::io::read_npy(dir_ / "out" / "in_put.npy");
  ASSERT_EQ(raw.shape, (std::vector<std::size_t>{762, 1200}));
  std::vector<double> expected(762 * 1200);
  seed::beamform_cpu(rf, sim.problem, seed::full_window(sim.problem), expected, 1);
  EXPECT_EQ(std::memcmp(expected.data(), raw.as<double>().data(), expected.size() * sizeof(double)), 0);

  // PNG: 762 wide (lateral), 1200 tall (depth), equal to the B-mode of the raw array.
  int width = 0, height = 0;
  const auto png = usrecon::io::read_png_gray8(dir_ / "out" / "in_put.png", width, height);
  EXPECT_EQ(width, 762);
  EXPECT_EQ(height, 1200);
  EXPECT_EQ(png, recon::log_compress(recon::envelope_along_depth(expected, 762, 1200), 762, 1200, 40));

  std::ifstream json_file(dir_ / "out" / "in_put.json");
  const auto meta = nlohmann::json::parse(json_file);
  EXPECT_EQ(meta["model"], "seed");
  EXPECT_EQ(meta["grid"]["nx"], 762);
  EXPECT_EQ(meta["grid"]["nz"], 1200);
  EXPECT_DOUBLE_EQ(meta["grid"]["dx"].get<double>(), 0.05e-3);
  EXPECT_DOUBLE_EQ(meta["grid"]["dz"].get<double>(), 0.05e-3);
  EXPECT_EQ(meta["backend"]["name"], "cpu");
  EXPECT_EQ(meta["parameters"]["channels"], 16);
  EXPECT_DOUBLE_EQ(meta["parameters"]["dynamic_range_db"].get<double>(), 40.0);
  for (const char* stage : {"read", "beamform", "bmode", "write", "total"})
    EXPECT_TRUE(meta["timing_s"].contains(stage)) << stage;
  // No temporary files are left in the output directory.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "out")) {
    ++files;
    EXPECT_NE(e.path().filename().string().front(), '.') << e.path();
  }
  EXPECT_EQ(files, 3);
}

TEST_F(ReconPipeline, BadInputLeavesNothingAndExistingOutputsAreKept) {
  recon::ReconstructOptions options;
  options.problem.channels = 4;
  options.problem.samples = 10;
  options.backend = recon::BackendKind::Cpu;
  recon::Reconstructor reconstructor(options, dir_ / "out");
  { std::ofstream(dir_ / "short.txt") << "1 2 3\n"; }
  auto report = reconstructor.reconstruct(dir_ / "short.txt");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.error.find("short.txt"), std::string::npos) << report.error;
  EXPECT_TRUE(fs::is_empty(dir_ / "out"));

  report = reconstructor.reconstruct(dir_ / "missing.txt");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.error.find("missing.txt"), std::string::npos) << report.error;

  std::string good;
  for (int v = 0; v < 40; ++v) good += std::to_string(v % 7) + " ";
  { std::ofstream(dir_ / "good.txt") << good; }
  ASSERT_TRUE(reconstructor.reconstruct(dir_ / "good.txt").ok);
  // The same stem again in one run would overwrite the first outputs: refused.
  fs::create_directories(dir_ / "sub");
  fs::copy_file(dir_ / "good.txt", dir_ / "sub" / "good.txt");
  report = reconstructor.reconstruct(dir_ / "sub" / "good.txt");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.error.find("earlier input"), std::string::npos) << report.error;

  // A new run without --overwrite keeps the existing outputs.
  const auto before = fs::last_write_time(dir_ / "out" / "good.png");
  recon::Reconstructor second(options, dir_ / "out");
  report = second.reconstruct(dir_ / "good.txt");
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.error.find("already exists"), std::string::npos) << report.error;
  EXPECT_EQ(fs::last_write_time(dir_ / "out" / "good.png"), before);
  options.overwrite = true;
  recon::Reconstructor third(options, dir_ / "out");
  EXPECT_TRUE(third.reconstruct(dir_ / "good.txt").ok);
}

TEST(ReconPipelineNames, OutputStemsAreSanitised) {
  EXPECT_EQ(recon::output_stem("a/b/frame 01.txt"), "frame_01");
  EXPECT_EQ(recon::output_stem(".hidden.txt"), "_hidden");
  EXPECT_EQ(recon::output_stem("x/..txt"), "_");
  EXPECT_EQ(recon::output_stem("we$ird;name.txt"), "we_ird_name");
  EXPECT_EQ(recon::output_stem("ok-name_1.2.txt"), "ok-name_1.2");
  EXPECT_EQ(recon::output_stem("cine.uff", 7), "cine_frame0007");
  EXPECT_EQ(recon::output_stem("a b.uff", 12345), "a_b_frame12345");
}

// --frame all: the two-frame USTB fixture becomes two jobs; a file of one frame, another format
// and a missing file stay one job each (the missing one is reported when processed).
TEST(ReconPipelineNames, AllFramesExpandsMultiFrameFilesOnly) {
  const fs::path uff = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/uff";
  const std::vector<fs::path> files = {uff / "ustb_one_wave_two_frames.uff", uff / "ustb_planewave.uff",
                                       "/nonexistent/x.uff", fs::path(USRECON_SOURCE_DIR) / "data/example.txt"};
  recon::ChannelInput input;
  std::vector<std::pair<std::string, int>> jobs;
  for (const recon::BatchInput& job : recon::expand_frames(files, input))
    jobs.emplace_back(job.path.filename().string(), job.frame);
  EXPECT_EQ(jobs, (std::vector<std::pair<std::string, int>>{
                      {"ustb_one_wave_two_frames.uff", 0}, {"ustb_planewave.uff", 0}, {"x.uff", 0}, {"example.txt", 0}}));
  input.all_frames = true;
  jobs.clear();
  for (const recon::BatchInput& job : recon::expand_frames(files, input))
    jobs.emplace_back(job.path.filename().string(), job.frame);
  EXPECT_EQ(jobs, (std::vector<std::pair<std::string, int>>{{"ustb_one_wave_two_frames.uff", 1},
                                                            {"ustb_one_wave_two_frames.uff", 2},
                                                            {"ustb_planewave.uff", 0},
                                                            {"x.uff", 0},
                                                            {"example.txt", 0}}));
}

TEST(ReconPipelineNames, ExpandsDirectoriesToSortedTxtFiles) {
  const fs::path dir = fs::temp_directory_path() / ("usrecon-expand-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "nested.txt");  // a directory named like a file is not an input
  for (const char* name : {"b.txt", "a.txt", "c.npy"}) std::ofstream(dir / name) << "1";
  const auto inputs = recon::expand_inputs({dir, dir / "zz.txt"});
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].filename(), "a.txt");
  EXPECT_EQ(inputs[1].filename(), "b.txt");
  EXPECT_EQ(inputs[2].filename(), "zz.txt");  // missing file kept, reported when processed
  fs::remove_all(dir);
}

TEST(ReconPipelineNames, EachGeneralModelHasItsDelayModel) {
  EXPECT_EQ(recon::das_model(recon::ReconModel::PlaneWave), recon::Model::PlaneWave);
  EXPECT_EQ(recon::das_model(recon::ReconModel::SyntheticAperture), recon::Model::SyntheticAperture);
  EXPECT_EQ(recon::das_model(recon::parse_model("dw")), recon::Model::DivergingWave);
  EXPECT_EQ(recon::das_model(recon::parse_model("fw")), recon::Model::FocusedWave);
  EXPECT_THROW(recon::das_model(recon::ReconModel::Seed), usrecon::Error);
}

TEST(ReconPipelineNames, GeneralModelsTakeEveryChannelDataFormatFromADirectory) {
  const fs::path dir = fs::temp_directory_path() / ("usrecon-expand-das-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "d.UFF");  // a directory named like a file is not scanned
  for (const char* name : {"f.uff", "b.NPY", "a.txt", "c.mat", "e.hdf5", "d.h5", "notes.md", "g.json", "h.png"})
    std::ofstream(dir / name) << "1";
  std::vector<std::string> names;
  for (const fs::path& p : recon::expand_inputs({dir, dir / "x.Mat"}, recon::ReconModel::PlaneWave))
    names.push_back(p.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "b.NPY", "c.mat", "d.h5", "e.hdf5", "f.uff", "x.Mat"}));
  names.clear();
  for (const fs::path& p : recon::expand_inputs({dir}, recon::ReconModel::Seed)) names.push_back(p.filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"a.txt"});  // the seed model reads source.txt only
  EXPECT_EQ(recon::expand_inputs({dir / "d.UFF"}, recon::ReconModel::DivergingWave),
            std::vector<fs::path>{dir / "d.UFF"});  // kept as given: reported when processed
  fs::remove_all(dir);
}

TEST(ReconBackend, CudaRequestFailsClearlyAndAutoFallsBack) {
  const seed::Problem p{40, 30, 8, 100};
  if (usrecon::cuda_device_count() == 0) {
    try {
      recon::make_seed_backend(recon::BackendKind::Cuda, p, 1);
      FAIL() << "expected CudaUnavailable";
    } catch (const usrecon::CudaUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    }
  }
  std::string notice;
  const auto backend = recon::make_seed_backend(recon::BackendKind::Auto, p, 1, &notice);
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->describe().contains("name"));
  EXPECT_THROW(recon::parse_backend("gpu"), usrecon::Error);
}

// The seed batch's three threads when the caller's callbacks fail: done() throwing stops reading
// and writing (only the frame being reported has outputs); stop() throwing on the reader thread
// reaches the caller. Neither may leave a stage waiting for ever.
TEST_F(ReconPipeline, SeedBatchEndsCleanlyWhenTheCallbacksThrow) {
  recon::SimulationOptions sim;
  sim.problem.channels = 8;
  sim.problem.samples = 300;
  sim.points = {{2.0, 5.0, 1.0}};
  const auto rf = recon::simulate_seed_channels(sim);
  std::vector<fs::path> inputs;
  for (int i = 0; i < 12; ++i) {
    inputs.push_back(dir_ / ("in" + std::to_string(10 + i) + ".txt"));
    usrecon::io::write_source_txt(inputs.back(), rf, 8, 300);
  }
  recon::ReconstructOptions options;
  options.problem = sim.problem;
  options.backend = recon::BackendKind::Cpu;
  options.threads = 2;

  recon::Reconstructor first(options, dir_ / "done_throws");
  int reported = 0;
  EXPECT_THROW(first.reconstruct_batch(
                   inputs,
                   [&](std::size_t, const recon::FrameReport&) {
                     ++reported;
                     throw std::runtime_error("the caller gave up");
                   },
                   [] { return false; }),
               std::runtime_error);
  EXPECT_EQ(reported, 1);
  std::vector<std::string> written;
  for (const fs::directory_entry& f : fs::directory_iterator(dir_ / "done_throws"))
    written.push_back(f.path().filename());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"in10.json", "in10.png"}));

  recon::Reconstructor second(options, dir_ / "stop_throws");
  int asked = 0;
  std::size_t done_calls = 0;
  EXPECT_THROW(second.reconstruct_batch(
                   inputs, [&](std::size_t, const recon::FrameReport&) { ++done_calls; },
                   [&] {
                     if (++asked == 4) throw std::logic_error("stop() failed");
                     return false;
                   }),
               std::logic_error);
  EXPECT_EQ(done_calls, 3u);  // the three inputs read before stop() failed are finished
}
