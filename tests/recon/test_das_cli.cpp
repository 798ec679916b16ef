// The general models from the command line: the acceptance run on the real plane-wave data set
// (skipped when it is absent) and simulate -> reconstruct -> metrics.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/kernels/common.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"
#include "usrecon/io/mat.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/compare.hpp"
#include "usrecon/recon/metrics.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

using usrecon::testing::quote;
using usrecon::testing::run_command;
using usrecon::testing::usrecon_exe;

class CliDas : public usrecon::testing::TempDir {};

// `usrecon ARGS`.
usrecon::testing::CommandResult run_usrecon(const std::string& args) {
  return run_command(quote(usrecon_exe()) + " " + args);
}

// Each truth point's distance (metres) from the maximum that `usrecon metrics` finds near it.
std::vector<double> point_errors(const fs::path& npy, const fs::path& truth) {
  const auto run = run_usrecon("metrics " + quote(npy) + " --truth " + quote(truth) + " -o " +
                               quote(npy.string() + ".metrics.json"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // Keep the parsed document alive: a range-for over .at() of a temporary would dangle.
  const nlohmann::json metrics = nlohmann::json::parse(io::read_file(npy.string() + ".metrics.json"));
  std::vector<double> found;
  for (const auto& point : metrics.at("points")) found.push_back(point.at("error").get<double>());
  // One measurement per truth point: a loop over none would pass without checking anything.
  EXPECT_EQ(found.size(), nlohmann::json::parse(io::read_file(truth)).at("points").size()) << npy;
  return found;
}

// Expects `usrecon ARGS` to fail, saying `why`.
void expect_usrecon_refused(const std::string& args, const std::string& why) {
  const auto refused = run_usrecon(args);
  EXPECT_NE(refused.exit_code, 0) << args << "\n" << refused.output;
  EXPECT_NE(refused.output.find(why), std::string::npos) << args << "\n" << refused.output;
}

Image read_raw(const fs::path& npy, const fs::path& json) {
  const nlohmann::json meta = nlohmann::json::parse(io::read_file(json));
  const auto& g = meta.at("grid");
  Image image;
  image.grid = {g.at("x0"), g.at("dx"), g.at("nx"), g.at("z0"), g.at("dz"), g.at("nz")};
  const io::NpyArray a = io::read_npy(npy);
  EXPECT_EQ(a.dtype, io::DType::c64);
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{std::size_t(image.grid.nx), std::size_t(image.grid.nz)}));
  const auto v = a.as<std::complex<float>>();
  image.data.assign(v.begin(), v.end());
  return image;
}

TEST_F(CliDas, RealPlaneWaveDataWireColumnAtItsDepths) {
  const fs::path mat = USRECON_SHARED_DIR "/data/real/RFdata1.mat";
  if (!fs::exists(mat)) GTEST_SKIP() << mat << " is absent";
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const auto r = run_command(
      quote(usrecon_exe()) + " reconstruct " + quote(mat) +
      " --model planewave --var RF1 --offset mean --layout samples,elements,transmits --fs 20e6"
      " --pitch 0.298e-3 --sound-speed 1540 --t0 0 --angles-deg -1.5:0.5:1.5"
      " --x-range -20e-3:20e-3 --z-range 5e-3:90e-3 --dx 0.05e-3 --dz 0.05e-3 --fnumber 1.5"
      " --interp linear --save-raw -o " + quote(dir_));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Image image = read_raw(dir_ / "RFdata1.npy", dir_ / "RFdata1.json");
  const std::vector<double> env = envelope(image);
  const double depths_mm[4] = {22.6, 42.2, 61.6, 81.3};
  for (int k = 0; k < 4; ++k) {
    const PointMetrics m = measure_point(env, image.grid, 1.8e-3, depths_mm[k] * 1e-3, 1.5e-3);
    SCOPED_TRACE("wire at z = " + std::to_string(depths_mm[k]) + " mm");
    EXPECT_NEAR(m.z * 1e3, depths_mm[k], 0.3);
    EXPECT_NEAR(m.x * 1e3, 1.85, 0.35);  // the column, x = +1.7 to +2.0 mm
    if (k < 2) {
      EXPECT_LE(m.fwhm_lateral * 1e3, 0.8);
    }
    EXPECT_LE(m.fwhm_axial * 1e3, 0.6);
    std::printf("wire %d: x %.3f mm, z %.3f mm, lateral FWHM %.3f mm, axial FWHM %.3f mm\n", k,
                m.x * 1e3, m.z * 1e3, m.fwhm_lateral * 1e3, m.fwhm_axial * 1e3);
  }
}

// RF at 4 samples a cycle (simulate's 5 MHz at 20 MHz): linear interpolation dips the envelope
// by 3 dB midway between samples, and a point's axial width came out 0.23 mm for the pulse's
// 0.31 mm (a 2-cycle Gaussian at 5 MHz: 0.4 us, 0.308 mm there and back). --upsample 4 forms the
// analytic signal at 80 MHz first: the width is the pulse's, and metrics warns of the first.
TEST_F(CliDas, UpsampledRfGivesThePulsesAxialWidth) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path rf = dir_ / "one.npy", truth = dir_ / "one.json";
  auto r = run_usrecon("simulate --model planewave --elements 1 --samples 1000 --point 0,12 -o " + quote(rf) +
                       " --truth " + quote(truth));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double pulse = 2.0 / 5e6 * 1540 / 2;
  for (const int k : {1, 4}) {
    SCOPED_TRACE(k);
    const fs::path out = dir_ / ("k" + std::to_string(k));
    r = run_usrecon("reconstruct " + quote(rf) + " --model planewave --fs 2e7 --angles-deg 0 --backend cpu --save-raw "
                    "--x-range -1e-3:1e-3 --dx 1e-4 --z-range 10e-3:14e-3 --dz 5e-6 --upsample " + std::to_string(k) +
                    " -o " + quote(out));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json p = nlohmann::json::parse(io::read_file(out / "one.json")).at("parameters");
    EXPECT_EQ(p.at("upsample"), k);
    EXPECT_NEAR(p.at("samples_per_cycle").get<double>(), 4.0 * k, 0.05 * k);
    r = run_usrecon("metrics " + quote(out / "one.npy") + " --truth " + quote(truth) + " -o " + quote(out / "m.json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double width = nlohmann::json::parse(io::read_file(out / "m.json")).at("points")[0].at("fwhm_axial");
    if (k == 1) {
      EXPECT_LT(width, 0.8 * pulse);
      EXPECT_NE(r.output.find("usrecon: metrics: warning: in this image, linear interpolation at about 4 "
                              "samples a cycle dips each channel's envelope by up to 3 dB between samples (the image "
                              "loses amplitude unevenly and its speckle and points scallop): reconstruct --upsample 2 "
                              "gives at least 8\n"),
                std::string::npos)
          << r.output;
    } else {
      EXPECT_NEAR(width, pulse, 0.02 * pulse);
      EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
    }
  }
  // At K = 2 (8 samples a cycle, estimated within 5 %) metrics says nothing, and the default depth
  // step stays the data's c / (4 fs).
  r = run_usrecon("reconstruct " + quote(rf) + " --model planewave --fs 2e7 --angles-deg 0 --backend cpu --save-raw "
                  "--x-range -1e-3:1e-3 --dx 1e-4 --z-range 10e-3:14e-3 --upsample 2 -o " + quote(dir_ / "k2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "k2" / "one.json")).at("grid").at("dz"), 1540 / (4 * 2e7));
  r = run_usrecon("metrics " + quote(dir_ / "k2" / "one.npy") + " --truth " + quote(truth) + " -o " +
                  quote(dir_ / "k2" / "m.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  // reconstruct itself says so where --upsample is not given, on stderr and in the frame's JSON;
  // nearest's phase error likewise. Given (even as 1), it is not said.
  const std::string recon_rf = "reconstruct " + quote(rf) +
                               " --model planewave --fs 2e7 --angles-deg 0 --backend cpu --x-range -1e-3:1e-3 "
                               "--dx 1e-4 --z-range 10e-3:14e-3 -o ";
  for (const std::string interp : {"linear", "nearest"}) {
    SCOPED_TRACE(interp);
    const fs::path out = dir_ / ("default-" + interp);
    r = run_usrecon(recon_rf + quote(out) + " --overwrite --interp " + interp);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string said =
        interp == "linear"
            ? "warning: " + rf.string() + ": linear interpolation at about 4 samples a cycle dips each channel's envelope by "
                  "up to 3 dB between samples (the image loses amplitude unevenly and its speckle and points scallop): "
                  "--upsample 2 gives at least 8 (or give --upsample 1 to keep the data's rate without this warning)"
            : "warning: " + rf.string() + ": nearest-sample interpolation at about 4 samples a cycle rounds each channel's "
                  "delay by up to 45 degrees of phase (the sum over the aperture loses focus): --upsample 2 gives at "
                  "least 8 (or give --upsample 1 to keep the data's rate without this warning)";
    EXPECT_NE(r.output.find("usrecon: " + said + "\n"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("usrecon: warning"), r.output.rfind("usrecon: warning")) << "said once, nothing else: " << r.output;
    const nlohmann::json p = nlohmann::json::parse(io::read_file(out / "one.json")).at("parameters");
    ASSERT_TRUE(p.contains("warnings")) << p.dump();
    EXPECT_EQ(p.at("warnings").size(), 1u) << p.dump();
    EXPECT_NE(said.find(p.at("warnings")[0].get<std::string>()), std::string::npos) << p.dump();
    r = run_usrecon(recon_rf + quote(out) + " --overwrite --upsample 1 --interp " + interp);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  }
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model planewave --fs 2e7 --angles-deg 0 --upsample 17 -o " +
                             quote(dir_ / "x"),
                         "--upsample");
}

TEST_F(CliDas, SimulateReconstructMetricsRoundTrip) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path rf = dir_ / "sa.npy", truth = dir_ / "truth.json", out = dir_ / "out";
  const std::string geometry = " --elements 32 --pitch 0.3e-3 --fs 40e6 --t0 0";
  auto r = run_command(quote(usrecon_exe()) + " simulate --model sa" + geometry +
                       " --samples 1600 --point 0,10 --point 2,18 --truth " + quote(truth) + " -o " + quote(rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Geometry through a config file (CLI11 TOML), the rest on the command line.
  io::write_file_atomic(dir_ / "probe.toml", "pitch = 0.3e-3\nfs = 40e6\nsound-speed = 1540\n");
  r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(rf) + " --model sa --config " +
                  quote(dir_ / "probe.toml") +
                  " --x-range -4e-3:4e-3 --z-range 6e-3:22e-3 --dx 0.03e-3 --dz 0.03e-3 --fnumber 1.5"
                  " --window hann --save-raw -o " + quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"sa.png", "sa.json", "sa.npy"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  const fs::path metrics = dir_ / "metrics.json";
  r = run_command(quote(usrecon_exe()) + " metrics " + quote(out / "sa.npy") + " --truth " +
                  quote(truth) + " -o " + quote(metrics));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json m = nlohmann::json::parse(io::read_file(metrics));
  ASSERT_EQ(m.at("points").size(), 2u);
  for (const auto& p : m.at("points")) {
    EXPECT_LE(p.at("error").get<double>(), 1540 / 5e6 / 4) << p.dump();
    EXPECT_GT(p.at("fwhm_lateral").get<double>(), 0);
  }
  // A bad option value is refused with the option's name.
  r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(rf) +
                  " --model sa --pitch 0.3e-3 --x-range 4e-3 -o " + quote(out));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--x-range"), std::string::npos) << r.output;
  // Options another model would ignore are refused, naming the option, and nothing is written.
  const std::string seed_only = " --model seed -o " + quote(dir_ / "seed_out");
  expect_usrecon_refused("reconstruct " + quote(rf) + seed_only + " --pitch 0.3e-3",
                 "--pitch applies to the general models (--model planewave, sa, dw or fw); --model seed has the seed's "
                 "fixed geometry");
  expect_usrecon_refused("reconstruct " + quote(rf) + seed_only + " --sources-x 0 --sources-z -1e-3", "--sources-");
  EXPECT_FALSE(fs::exists(dir_ / "seed_out"));
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model dw --sources-x 0 --sources-z -1e-3 --tx-elements 0 -o " +
                     quote(out),
                 "--tx-elements applies to --model sa only");
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model planewave --angles-deg 0 --tx-elements 0 -o " + quote(out),
                 "--tx-elements applies to --model sa only");
  expect_usrecon_refused("simulate --model dw --sources-x 0 --sources-z -1e-3 --tx-elements 0 --point 0,5 -o " +
                     quote(dir_ / "dw.npy"),
                 "--tx-elements applies to --model sa only");
  expect_usrecon_refused("simulate --point 5,5 --elements 32 -o " + quote(dir_ / "seed.txt"),
                 "--elements applies to the general models (--model planewave, sa, dw or fw); --model seed has the "
                 "seed's fixed geometry");
  EXPECT_FALSE(fs::exists(dir_ / "dw.npy"));
  EXPECT_FALSE(fs::exists(dir_ / "seed.txt"));
  // --cuda-kernel: a general-model, CUDA-backend option; the plane-wave kernels take plane waves.
  expect_usrecon_refused("reconstruct " + quote(rf) + seed_only + " --cuda-kernel pixel-per-thread",
                         "--cuda-kernel applies to the general models");
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model sa --cuda-kernel element-outer -o " + quote(out),
                         "--cuda-kernel element-outer applies to --model planewave only");
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model sa --cuda-kernel transmit-blocked -o " + quote(out),
                         "--cuda-kernel transmit-blocked applies to --model planewave only");
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model sa --backend cpu --cuda-kernel pixel-per-thread -o " +
                             quote(out),
                         "--cuda-kernel pixel-per-thread applies to the CUDA backend, not --backend cpu");
  expect_usrecon_refused("reconstruct " + quote(rf) + " --model sa --cuda-kernel fastest -o " + quote(out),
                         "--cuda-kernel");
  // With --backend auto the kernel is used when a device is there; without one the CPU runs and
  // the JSON says so.
  r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(rf) + " --model sa --config " +
                  quote(dir_ / "probe.toml") +
                  " --x-range -2e-3:2e-3 --z-range 8e-3:12e-3 --cuda-kernel pixel-per-thread --overwrite -o " +
                  quote(dir_ / "auto_out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json meta = nlohmann::json::parse(io::read_file(dir_ / "auto_out" / "sa.json"));
  if (meta.at("backend").at("name") == "cuda")
    EXPECT_EQ(meta.at("backend").at("kernel"), "pixel-per-thread") << meta.at("backend").dump();
  else
    EXPECT_EQ(meta.at("backend").at("name"), "cpu") << meta.at("backend").dump();
}

// --config as a demanding user writes one: lists as TOML arrays or bare (angles-deg = -5,0,5),
// the output directory in the file, INI with its ';' comments. And what it must not be: a
// directory or a FIFO (read as empty, or waited on for ever), the --report file (overwritten), a
// data file by mistake (CLI11's message quoted the line whole: a megabyte); without -o anywhere,
// the run says -o is required.
TEST_F(CliDas, ConfigFileTakesListsTheOutputAndIniCommentsAndIsChecked) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path rf = dir_ / "pw.npy";
  auto r = run_usrecon("simulate --model planewave --elements 16 --samples 800 --angles-deg -5,0,5 --point 0,10 -o " +
                       quote(rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string grid = " --x-range -3e-3:3e-3 --z-range 6e-3:14e-3";
  const auto angles_of = [&](const fs::path& json) {
    return nlohmann::json::parse(io::read_file(json)).at("parameters").at("angles_deg").get<std::vector<double>>();
  };
  const std::vector<double> angles = {-5, 0, 5};
  int n = 0;
  for (const std::string list : {"[-5, 0, 5]", "-5,0,5", "\"-5,0,5\""}) {
    SCOPED_TRACE("angles-deg = " + list);
    const fs::path config = dir_ / ("c" + std::to_string(++n) + ".toml"), out = dir_ / ("out" + std::to_string(n));
    io::write_file_atomic(config, "model = \"planewave\"\nangles-deg = " + list + "\noutput = \"" + out.string() +
                                      "\"\nfs = 20e6\npitch = 0.3e-3\n");  // the geometry an NPY file lacks
    r = run_usrecon("reconstruct " + quote(rf) + grid + " --config " + quote(config));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(angles_of(out / "pw.json"), angles);
  }
  io::write_file_atomic(dir_ / "c.ini", "; INI\n[reconstruct]\nmodel = planewave ; the model\nangles-deg = -5,0,5\nfs = 20e6\npitch = 0.3e-3\n");
  r = run_usrecon("reconstruct " + quote(rf) + grid + " --config " + quote(dir_ / "c.ini") + " -o " +
                  quote(dir_ / "out_ini"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(angles_of(dir_ / "out_ini" / "pw.json"), angles);

  const std::string plain = "reconstruct " + quote(rf) + grid + " --model planewave --angles-deg -5,0,5 --fs 20e6 --pitch 0.3e-3";
  // The file is read as every input is, and said in the same words (CLI11 read a directory as an
  // empty file and waited on a FIFO for ever; an unreadable file was "not readable (missing?)").
  expect_usrecon_refused(plain + " --config " + quote(dir_) + " -o " + quote(dir_ / "x"),
                         "--config: input file \"" + dir_.string() + "\" is a directory, not a file");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  expect_usrecon_refused(plain + " --config " + quote(dir_ / "fifo") + " -o " + quote(dir_ / "x"),
                         "fifo\" is not a regular file");
  io::write_file_atomic(dir_ / "big.toml", "# " + std::string(1 << 20, 'x') + "\nfs = 20e6\n");
  expect_usrecon_refused(plain + " --config " + quote(dir_ / "big.toml") + " -o " + quote(dir_ / "x"),
                         "big.toml\" is larger than 1048576 bytes");
  // A missing or misnamed file is said in the words of every input (it was "no such file", of
  // "c.ini/" too).
  expect_usrecon_refused(plain + " --config " + quote(dir_ / "none.toml") + " -o " + quote(dir_ / "x"),
                         "--config: input file \"" + (dir_ / "none.toml").string() + "\" does not exist");
  expect_usrecon_refused(plain + " --config " + quote((dir_ / "c.ini").string() + "/") + " -o " + quote(dir_ / "x"),
                         "c.ini/\" cannot be read: Not a directory");
  const std::string config_text = io::read_file(dir_ / "c.ini");
  expect_usrecon_refused(plain + " --config " + quote(dir_ / "c.ini") + " --report " + quote(dir_ / "c.ini") + " -o " +
                             quote(dir_ / "x"),
                         "is the --config file; it would be overwritten");
  EXPECT_EQ(io::read_file(dir_ / "c.ini"), config_text);
  expect_usrecon_refused(plain, "--output (-o) is required");
  // An NPY file says no sampling rate or pitch: they must be given (defaults of 20 MHz and 0.3 mm
  // gave an image of nothing for data of another rate, with exit 0).
  const std::string no_geometry = "reconstruct " + quote(rf) + grid + " --model planewave --angles-deg -5,0,5 -o " +
                                  quote(dir_ / "z");
  expect_usrecon_refused(no_geometry, "pw.npy: usrecon reads no acquisition geometry from this file: give --fs HZ (the "
                                      "sampling rate) and --pitch M (the element pitch), on the command line or in --config");
  expect_usrecon_refused(no_geometry + " --pitch 0.3e-3", "this file: give --fs HZ (the sampling rate), on the command line");
  expect_usrecon_refused(no_geometry + " --fs 20e6", "this file: give --pitch M (the element pitch), on the command line");
  // --samples is the file's to say for NPY; given, it must agree (it was ignored).
  expect_usrecon_refused(plain + " --samples 1000 -o " + quote(dir_ / "y"),
                         "pw.npy: the data hold 800 samples per channel but --samples says 1000");
  // Axes named out of order: the message says how the array was read and points at --layout.
  expect_usrecon_refused(plain + " --layout transmits,elements,samples -o " + quote(dir_ / "y"),
                         "pw.npy: the data hold 800 transmits but the planewave acquisition describes 3 (one per "
                         "steering angle); the array read as transmits,elements,samples gave 3 samples x 16 elements x "
                         "800 transmits (--layout names its axes in order");
  // A data file given as the config: refused with a message of a few hundred characters.
  r = run_usrecon(plain + " --config " + quote(fs::path(USRECON_SOURCE_DIR) / "data/example.txt") + " -o " +
                  quote(dir_ / "x"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--config"), std::string::npos) << r.output.substr(0, 500);
  EXPECT_LT(r.output.size(), 1000u) << r.output.substr(0, 500);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

// Warnings and hints fire where they apply, and only there: more elements than samples where
// --layout decided the axes (not a USTB file's own), a layout hint only for a count that
// disagrees, a given value that differs from the file's, no pitch needed for one element on a
// given lateral grid, and no time zero in a synthetic aperture's JSON.
TEST_F(CliDas, WarningsAndHintsFireWhereTheyApply) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path npy = dir_ / "p.npy", uff = dir_ / "u.uff";
  auto r = run_usrecon("simulate --model planewave --elements 32 --samples 400 --point 0,5 -o " + quote(npy));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string small = " --x-range -1e-3:1e-3 --z-range 2e-3:3e-3 --backend cpu --upsample 1";
  r = run_usrecon("reconstruct " + quote(npy) + " --model planewave --angles-deg 0 --fs 20e6 --pitch 3e-4 "
                  "--layout elements,samples,transmits" + small + " -o " + quote(dir_ / "a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("p.npy: more elements than samples per channel; the array read as elements,samples,"
                          "transmits gave 32 samples x 400 elements x 1 transmits"),
            std::string::npos) << r.output;
  // A USTB file of a wide probe and a short record: its own layout, nothing to warn of, and a
  // given rate that differs from the file's is said.
  r = run_usrecon("simulate --model planewave --elements 128 --samples 120 --point 0,2 -o " + quote(uff));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_usrecon("reconstruct " + quote(uff) + " --model planewave" + small + " -o " + quote(dir_ / "b"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  r = run_usrecon("reconstruct " + quote(uff) + " --model planewave --fs 40e6" + small + " -o " + quote(dir_ / "c"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("u.uff: the file says --fs 2e+07, but --fs 4e+07 was given, and is used"), std::string::npos)
      << r.output;
  // No angles is no count that disagrees: no layout hint.
  r = run_usrecon("reconstruct " + quote(npy) + " --model planewave --fs 20e6 --pitch 3e-4" + small + " -o " +
                  quote(dir_ / "d"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--angles-deg"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("the array read as"), std::string::npos) << r.output;
  // One element: its pitch matters only to a default lateral grid.
  const fs::path one = dir_ / "one.npy";
  r = run_usrecon("simulate --model sa --elements 1 --samples 400 --point 0,5 -o " + quote(one));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_usrecon("reconstruct " + quote(one) + " --model sa --fs 20e6 --x-range -1e-3:1e-3 --dx 1e-4 --z-range "
                  "2e-3:6e-3 --save-raw --backend cpu -o " + quote(dir_ / "e"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_usrecon_refused("reconstruct " + quote(one) + " --model sa --fs 20e6 --z-range 2e-3:6e-3 -o " +
                             quote(dir_ / "f"),
                         "give --pitch M (the element pitch)");
  const nlohmann::json sa = nlohmann::json::parse(io::read_file(dir_ / "e" / "one.json")).at("parameters");
  EXPECT_FALSE(sa.contains("time_zero")) << sa.dump();
  const nlohmann::json pw = nlohmann::json::parse(io::read_file(dir_ / "b" / "u.json")).at("parameters");
  EXPECT_TRUE(pw.contains("time_zero")) << pw.dump();
}

// Transmits given on the command line win over a USTB file's own, as --fs does, and where they
// differ it is said, in the frame's JSON too (angles were replaced silently). The same transmits
// given say nothing.
TEST_F(CliDas, GivenTransmitsThatDifferFromTheFilesAreSaid) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const std::string small = " --x-range -1e-3:1e-3 --z-range 2e-3:3e-3 --backend cpu --upsample 1";
  const fs::path pw = dir_ / "pw.uff", sa = dir_ / "sa.uff", dw = dir_ / "dw.uff", wide = dir_ / "wide.uff";
  for (const std::string& args :
       {"--model planewave --elements 32 --angles-deg -1,0,1 -o " + quote(pw),
        "--model sa --elements 16 --tx-elements 0,5,10 -o " + quote(sa),
        "--model dw --elements 16 --sources-x -1e-3,0,1e-3 --sources-z -5e-3 -o " + quote(dw),
        "--model planewave --elements 32 --angles-deg -10:0.5:10 -o " + quote(wide)}) {
    const auto r = run_usrecon("simulate --samples 400 --point 0,5 " + args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto warned = [&](const fs::path& input, const std::string& args, const std::string& warning) {
    SCOPED_TRACE(args);
    const fs::path out = dir_ / ("out_" + input.stem().string());
    const auto r = run_usrecon("reconstruct " + quote(input) + " " + args + small + " --overwrite -o " + quote(out));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (warning.empty()) {
      EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
      return;
    }
    EXPECT_NE(r.output.find("usrecon: warning: " + input.string() + ": " + warning), std::string::npos) << r.output;
    const nlohmann::json frame = nlohmann::json::parse(io::read_file(out / (input.stem().string() + ".json")));
    ASSERT_TRUE(frame.at("parameters").contains("warnings")) << frame.dump();
    EXPECT_NE(frame.at("parameters").at("warnings").dump().find(warning.substr(0, 40)), std::string::npos)
        << frame.dump();
  };
  warned(pw, "--model planewave --angles-deg -2,0,2",
         "the file's angles (-1, 0, 1 degrees) differ from --angles-deg's (-2, 0, 2 degrees), which are used");
  warned(pw, "--model planewave --angles-deg -1:1:1", "");
  // The file's clock (USTB's: the wavefront crossing the array centre) given another way.
  warned(pw, "--model planewave --time-zero first-element",
         "the file times its waves with --time-zero center, but --time-zero first-element was given, and is used");
  warned(pw, "--model planewave --time-zero center", "");
  warned(sa, "--model sa --tx-elements 0,6,10",
         "the file's transmitting elements (0, 5, 10) differ from --tx-elements's (0, 6, 10), which are used");
  warned(sa, "--model sa --tx-elements 0,5,10", "");
  // The file stores the middle source's x as a sine's rounding (6e-19 m): said as 0.
  warned(dw, "--model dw --sources-x -1e-3,0,2e-3 --sources-z -5e-3",
         "the file's virtual sources' x (-0.001, 0, 0.001 m) differ from --sources-x's (-0.001, 0, 0.002 m)");
  warned(dw, "--model dw --sources-x -1e-3,0,1e-3 --sources-z -5e-3", "");
  warned(wide, "--model planewave --angles-deg -20:1:20",
         "the file's angles (-10, -9.5, -9, ..., 9.5, 10 degrees, 41 in all) differ from --angles-deg's "
         "(-20, -19, -18, ..., 19, 20 degrees, 41 in all), which are used");
}

// Values that read as another unit than the option's (mm for m, us for s, MHz for Hz, mm/us for
// m/s) are warned of with the value written in the smaller unit; a grid they make too deep or too
// long for a PNG is refused before beamforming, saying why (it was "the z range must be MIN:MAX",
// "the image grid reaches more than 1 km" and, after beamforming, libpng's "Invalid IHDR data").
TEST_F(CliDas, ValuesInTheWrongUnitAreSaid) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path rf = dir_ / "pw.npy";
  auto r = run_usrecon("simulate --model planewave --elements 32 --samples 400 --point 0,5 -o " + quote(rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string base = "reconstruct " + quote(rf) + " --model planewave --angles-deg 0 --backend cpu --overwrite -o " +
                           quote(dir_ / "o");
  const std::string geometry = " --fs 20e6 --pitch 3e-4 --upsample 1";
  const auto ran = [&](const std::string& args, bool ok, const std::vector<std::string>& said) {
    SCOPED_TRACE(args);
    const auto run = run_usrecon(base + args);
    EXPECT_EQ(run.exit_code == 0, ok) << run.output;
    for (const std::string& text : said) EXPECT_NE(run.output.find(text), std::string::npos) << run.output;
  };
  ran(geometry, true, {});
  EXPECT_EQ(run_usrecon(base + geometry).output.find("warning"), std::string::npos);
  ran(" --fs 20e6 --pitch 0.3", true,
      {"usrecon: warning: --pitch 0.3 is in metres (30 cm): for 0.3 mm give 0.3e-3"});
  // Said once on stderr, kept in the frame's JSON and in its --report entry.
  {
    const fs::path report = dir_ / "units-report.json";
    const auto run = run_usrecon(base + " --fs 20e6 --pitch 0.3 --report " + quote(report));
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const std::string said = "--pitch 0.3 is in metres (30 cm): for 0.3 mm give 0.3e-3";
    std::size_t times = 0;
    for (std::size_t at = run.output.find(said); at != std::string::npos; at = run.output.find(said, at + 1)) ++times;
    EXPECT_EQ(times, 1u) << run.output;
    const auto frame = nlohmann::json::parse(io::read_file(dir_ / "o" / "pw.json"));
    EXPECT_EQ(frame.value("option_warnings", nlohmann::json()), nlohmann::json::array({said}));
    const auto entries = nlohmann::json::parse(io::read_file(report));
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].value("option_warnings", nlohmann::json()), nlohmann::json::array({said}));
    // Without such a value there is no key.
    ASSERT_EQ(run_usrecon(base + geometry + " --report " + quote(report)).exit_code, 0);
    EXPECT_FALSE(nlohmann::json::parse(io::read_file(dir_ / "o" / "pw.json")).contains("option_warnings"));
    EXPECT_FALSE(nlohmann::json::parse(io::read_file(report))[0].contains("option_warnings"));
  }
  ran(geometry + " --dx 0.1", true, {"usrecon: warning: --dx 0.1 is in metres (10 cm): for 0.1 mm give 0.1e-3"});
  // Too small for any unit (it was accepted without a word).
  ran(" --fs 20e6 --pitch 0.3e-6 --x-range -1e-3:1e-3 --z-range 2e-3:3e-3 --dx 1e-4", true,
      {"usrecon: warning: --pitch 0.3e-6 is in metres (0.3 um, under the micrometre of any array or grid)\n"});
  ran(geometry + " --x-range -5:5 --dx 0.5", true,
      {"usrecon: warning: --x-range -5:5 is in metres (reaching 5 m): for -5:5 mm give -5e-3:5e-3"});
  ran(geometry + " --sound-speed 1.54", true, {"usrecon: warning: --sound-speed 1.54 is in m/s: for 1.54 mm/us give 1540"});
  ran(geometry + " --z-range 5:90", false,
      {"usrecon: warning: --z-range 5:90 is in metres (reaching 90 m): for 5:90 mm give 5e-3:90e-3",
       "pw.npy: grid: 63 x 4.41558e+06 pixels, more than 1e6 along z (a PNG's most); use a larger --dz"});
  ran(" --fs 20 --pitch 3e-4", false,
      {"usrecon: warning: --fs 20 is in Hz (20 Hz): for 20 MHz give 20e6",
       "pw.npy: the default depths reach 15361.5 m, past the grid's 1 km: the record, 400 samples at 20 Hz from t0 0 s"});
  ran(geometry + " --t0 5", false,
      {"usrecon: warning: --t0 5 is in seconds (5 s): for 5 us give 5e-6", "the default depths reach 3850.02 m"});
  // Given with an exponent, it is said in the larger unit too (it was "--t0 -1e-3 is in seconds").
  ran(geometry + " --t0 -1e-3", false, {"usrecon: warning: --t0 -1e-3 is in seconds (-1 ms)\n"});
  // The unit as six digits show the value: 0.9999999 s is 1 s (it was "1000 ms").
  ran(geometry + " --t0 0.9999999", true, {"usrecon: warning: --t0 0.9999999 is in seconds (1 s)"});
  ran(" --pitch 3e-4 --fs 999.9999 --z-range 2e-3:6e-3", true, {"usrecon: warning: --fs 999.9999 is in Hz (1 kHz)"});
  ran(geometry + " --t0 -1", false,
      {"pw.npy: no depth to image by default: with t0 -1 s, the last of 400 samples at 2e+07 Hz comes 0.99998 s "
       "before the transmit"});
  // Given with an exponent, the value was meant: its unit is still said, with no rewriting.
  ran(geometry + " --dz 2e-2", true, {"usrecon: warning: --dz 2e-2 is in metres (2 cm)\n"});
  // From --config too, after a range written with spaces (which ended the checks).
  io::write_file_atomic(dir_ / "mm.toml", "z-range = \"0.002 : 0.006\"\npitch = 0.3\nfs = 20e6\n");
  ran(" --config " + quote(dir_ / "mm.toml"), true, {"usrecon: warning: --pitch 0.3 is in metres (30 cm)"});
  // A value that the smaller unit would make implausible (a sonar's 50 kHz as 50 GHz) is said to be
  // in its unit, without a rewrite.
  ran(" --pitch 3e-4 --fs 50000 --z-range 2e-3:6e-3", true, {"usrecon: warning: --fs 50000 is in Hz (50 kHz)\n"});
}

// --backend auto without a device says it runs on the CPU for the general models too (only the
// seed model said so), and a seed run asking for --precision single hears that the CPU is exact.
TEST_F(CliDas, AutoWithoutADeviceSaysItUsesTheCpu) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  if (usrecon::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: auto uses it";
  const fs::path rf = dir_ / "pw.uff";
  auto r = run_usrecon("simulate --model planewave --elements 16 --samples 400 --point 0,6 -o " + quote(rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_usrecon("reconstruct " + quote(rf) + " --model planewave -o " + quote(dir_ / "a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("usrecon: no CUDA device ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("); using the CPU\n"), std::string::npos) << r.output;
  r = run_usrecon("reconstruct " + quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt") +
                  " --precision single -o " + quote(dir_ / "b"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("using the CPU (--precision single is the CUDA kernel's: the CPU is exact)"),
            std::string::npos) << r.output;
  // A CUDA kernel asked for is said to go unused, as --precision single is (it went unsaid).
  r = run_usrecon("reconstruct " + quote(rf) + " --model planewave --cuda-kernel transmit-blocked -o " + quote(dir_ / "c"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("using the CPU (--cuda-kernel transmit-blocked is the CUDA backend's; the CPU runs its own)"),
            std::string::npos) << r.output;
}

// Channel data whose samples are all >= 0 (an unsigned recording, RFdata1's uint8 around 128)
// without --offset mean gave a blur with exit 0 and no word: reconstruct warns (stderr, the
// frame's JSON, the report) and info says so; with --offset mean neither does.
TEST_F(CliDas, UnsignedLookingDataWithoutAnOffsetAreWarnedOf) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path signed_rf = dir_ / "s.npy", unsigned_rf = dir_ / "u.npy";
  auto r = run_usrecon("simulate --model planewave --elements 16 --samples 400 --point 0,6 -o " + quote(signed_rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // What reconstruct will need given, since an NPY file cannot say it: all of it, as the run
  // with just those options shows.
  const std::string advice = "s.npy holds no geometry: reconstruct it with ";
  const std::size_t at = r.output.find(advice);
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string options = r.output.substr(at + advice.size(), r.output.find('\n', at) - at - advice.size());
  EXPECT_EQ(options, "--model planewave --fs 2e+07 --pitch 3e-04 --sound-speed 1540 --t0 0 --time-zero first-element "
                     "--angles-deg 0");
  const auto advised = run_usrecon("reconstruct " + quote(signed_rf) + " " + options + " -o " + quote(dir_ / "advised"));
  EXPECT_EQ(advised.exit_code, 0) << advised.output;
  const io::NpyArray a = io::read_npy(signed_rf);
  std::vector<std::uint8_t> shifted;
  double peak = 0;
  for (double v : a.to_double()) peak = std::max(peak, std::abs(v));
  for (double v : a.to_double()) shifted.push_back(static_cast<std::uint8_t>(std::lround(128 + 120 * v / peak)));
  io::write_npy(unsigned_rf, std::span<const std::uint8_t>(shifted), std::span<const std::size_t>(a.shape));
  const std::string run = " --model planewave --angles-deg 0 --fs 20e6 --pitch 0.3e-3 --backend cpu --report ";
  r = run_usrecon("reconstruct " + quote(unsigned_rf) + run + quote(dir_ / "r1.json") + " -o " + quote(dir_ / "o1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string warning = "u.npy: every sample is >= 0, as an unsigned recording's are: --offset mean";
  EXPECT_NE(r.output.find("usrecon: warning: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(warning), std::string::npos) << r.output;
  const auto frame = nlohmann::json::parse(io::read_file(dir_ / "o1" / "u.json"));
  ASSERT_TRUE(frame.at("parameters").contains("warnings")) << frame.dump();
  EXPECT_NE(frame["parameters"]["warnings"][0].get<std::string>().find(warning), std::string::npos);
  const auto report = nlohmann::json::parse(io::read_file(dir_ / "r1.json"));
  ASSERT_TRUE(report.at(0).contains("warnings")) << report.dump();
  const auto info = run_usrecon("info " + quote(unsigned_rf));
  EXPECT_NE(info.output.find("every sample is >= 0, as an unsigned recording's are: --offset mean removes"),
            std::string::npos) << info.output;
  for (const std::string& quiet : {quote(unsigned_rf) + " --offset mean", quote(signed_rf)}) {
    SCOPED_TRACE(quiet);
    r = run_usrecon("reconstruct " + quiet + run + quote(dir_ / "r2.json") + " -o " + quote(dir_ / "o2") + " --overwrite --upsample 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
    EXPECT_FALSE(nlohmann::json::parse(io::read_file(dir_ / "r2.json")).at(0).contains("warnings"));
  }
  EXPECT_EQ(run_usrecon("info " + quote(signed_rf)).output.find("every sample is >= 0"), std::string::npos);

  // Data all zero (one that --offset mean made so included) beamform to a black image: said,
  // where it was not; and not the unsigned warning (no sample is > 0).
  io::write_npy(dir_ / "z.npy", std::span<const float>(std::vector<float>(a.size(), 0.0f)),
                std::span<const std::size_t>(a.shape));
  std::vector<float> constant(a.size(), 5.0f);
  io::write_npy(dir_ / "c.npy", std::span<const float>(constant), std::span<const std::size_t>(a.shape));
  for (const std::string& zero : {quote(dir_ / "z.npy"), quote(dir_ / "c.npy") + " --offset mean"}) {
    SCOPED_TRACE(zero);
    r = run_usrecon("reconstruct " + zero + run + quote(dir_ / "r3.json") + " -o " + quote(dir_ / "o3") + " --overwrite");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("usrecon: warning: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(".npy: every sample is 0, so the image is black"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("unsigned"), std::string::npos) << r.output;
  }
}

// A directory given to the general models contributes its NPY, MAT and HDF5 files (and
// source.txt), not the truth JSON beside them; each is reconstructed on its own.
TEST_F(CliDas, DirectoryOfChannelDataFilesIsOneBatch) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path in = dir_ / "acquisitions", out = dir_ / "images";
  fs::create_directories(in);
  const std::string geometry = " --elements 16 --pitch 0.3e-3 --fs 20e6 --angles-deg -5,0,5 --time-zero center";
  for (const char* name : {"one.npy", "two.uff"}) {
    const auto r = run_command(quote(usrecon_exe()) + " simulate --model planewave" + geometry +
                               " --samples 400 --point 0,6 --truth " + quote(in / (std::string(name) + ".json")) +
                               " -o " + quote(in / name));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(in) + " --model planewave" + geometry +
                             " --z-range 2e-3:10e-3 --report " + quote(dir_ / "report.json") + " -o " + quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 of 2 reconstructed, 0 failed"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "one.png"));
  EXPECT_TRUE(fs::exists(out / "two.png"));
  const nlohmann::json report = nlohmann::json::parse(io::read_file(dir_ / "report.json"));
  ASSERT_EQ(report.size(), 2u) << report.dump();
  EXPECT_EQ(fs::path(report[0].at("input").get<std::string>()).filename(), "one.npy");
  EXPECT_EQ(fs::path(report[1].at("input").get<std::string>()).filename(), "two.uff");
  // The seed model reads source.txt only: the same directory holds none for it.
  const auto seed = run_command(quote(usrecon_exe()) + " reconstruct " + quote(in) + " -o " + quote(dir_ / "seed"));
  EXPECT_EQ(seed.exit_code, 1);
  EXPECT_NE(seed.output.find("no input files (the directories given hold no *.txt)"), std::string::npos)
      << seed.output;
  // --var names a MAT variable or an HDF5 dataset: the directory's NPY file, which has none, is
  // not listed (it failed, "--var applies to MAT and HDF5 files only", and the run with it).
  const std::string var = " reconstruct " + quote(in) + " --model planewave --var /channel_data --z-range 2e-3:10e-3";
  const auto named = run_command(quote(usrecon_exe()) + var + " -o " + quote(dir_ / "var"));
  EXPECT_EQ(named.exit_code, 0) << named.output;
  EXPECT_NE(named.output.find("1 of 1 reconstructed, 0 failed"), std::string::npos) << named.output;
  EXPECT_TRUE(fs::exists(dir_ / "var" / "two.png"));
  // Named on the command line, an NPY file is still read, and refused for --var.
  const auto npy = run_command(quote(usrecon_exe()) + " reconstruct " + quote(in / "one.npy") + " --model planewave" +
                               geometry + " --var x -o " + quote(dir_ / "var_npy"));
  EXPECT_EQ(npy.exit_code, 1) << npy.output;
  EXPECT_NE(npy.output.find("--var applies to MAT and HDF5 files only"), std::string::npos) << npy.output;
  fs::remove(in / "two.uff");
  const auto none = run_command(quote(usrecon_exe()) + var + " -o " + quote(dir_ / "var_none"));
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("no input files (the directories given hold no *.mat, *.h5, *.hdf5, *.uff, which --var "
                             "reads)"),
            std::string::npos) << none.output;
}

// What a review found a run would do silently (2026-12-05), each now refused: an input's output
// replacing another input of the batch, a --report naming one of the run's outputs or lying in a
// missing directory (found only after the batch before), options the general models ignore, and
// a NaN pixel step taken for "not given".
TEST_F(CliDas, OutputsAndReportsNeverReplaceInputsOrEachOther) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const std::string geometry = " --elements 16 --pitch 0.3e-3 --fs 20e6 --angles-deg -5,0,5 --time-zero center";
  const fs::path d = dir_ / "d", e = dir_ / "e";
  fs::create_directories(d);
  fs::create_directories(e);
  for (const fs::path& file : {d / "p.npy", e / "p.npy"}) {
    const auto r = run_usrecon("simulate --model planewave" + geometry + " --samples 300 --point 0,5 -o " + quote(file));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string d_before = io::read_file(d / "p.npy"), e_before = io::read_file(e / "p.npy");
  const std::string reconstruct = "reconstruct --model planewave" + geometry + " --z-range 2e-3:8e-3 ";
  // e/p.npy's raw output would be d/p.npy, the first input.
  const auto both = run_usrecon(reconstruct + quote(d / "p.npy") + " " + quote(e / "p.npy") + " -o " + quote(d) +
                                " --save-raw --overwrite");
  EXPECT_EQ(both.exit_code, 1) << both.output;
  EXPECT_NE(both.output.find("would overwrite the input"), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("would overwrite another input of this batch"), std::string::npos) << both.output;
  EXPECT_EQ(io::read_file(d / "p.npy"), d_before);
  EXPECT_EQ(io::read_file(e / "p.npy"), e_before);

  const fs::path out = dir_ / "out";
  expect_usrecon_refused(reconstruct + quote(e / "p.npy") + " -o " + quote(out) + " --report " + quote(out / "p.json"),
                         "is the output p.json of");
  EXPECT_FALSE(fs::exists(out / "p.png")) << "the batch ran before the report was refused";
  expect_usrecon_refused(reconstruct + quote(e / "p.npy") + " -o " + quote(out) + " --report " +
                             quote(dir_ / "no-such-dir" / "r.json"),
                         "does not exist");
  EXPECT_FALSE(fs::exists(out / "p.png")) << "the batch ran before the report was refused";
  // A run that fails before any input still leaves its report (here: -o names a file).
  fs::create_directories(dir_ / "reports");
  const fs::path not_a_dir = dir_ / "reports" / "file";
  io::write_file_atomic(not_a_dir, "x");
  expect_usrecon_refused(reconstruct + quote(e / "p.npy") + " -o " + quote(not_a_dir) + " --report " +
                             quote(dir_ / "reports" / "r.json"),
                         "cannot create output directory");
  const nlohmann::json unrun = nlohmann::json::parse(io::read_file(dir_ / "reports" / "r.json"));
  ASSERT_EQ(unrun.size(), 1u) << unrun.dump();
  EXPECT_EQ(unrun[0]["status"], "not_processed");
  // The output directory the run makes may hold the report.
  const fs::path fresh = dir_ / "fresh";
  const auto into_fresh = run_usrecon(reconstruct + quote(e / "p.npy") + " -o " + quote(fresh) + " --report " +
                                      quote(fresh / "report.json"));
  EXPECT_EQ(into_fresh.exit_code, 0) << into_fresh.output;
  EXPECT_TRUE(fs::exists(fresh / "report.json"));

  const std::string one = reconstruct + quote(e / "p.npy") + " -o " + quote(out);
  expect_usrecon_refused(one + " --channels 16", "--channels applies to --model seed only");
  expect_usrecon_refused(one + " --precision single", "--precision applies to --model seed only");
  expect_usrecon_refused(one + " --tukey-alpha 0.3", "--tukey-alpha applies to --window tukey only");
  expect_usrecon_refused(one + " --dx nan", "--dx: must be a positive number, not nan");
  expect_usrecon_refused(one + " --dz nan", "--dz: must be a positive number, not nan");
  // NaN is refused where the options are read (it passed CLI11's Range, to be refused later).
  expect_usrecon_refused(one + " --fnumber nan", "--fnumber: must be a number from 0 to 100, not nan");
  expect_usrecon_refused(one + " --window tukey --tukey-alpha nan", "--tukey-alpha: must be a number from 0.01 to 1, not nan");
  // In a line's words: CLI11's own check printed double's largest value, 309 digits.
  const auto pitch = run_usrecon(one + " --pitch -1");
  EXPECT_NE(pitch.output.find("--pitch: must be a positive number, not -1\n"), std::string::npos) << pitch.output;
  EXPECT_LT(pitch.output.size(), 200u) << pitch.output;
  expect_usrecon_refused("reconstruct --model sa --elements 16 --pitch 0.3e-3 --fs 20e6 --time-zero center " +
                             quote(e / "p.npy") + " -o " + quote(out),
                         "--time-zero applies to plane, diverging and focused waves");
  if (usrecon::cuda_device_count() == 0)  // refused before any input is read, as the seed model does
    expect_usrecon_refused(one + " --backend cuda", "--backend cuda: ");
  EXPECT_FALSE(fs::exists(out / "p.png"));
  // A window needs an aperture to weigh: without one every weight is 1 (hann and tukey gave rect's
  // image bit for bit, silently).
  expect_usrecon_refused(one + " --window hann", "--window hann weighs the receive aperture of --fnumber F > 0");
  EXPECT_EQ(run_usrecon(one + " --window rect").exit_code, 0);
  EXPECT_EQ(run_usrecon(one + " --fnumber 1 --window tukey --tukey-alpha 0.3 --overwrite").exit_code, 0);  // where it applies
}

// Options that fix nothing but themselves are checked once, before any input is read: one error,
// nothing written, every input in the report not processed. (Checked file by file, each input
// failed with the same error and the output directory was made.)
TEST_F(CliDas, BadOptionsAreRefusedOnceBeforeAnyInput) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const std::string geometry = " --elements 16 --pitch 0.3e-3 --fs 20e6 --time-zero center";
  const fs::path a = dir_ / "a.npy", b = dir_ / "b.npy";
  const auto made = run_usrecon("simulate --model planewave" + geometry + " --angles-deg -5,0,5 --samples 300 "
                                "--point 0,5 -o " + quote(a));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  fs::copy_file(a, b);
  const fs::path out = dir_ / "out", report = dir_ / "report.json";
  const std::string run = "reconstruct --model planewave" + geometry + " --z-range 2e-3:8e-3 " + quote(a) + " " +
                          quote(b) + " -o " + quote(out) + " --report " + quote(report);
  const std::pair<std::string, std::string> cases[] = {
      {" --angles-deg -5,0,89", "steering angles must lie within +-85 degrees"},
      {" --angles-deg -5,0,5 --x-range -2e3:0", "the image grid reaches more than 1 km"},
      {" --angles-deg -5,0,5 --x-range -1e-2:1e-2 --dx 1e-9 --dz 1e-9", "more than 4e8 pixels"},
  };
  for (const auto& [extra, why] : cases) {
    SCOPED_TRACE(extra);
    fs::remove(report);
    const auto refused = run_usrecon(run + extra);
    EXPECT_EQ(refused.exit_code, 1) << refused.output;
    const std::size_t first = refused.output.find(why);
    ASSERT_NE(first, std::string::npos) << refused.output;
    EXPECT_EQ(refused.output.find(why, first + 1), std::string::npos) << "said more than once:\n" << refused.output;
    EXPECT_EQ(refused.output.find("a.npy"), std::string::npos) << "an input was read:\n" << refused.output;
    EXPECT_FALSE(fs::exists(out)) << "the run made its output directory";
    const nlohmann::json unrun = nlohmann::json::parse(io::read_file(report));
    ASSERT_EQ(unrun.size(), 2u) << unrun.dump();
    for (const auto& entry : unrun) EXPECT_EQ(entry.at("status"), "not_processed") << unrun.dump();
  }
  // A general model's file given to the seed model (the default) is named as such, not parsed as
  // text; info is offered only for files that say their model (an NPY does not).
  expect_usrecon_refused("reconstruct " + quote(a) + " -o " + quote(dir_ / "seed_out"),
                         "--model seed reads source.txt text, not a .npy file; give the general model the data were "
                         "recorded with (--model planewave, sa, dw or fw; a .npy file does not say which)");
  // The same options within bounds run.
  const auto fine = run_usrecon(run + " --angles-deg -5,0,5 --fnumber 1 --x-range -2e-3:2e-3");
  EXPECT_EQ(fine.exit_code, 0) << fine.output;
  EXPECT_TRUE(fs::exists(out / "a.png") && fs::exists(out / "b.png"));
}

// A PICMUS-layout HDF5 file (as `simulate` writes one: /US/US_DATASET0000/data/real
// [angles][channels][samples], its parameters beside it, time zero when the wavefront crosses the
// array centre) reconstructs with no geometry options: everything comes from the file.
TEST_F(CliDas, PicmusHdf5FileCarriesItsOwnGeometry) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path rf = dir_ / "pw.hdf5", truth = dir_ / "truth.json";
  auto r = run_command(quote(usrecon_exe()) + " simulate --model planewave --angles-deg -10:5:10"
                       " --elements 64 --pitch 0.3e-3 --fs 20e6 --t0 2e-6 --samples 2000 --point 0,20"
                       " --point 5,30 --point -6,40 --truth " + quote(truth) + " -o " + quote(rf));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto reconstruct_and_measure = [&](const std::string& options, const fs::path& out) {
    auto run = run_command(quote(usrecon_exe()) + " reconstruct " + quote(rf) + " --model planewave" +
                           options + " --save-raw -o " + quote(out));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    run = run_command(quote(usrecon_exe()) + " metrics " + quote(out / "pw.npy") + " --truth " + quote(truth) +
                      " -o " + quote(out / "metrics.json"));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return std::pair{nlohmann::json::parse(io::read_file(out / "pw.json")),
                     nlohmann::json::parse(io::read_file(out / "metrics.json"))};
  };
  const auto [meta, metrics] = reconstruct_and_measure("", dir_ / "from_file");
  const nlohmann::json& p = meta.at("parameters");
  EXPECT_EQ(p.at("from_file").at("source"), "PICMUS /US/US_DATASET0000");
  EXPECT_EQ(p.at("from_file").at("parameters"),
            nlohmann::json({"fs", "sound_speed", "t0", "pitch", "elements", "time_zero", "angles"}));
  EXPECT_EQ(p.at("elements"), 64);
  EXPECT_DOUBLE_EQ(p.at("element_pitch_m").get<double>(), 0.3e-3);
  EXPECT_DOUBLE_EQ(p.at("t0_s").get<double>(), 2e-6);
  EXPECT_EQ(p.at("time_zero"), "center");
  EXPECT_EQ(p.at("layout"), "transmits,elements,samples");
  ASSERT_EQ(p.at("angles_deg").size(), 5u);
  EXPECT_NEAR(p.at("angles_deg")[0].get<double>(), -10, 1e-9);
  ASSERT_EQ(metrics.at("points").size(), 3u);
  for (const auto& point : metrics.at("points"))
    EXPECT_LE(point.at("error").get<double>(), 1540 / 5e6 / 4) << point.dump();
  // What the user gives wins: counting time from the first element instead compounds the five
  // angles out of step, so every point lands off by far more than lambda / 4 (measured: 0.4 mm).
  const auto [wrong_meta, wrong] = reconstruct_and_measure(" --time-zero first-element", dir_ / "overridden");
  EXPECT_EQ(wrong_meta.at("parameters").at("time_zero"), "first-element");
  EXPECT_EQ(wrong_meta.at("parameters").at("from_file").at("parameters"),
            nlohmann::json({"fs", "sound_speed", "t0", "pitch", "elements", "angles"}));
  for (const auto& point : wrong.at("points")) EXPECT_GT(point.at("error").get<double>(), 0.2e-3) << point.dump();
  // A batch with a file that crashes libhdf5 (a fuzz finding): that file is reported by name, the
  // good one is still written, and the process survives to say so.
  const fs::path batch = dir_ / "batch";
  fs::create_directories(batch);
  fs::copy_file(rf, batch / "good.hdf5");
  fs::copy_file(fs::path(USRECON_SOURCE_DIR) / "tests/corpus/regressions/hdf5/libhdf5_segv_in_H5F__accum_read",
                batch / "bad.hdf5");
  r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(batch / "bad.hdf5") + " " +
                  quote(batch / "good.hdf5") + " --model planewave -o " + quote(dir_ / "batch_out"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.hdf5: libhdf5 crashed reading it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 of 2 reconstructed, 1 failed"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "batch_out" / "good.png"));
  EXPECT_FALSE(fs::exists(dir_ / "batch_out" / "bad.png"));
  // A PICMUS file is timed from the array centre: simulate refuses the other convention for it.
  r = run_command(quote(usrecon_exe()) + " simulate --model planewave --angles-deg 0 --elements 8 --samples 100"
                  " --point 0,5 --time-zero first-element -o " + quote(dir_ / "fe.hdf5"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("a PICMUS file counts time from the wavefront crossing the array centre"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "fe.hdf5"));
  // PICMUS files hold plane waves: simulate refuses to write synthetic aperture data as one.
  r = run_command(quote(usrecon_exe()) + " simulate --model sa --elements 8 --samples 100 --point 0,5 -o " +
                  quote(dir_ / "sa.hdf5"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("HDF5 output is a PICMUS file, which holds plane waves only"), std::string::npos)
      << r.output;
  // ... and reconstruct reads them as plane waves only.
  for (const char* model : {"sa", "dw --sources-x 0 --sources-z -5e-3"}) {
    r = run_command(quote(usrecon_exe()) + " reconstruct " + quote(rf) + " --model " + model + " -o " +
                    quote(dir_ / "not_pw"));
    EXPECT_NE(r.exit_code, 0) << model;
    EXPECT_NE(r.output.find("the file holds plane waves: use --model planewave"), std::string::npos) << r.output;
  }
}


// USTB UFF files from an independent writer (tests/corpus/valid/uff/make_ustb_uff.py: h5py, USTB's
// MATLAB layout, echoes timed by USTB's convention): the reader takes everything from the file.
// A cine loop in one NPY array, [frames][samples][elements][transmits]: --layout names its frames
// axis, --frame all reconstructs each frame to <stem>_frameNNNN.*, each the image of that frame's
// own file bit for bit; info says the count, and a frame past it is refused.
TEST_F(CliDas, FramesAlongAnArraysAxisAreReconstructedOneByOne) {
  const std::string angles = " --model planewave --angles-deg -2,2";
  for (const char* point : {"-3,20", "4,22"}) {
    const auto sim = run_usrecon("simulate" + angles + " --samples 1200 --point " + point + " -o " +
                                 quote(dir_ / (std::string(point[0] == '-' ? "a" : "b") + ".npy")));
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
  }
  const io::NpyArray a = io::read_npy(dir_ / "a.npy"), b = io::read_npy(dir_ / "b.npy");
  ASSERT_EQ(a.shape, b.shape);
  ASSERT_EQ(a.shape.size(), 3u);  // samples, elements, transmits
  std::vector<std::byte> both(a.data);
  both.insert(both.end(), b.data.begin(), b.data.end());
  const std::size_t shape[4] = {2, a.shape[0], a.shape[1], a.shape[2]};
  io::write_npy(dir_ / "cine.npy", a.dtype, shape, both.data());

  const std::string options = angles + " --fs 20e6 --pitch 3e-4 --x-range -6e-3:6e-3 --z-range 16e-3:26e-3"
                                       " --dx 0.1e-3 --dz 0.05e-3 --save-raw --backend cpu";
  auto run = run_usrecon("reconstruct " + quote(dir_ / "cine.npy") + " --layout frames,samples,elements,transmits"
                         " --frame all -o " + quote(dir_ / "cine") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("2 of 2 reconstructed, 0 failed"), std::string::npos) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "a.npy") + " " + quote(dir_ / "b.npy") + " -o " +
                    quote(dir_ / "single") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (int frame : {1, 2}) {
    SCOPED_TRACE(frame);
    const std::string stem = "cine_frame000" + std::to_string(frame);
    const std::string image = io::read_file(dir_ / "cine" / (stem + ".npy"));
    EXPECT_GT(image.size(), 121u * 201u * 8u);
    EXPECT_EQ(image, io::read_file(dir_ / "single" / (frame == 1 ? "a.npy" : "b.npy")));
    const nlohmann::json meta = nlohmann::json::parse(io::read_file(dir_ / "cine" / (stem + ".json")));
    EXPECT_EQ(meta.at("parameters").at("frame"), frame);
    EXPECT_EQ(meta.at("parameters").at("frames"), 2);
  }
  // --frame 2 alone, and the third frame that is not there.
  run = run_usrecon("reconstruct " + quote(dir_ / "cine.npy") + " --layout frames,samples,elements,transmits"
                    " --frame 2 -o " + quote(dir_ / "second") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(io::read_file(dir_ / "second" / "cine_frame0002.npy"), io::read_file(dir_ / "single" / "b.npy"));
  expect_usrecon_refused("reconstruct " + quote(dir_ / "cine.npy") + " --layout frames,samples,elements,transmits"
                         " --frame 3 -o " + quote(dir_ / "third") + options,
                         "cine.npy: --frame 3 is not among its 2 frame(s) (the 'frames' axis of --layout)");
  // --frame FIRST:LAST: those of its frames; past its last, none (refused as --frame FIRST is).
  const std::string cine = "reconstruct " + quote(dir_ / "cine.npy") + " --layout frames,samples,elements,transmits";
  run = run_usrecon(cine + " --frame 2:9 -o " + quote(dir_ / "range") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("1 of 1 reconstructed, 0 failed"), std::string::npos) << run.output;
  EXPECT_EQ(io::read_file(dir_ / "range" / "cine_frame0002.npy"), io::read_file(dir_ / "single" / "b.npy"));
  EXPECT_FALSE(fs::exists(dir_ / "range" / "cine_frame0001.npy"));
  run = run_usrecon(cine + " --frame 1:2 -o " + quote(dir_ / "range_both") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(io::read_file(dir_ / "range_both" / "cine_frame0001.npy"), io::read_file(dir_ / "single" / "a.npy"));
  EXPECT_EQ(io::read_file(dir_ / "range_both" / "cine_frame0002.npy"), io::read_file(dir_ / "single" / "b.npy"));
  expect_usrecon_refused(cine + " --frame 3:4 -o " + quote(dir_ / "past") + options,
                         "cine.npy: --frame 3 is not among its 2 frame(s) (the 'frames' axis of --layout)");
  for (const auto& [frame, why] : std::vector<std::pair<std::string, std::string>>{
           {"2:1", "--frame FIRST:LAST counts up: 2:1 has its last frame before its first"},
           {"0:2", "expected a frame number from 1 (the first) to 1073741824, FIRST:LAST (both included), or all, not 0:2"},
           {"1:", "or all, not 1:"},
           {"1:2:3", "or all, not 1:2:3"}}) {
    const auto refused = run_usrecon(cine + " --frame " + frame + " -o " + quote(dir_ / "never") + options);
    EXPECT_NE(refused.exit_code, 0) << frame;
    EXPECT_NE(refused.output.find(why), std::string::npos) << refused.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "never"));
  const auto info = run_usrecon("info --layout frames,samples,elements,transmits " + quote(dir_ / "cine.npy"));
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("reconstruct reads 2 transmit(s) x 128 element(s) x 1200 samples, RF\n"
                             "  frame 1 of the 2 along its 'frames' axis (reconstruct --frame all reads each)"),
            std::string::npos)
      << info.output;
}

// A Verasonics-like buffer: MATLAB's [rows][channels][frames], each frame's rows holding its
// transmits one after another (1200 samples each) and 100 rows of padding, in a cell, read with
// --layout '(samples,transmits),elements,frames' --samples 1200: each frame's raw image is its own
// [samples][elements][transmits] file's, bit for bit. An acquisition that lists fewer transmits
// than the rows hold is warned of.
TEST_F(CliDas, TransmitsOneAfterAnotherInOneAxisAreSplitBySamples) {
  const std::string angles = " --model planewave --angles-deg -2,0,2";
  for (const char* point : {"-3,20", "4,22"}) {
    const auto sim = run_usrecon("simulate" + angles + " --samples 1200 --point " + point + " -o " +
                                 quote(dir_ / (std::string(point[0] == '-' ? "a" : "b") + ".npy")));
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
  }
  const io::NpyArray a = io::read_npy(dir_ / "a.npy"), b = io::read_npy(dir_ / "b.npy");
  ASSERT_EQ(a.shape, (std::vector<std::size_t>{1200, 128, 3}));
  constexpr std::size_t kSamples = 1200, kElements = 128, kTransmits = 3, kRows = kSamples * kTransmits + 100;
  io::MatArray buffer{"RcvData", "", {kRows, kElements, 2}, {}};
  buffer.values.assign(kRows * kElements * 2, 0.0);
  for (std::size_t f = 0; f < 2; ++f) {
    const auto values = (f == 0 ? a : b).as<float>();  // C order [samples][elements][transmits]
    for (std::size_t e = 0; e < kElements; ++e)
      for (std::size_t t = 0; t < kTransmits; ++t)
        for (std::size_t k = 0; k < kSamples; ++k)
          buffer.values[(f * kElements + e) * kRows + t * kSamples + k] = values[(k * kElements + e) * kTransmits + t];
  }
  io::write_mat(dir_ / "buffer.mat", {buffer});
  const std::string options = " --fs 20e6 --pitch 3e-4 --x-range -6e-3:6e-3 --z-range 16e-3:26e-3"
                              " --dx 0.1e-3 --dz 0.05e-3 --save-raw --backend cpu --upsample 1";
  auto run = run_usrecon("reconstruct " + quote(dir_ / "a.npy") + " " + quote(dir_ / "b.npy") + " -o " +
                         quote(dir_ / "single") + angles + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string buffer_run = "reconstruct " + quote(dir_ / "buffer.mat") +
                                 " --var RcvData --layout '(samples,transmits),elements,frames' --frame all";
  run = run_usrecon(buffer_run + " --samples 1200 -o " + quote(dir_ / "buffer") + angles + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find("warning"), std::string::npos) << run.output;  // 100 rows of padding: not a transmit's
  EXPECT_EQ(io::read_file(dir_ / "buffer" / "buffer_frame0001.npy"), io::read_file(dir_ / "single" / "a.npy"));
  EXPECT_EQ(io::read_file(dir_ / "buffer" / "buffer_frame0002.npy"), io::read_file(dir_ / "single" / "b.npy"));
  // Two angles of the three transmits: the third is left, and said to be.
  run = run_usrecon(buffer_run + " --samples 1200 -o " + quote(dir_ / "two") + " --model planewave --angles-deg -2,0" +
                    options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("buffer.mat: 1300 rows of its (samples,transmits) axis, besides its 2 transmit(s) of 1200 "
                            "samples, are left"),
            std::string::npos)
      << run.output;
  // Said once for the file's two frames, and the frame that repeats it listed at the end (each
  // frame's JSON lists it).
  const std::string left = "buffer.mat: 1300 rows of its (samples,transmits) axis";
  const std::size_t said = run.output.find(left), again = run.output.find("usrecon: warning: again for 1 more frame(s) (2): ");
  ASSERT_NE(again, std::string::npos) << run.output;
  EXPECT_LT(said, again) << run.output;
  EXPECT_EQ(run.output.find(left, said + 1), run.output.find(left, again)) << run.output;  // the summary's, and no other
  EXPECT_EQ(run.output.find(left, run.output.find(left, again) + 1), std::string::npos) << run.output;
  for (const char* frame : {"buffer_frame0001.json", "buffer_frame0002.json"})
    EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "two" / frame)).at("parameters").at("warnings").size(), 1u)
        << frame;
  const auto info = run_usrecon("info " + quote(dir_ / "buffer.mat") +
                                " --layout '(samples,transmits),elements,frames' --samples 1200");
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("reconstruct reads 3 transmit(s) x 128 element(s) x 1200 samples, RF\n"
                             "  frame 1 of the 2 along its 'frames' axis"),
            std::string::npos)
      << info.output;
  expect_usrecon_refused(buffer_run + " -o " + quote(dir_ / "none") + angles + options,
                         "give --samples, the samples of one transmit, to split its (samples,transmits) axis of 3700 rows");
  std::vector<std::int32_t> ints(3 * 128 * 1200, 1);
  io::write_source_txt(dir_ / "one.txt", ints, 3 * 128, 1200);
  expect_usrecon_refused("reconstruct " + quote(dir_ / "one.txt") + " --layout '(samples,transmits),elements' "
                         "--elements 128 --samples 1200 -o " + quote(dir_ / "txt") + angles + options,
                         "a (samples,transmits) axis is one of an NPY, MAT or HDF5 array; a source.txt's lines are its "
                         "channels");
}

// --channel-map: a scanner's buffer of 256 channels, the probe's 128 elements on every second one
// from the last down (element e on channel 256 - 2e) and the others holding another signal, read
// with the map in the file (/Trans/Connector) beamforms to the raw image of the elements' own
// array, bit for bit; so does a reversed array with --channel-map 128:1. The frame JSON and info
// say the map; files whose channels are their probe's, and maps that do not fit, are refused.
// Samples that are finite but near float's largest overflow in the analytic signal and the sum:
// the frame is refused, saying so, where it was written as an image of NaN (a black PNG) with
// exit 0. Scaled less, the same data beamform to the image scaled alike.
TEST_F(CliDas, ChannelDataThatOverflowFloatInBeamformingAreRefused) {
  const std::string pw = " --model planewave --angles-deg -4,4 --elements 32";
  auto run = run_usrecon("simulate" + pw + " --samples 800 --point 0,15 -o " + quote(dir_ / "s.npy"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const io::NpyArray s = io::read_npy(dir_ / "s.npy");
  const auto v = s.as<float>();
  float peak = 0;
  for (float x : v) peak = std::max(peak, std::fabs(x));
  ASSERT_GT(peak, 0.0f);
  for (const auto& [name, scale] : {std::pair{"huge.npy", 1e36f / peak}, std::pair{"large.npy", 1e30f / peak}}) {
    std::vector<float> scaled(v.begin(), v.end());
    for (float& x : scaled) x *= scale;
    io::write_npy(dir_ / name, io::DType::f32, s.shape, scaled.data());
  }
  const std::string options = pw + " --fs 20e6 --pitch 3e-4 --x-range -3e-3:3e-3 --z-range 12e-3:18e-3 --save-raw"
                                   " --backend cpu -o " + quote(dir_ / "out");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "huge.npy") + options,
                         "huge.npy: the beamformed image has ");
  run = run_usrecon("reconstruct " + quote(dir_ / "huge.npy") + options);
  EXPECT_NE(run.output.find(" pixels that are not finite: the channel data's values overflow float in the analytic "
                            "signal or the sum over elements and transmits; scale them down"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "huge.png"));
  run = run_usrecon("reconstruct " + quote(dir_ / "large.npy") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const io::NpyArray image = io::read_npy(dir_ / "out" / "large.npy");
  double largest = 0;
  for (const std::complex<float>& p : image.as<std::complex<float>>()) largest = std::max(largest, double(std::abs(p)));
  EXPECT_TRUE(std::isfinite(largest));
  EXPECT_GT(largest, 1e30);
}

TEST_F(CliDas, AChannelMapReadsAScannersChannelsInElementOrder) {
  const std::string pw = " --model planewave --angles-deg -4,4";
  auto run = run_usrecon("simulate" + pw + " --samples 1200 --point 2,20 -o " + quote(dir_ / "plain.npy"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const io::NpyArray plain = io::read_npy(dir_ / "plain.npy");
  constexpr std::size_t kSamples = 1200, kElements = 128, kTransmits = 2, kChannels = 256;
  ASSERT_EQ(plain.shape, (std::vector<std::size_t>{kSamples, kElements, kTransmits}));
  const auto v = plain.as<float>();  // C order [samples][elements][transmits]
  std::vector<double> buffer(kSamples * kChannels * kTransmits), reversed(v.size()), connector(kElements);
  for (std::size_t k = 0; k < kSamples; ++k)
    for (std::size_t c = 0; c < kChannels; ++c)
      for (std::size_t t = 0; t < kTransmits; ++t)
        buffer[(k * kChannels + c) * kTransmits + t] = std::sin(0.1 * double(k + c));  // channels left out
  for (std::size_t e = 0; e < kElements; ++e) {
    connector[e] = double(kChannels - 2 * e);
    for (std::size_t k = 0; k < kSamples; ++k)
      for (std::size_t t = 0; t < kTransmits; ++t) {
        buffer[(k * kChannels + (kChannels - 2 * e - 1)) * kTransmits + t] = v[(k * kElements + e) * kTransmits + t];
        reversed[(k * kElements + (kElements - 1 - e)) * kTransmits + t] = v[(k * kElements + e) * kTransmits + t];
      }
  }
  io::write_hdf5(dir_ / "scanner.h5", {{"/rf", "", {kSamples, kChannels, kTransmits}, buffer},
                                       {"/Trans/Connector", "", {kElements, 1}, connector}});
  const std::size_t shape[3] = {kSamples, kElements, kTransmits};
  const std::vector<float> reversed_f(reversed.begin(), reversed.end());
  io::write_npy(dir_ / "reversed.npy", io::DType::f32, shape, reversed_f.data());
  const std::string options = pw + " --fs 20e6 --pitch 3e-4 --x-range -5e-3:5e-3 --z-range 16e-3:24e-3"
                                   " --dx 0.1e-3 --dz 0.05e-3 --save-raw --backend cpu";
  run = run_usrecon("reconstruct " + quote(dir_ / "plain.npy") + " -o " + quote(dir_ / "plain") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "scanner.h5") + " --var /rf --channel-map /Trans/Connector -o " +
                    quote(dir_ / "scanner") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "reversed.npy") + " --channel-map 128:1 -o " +
                    quote(dir_ / "reversed") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string expected = io::read_file(dir_ / "plain" / "plain.npy");
  EXPECT_EQ(io::read_file(dir_ / "scanner" / "scanner.npy"), expected);
  EXPECT_EQ(io::read_file(dir_ / "reversed" / "reversed.npy"), expected);
  // Unmapped, the buffer is another image (the test would pass on a map ignored otherwise).
  run = run_usrecon("reconstruct " + quote(dir_ / "reversed.npy") + " -o " + quote(dir_ / "unmapped") + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(io::read_file(dir_ / "unmapped" / "reversed.npy"), expected);
  const nlohmann::json p = nlohmann::json::parse(io::read_file(dir_ / "scanner" / "scanner.json")).at("parameters");
  EXPECT_EQ(p.at("elements"), 128);
  EXPECT_EQ(p.at("channel_map").at("given"), "/Trans/Connector");
  EXPECT_EQ(p.at("channel_map").at("array_channels"), 256);
  std::vector<int> channels;
  for (std::size_t e = 0; e < kElements; ++e) channels.push_back(int(kChannels - 2 * e));
  EXPECT_EQ(p.at("channel_map").at("channels").get<std::vector<int>>(), channels);
  EXPECT_FALSE(nlohmann::json::parse(io::read_file(dir_ / "plain" / "plain.json")).at("parameters").contains("channel_map"));
  const auto info = run_usrecon("info " + quote(dir_ / "scanner.h5") + " --var /rf --channel-map /Trans/Connector");
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("reconstruct reads 2 transmit(s) x 128 element(s) x 1200 samples, RF\n"
                             "  elements 1 to 128 read from channels 256, 254, 252, 250, ..., 4, 2 of the array's "
                             "256 (--channel-map)"),
            std::string::npos)
      << info.output;
  // Refused: for the seed model, a list that --elements contradicts (before any input), one past
  // the array's channels, and files whose channels are their probe's elements.
  expect_usrecon_refused("reconstruct " + quote(dir_ / "plain.npy") + " --channel-map 1:128 -o " + quote(dir_ / "x"),
                         "--channel-map applies to the general models");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "plain.npy") + " --elements 64 --channel-map 1:128 -o " +
                             quote(dir_ / "x") + options,
                         "--channel-map lists 128 element(s) but --elements says 64");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "plain.npy") + " --channel-map 1:129 -o " + quote(dir_ / "x") +
                             options,
                         "--channel-map reads element 129 from channel 129, but the array holds 128 channels");
  // A refusal that holds for every frame of a cine is said once, the frames that repeat it listed
  // at the end (it was said once a frame).
  {
    std::vector<float> cine;  // [frames][samples][channels]
    for (int k = 0; k < 3 * 64 * 4; ++k) cine.push_back(static_cast<float>(std::sin(0.3 * k)));
    const std::size_t cine_shape[3] = {3, 64, 4};
    io::write_npy(dir_ / "cine.npy", io::DType::f32, cine_shape, cine.data());
    run = run_usrecon("reconstruct " + quote(dir_ / "cine.npy") + " --layout frames,samples,elements --frame all "
                      "--channel-map 1:5 -o " + quote(dir_ / "cine") + options);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    const std::string refusal = "cine.npy: --channel-map reads element 5 from channel 5, but the array holds 4 channels";
    const std::size_t first = run.output.find(refusal);
    ASSERT_NE(first, std::string::npos) << run.output;
    EXPECT_NE(run.output.find("layout names it) (frame 1)\n"), std::string::npos) << run.output;
    const std::size_t again = run.output.find("usrecon: error: again for 2 more frame(s) (2, 3): ");
    ASSERT_NE(again, std::string::npos) << run.output;
    EXPECT_EQ(run.output.find(refusal, first + 1), run.output.find(refusal, again)) << run.output;  // no other
    EXPECT_EQ(run.output.find(refusal, run.output.find(refusal, again) + 1), std::string::npos) << run.output;
  }
  for (const char* file : {"pw.hdf5", "pw.uff"}) {
    run = run_usrecon("simulate" + pw + " --samples 1200 --point 2,20 -o " + quote(dir_ / file));
    ASSERT_EQ(run.exit_code, 0) << run.output;
    // A list, and a name (which is not looked for in the file first: it was, and the refusal was
    // that the file holds no such dataset).
    for (const char* map : {"128:1", "Trans.Connector"})
      expect_usrecon_refused("reconstruct " + quote(dir_ / file) + " --model planewave --channel-map " + map + " -o " +
                                 quote(dir_ / "x"),
                             std::string(": --channel-map: a ") + (file == std::string("pw.uff") ? "USTB" : "PICMUS") +
                                 " file's channels are its probe's elements");
  }
}

TEST_F(CliDas, UstbUffFilesCarryTheirOwnGeometry) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path corpus = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/uff";
  const double quarter_wavelength = 1540 / 5e6 / 4;
  const auto reconstruct = [&](const std::string& file, const std::string& options, const fs::path& out) {
    const auto run = run_command(quote(usrecon_exe()) + " reconstruct " + quote(corpus / file) + " --model planewave" +
                                 options + " --save-raw -o " + quote(out));
    return std::pair{run, out / (fs::path(file).stem().string() + ".npy")};
  };
  const auto measure = [&](const fs::path& npy, const std::string& targets) {
    const auto run = run_command(quote(usrecon_exe()) + " metrics " + quote(npy) + targets + " -o " +
                                 quote(npy.string() + ".metrics.json"));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const nlohmann::json points = nlohmann::json::parse(io::read_file(npy.string() + ".metrics.json")).at("points");
    // One measurement per target asked for (each --point, and the points of a --truth 'FILE'):
    // the callers' loops over none would check nothing.
    std::size_t asked = 0;
    for (std::size_t at = targets.find("--point "); at != std::string::npos; at = targets.find("--point ", at + 1))
      ++asked;
    if (const std::size_t at = targets.find("--truth '"); at != std::string::npos) {
      const std::size_t begin = at + 9, end = targets.find('\'', begin);
      asked += nlohmann::json::parse(io::read_file(targets.substr(begin, end - begin))).at("points").size();
    }
    EXPECT_GT(asked, 0u) << targets;
    EXPECT_EQ(points.size(), asked) << targets;
    for (const auto& point : points) EXPECT_TRUE(point.contains("error")) << point.dump();
    return points;
  };
  const std::string truth = " --truth " + quote(corpus / "ustb_planewave.truth.json");

  // Three plane waves, initial_time 1 us and a common wave delay of 0.5 us: no options needed.
  auto [run, npy] = reconstruct("ustb_planewave.uff", "", dir_ / "pw");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json p = nlohmann::json::parse(io::read_file(dir_ / "pw" / "ustb_planewave.json")).at("parameters");
  EXPECT_EQ(p.at("from_file").at("source"), "USTB UFF /channel_data");
  EXPECT_EQ(p.at("from_file").at("parameters"),
            nlohmann::json({"fs", "sound_speed", "t0", "pitch", "elements", "time_zero", "angles"}));
  EXPECT_EQ(p.at("elements"), 32);
  EXPECT_NEAR(p.at("element_pitch_m").get<double>(), 0.3e-3, 1e-9);  // float32 in the file
  EXPECT_NEAR(p.at("t0_s").get<double>(), 1.5e-6, 1e-12);  // initial_time + the waves' delay
  EXPECT_EQ(p.at("time_zero"), "center");
  EXPECT_EQ(p.at("frame"), 1);
  EXPECT_EQ(p.at("frames"), 1);
  ASSERT_EQ(p.at("angles_deg").size(), 3u);
  EXPECT_NEAR(p.at("angles_deg")[0].get<double>(), -8, 1e-5);
  EXPECT_NEAR(p.at("angles_deg")[2].get<double>(), 8, 1e-5);
  const nlohmann::json found = measure(npy, truth);
  ASSERT_EQ(found.size(), 2u);
  for (const auto& point : found) EXPECT_LE(point.at("error").get<double>(), quarter_wavelength) << point.dump();
  // A --t0 given replaces initial_time on the file's clock, the waves' delay still added: the
  // file's own 1 us finds the points; 0.5 us (the delay's worth less) moves every one by
  // c * 0.5 us / 2 = 0.39 mm. (A given t0 was taken as the delayed start, and 1 us moved them.)
  std::tie(run, npy) = reconstruct("ustb_planewave.uff", " --t0 1e-6", dir_ / "own_t0");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& point : measure(npy, truth)) EXPECT_LE(point.at("error").get<double>(), quarter_wavelength) << point.dump();
  std::tie(run, npy) = reconstruct("ustb_planewave.uff", " --t0 0.5e-6", dir_ / "early_t0");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& point : measure(npy, truth)) EXPECT_GT(point.at("error").get<double>(), 0.3e-3) << point.dump();

  // One wave (the sequence is the wave itself), two frames: --frame picks the one whose point is
  // found, and the other point's place holds nothing. Frame 1 keeps the stem; frame 2 is written
  // as <stem>_frame0002.*, so that both can go to one directory.
  const std::string both = " --point -1e-3,8e-3 --point 1e-3,12e-3";
  for (int frame : {1, 2}) {
    std::tie(run, npy) = reconstruct("ustb_one_wave_two_frames.uff", " --frame " + std::to_string(frame),
                                     dir_ / "frames");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    if (frame == 2) npy = dir_ / "frames" / "ustb_one_wave_two_frames_frame0002.npy";
    const nlohmann::json points = measure(npy, both);
    const auto& here = points.at(frame - 1);
    const auto& absent = points.at(2 - frame);
    EXPECT_LE(here.at("error").get<double>(), quarter_wavelength) << here.dump();
    EXPECT_LT(absent.at("peak").get<double>(), 0.01 * here.at("peak").get<double>()) << absent.dump();
  }
  const auto expect_refused = [&](const std::string& file, const std::string& options, const std::string& why) {
    const auto [refused, ignored] = reconstruct(file, options, dir_ / "refused");
    EXPECT_NE(refused.exit_code, 0) << refused.output;
    EXPECT_NE(refused.output.find(why), std::string::npos) << refused.output;
  };
  expect_refused("ustb_one_wave_two_frames.uff", " --frame 3", "--frame 3 is not among its 2 frame(s)\n");  // said once
  // Refused by the option itself, with CLI11's exit code for a bad value, as info refuses it (it
  // was exit 1 here, 105 there).
  const std::string not_a_frame =
      "--frame: expected a frame number from 1 (the first) to 1073741824, FIRST:LAST (both included), or all, not ";
  expect_refused("ustb_one_wave_two_frames.uff", " --frame 0", not_a_frame + "0");
  EXPECT_EQ(reconstruct("ustb_one_wave_two_frames.uff", " --frame 0", dir_ / "refused").first.exit_code, 105);
  // No fraction, list, step or exponent (1:1:1 and 1e0 were taken); a range counts up (5:1 was
  // told to be START:STEP:STOP).
  for (const char* frame : {"1.5", "1:1:1", "1,2", "1e0", "abc", "1073741825", "1:1073741825", ":2"})
    expect_refused("ustb_one_wave_two_frames.uff", std::string(" --frame ") + frame, not_a_frame + frame);
  expect_refused("ustb_one_wave_two_frames.uff", " --frame 5:1",
                 "--frame: --frame FIRST:LAST counts up: 5:1 has its last frame before its first");
  EXPECT_EQ(reconstruct("ustb_one_wave_two_frames.uff", " --frame 5:1", dir_ / "refused").first.exit_code, 105);
  expect_refused("ustb_one_wave_two_frames.uff", " --frame " + std::string(5000, '9'),
                 not_a_frame + std::string(40, '9') + "...\n");  // quoted up to 40 characters
  expect_refused("ustb_one_wave_two_frames.uff", " --frame ''",
                 "--frame: must not be empty (leave the option out for its default)");

  // --frame all: each frame of the two-frame file to <stem>_frameNNNN.*, with its own point; a
  // file of one frame in the same batch keeps its stem. The report lists the frames.
  run = run_command(quote(usrecon_exe()) + " reconstruct " + quote(corpus / "ustb_one_wave_two_frames.uff") + " " +
                    quote(corpus / "ustb_planewave.uff") + " --model planewave --frame all"
                    " --save-raw --report " + quote(dir_ / "frames.json") + " -o " + quote(dir_ / "all"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("3 of 3 reconstructed, 0 failed"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(dir_ / "all" / "ustb_planewave.png"));
  for (int frame : {1, 2}) {
    const std::string stem = "ustb_one_wave_two_frames_frame000" + std::to_string(frame);
    const nlohmann::json meta = nlohmann::json::parse(io::read_file(dir_ / "all" / (stem + ".json")));
    EXPECT_EQ(meta.at("parameters").at("frame"), frame);
    EXPECT_EQ(meta.at("parameters").at("frames"), 2);
    const nlohmann::json points = measure(dir_ / "all" / (stem + ".npy"), both);
    EXPECT_LE(points.at(frame - 1).at("error").get<double>(), quarter_wavelength) << points.dump();
    EXPECT_LT(points.at(2 - frame).at("peak").get<double>(), 0.01 * points.at(frame - 1).at("peak").get<double>());
  }
  const nlohmann::json report = nlohmann::json::parse(io::read_file(dir_ / "frames.json"));
  ASSERT_EQ(report.size(), 3u) << report.dump();
  EXPECT_EQ(report[0].at("frame"), 1);
  EXPECT_EQ(report[1].at("frame"), 2);
  EXPECT_FALSE(report[2].contains("frame")) << report[2].dump();
  expect_refused("ustb_planewave.uff", " --layout samples,elements,transmits", "--layout does not apply");
  // The same acquisition as baseband IQ (demodulated at 5 MHz on USTB's clock, sampled at 10 MHz):
  // beamformed at 20 MHz as its analytic signal, it gives the RF file's image, phase included
  // (measured: relative L2 1.1e-3), so the demodulation clock is read as USTB defines it.
  const std::string grid = " --x-range -5e-3:5e-3 --z-range 5e-3:20e-3 --dx 0.05e-3 --dz 0.02e-3";
  std::tie(run, npy) = reconstruct("ustb_iq.uff", grid, dir_ / "iq");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json iq = nlohmann::json::parse(io::read_file(dir_ / "iq" / "ustb_iq.json")).at("parameters");
  EXPECT_EQ(iq.at("iq").at("modulation_frequency_hz"), 5e6);
  EXPECT_EQ(iq.at("iq").at("upsampled_to_hz"), 20e6);
  EXPECT_NEAR(iq.at("iq").at("time0_s").get<double>(), 1e-6, 1e-12);
  EXPECT_EQ(iq.at("sampling_hz"), 10e6);
  for (const auto& point : measure(npy, truth)) EXPECT_LE(point.at("error").get<double>(), quarter_wavelength);
  // --upsample multiplies the IQ data's own 2x (it was ignored, and metrics advised it): 40 MHz,
  // 8 samples a cycle of the 5 MHz carrier, the same points.
  std::tie(run, npy) = reconstruct("ustb_iq.uff", grid + " --upsample 2", dir_ / "iq2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json iq2 = nlohmann::json::parse(io::read_file(dir_ / "iq2" / "ustb_iq.json")).at("parameters");
  EXPECT_EQ(iq2.at("iq").at("upsampled_to_hz"), 40e6);
  EXPECT_EQ(iq2.at("upsample"), 2);
  EXPECT_NEAR(iq2.at("samples_per_cycle").get<double>(), 2 * iq.at("samples_per_cycle").get<double>(), 0.1);
  for (const auto& point : measure(npy, truth)) EXPECT_LE(point.at("error").get<double>(), quarter_wavelength);
  // The default depth range of IQ data ends at the last IQ sample's depth (it ended past it, on
  // the interpolation's wrap-around rows).
  std::tie(run, npy) = reconstruct("ustb_iq.uff", " --x-range -5e-3:5e-3", dir_ / "iq_default");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json iq_default = nlohmann::json::parse(io::read_file(dir_ / "iq_default" / "ustb_iq.json"));
  const auto& dg = iq_default.at("grid");
  const auto& dp = iq_default.at("parameters");
  const double last_sample_depth = (dp.at("t0_s").get<double>() + (dp.at("samples").get<int>() - 1) /
                                                                      dp.at("sampling_hz").get<double>()) *
                                   dp.at("sound_speed_m_per_s").get<double>() / 2;
  const double grid_end = dg.at("z0").get<double>() + (dg.at("nz").get<int>() - 1) * dg.at("dz").get<double>();
  EXPECT_LE(grid_end, last_sample_depth + 1e-12) << iq_default.dump();
  EXPECT_GT(grid_end, last_sample_depth - dg.at("dz").get<double>()) << iq_default.dump();
  std::tie(run, npy) = reconstruct("ustb_planewave.uff", grid, dir_ / "rf");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Image from_iq = read_raw(dir_ / "iq" / "ustb_iq.npy", dir_ / "iq" / "ustb_iq.json");
  const Image from_rf = read_raw(dir_ / "rf" / "ustb_planewave.npy", dir_ / "rf" / "ustb_planewave.json");
  EXPECT_LT(relative_l2(from_iq.data, from_rf.data), 1e-2);
  // Synthetic aperture as USTB stores it: each element's wave timed from passing the origin, so
  // its element fires at |x| / c; plus a wave delay of 0.2 us and an initial time of 1 us.
  const std::string sta_grid = " --x-range -3e-3:3e-3 --z-range 5e-3:14e-3 --dx 0.05e-3 --dz 0.02e-3";
  const auto sta = run_command(quote(usrecon_exe()) + " reconstruct " + quote(corpus / "ustb_sta.uff") +
                               " --model sa" + sta_grid + " --save-raw -o " + quote(dir_ / "sta"));
  ASSERT_EQ(sta.exit_code, 0) << sta.output;
  const nlohmann::json sta_p = nlohmann::json::parse(io::read_file(dir_ / "sta" / "ustb_sta.json")).at("parameters");
  EXPECT_EQ(sta_p.at("tx_elements").size(), 12u);
  // t0: the earliest start, the outermost elements' (1 us + 0.2 us - 1.65 mm / 1540 m/s).
  EXPECT_NEAR(sta_p.at("t0_s").get<double>(), 1.2e-6 - 1.65e-3 / 1540, 1e-11);
  EXPECT_NEAR(sta_p.at("transmit_starts_s")[5].get<double>(), 1.5e-3 / 1540, 1e-11);  // element 5, x = -0.15 mm
  const std::string sta_truth = " --truth " + quote(corpus / "ustb_sta.truth.json");
  for (const auto& point : measure(dir_ / "sta" / "ustb_sta.npy", sta_truth))
    EXPECT_LE(point.at("error").get<double>(), quarter_wavelength) << point.dump();
  expect_refused("ustb_sta.uff", "", "the file holds synthetic-aperture data (a spherical wave from each element): "
                                     "use --model sa");
  // Transmit timed at 1500 m/s, receive at 1540: the user chooses one speed.
  expect_refused("ustb_two_speeds.uff", "", "its waves travel at 1500");
  std::tie(run, npy) = reconstruct("ustb_two_speeds.uff", " --sound-speed 1540", dir_ / "one_speed");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // --var names a dataset instead: read as a plain array, with the layout given.
  std::tie(run, npy) = reconstruct("ustb_planewave.uff",
                                   " --var /channel_data/data --layout transmits,elements,samples --elements 32"
                                   " --pitch 0.3e-3 --fs 20e6 --t0 1.5e-6 --time-zero center --angles-deg -8,0,8",
                                   dir_ / "plain");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& point : measure(npy, truth)) EXPECT_LE(point.at("error").get<double>(), quarter_wavelength);
  expect_refused("ustb_planewave.uff", " --var /channel_data/data --frame 2", "--frame 2: the file holds one frame (--frame picks among a USTB UFF file's frames, or along a 'frames' axis that --layout names)\n");  // not again "(frame 2)"

  // simulate writes .uff files in USTB's layout (its own writer, read back by the reader above).
  const fs::path simulated = dir_ / "simulated.uff", simulated_truth = dir_ / "simulated.json";
  run = run_command(quote(usrecon_exe()) + " simulate --model planewave --angles-deg -6:6:6 --elements 48"
                    " --pitch 0.3e-3 --fs 20e6 --t0 1e-6 --samples 1200 --point 0,12 --point 3,20 --truth " +
                    quote(simulated_truth) + " -o " + quote(simulated));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_command(quote(usrecon_exe()) + " reconstruct " + quote(simulated) + " --model planewave --save-raw -o " +
                    quote(dir_ / "simulated_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json sp =
      nlohmann::json::parse(io::read_file(dir_ / "simulated_out" / "simulated.json")).at("parameters");
  EXPECT_EQ(sp.at("from_file").at("source"), "USTB UFF /channel_data");
  EXPECT_EQ(sp.at("elements"), 48);
  for (const auto& point : measure(dir_ / "simulated_out" / "simulated.npy", " --truth " + quote(simulated_truth)))
    EXPECT_LE(point.at("error").get<double>(), quarter_wavelength) << point.dump();
  // ... and synthetic aperture, with each element's wave delayed by |x| / c as USTB times it.
  run = run_command(quote(usrecon_exe()) + " simulate --model sa --elements 32 --pitch 0.3e-3 --fs 20e6 --t0 1e-6"
                    " --samples 800 --point 0,10 --point 2,15 --truth " + quote(dir_ / "sa.json") + " -o " +
                    quote(dir_ / "sa.uff"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_command(quote(usrecon_exe()) + " reconstruct " + quote(dir_ / "sa.uff") + " --model sa --save-raw -o " +
                    quote(dir_ / "sa_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NEAR(nlohmann::json::parse(io::read_file(dir_ / "sa_out" / "sa.json")).at("parameters").at("t0_s").get<double>(),
              1e-6, 1e-15);
  for (const auto& point : measure(dir_ / "sa_out" / "sa.npy", " --truth " + quote(dir_ / "sa.json")))
    EXPECT_LE(point.at("error").get<double>(), quarter_wavelength) << point.dump();
}

// Diverging waves: USTB's file from the independent writer (virtual sources 8 mm behind the
// array, USTB's clock: the wave crosses the origin at t = 0), and simulate's own, as NPY with the
// sources given and as a .uff file carrying them.
TEST_F(CliDas, DivergingWavesFromUstbFilesAndFromTheCommandLine) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path corpus = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/uff";
  const double quarter_wavelength = 1540 / 5e6 / 4;
  const std::string grid = " --x-range -5e-3:5e-3 --z-range 5e-3:20e-3 --dx 0.05e-3 --dz 0.02e-3";

  auto run = run_usrecon("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model dw" + grid + " --save-raw -o " +
                         quote(dir_ / "dw"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json p = nlohmann::json::parse(io::read_file(dir_ / "dw" / "ustb_dw.json")).at("parameters");
  EXPECT_EQ(p.at("from_file").at("parameters"),
            nlohmann::json({"fs", "sound_speed", "t0", "pitch", "elements", "time_zero", "sources"}));
  EXPECT_EQ(p.at("time_zero"), "center");
  EXPECT_NEAR(p.at("t0_s").get<double>(), 1.3e-6, 1e-12);  // initial_time + the waves' delay
  ASSERT_EQ(p.at("sources_x_m").size(), 3u);
  EXPECT_NEAR(p.at("sources_x_m")[0].get<double>(), -3e-3, 1e-9);
  EXPECT_NEAR(p.at("sources_z_m")[2].get<double>(), -8e-3, 1e-9);
  // The source straight behind the array (azimuth pi in float32, whose sine is -8.7e-8) is at
  // x = 0, not -7e-10 m.
  EXPECT_EQ(p.at("sources_x_m")[1].get<double>(), 0.0) << p.dump();
  const fs::path truth = corpus / "ustb_dw.truth.json";
  for (double e : point_errors(dir_ / "dw" / "ustb_dw.npy", truth)) EXPECT_LE(e, quarter_wavelength);
  // USTB's clock matters: timing from the first element instead misplaces both points (measured
  // 0.28 mm each).
  run = run_usrecon("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model dw --time-zero first-element" + grid +
                    " --save-raw -o " + quote(dir_ / "dw_first"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (double e : point_errors(dir_ / "dw_first" / "ustb_dw.npy", truth)) EXPECT_GT(e, 0.2e-3);
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model planewave -o " + quote(dir_ / "no"),
                 "the file holds diverging waves (spherical waves from behind the array): use --model dw");
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model dw --sources-x 0 --sources-z -8e-3 -o " +
                     quote(dir_ / "no"),
                 "the data hold 3 transmits but the dw acquisition describes 1 (one per virtual source)");

  // simulate -> NPY -> reconstruct with the sources on the command line (timed from the first
  // element, the default), and -> .uff (USTB's clock) -> reconstruct from the file alone.
  const std::string geometry = " --elements 48 --pitch 0.3e-3 --fs 20e6 --t0 1e-6 --sources-x -4e-3:4e-3:4e-3"
                               " --sources-z -10e-3";
  run = run_usrecon("simulate --model dw" + geometry + " --samples 1000 --point 0,12 --point -3,18 --truth " +
                    quote(dir_ / "sim.json") + " -o " + quote(dir_ / "sim.npy"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "sim.npy") + " --model dw" + geometry + " --save-raw -o " +
                    quote(dir_ / "sim_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (double e : point_errors(dir_ / "sim_out" / "sim.npy", dir_ / "sim.json")) EXPECT_LE(e, quarter_wavelength);
  run = run_usrecon("simulate --model dw" + geometry + " --samples 1000 --point 0,12 --point -3,18 -o " +
                    quote(dir_ / "sim.uff"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "sim.uff") + " --model dw --save-raw -o " + quote(dir_ / "uff_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "uff_out" / "sim.json")).at("parameters").at("time_zero"),
            "center");
  for (double e : point_errors(dir_ / "uff_out" / "sim.npy", dir_ / "sim.json")) EXPECT_LE(e, quarter_wavelength);
  // Sources in front of the array (focal points, --model fw) and sources for another model are
  // refused.
  expect_usrecon_refused("simulate --model dw --sources-x 0 --sources-z 5e-3 --samples 100 --point 0,5 -o " +
                     quote(dir_ / "focused.npy"),
                 "--sources-z: a diverging wave's virtual source lies behind the array (z <= 0), not at z = 0.005000 "
                 "(focal points in front of it are --model fw)");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "sim.npy") + " --model planewave --angles-deg 0 --sources-x 0 "
                     "--sources-z -1e-3 -o " + quote(dir_ / "no"),
                 "--sources-x and --sources-z apply to --model dw and fw only");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "sim.npy") + " --model dw --elements 48 --pitch 0.3e-3 --fs 20e6 -o " + quote(dir_ / "no"),
                 "diverging waves: give the virtual sources (--sources-x, --sources-z)");
  // Sources on elements at z = 0 are fine in NPY, but a .uff file would read them back as
  // synthetic aperture (another clock), so that writer refuses them and leaves no file.
  const std::string on_elements = " --elements 48 --pitch 0.3e-3 --fs 20e6 --sources-x -0.15e-3,0.15e-3 --sources-z 0"
                                  " --samples 200 --point 0,3";
  run = run_usrecon("simulate --model dw" + on_elements + " -o " + quote(dir_ / "on_elements.npy"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  expect_usrecon_refused("simulate --model dw" + on_elements + " -o " + quote(dir_ / "on_elements.uff"),
                 "every virtual source lies on an element at z = 0, which a USTB file cannot tell from synthetic "
                 "aperture");
  EXPECT_FALSE(fs::exists(dir_ / "on_elements.uff"));
  // Nor sources less than 1 mm behind the array, which USTB's das.m times as focused waves.
  expect_usrecon_refused("simulate --model dw --elements 48 --pitch 0.3e-3 --fs 20e6 --sources-x 0,1e-3 --sources-z "
                         "-0.5e-3 --samples 200 --point 0,3 -o " + quote(dir_ / "shallow.uff"),
                         "virtual source 1 lies less than 1 mm behind the array (z = -0.5 mm)");
  EXPECT_FALSE(fs::exists(dir_ / "shallow.uff"));
}

// Focused waves: USTB's file from the independent writer (five focal points 12 mm deep, USTB's
// clock: the wave crosses the origin at t = 0 and reaches its focal point at |f| / c; points above
// and below the focal depth), and simulate's own, as NPY and as a .uff file.
TEST_F(CliDas, FocusedWavesFromUstbFilesAndFromTheCommandLine) {
  ASSERT_FALSE(usrecon_exe().empty()) << "USRECON_EXE is not set";
  const fs::path corpus = fs::path(USRECON_SOURCE_DIR) / "tests/corpus/valid/uff";
  const double quarter_wavelength = 1540 / 5e6 / 4;
  const std::string grid = " --x-range -5e-3:5e-3 --z-range 4e-3:20e-3 --dx 0.05e-3 --dz 0.02e-3";
  const fs::path truth = corpus / "ustb_fw.truth.json";
  auto run = run_usrecon("reconstruct " + quote(corpus / "ustb_fw.uff") + " --model fw" + grid + " --save-raw -o " +
                         quote(dir_ / "fw"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json p = nlohmann::json::parse(io::read_file(dir_ / "fw" / "ustb_fw.json")).at("parameters");
  EXPECT_EQ(p.at("time_zero"), "center");
  ASSERT_EQ(p.at("sources_z_m").size(), 5u);
  EXPECT_NEAR(p.at("sources_x_m")[4].get<double>(), 2.4e-3, 1e-9);
  EXPECT_NEAR(p.at("sources_z_m")[0].get<double>(), 12e-3, 1e-9);
  const std::vector<double> found = point_errors(dir_ / "fw" / "ustb_fw.npy", truth);
  ASSERT_EQ(found.size(), 2u);
  for (double e : found) EXPECT_LE(e, quarter_wavelength);  // measured 0 and 0.02 mm
  // The other clock (the farthest element firing first) misplaces both (measured 0.68, 0.64 mm).
  run = run_usrecon("reconstruct " + quote(corpus / "ustb_fw.uff") + " --model fw --time-zero first-element" + grid +
                    " --save-raw -o " + quote(dir_ / "fw_first"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (double e : point_errors(dir_ / "fw_first" / "ustb_fw.npy", truth)) EXPECT_GT(e, 0.3e-3);
  // Line by line (each column takes the transmit focused nearest to it): the same points, and the
  // frame JSON says so.
  run = run_usrecon("reconstruct " + quote(corpus / "ustb_fw.uff") + " --model fw --tx-apodization scanline" + grid +
                    " --save-raw -o " + quote(dir_ / "fw_lines"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "fw_lines" / "ustb_fw.json")).at("parameters").at("tx_apodization"),
            "scanline");
  for (double e : point_errors(dir_ / "fw_lines" / "ustb_fw.npy", truth)) EXPECT_LE(e, quarter_wavelength);
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model dw --tx-apodization scanline -o " +
                             quote(dir_ / "no"),
                         "--tx-apodization scanline applies to --model fw only");
  // A transmit F-number (each transmit within its hourglass through the focal point): the same
  // points, the F-number in the frame JSON; refused for plane waves.
  run = run_usrecon("reconstruct " + quote(corpus / "ustb_fw.uff") + " --model fw --tx-fnumber 1 --window hann" + grid +
                    " --save-raw -o " + quote(dir_ / "fw_txf"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "fw_txf" / "ustb_fw.json")).at("parameters").at("tx_fnumber"),
            1.0);
  for (double e : point_errors(dir_ / "fw_txf" / "ustb_fw.npy", truth)) EXPECT_LE(e, quarter_wavelength);
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_planewave.uff") + " --model planewave --tx-fnumber 1 -o " +
                             quote(dir_ / "no"),
                         "--tx-fnumber applies to --model dw and fw only");
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_fw.uff") + " --model dw -o " + quote(dir_ / "no"),
                 "the file holds focused waves (focal points in front of the array): use --model fw");
  expect_usrecon_refused("reconstruct " + quote(corpus / "ustb_dw.uff") + " --model fw -o " + quote(dir_ / "no"),
                 "the file holds diverging waves (spherical waves from behind the array): use --model dw");

  // simulate -> NPY -> reconstruct with the focal points on the command line, and -> .uff -> the
  // file alone.
  const std::string geometry = " --elements 48 --pitch 0.3e-3 --fs 20e6 --t0 1e-6 --sources-x -3e-3:1.5e-3:3e-3"
                               " --sources-z 15e-3";
  const std::string points = " --samples 1200 --point 0,10 --point -2,19 --point 1.5,26";
  run = run_usrecon("simulate --model fw" + geometry + points + " --truth " + quote(dir_ / "sim.json") + " -o " +
                    quote(dir_ / "sim.npy"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "sim.npy") + " --model fw" + geometry + " --z-range 5e-3:30e-3"
                    " --save-raw -o " + quote(dir_ / "sim_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (double e : point_errors(dir_ / "sim_out" / "sim.npy", dir_ / "sim.json")) EXPECT_LE(e, quarter_wavelength);
  run = run_usrecon("simulate --model fw" + geometry + points + " -o " + quote(dir_ / "sim.uff"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_usrecon("reconstruct " + quote(dir_ / "sim.uff") + " --model fw --z-range 5e-3:30e-3 --save-raw -o " +
                    quote(dir_ / "uff_out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (double e : point_errors(dir_ / "uff_out" / "sim.npy", dir_ / "sim.json")) EXPECT_LE(e, quarter_wavelength);
  expect_usrecon_refused("simulate --model fw --sources-x 0 --sources-z -5e-3 --samples 100 --point 0,5 -o " +
                     quote(dir_ / "behind.npy"),
                 "--sources-z: a focused wave's focal point lies in front of the array (z > 0), not at z = -0.005000 "
                 "(sources behind it are --model dw)");
  expect_usrecon_refused("reconstruct " + quote(dir_ / "sim.npy") + " --model fw --elements 48 --pitch 0.3e-3 --fs 20e6 -o " + quote(dir_ / "no"),
                 "focused waves: give the focal points (--sources-x, --sources-z)");
  EXPECT_FALSE(fs::exists(dir_ / "behind.npy"));
}

}  // namespace
}  // namespace usrecon::recon
