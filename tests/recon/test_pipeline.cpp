// The reconstruction pipeline: B-mode maths, outputs and their formats, and the bundled
// example's targets found where the simulator put them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
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

TEST(ReconBmode, EnvelopeOfHugeAndTinyValuesNeitherOverflowsNorUnderflows) {
  // Tones of amplitude 1e300 and 1e-300: their squares would overflow or underflow double, the
  // envelope must not.
  const int nz = 256;
  for (const double amplitude : {1e300, 1e-300}) {
    std::vector<double> line(nz);
    for (int z = 0; z < nz; ++z) line[z] = amplitude * std::cos(2 * std::numbers::pi * 16 * z / nz);
    const auto env = recon::envelope_along_depth(line, 1, nz);
    for (int z = 0; z < nz; ++z) EXPECT_NEAR(env[z] / amplitude, 1.0, 1e-9) << amplitude << " " << z;
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

namespace {

// scipy.signal.hilbert's envelope of one line by the definition: a direct O(n^2) DFT in long
// double, h = 1 at DC (and Nyquist for even n), 2 for positive frequencies, 0 for negative ones.
std::vector<double> reference_envelope(const double* line, int n) {
  using Complex = std::complex<long double>;
  std::vector<Complex> twiddle(n);  // exp(2 pi i k / n)
  for (int k = 0; k < n; ++k) twiddle[k] = std::polar(1.0L, 2.0L * std::numbers::pi_v<long double> * k / n);
  std::vector<Complex> spectrum(n);
  for (int f = 0; f < n; ++f)
    for (int t = 0; t < n; ++t) spectrum[f] += static_cast<long double>(line[t]) * std::conj(twiddle[std::size_t(f) * t % n]);
  for (int f = 1; f < n; ++f) spectrum[f] *= (2 * f == n) ? 1.0L : (2 * f < n ? 2.0L : 0.0L);
  std::vector<double> env(n);
  for (int t = 0; t < n; ++t) {
    Complex analytic = 0;
    for (int f = 0; f < n; ++f) analytic += spectrum[f] * twiddle[std::size_t(f) * t % n];
    env[t] = double(std::abs(analytic / static_cast<long double>(n)));
  }
  return env;
}

std::vector<double> random_values(std::size_t n, unsigned seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(gen);
  return v;
}

// log_compress by its definition, written out plainly.
std::vector<std::uint8_t> reference_log_compress(const std::vector<double>& env, int nx, int nz, double range_db,
                                                 double gain_db) {
  const double peak = *std::max_element(env.begin(), env.end());
  std::vector<std::uint8_t> pixels(env.size());
  for (int x = 0; x < nx; ++x)
    for (int z = 0; z < nz; ++z) {
      const double v = env[std::size_t(x) * nz + z];
      const double db = v > 0.0 ? 20.0 * std::log10(v / peak) + gain_db : -INFINITY;
      pixels[std::size_t(z) * nx + x] =
          static_cast<std::uint8_t>(std::lround(std::clamp((db + range_db) / range_db, 0.0, 1.0) * 255.0));
    }
  return pixels;
}

}  // namespace

TEST(ReconBmode, EnvelopeMatchesTheDefinitionByDirectDft) {
  // Line lengths 1, 2, odd and even, and line counts that end inside and past a task of lines.
  for (const int nz : {1, 2, 3, 16, 17, 64, 301}) {
    for (const int nx : {1, 5, 17, 33}) {
      const std::vector<double> img = random_values(std::size_t(nx) * nz, unsigned(nx * 1000 + nz), 1e4);
      const std::vector<double> env = recon::envelope_along_depth(img, nx, nz);
      double worst = 0.0, largest = 0.0;
      for (int x = 0; x < nx; ++x) {
        const std::vector<double> ref = reference_envelope(img.data() + std::size_t(x) * nz, nz);
        for (int z = 0; z < nz; ++z) {
          worst = std::max(worst, std::abs(env[std::size_t(x) * nz + z] - ref[z]));
          largest = std::max(largest, ref[z]);
        }
      }
      EXPECT_LE(worst, 1e-12 * largest) << "nx " << nx << " nz " << nz;
    }
  }
  EXPECT_THROW(recon::envelope_along_depth(std::vector<double>(6), 2, 4), usrecon::Error);
}

TEST(ReconBmode, SameImageWhateverTheThreadCount) {
  // 150 lines (tasks of 16 lines and of 64 columns, the last part-filled) of 257 depths.
  const int nx = 150, nz = 257;
  const std::vector<double> img = random_values(std::size_t(nx) * nz, 11, 3e3);
  const std::vector<double> one = recon::envelope_along_depth(img, nx, nz, 1);
  for (const int threads : {2, 3, 0}) {
    const std::vector<double> many = recon::envelope_along_depth(img, nx, nz, threads);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(double)), 0) << threads;
    EXPECT_EQ(recon::log_compress(one, nx, nz, 50.0, 0.0, 1), recon::log_compress(one, nx, nz, 50.0, 0.0, threads))
        << threads;
  }
}

TEST(ReconBmode, LogCompressionIsItsDefinitionPixelForPixel) {
  // Envelopes over 12 decades (so every level and both clamps occur), exact zeros, subnormals
  // and values at the peak, with and without gain, at several ranges.
  const int nx = 131, nz = 77;
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> decades(-12.0, 0.0);
  std::vector<double> env(std::size_t(nx) * nz);
  for (double& v : env) v = 3.7e5 * std::pow(10.0, decades(gen));
  env[0] = 3.7e5;
  env[1] = 0.0;
  env[2] = 4.9e-324;
  env[3] = std::numeric_limits<double>::min();
  env[4] = 3.7e5 * std::pow(10.0, -30.0 / 20.0);  // -30 dB: level 127.5 at a 60 dB range
  for (const double range : {1.0, 40.0, 60.0, 97.5}) {
    for (const double gain : {0.0, -6.0, 10.0}) {
      EXPECT_EQ(recon::log_compress(env, nx, nz, range, gain, 2), reference_log_compress(env, nx, nz, range, gain))
          << "range " << range << " gain " << gain;
    }
  }
}

// Where the definition changes level: for every level k the least double whose level is k,
// found by bisection on the reference itself, with its neighbours a few ulps and a relative
// 1e-10 and 1e-8 either side, at ranges from 1 to 500 dB and with gains. Values this close to a
// level's edge are where a compression that does not evaluate the definition could round the
// other way.
TEST(ReconBmode, LogCompressionAtEveryLevelsEdgeIsItsDefinition) {
  struct Case {
    double peak, range, gain;
  };
  std::vector<Case> cases;
  for (const double range : {1.0, 60.0, 97.5, 500.0})
    for (const double gain : {0.0, -6.0, 10.0}) cases.push_back({3.7e5, range, gain});
  // Where v / peak or a threshold leaves the normal numbers, and absurd ranges and gains (the
  // review's cases: a subnormal ratio at 6400 dB below a peak of 1e300 or at a gain of 6340 dB,
  // a range of 1e-306 dB whose slope overflows).
  cases.insert(cases.end(), {{1e300, 6400.0, 0.0}, {3.7e5, 60.0, 6340.0}, {100.0, 1e-306, 0.0},
                             {1e-300, 60.0, 0.0}, {1e-300, 500.0, -6.0}, {1e-300, 2e6, 0.0}});
  for (const Case& c : cases) {
    auto level = [&](double v) {
      const std::vector<double> one = {c.peak, v};
      return reference_log_compress(one, 2, 1, c.range, c.gain)[1];
    };
    std::vector<double> env = {c.peak};
    for (int k = 1; k < 256; ++k) {
      if (level(c.peak) < k) break;  // not reached below the peak
      // Bisection over the ordered bit patterns of [0, peak] for the least v with level >= k.
      std::uint64_t lo = 0, hi = std::bit_cast<std::uint64_t>(c.peak);
      if (level(0.0) >= k) continue;
      while (lo + 1 < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (level(std::bit_cast<double>(mid)) >= k ? hi : lo) = mid;
      }
      const double edge = std::bit_cast<double>(hi);
      for (int ulps = -3; ulps <= 3; ++ulps) env.push_back(std::bit_cast<double>(hi + std::int64_t(ulps)));
      for (const double rel : {1e-10, 1e-8}) {
        env.push_back(edge * (1.0 - rel));
        env.push_back(edge * (1.0 + rel));
      }
    }
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int i = 0; i < 2000; ++i) env.push_back(c.peak * unit(gen));  // and values between
    std::erase_if(env, [&](double v) { return !(v <= c.peak); });
    const int nx = int(env.size());
    EXPECT_EQ(recon::log_compress(env, nx, 1, c.range, c.gain, 1), reference_log_compress(env, nx, 1, c.range, c.gain))
        << "peak " << c.peak << " range " << c.range << " gain " << c.gain;
  }
}

TEST(ReconBmode, EnvelopeOfIqIsTheModulus) {
  const std::vector<std::complex<float>> iq = {{3.0f, 4.0f}, {0.0f, 0.0f}, {-1.5f, 2.0f}, {0.0f, -7.0f}};
  const std::vector<double> env = recon::envelope_of_iq(iq, 2);
  ASSERT_EQ(env.size(), iq.size());
  EXPECT_EQ(env[0], 5.0);
  EXPECT_EQ(env[1], 0.0);
  EXPECT_EQ(env[2], 2.5);
  EXPECT_EQ(env[3], 7.0);
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
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "nothing written, so no output directory made";

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
  // --frame FIRST:LAST: the frames among them that a file holds; one that holds none of them is
  // one job for FIRST (refused when read, and reported as that frame), a file of one frame one
  // job for frame 1 as with all.
  const auto frames_of = [&](int first, int last) {
    input.frame = first;
    input.last_frame = last;
    std::vector<std::pair<std::string, int>> out;
    for (const recon::BatchInput& job : recon::expand_frames({files[0], files[1]}, input))
      out.emplace_back(job.path.filename().string(), job.frame);
    return out;
  };
  EXPECT_EQ(frames_of(2, 2), (std::vector<std::pair<std::string, int>>{{"ustb_one_wave_two_frames.uff", 2},
                                                                       {"ustb_planewave.uff", 2}}));
  EXPECT_EQ(frames_of(1, 9), (std::vector<std::pair<std::string, int>>{{"ustb_one_wave_two_frames.uff", 1},
                                                                       {"ustb_one_wave_two_frames.uff", 2},
                                                                       {"ustb_planewave.uff", 0}}));
  EXPECT_EQ(frames_of(3, 5), (std::vector<std::pair<std::string, int>>{{"ustb_one_wave_two_frames.uff", 3},
                                                                       {"ustb_planewave.uff", 3}}));
}

// --writers 0 (the default): a quarter of the hardware threads, 1 to 4, as pipeline.hpp says;
// B-mode threads share the CPU threads out among them, at least 1 each.
TEST_F(ReconPipeline, WritersDefaultToAQuarterOfTheHardwareThreads) {
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  recon::ReconstructOptions options;
  options.backend = recon::BackendKind::Cpu;
  ASSERT_EQ(options.writers, 0);  // what --writers leaves when not given
  recon::Reconstructor automatic(options, dir_ / "auto");
  const int writers = automatic.writer_threads();
  EXPECT_EQ(writers, hardware < 8 ? 1 : hardware < 16 ? hardware / 4 : 4) << hardware << " hardware threads";
  EXPECT_EQ(automatic.bmode_threads(writers), std::max(1, hardware / writers));
  options.threads = 2;
  options.writers = 3;
  recon::Reconstructor given(options, dir_ / "given");
  EXPECT_EQ(given.writer_threads(), 3);
  EXPECT_EQ(given.bmode_threads(3), 1);  // 2 threads among 3 writers: at least 1 each
  EXPECT_EQ(given.bmode_threads(1), 2);
}

TEST(ReconPipelineNames, ExpandsDirectoriesToSortedTxtFiles) {
  const fs::path dir = fs::temp_directory_path() / ("usrecon-expand-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "nested.txt");  // a directory named like a file is not an input
  // Hidden files are skipped in a directory (an editor's .b.txt, macOS's ._a.txt), read when named.
  for (const char* name : {"b.txt", "a.txt", "c.npy", ".b.txt", "._a.txt"}) std::ofstream(dir / name) << "1";
  const auto inputs = recon::expand_inputs({dir, dir / "zz.txt", dir / ".b.txt"});
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_EQ(inputs[0].filename(), "a.txt");
  EXPECT_EQ(inputs[1].filename(), "b.txt");
  EXPECT_EQ(inputs[2].filename(), "zz.txt");  // missing file kept, reported when processed
  EXPECT_EQ(inputs[3].filename(), ".b.txt");
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

// A run makes its output directory with its first output, and never removes one: two runs into
// one new directory, one of whose inputs all fail, must not lose the other's directory (the
// failing one removed the directory it had made, empty while the other was still beamforming).
TEST_F(ReconPipeline, ARunNeverRemovesItsOutputDirectory) {
  recon::ReconstructOptions options;
  options.backend = recon::BackendKind::Cpu;
  const fs::path out = dir_ / "shared" / "run";
  {
    recon::Reconstructor failing(options, out);
    EXPECT_FALSE(fs::exists(dir_ / "shared")) << "made before any output";
    EXPECT_FALSE(failing.reconstruct(dir_ / "absent.txt").ok);
    EXPECT_FALSE(fs::exists(dir_ / "shared"));
    fs::create_directories(out);  // the other run, about to write
  }
  EXPECT_TRUE(fs::is_directory(out));
  // An unusable -o is still said before any input: a file where a directory must be.
  std::ofstream(dir_ / "file") << "x";
  EXPECT_THROW(recon::Reconstructor(options, dir_ / "file" / "sub"), usrecon::io::OutputError);
  EXPECT_THROW(recon::Reconstructor(options, dir_ / "file"), usrecon::io::OutputError);
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
  if (usrecon::cuda_device_count() == 0) {  // auto falls back, and says so
    EXPECT_EQ(backend->describe().at("name"), "cpu");
    EXPECT_NE(notice.find("no CUDA device"), std::string::npos) << notice;
    EXPECT_NE(notice.find("using the CPU"), std::string::npos) << notice;
  } else {
    EXPECT_EQ(backend->describe().at("name"), "cuda");
    EXPECT_TRUE(notice.empty()) << notice;
  }
  EXPECT_THROW(recon::parse_backend("gpu"), usrecon::Error);
}

// The seed batch's threads when the caller's callbacks fail, with one writer and with three:
// done() throwing stops reading and writing (only the frame being reported has outputs; what
// other writers had written meanwhile is removed); stop() throwing on the reader thread reaches
// the caller. Neither may leave a stage waiting for ever.
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
  for (const int writers : {1, 3}) {
    SCOPED_TRACE("writers " + std::to_string(writers));
    recon::ReconstructOptions options;
    options.problem = sim.problem;
    options.backend = recon::BackendKind::Cpu;
    options.threads = 2;
    options.writers = writers;
    const fs::path out = dir_ / ("w" + std::to_string(writers));

    // done() throws at the first report, after sleeping while the other writers write: a
    // std::exception, and one that is not (it reaches the caller as it was).
    const auto done_throws = [&]<class Thrown>(const char* name, Thrown thrown) {
      SCOPED_TRACE(name);
      recon::Reconstructor reconstructor(options, out / name);
      int reported = 0;
      EXPECT_THROW(reconstructor.reconstruct_batch(
                       inputs,
                       [&](std::size_t, const recon::FrameReport&) {
                         ++reported;
                         std::this_thread::sleep_for(std::chrono::milliseconds(300));  // others write
                         throw thrown;
                       },
                       [] { return false; }),
                   Thrown);
      EXPECT_EQ(reported, 1);
      std::vector<std::string> written;
      for (const fs::directory_entry& f : fs::directory_iterator(out / name)) written.push_back(f.path().filename());
      std::sort(written.begin(), written.end());
      EXPECT_EQ(written, (std::vector<std::string>{"in10.json", "in10.png"}));
    };
    done_throws("done_throws", std::runtime_error("the caller gave up"));
    done_throws("done_throws_foreign", 42);

    recon::Reconstructor second(options, out / "stop_throws");
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
}

// With --overwrite, a batch abandoned at its first report leaves the earlier outputs of every
// later input as they were, even those another writer had already written meanwhile: outputs
// are staged under hidden names and put in place only at their frame's report.
TEST_F(ReconPipeline, AbandonedOverwritingBatchKeepsTheOldOutputsOfLaterInputs) {
  recon::SimulationOptions sim;
  sim.problem.channels = 8;
  sim.problem.samples = 300;
  sim.points = {{2.0, 5.0, 1.0}};
  const auto rf = recon::simulate_seed_channels(sim);
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  std::vector<fs::path> inputs;
  std::vector<std::string> old_files;
  for (int i = 0; i < 10; ++i) {
    const std::string stem = "in" + std::to_string(10 + i);
    inputs.push_back(dir_ / (stem + ".txt"));
    usrecon::io::write_source_txt(inputs.back(), rf, 8, 300);
    for (const char* ext : {".png", ".json", ".npy"}) {
      usrecon::io::write_file_atomic(out / (stem + ext), "old " + stem + ext);
      old_files.push_back(stem + ext);
    }
  }
  recon::ReconstructOptions options;
  options.problem = sim.problem;
  options.backend = recon::BackendKind::Cpu;
  options.threads = 2;
  options.save_raw = true;
  options.overwrite = true;
  options.writers = 3;
  recon::Reconstructor batch(options, out);
  EXPECT_THROW(batch.reconstruct_batch(
                   inputs,
                   [&](std::size_t, const recon::FrameReport& report) {
                     // The other writers write the next frames meanwhile.
                     std::this_thread::sleep_for(std::chrono::milliseconds(300));
                     EXPECT_TRUE(report.ok) << report.error;
                     throw std::runtime_error("the caller gave up");
                   },
                   [] { return false; }),
               std::runtime_error);
  std::vector<std::string> listing;
  for (const fs::directory_entry& f : fs::directory_iterator(out)) listing.push_back(f.path().filename());
  std::sort(listing.begin(), listing.end());
  std::sort(old_files.begin(), old_files.end());
  EXPECT_EQ(listing, old_files) << "a staged file was left behind, or an old output removed";
  EXPECT_NE(usrecon::io::read_file(out / "in10.png"), "old in10.png");  // the reported input
  EXPECT_NO_THROW(usrecon::io::read_npy(out / "in10.npy"));
  for (int i = 1; i < 10; ++i) {
    const std::string stem = "in" + std::to_string(10 + i);
    for (const char* ext : {".png", ".json", ".npy"})
      EXPECT_EQ(usrecon::io::read_file(out / (stem + ext)), "old " + stem + ext);
  }
}

// Frames written side by side (four writers) are reported in input order, one call at a time,
// a failed input among them, and each frame's outputs are those of reconstructing it alone.
TEST_F(ReconPipeline, SeedBatchWithSeveralWritersReportsInInputOrderWhatEachInputGivesAlone) {
  recon::SimulationOptions sim;
  sim.problem.channels = 8;
  sim.problem.samples = 400;  // to about 10 mm
  std::vector<fs::path> inputs;
  for (int i = 0; i < 10; ++i) {
    sim.points = {{1.0 + 0.3 * i, 4.0 + 0.5 * i, 1.0}};
    std::string name = "f";  // appended: GCC 12 warns (-Wrestrict, a false positive) of "f" + std::string
    name += std::to_string(10 + i) + ".txt";
    inputs.push_back(dir_ / name);
    usrecon::io::write_source_txt(inputs.back(), recon::simulate_seed_channels(sim), 8, 400);
  }
  usrecon::io::write_file_atomic(inputs[4], "1 2 3\n");  // too few values: fails
  recon::ReconstructOptions options;
  options.problem = sim.problem;
  options.backend = recon::BackendKind::Cpu;
  options.threads = 2;
  options.save_raw = true;
  options.writers = 4;
  recon::Reconstructor batch(options, dir_ / "batch");
  EXPECT_EQ(batch.writer_threads(), 4);
  std::vector<std::size_t> indices;
  std::vector<recon::FrameReport> reports;
  std::atomic<int> in_done{0};
  bool overlapped = false;
  const std::size_t n = batch.reconstruct_batch(
      inputs,
      [&](std::size_t index, const recon::FrameReport& report) {
        if (in_done.fetch_add(1) != 0) overlapped = true;
        indices.push_back(index);
        reports.push_back(report);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a slow caller
        in_done.fetch_sub(1);
      },
      [] { return false; });
  EXPECT_FALSE(overlapped) << "done() was called by two writers at once";
  ASSERT_EQ(n, inputs.size());
  ASSERT_EQ(reports.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(indices[i], i);
    EXPECT_EQ(reports[i].input, inputs[i]) << "reports out of input order";
    EXPECT_EQ(reports[i].ok, i != 4) << reports[i].error;
    if (i == 4) continue;
    recon::Reconstructor single(options, dir_ / "single");
    ASSERT_TRUE(single.reconstruct(inputs[i]).ok);
    for (const char* ext : {".png", ".npy"}) {
      const std::string name = inputs[i].stem().string() + ext;
      const std::string batch_file = usrecon::io::read_file(dir_ / "batch" / name);
      EXPECT_FALSE(batch_file.empty()) << name;
      EXPECT_EQ(batch_file, usrecon::io::read_file(dir_ / "single" / name)) << name;
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "batch" / "f14.png"));
}
