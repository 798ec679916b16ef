// simulate, metrics and view from the command line: outputs that would replace an input are
// refused (the input kept byte for byte), numbers must be finite decimals, options that do not
// apply to the chosen model are refused, and metrics reads the truth simulate writes for any model.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"

namespace fs = std::filesystem;
using usrecon::testing::quote;
using usrecon::testing::run_command;

namespace {

constexpr int kNx = 40, kNz = 60;
constexpr double kStep = 1e-4;  // metres: the blob at ix 10, iz 20 is at x = 1 mm, z = 2 mm

class CliCommands : public usrecon::testing::CliTempDir {
 protected:
  std::string usrecon(const std::string& args) { return exe_ + " " + args; }

  // A raw RF image as reconstruct --save-raw writes one (<stem>.npy [nx][nz] and the grid in
  // <stem>.json): one echo, a modulated Gaussian along depth, at x = 1 mm, z = 2 mm.
  fs::path write_image(const std::string& stem) {
    std::vector<float> rf(std::size_t(kNx) * kNz);
    for (int ix = 0; ix < kNx; ++ix)
      for (int iz = 0; iz < kNz; ++iz) {
        const double u = iz - 20.0, w = ix - 10.0;
        rf[std::size_t(ix) * kNz + iz] =
            static_cast<float>(std::exp(-(u * u + w * w) / (2 * 3.0 * 3.0)) * std::cos(2 * 3.14159265358979 * u / 4));
      }
    const std::size_t shape[2] = {kNx, kNz};
    const fs::path npy = dir_ / (stem + ".npy");
    usrecon::io::write_npy(npy, usrecon::io::DType::f32, shape, rf.data());
    const nlohmann::json meta = {
        {"grid", {{"x0", 0.0}, {"dx", kStep}, {"nx", kNx}, {"z0", 0.0}, {"dz", kStep}, {"nz", kNz}}}};
    usrecon::io::write_file_atomic(dir_ / (stem + ".json"), meta.dump(2) + "\n");
    return npy;
  }

  // Runs `args`, which must be refused with `message` and leave `kept` as it was.
  void expect_refused(const std::string& args, const std::string& message, const fs::path& kept = {}) {
    SCOPED_TRACE(args);
    const std::string before = kept.empty() ? "" : usrecon::io::read_file(kept);
    const auto r = run_command(usrecon(args));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    if (!kept.empty()) {
      ASSERT_TRUE(fs::exists(kept));
      EXPECT_EQ(usrecon::io::read_file(kept), before) << kept << " changed";
    }
  }

  nlohmann::json metrics(const std::string& args) {
    const auto r = run_command(usrecon("metrics " + args));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json out = nlohmann::json::parse(r.output, nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << r.output;
    return out;
  }
};

}  // namespace

TEST_F(CliCommands, SimulateRefusesTruthThatIsTheChannelDataFile) {
  fs::create_directories(dir_ / "sim");
  const fs::path data = dir_ / "sim" / "x.txt";
  const std::string small = " --channels 4 --samples 50 --point 1,2";
  // A new file: nothing written.
  expect_refused("simulate" + small + " -o " + quote(data) + " --truth " + quote(data), "names the same file as -o");
  EXPECT_FALSE(fs::exists(data));
  // An existing one, under another spelling, even with --overwrite: kept byte for byte.
  ASSERT_EQ(run_command(usrecon("simulate" + small + " -o " + quote(data))).exit_code, 0);
  expect_refused("simulate" + small + " --overwrite -o " + quote(data) + " --truth " +
                     quote(dir_ / "sim" / ".." / "sim" / "." / "x.txt"),
                 "names the same file as -o", data);
  // The general models too.
  const fs::path npy = dir_ / "pw.npy";
  const std::string pw = " --model planewave --elements 8 --samples 100 --point 0,3";
  ASSERT_EQ(run_command(usrecon("simulate" + pw + " -o " + quote(npy))).exit_code, 0);
  expect_refused("simulate" + pw + " --overwrite -o " + quote(npy) + " --truth " + quote(dir_ / "." / "pw.npy"),
                 "names the same file as -o", npy);
}

TEST_F(CliCommands, MetricsAndViewRefuseAnOutputThatIsTheirInput) {
  const fs::path image = write_image("a");
  expect_refused("metrics " + quote(image) + " --point 0.001,0.002 -o " + quote(image), "is the input", image);
  expect_refused("metrics " + quote(image) + " --point 0.001,0.002 -o " + quote(dir_ / "." / "a.npy"),
                 "is the input", image);
  // The grid beside the image is an input too.
  expect_refused("metrics " + quote(image) + " --point 0.001,0.002 -o " + quote(dir_ / "a.json"), "is the input",
                 dir_ / "a.json");
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002").at("points").size(), 1u);

  const fs::path png = dir_ / "a.png";
  const auto r = run_command(usrecon("view " + quote(image) + " --export " + quote(png)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_refused("view " + quote(png) + " --export " + quote(png), "is the file viewed", png);
  expect_refused("view " + quote(png) + " --export " + quote(dir_ / "sub" / ".." / "a.png"), "is the file viewed", png);
}

TEST_F(CliCommands, NumbersMustBeFiniteDecimals) {
  const fs::path out = dir_ / "s.txt";
  const std::string small = " --channels 4 --samples 50 -o " + quote(out);
  expect_refused("simulate --point nan,5" + small, "--point 'nan,5': 'nan' is not a finite number");
  expect_refused("simulate --point inf,20" + small, "--point 'inf,20': 'inf' is not a finite number");
  expect_refused("simulate --point 0x10,5" + small, "'0x10' is not a number");
  expect_refused("simulate --point ' 1,5'" + small, "' 1' is not a number");
  expect_refused("simulate --point 1,5," + small, "is not a number");
  expect_refused("simulate --point 1,5 --noise nan" + small, "--noise must be a finite number");
  EXPECT_FALSE(fs::exists(out));
  ASSERT_EQ(run_command(usrecon("simulate --point +1,5e0" + small)).exit_code, 0);

  const fs::path image = write_image("a");
  expect_refused("metrics " + quote(image) + " --point nan,0.002", "'nan' is not a finite number");
  expect_refused("metrics " + quote(image) + " --cyst 0.001,0.002,inf", "'inf' is not a finite number");
}

TEST_F(CliCommands, MetricsSearchRadiusBeyondTheImageSearchesTheWholeImage) {
  const fs::path image = write_image("a");
  // Far beyond any int number of pixels: the whole image, whose maximum is the blob.
  const nlohmann::json out = metrics(quote(image) + " --point 0.003,0.004 --search-radius 1e300");
  ASSERT_EQ(out.at("points").size(), 1u) << out.dump();
  EXPECT_NEAR(out["points"][0].at("x").get<double>(), 1e-3, 1.5 * kStep) << out.dump();
  EXPECT_NEAR(out["points"][0].at("z").get<double>(), 2e-3, 1.5 * kStep) << out.dump();
  expect_refused("metrics " + quote(image) + " --point 0.003,0.004 --search-radius nan", "radius");
}

TEST_F(CliCommands, MetricsReadsTheSeedModelsTruthInMillimetres) {
  const fs::path truth = dir_ / "truth.json";
  const auto r = run_command(usrecon("simulate --channels 4 --samples 50 --point 1,2 -o " + quote(dir_ / "s.txt") +
                                     " --truth " + quote(truth)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(nlohmann::json::parse(usrecon::io::read_file(truth)).at("points")[0].contains("x_mm"));
  const nlohmann::json out = metrics(quote(write_image("a")) + " --truth " + quote(truth));
  ASSERT_EQ(out.at("points").size(), 1u) << out.dump();
  EXPECT_NEAR(out["points"][0].at("true_x").get<double>(), 1e-3, 1e-12);
  EXPECT_NEAR(out["points"][0].at("true_z").get<double>(), 2e-3, 1e-12);
  EXPECT_NEAR(out["points"][0].at("error").get<double>(), 0.0, 1.5 * kStep) << out.dump();
  // A point with neither form is named.
  usrecon::io::write_file_atomic(dir_ / "bad.json", R"({"points": [{"x": 0.001}]})");
  expect_refused("metrics " + quote(dir_ / "a.npy") + " --truth " + quote(dir_ / "bad.json"), "\"z_mm\"");
}

TEST_F(CliCommands, SimulateAppliesOrRefusesEachOptionByModel) {
  const std::string pw = "simulate --model planewave --elements 8 --samples 100 --point 0,3 -o ";
  ASSERT_EQ(run_command(usrecon(pw + quote(dir_ / "clean.npy"))).exit_code, 0);
  const auto noisy = run_command(usrecon(pw + quote(dir_ / "noisy.npy") + " --noise 0.1"));
  ASSERT_EQ(noisy.exit_code, 0) << noisy.output;
  const std::vector<double> clean = usrecon::io::read_npy(dir_ / "clean.npy").to_double();
  const std::vector<double> with_noise = usrecon::io::read_npy(dir_ / "noisy.npy").to_double();
  ASSERT_EQ(clean.size(), with_noise.size());
  double sum2 = 0;
  for (std::size_t k = 0; k < clean.size(); ++k) sum2 += (with_noise[k] - clean[k]) * (with_noise[k] - clean[k]);
  EXPECT_NEAR(std::sqrt(sum2 / clean.size()), 0.1, 0.02) << "--noise is relative to the peak of 1";

  const fs::path out = dir_ / "no.npy";
  expect_refused(pw + quote(out) + " --peak 100", "--peak applies to --model seed only");
  expect_refused(pw + quote(out) + " --channels 8", "--channels applies to --model seed only");
  const std::string sa = "simulate --model sa --elements 8 --samples 100 --point 0,3 -o " + quote(out);
  expect_refused(sa + " --angles-deg 0", "--angles-deg applies to --model planewave only");
  expect_refused(sa + " --time-zero center", "--time-zero applies to --model planewave, dw and fw only");
  expect_refused(sa + " --peak 100", "--peak applies to --model seed only");
  EXPECT_FALSE(fs::exists(out));

  const auto help = run_command(usrecon("simulate --help"));
  EXPECT_NE(help.output.find("uniform in [-a, a] (seed)"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("normal with standard deviation a"), std::string::npos) << help.output;
}

TEST_F(CliCommands, SeedModelRefusesBinaryFormatExtensions) {
  const std::string seed = "simulate --channels 4 --samples 50 --point 1,2 -o ";
  for (const char* name : {"x.npy", "x.h5", "x.HDF5", "x.uff", "x.mat"}) {
    expect_refused(seed + quote(dir_ / name), "--model seed writes source.txt text");
    EXPECT_FALSE(fs::exists(dir_ / name)) << name;
  }
  // An existing file of that name is kept, even with --overwrite.
  const fs::path npy = write_image("a");
  expect_refused(seed + quote(npy) + " --overwrite", "--model seed writes source.txt text", npy);
  // And the other way round: the general models write NPY or HDF5 only under those names.
  const std::string pw = "simulate --model planewave --elements 8 --angles-deg 0 --samples 50 --point 0,2 -o ";
  for (const char* name : {"y.txt", "y.dat", "y"}) {
    expect_refused(pw + quote(dir_ / name), "--model planewave writes NPY (.npy)");
    EXPECT_FALSE(fs::exists(dir_ / name)) << name;
  }
  EXPECT_EQ(run_command(usrecon(pw + quote(dir_ / "y.NPY"))).exit_code, 0);
}
