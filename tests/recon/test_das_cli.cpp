// The general models from the command line: the acceptance run on the real plane-wave data set
// (skipped when it is absent) and simulate -> reconstruct -> metrics.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/recon/metrics.hpp"

namespace fs = std::filesystem;

namespace usrecon::recon {
namespace {

using usrecon::testing::quote;
using usrecon::testing::run_command;
using usrecon::testing::usrecon_exe;

class CliDas : public usrecon::testing::TempDir {};

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
    if (k < 2) EXPECT_LE(m.fwhm_lateral * 1e3, 0.8);
    EXPECT_LE(m.fwhm_axial * 1e3, 0.6);
    std::printf("wire %d: x %.3f mm, z %.3f mm, lateral FWHM %.3f mm, axial FWHM %.3f mm\n", k,
                m.x * 1e3, m.z * 1e3, m.fwhm_lateral * 1e3, m.fwhm_axial * 1e3);
  }
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
}

}  // namespace
}  // namespace usrecon::recon
