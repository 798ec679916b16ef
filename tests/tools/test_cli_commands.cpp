// simulate, metrics and view from the command line: outputs that would replace an input are
// refused (the input kept byte for byte), numbers must be finite decimals, options that do not
// apply to the chosen model are refused, and metrics reads the truth simulate writes for any model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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
        {"grid", {{"x0", 0.0}, {"dx", kStep}, {"nx", kNx}, {"z0", 0.0}, {"dz", kStep}, {"nz", kNz}}},
        {"outputs", {{"png", stem + ".png"}, {"raw", stem + ".npy"}}}};
    usrecon::io::write_file_atomic(dir_ / (stem + ".json"), meta.dump(2) + "\n");
    return npy;
  }

  // An IQ image c.npy (complex64, iq(ix, iz) on write_image's grid) measured at the blob's
  // position (1, 2) mm: the run and its JSON (null when none was written).
  std::pair<usrecon::testing::CommandResult, nlohmann::json> metrics_of_iq(
      const std::function<std::complex<float>(int ix, int iz)>& iq_at) {
    std::vector<std::complex<float>> iq(std::size_t(kNx) * kNz);
    for (int ix = 0; ix < kNx; ++ix)
      for (int iz = 0; iz < kNz; ++iz) iq[std::size_t(ix) * kNz + iz] = iq_at(ix, iz);
    write_image("c");  // its grid JSON
    const std::size_t shape[2] = {kNx, kNz};
    usrecon::io::write_npy(dir_ / "c.npy", usrecon::io::DType::c64, shape, iq.data());
    const fs::path out = dir_ / "m.json";
    auto r = run_command(usrecon("metrics " + quote(dir_ / "c.npy") + " --point 0.001,0.002 -o " + quote(out)));
    nlohmann::json m = fs::exists(out) ? nlohmann::json::parse(usrecon::io::read_file(out)) : nlohmann::json();
    return {std::move(r), std::move(m)};
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
    // The JSON on stdout, after any warnings on stderr (the lines before its opening brace).
    const std::size_t start = r.output.rfind("{", 0) == 0 ? 0 : r.output.find("\n{");
    const nlohmann::json out = nlohmann::json::parse(
        start == std::string::npos ? std::string() : r.output.substr(start), nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << r.output;
    return out;
  }
};

}  // namespace

TEST_F(CliCommands, SimulateRefusesTruthThatIsTheChannelDataFile) {
  fs::create_directories(dir_ / "sim");
  const fs::path data = dir_ / "sim" / "x.txt";
  const std::string small = " --channels 4 --samples 100 --point 1,2";
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

  const fs::path png = dir_ / "v.png";
  const auto r = run_command(usrecon("view " + quote(image) + " --export " + quote(png)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_refused("view " + quote(png) + " --export " + quote(png), "is the file viewed", png);
  expect_refused("view " + quote(png) + " --export " + quote(dir_ / "sub" / ".." / "v.png"), "is the file viewed", png);
  // Nor, with --overwrite, over the B-mode PNG that the image's reconstruction lists beside it.
  usrecon::io::write_file_atomic(dir_ / "a.png", "the reconstruction's B-mode");
  expect_refused("view " + quote(image) + " --export " + quote(dir_ / "a.png") + " --overwrite",
                 "is the reconstruction's own png output (listed in ", dir_ / "a.png");
}

TEST_F(CliCommands, NumbersMustBeFiniteDecimals) {
  const fs::path out = dir_ / "s.txt";
  const std::string small = " --channels 4 --samples 250 -o " + quote(out);
  expect_refused("simulate --point nan,5" + small, "--point 'nan,5': 'nan' is not a finite number");
  expect_refused("simulate --point inf,20" + small, "--point 'inf,20': 'inf' is not a finite number");
  expect_refused("simulate --point 0x10,5" + small, "'0x10' is not a number");
  expect_refused("simulate --point ' 1,5'" + small, "' 1' is not a number");
  expect_refused("simulate --point 1,5," + small, "is not a number");
  expect_refused("simulate --point 1,5 --noise nan" + small, "--noise: must be a number >= 0, not nan");
  expect_refused("simulate --point 1,5 --noise -1" + small, "--noise: must be a number >= 0, not -1");
  expect_refused("simulate --point 1,5 --pitch -1 --model planewave -o " + quote(dir_ / "x.npy"),
                 "--pitch: must be a positive number, not -1");
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
  const auto r = run_command(usrecon("simulate --channels 4 --samples 100 --point 1,2 -o " + quote(dir_ / "s.txt") +
                                     " --truth " + quote(truth)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json seed_truth = nlohmann::json::parse(usrecon::io::read_file(truth));
  ASSERT_TRUE(seed_truth.at("points")[0].contains("x_mm"));
  // What the pulse's expected widths need: its frequency and length, and the record.
  EXPECT_EQ(seed_truth.at("model"), "seed");
  EXPECT_EQ(seed_truth.at("center_frequency"), 5e6);
  EXPECT_EQ(seed_truth.at("cycles"), 2.0);
  EXPECT_EQ(seed_truth.at("samples"), 100);
  EXPECT_EQ(seed_truth.at("channels"), 4);
  const nlohmann::json out = metrics(quote(write_image("a")) + " --truth " + quote(truth));
  ASSERT_EQ(out.at("points").size(), 1u) << out.dump();
  EXPECT_NEAR(out["points"][0].at("true_x").get<double>(), 1e-3, 1e-12);
  EXPECT_NEAR(out["points"][0].at("true_z").get<double>(), 2e-3, 1e-12);
  EXPECT_NEAR(out["points"][0].at("error").get<double>(), 0.0, 1.5 * kStep) << out.dump();
  // A point with neither form is named.
  usrecon::io::write_file_atomic(dir_ / "bad.json", R"({"points": [{"x": 0.001}]})");
  expect_refused("metrics " + quote(dir_ / "a.npy") + " --truth " + quote(dir_ / "bad.json"), "\"z_mm\"");
  // A truth of the other kind of model (x from the first element against x from the array
  // centre) is refused, rather than measured at the wrong spots; one of its own kind is measured.
  const fs::path general = dir_ / "general.json";
  usrecon::io::write_file_atomic(general, R"({"model": "planewave", "points": [{"x": 0.001, "z": 0.002}]})");
  for (const char* model : {"planewave", "seed"}) {
    SCOPED_TRACE(model);
    const std::string stem = std::string("m_") + model;
    fs::copy_file(dir_ / "a.npy", dir_ / (stem + ".npy"));
    nlohmann::json meta = nlohmann::json::parse(usrecon::io::read_file(dir_ / "a.json"));
    meta["model"] = model;
    meta["outputs"] = {{"png", stem + ".png"}, {"raw", stem + ".npy"}};
    usrecon::io::write_file_atomic(dir_ / (stem + ".json"), meta.dump(2) + "\n");
    const bool seed = std::string(model) == "seed";
    const std::string image = "metrics " + quote(dir_ / (stem + ".npy")) + " --truth ";
    expect_refused(image + quote(seed ? general : truth), seed ? "a general model's truth, but " : "a seed model's truth, but ");
    const auto own = run_command(usrecon(image + quote(seed ? truth : general)));
    EXPECT_EQ(own.exit_code, 0) << own.output;
  }
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
  const std::string seed = "simulate --channels 4 --samples 100 --point 1,2 -o ";
  for (const char* name : {"x.npy", "x.h5", "x.HDF5", "x.uff", "x.mat"}) {
    expect_refused(seed + quote(dir_ / name), "--model seed writes source.txt text");
    EXPECT_FALSE(fs::exists(dir_ / name)) << name;
  }
  // An existing file of that name is kept, even with --overwrite.
  const fs::path npy = write_image("a");
  expect_refused(seed + quote(npy) + " --overwrite", "--model seed writes source.txt text", npy);
  // And the other way round: the general models write NPY or HDF5 only under those names.
  const std::string pw = "simulate --model planewave --elements 8 --angles-deg 0 --samples 100 --point 0,2 -o ";
  for (const char* name : {"y.txt", "y.dat", "y"}) {
    expect_refused(pw + quote(dir_ / name), "--model planewave writes NPY (.npy)");
    EXPECT_FALSE(fs::exists(dir_ / name)) << name;
  }
  EXPECT_EQ(run_command(usrecon(pw + quote(dir_ / "y.NPY"))).exit_code, 0);
}

// A target that cannot be measured is listed with its reason and the rest are still measured;
// the command exits 1. A maximum on the search region's edge is flagged.
TEST_F(CliCommands, MetricsMeasuresWhatItCanAndNamesWhatItCannot) {
  const fs::path image = write_image("a");
  const fs::path out = dir_ / "m.json";
  const auto r = run_command(usrecon("metrics " + quote(image) + " --point 0.001,0.002 --point 0.5,0.5 "
                                     "--cyst 0.5,0.5,0.001 -o " + quote(out)));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no pixel within"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(points are in metres)"), std::string::npos) << r.output;
  const nlohmann::json m = nlohmann::json::parse(usrecon::io::read_file(out));
  ASSERT_EQ(m.at("points").size(), 2u) << m.dump();
  EXPECT_FALSE(m["points"][0].contains("not_measured")) << m.dump();
  EXPECT_NEAR(m["points"][0].at("error").get<double>(), 0.0, 1.5 * kStep) << m.dump();
  EXPECT_EQ(m["points"][0].at("at_region_edge"), false) << m.dump();
  EXPECT_NE(m["points"][1].at("not_measured").get<std::string>().find("no pixel within"), std::string::npos);
  EXPECT_EQ(m["points"][1].at("true_x"), 0.5);
  ASSERT_EQ(m.at("cysts").size(), 1u) << m.dump();
  EXPECT_NE(m["cysts"][0].at("not_measured").get<std::string>().find("too few pixels"), std::string::npos);
  EXPECT_NE(m["cysts"][0].at("not_measured").get<std::string>().find("the image spans x 0 to "), std::string::npos);
  EXPECT_NE(m["cysts"][0].at("not_measured").get<std::string>().find("m (cysts are in metres)"), std::string::npos);
  // 1.5 mm from the blob with a 0.5 mm radius: the brightest pixel is on the disk's edge.
  const auto e = run_command(usrecon("metrics " + quote(image) + " --point 0.0025,0.002 --search-radius 0.5e-3 -o " +
                                     quote(out)));
  EXPECT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("lies on the edge of the search region"), std::string::npos) << e.output;
  const nlohmann::json edge = nlohmann::json::parse(usrecon::io::read_file(out));
  EXPECT_EQ(edge["points"][0].at("at_region_edge"), true) << edge.dump();
}

// --speckle-x-range and --speckle-z-range (mm) bound where speckle lies; the truth file records
// the region used. Speckle from 20 mm down leaves every sample before its earliest echo zero.
TEST_F(CliCommands, SpeckleRegionBoundsTheScatterers) {
  const fs::path npy = dir_ / "s.npy", truth = dir_ / "s.json";
  const std::string pw = "simulate --model planewave --elements 16 --samples 1200 --speckle 300 --angles-deg 0";
  const auto r = run_command(usrecon(pw + " --speckle-x-range -2:2 --speckle-z-range 20:22 -o " + quote(npy) +
                                     " --truth " + quote(truth)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json t = nlohmann::json::parse(usrecon::io::read_file(truth));
  EXPECT_DOUBLE_EQ(t.at("speckle_region").at("x_min").get<double>(), -2e-3);
  EXPECT_DOUBLE_EQ(t.at("speckle_region").at("x_max").get<double>(), 2e-3);
  EXPECT_DOUBLE_EQ(t.at("speckle_region").at("z_min").get<double>(), 20e-3);
  EXPECT_DOUBLE_EQ(t.at("speckle_region").at("z_max").get<double>(), 22e-3);
  // The earliest echo: down 20 mm and back, 2 * 20e-3 / 1540 s at 20 MHz = 519 samples, less
  // the pulse's reach (4 sigma of a 2-cycle pulse at 5 MHz: 7 samples).
  const auto early_peak = [](const fs::path& file) {
    const usrecon::io::NpyArray a = usrecon::io::read_npy(file);  // [samples][elements][transmits]
    const std::vector<double> v = a.to_double();
    const std::size_t per_sample = a.shape.at(1) * a.shape.at(2);
    double peak = 0;
    for (std::size_t i = 0; i < 500 * per_sample; ++i) peak = std::max(peak, std::fabs(v[i]));
    return peak;
  };
  EXPECT_EQ(early_peak(npy), 0.0);
  // The default region starts at 2 mm: early samples hold speckle.
  const fs::path wide = dir_ / "w.npy";
  ASSERT_EQ(run_command(usrecon(pw + " -o " + quote(wide))).exit_code, 0);
  EXPECT_GT(early_peak(wide), 0.01);
  expect_refused(pw + " --speckle-z-range 5:5 -o " + quote(dir_ / "x.npy"), "MAX must exceed MIN");
  expect_refused("simulate --speckle 10 --speckle-z-range 5:9 -o " + quote(dir_ / "x.txt"),
                 "--speckle-z-range applies to the general models");
}

// A speckle amplitude of NaN gave all-zero (seed) or all-NaN (planewave) data with exit 0, and a
// negative one reached the speckle distributions (undefined behaviour): both refused, nothing
// written, for every model.
TEST_F(CliCommands, SimulateRefusesASpeckleAmplitudeThatIsNotAFiniteNonNegativeNumber) {
  const std::string seed = "simulate --channels 4 --samples 300 --speckle 20 -o " + quote(dir_ / "s.txt");
  const std::string pw = "simulate --model planewave --elements 8 --samples 300 --speckle 20 -o " +
                         quote(dir_ / "s.npy");
  for (const std::string& model : {seed, pw})
    for (const char* amplitude : {"nan", "-0.1", "inf", "1e400"})  // 1e400 was echoed as inf
      expect_refused(model + " --speckle-amplitude " + amplitude,
                     "--speckle-amplitude: must be a number >= 0, not " + std::string(amplitude));
  EXPECT_FALSE(fs::exists(dir_ / "s.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "s.npy"));
  // Zero is no speckle to speak of, but no error beside points; alone it is data of zeros, and
  // with a cyst (listed in the truth for metrics) one with nothing to be seen against.
  for (const std::string& model : {seed, pw})
    EXPECT_EQ(run_command(usrecon(model + " --speckle-amplitude 0 --point 0,3 --overwrite")).exit_code, 0);
  for (const std::string& model : {seed, pw})
    expect_refused(model + " --speckle-amplitude 0 --overwrite", "scatterers of --speckle-amplitude 0 echo nothing");
  expect_refused(pw + " --speckle-amplitude 0 --point 0,3 --cyst 0,4,1 --overwrite",
                 "so a --cyst has no speckle to be seen against");
}

// Amplitudes past float's range gave NaN and infinite samples (exit 0); noise past it infinite
// ones; speckle behind the array was echoed into the image; a point whose outer channels' echoes
// miss the record, and a grid the record does not reach (a black image), went without a word.
TEST_F(CliCommands, SimulateKeepsItsDataFiniteAndSaysWhatMissesTheRecord) {
  const fs::path out = dir_ / "h.npy";
  const std::string pw = "simulate --model planewave --elements 16 --samples 400 -o " + quote(out) + " --overwrite ";
  for (const char* options : {"--point 0,5,1e39", "--point 0,5 --point 1,6,1e300", "--point 0,5,1e-320",
                              "--speckle 50 --speckle-amplitude 1e300"}) {
    SCOPED_TRACE(options);
    const auto r = run_command(usrecon(pw + options));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const usrecon::io::NpyArray a = usrecon::io::read_npy(out);
    ASSERT_EQ(a.dtype, usrecon::io::DType::f32);
    std::vector<float> v(a.data.size() / sizeof(float));
    std::memcpy(v.data(), a.data.data(), a.data.size());
    float peak = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x));
      peak = std::max(peak, std::fabs(x));
    }
    EXPECT_EQ(peak, 1.0f);
  }
  expect_refused(pw + "--point 0,5 --noise 1e300", "must be at most 1e9, not 1e+300");
  expect_refused(pw + "--speckle 50 --speckle-z-range -10:-2", "lie below the array, at z > 0, not from -10 mm");
  // 400 samples at 20 MHz reach 15.4 mm: a point at 15.35 mm straight below the centre is in the
  // record on the middle channels only.
  auto r = run_command(usrecon(pw + "--point 0,15.35"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("some echoes miss the recorded time, so their channels hold none of the point: point 1 at "
                          "(0, 15.35) mm: "),
            std::string::npos)
      << r.output;
  r = run_command(usrecon(pw + "--point 0,5"));
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("16 elements x 1 transmit, 1 point, 0 cysts, 0 speckle scatterers"), std::string::npos)
      << r.output;
  // The seed model's channel data of another size than its own say how to reconstruct them.
  const fs::path txt = dir_ / "s.txt";
  r = run_command(usrecon("simulate --channels 4 --samples 300 --point 0,5 -o " + quote(txt)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("reconstruct it with --channels 4 --samples 300"), std::string::npos) << r.output;
  r = run_command(usrecon("reconstruct " + quote(txt) + " --channels 4 --samples 300 -o " + quote(dir_ / "seed")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Reconstructed on a grid deeper than the record reaches: black, and said so.
  r = run_command(usrecon("reconstruct " + quote(out) + " --model planewave --fs 2e7 --pitch 3e-4 --angles-deg 0 "
                          "--backend cpu -o " + quote(dir_ / "deep") + " --z-range 0.03:0.04"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the image is black: no pixel's echo delays fall within the record, which reaches depths of "
                          "about 0 to 15.3615 mm (the grid's z is 30 to "),
            std::string::npos)
      << r.output;
}

// --seed -1 became 18446744073709551615 without a word (so did any number past it): a seed is a
// whole number from 0 to 2^64 - 1, and the largest is taken as it is.
TEST_F(CliCommands, SimulateRefusesASeedOutsideTheUnsigned64BitRange) {
  const fs::path out = dir_ / "s.npy", truth = dir_ / "t.json";
  const std::string pw = "simulate --model planewave --elements 8 --samples 300 --point 0,3 --speckle 5 -o " +
                         quote(out) + " --truth " + quote(truth) + " --seed ";
  for (const char* seed : {"-1", "18446744073709551616", "1.5"})
    expect_refused(pw + seed, "--seed: a seed is a whole number from 0 to 18446744073709551615, not " +
                                  std::string(seed));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(truth));
  const auto r = run_command(usrecon(pw + "18446744073709551615"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(usrecon::io::read_file(truth)).at("seed").get<std::uint64_t>(),
            18446744073709551615u);
}

// --point 0:5:10 went, for the general models, through the range syntax of --angles-deg and
// became x = 0, z = 5 mm, amplitude 10 (--cyst 0:5:2 a cyst at 5 mm of radius 2 mm); the seed
// model refused it. Every model now takes one comma-separated point or cyst per option.
TEST_F(CliCommands, SimulateRefusesRangesInPointsAndCysts) {
  const fs::path out = dir_ / "r.npy";
  const std::string range = "(a range START:STEP:STOP is not taken here)";
  for (const char* model : {"planewave", "sa", "dw --sources-x 0 --sources-z -5e-3", "fw --sources-x 0 --sources-z 20e-3"}) {
    const std::string sim = "simulate --model " + std::string(model) + " --elements 8 --samples 300 -o " + quote(out);
    expect_refused(sim + " --point 0:5:10", "--point '0:5:10': '0:5:10' is not a number " + range);
    expect_refused(sim + " --point 0,3 --cyst 0:5:2", "--cyst '0:5:2': '0:5:2' is not a number " + range);
  }
  expect_refused("simulate --channels 4 --samples 300 --point 0:5:10 -o " + quote(dir_ / "r.txt"),
                 "--point '0:5:10': '0:5:10' is not a number " + range);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir_ / "r.txt"));
}

// The synthetic-aperture truth had no firing elements: data simulated with --tx-elements could
// not be reconstructed from the truth. It lists them (all elements in order by default), and
// reconstruct given that list (and the truth's geometry) finds the point where it lies.
TEST_F(CliCommands, SyntheticApertureTruthListsTheFiringElements) {
  const fs::path data = dir_ / "sa.npy", truth = dir_ / "sa.json", out = dir_ / "out";
  const std::string sa = "simulate --model sa --elements 16 --samples 500 --point 0.5,6 --truth " + quote(truth) +
                         " -o " + quote(data);
  ASSERT_EQ(run_command(usrecon(sa)).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(usrecon::io::read_file(truth)).at("tx_elements"),
            nlohmann::json(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  auto r = run_command(usrecon(sa + " --tx-elements 1,6,11 --overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json t = nlohmann::json::parse(usrecon::io::read_file(truth));
  ASSERT_EQ(t.at("tx_elements"), nlohmann::json(std::vector<int>{1, 6, 11})) << t.dump();
  std::string tx;
  for (const auto& e : t["tx_elements"]) tx += (tx.empty() ? "" : ",") + std::to_string(e.get<int>());
  r = run_command(usrecon("reconstruct " + quote(data) + " --model sa --tx-elements " + tx + " --elements " +
                          std::to_string(t.at("elements").get<int>()) + " --pitch " + t.at("pitch").dump() +
                          " --fs " + t.at("fs").dump() + " --t0 " + t.at("t0").dump() +
                          " --x-range -2e-3:2e-3 --z-range 4e-3:8e-3 --save-raw -o " + quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json m = metrics(quote(out / "sa.npy") + " --truth " + quote(truth));
  ASSERT_EQ(m.at("points").size(), 1u) << m.dump();
  EXPECT_LE(m["points"][0].at("error").get<double>(), 1540 / 5e6 / 4) << m.dump();
}

// Units mixed up (a pitch in metres given as 0.3, fs in kHz, the centre frequency in Hz) or a
// point past the record's last sample gave all-zero channel data with exit 0. A centre frequency
// at or above fs / 2 is refused, and so are points none of whose echoes lands in the record,
// named with the samples their echoes arrive at and the depths the record covers; nothing is
// written. Some points outside: a warning names them. Speckle alone is simulated as before.
TEST_F(CliCommands, SimulateRefusesDataThatWouldHoldNoEchoOfItsPoints) {
  const fs::path out = dir_ / "z.npy", truth = dir_ / "z.json";
  const std::string pw = "simulate --model planewave --truth " + quote(truth) + " -o " + quote(out);
  const std::string none = "no echo of any point lands in the record";
  expect_refused(pw + " --point 0,10 --pitch 0.3",
                 none + ", so the data would hold none of them: point 1 at (0, 10) mm (echoes at samples 2082 to ");
  expect_refused(pw + " --point 0,10 --fs 1e3", "the centre frequency 5 MHz is not below the Nyquist frequency "
                                                "fs / 2 = 0.0005 MHz (--center-mhz is in MHz, --fs in Hz)");
  expect_refused(pw + " --point 0,10 --center-mhz 5e6", "the centre frequency 5e+06 MHz is not below");
  expect_refused(pw + " --point 0,100 --samples 600",
                 "point 1 at (0, 100) mm (echoes at samples 2597 to 2621) lies outside the recorded time; the "
                 "record (600 samples at 20 MHz from t0 = 0 s) covers depths of about 0 to 23.0615 mm below the array");
  expect_refused("simulate --model sa --elements 8 --samples 600 --speckle 10 --point 0,100 --point 3,200 -o " +
                     quote(out),
                 "point 1 at (0, 100) mm (echoes at samples 2597 to 2598), point 2 at (3, 200) mm (echoes at samples "
                 "5195 to 5196) lie outside the recorded time");
  const fs::path txt = dir_ / "z.txt";
  expect_refused("simulate --point 0,100 --samples 600 -o " + quote(txt),
                 none + ", so the data would hold none of them: point 1 at (0, 100) mm (echoes at samples 3896 to "
                        "4169) lies outside the recorded time; the record (600 samples at 30 MHz from the firing) "
                        "covers depths to about 15.3872 mm below the array");
  expect_refused("simulate --point 5,5 --center-mhz 15 -o " + quote(txt),
                 "the centre frequency 15 MHz is not below the Nyquist frequency of the seed's sampling, 15 MHz");
  for (const fs::path& file : {out, truth, txt}) EXPECT_FALSE(fs::exists(file)) << file;

  // One point in the record: written, the other named.
  auto r = run_command(usrecon(pw + " --elements 16 --point 0,100 --point 0,10 --samples 600"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: point 1 at (0, 100) mm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the other points are simulated"), std::string::npos) << r.output;
  const std::vector<double> data = usrecon::io::read_npy(out).to_double();
  EXPECT_EQ(*std::max_element(data.begin(), data.end()), 1.0);
  // Speckle alone, shallow or past the record's end, is no error.
  for (const char* speckle : {" --speckle 50", " --speckle 50 --speckle-z-range 40:50"}) {
    r = run_command(usrecon(pw + " --overwrite --elements 16 --samples 600" + speckle));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  r = run_command(usrecon("simulate --channels 8 --samples 300 --speckle 50 -o " + quote(txt)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // An absurdly long pulse covers the record, not more: its reach overflowed an int, and the
  // point inside the record was refused as outside it.
  r = run_command(usrecon(pw + " --overwrite --elements 16 --samples 400 --point 0,8 --cycles 1e12"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_command(usrecon("simulate --overwrite --channels 8 --samples 300 --point 2,5 --cycles 1e12 -o " + quote(txt)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A data file name that is not UTF-8 goes into the truth with U+FFFD (it failed on the JSON).
  r = run_command(usrecon("simulate --model planewave --elements 16 --samples 400 --point 0,8 --truth " +
                          quote(dir_ / "latin1.json") + " -o " + quote(dir_ / "caf\xe9.npy")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "latin1.json"));
}

// From a probe of simulate: options that gave misleading data, or none, with exit 0 (or ran for
// ever) are refused or warned of.
TEST_F(CliCommands, SimulateRefusesOrWarnsOfOptionsThatWouldMislead) {
  const fs::path out = dir_ / "m.npy";
  const std::string pw = "simulate --model planewave --elements 32 --pitch 0.3e-3 --fs 20e6 --samples 1500 -o " +
                         quote(out) + " --overwrite";
  // A point whose echo is centred 12 samples past the record: only its pulse's tail (0.2 % of its
  // height) reached the record, and the data were scaled to make that tail peak at 1.
  expect_refused(pw + " --point 0,58.18", "no echo of any point lands in the record");
  auto r = run_command(usrecon(pw + " --point 0,58.18 --point 0,20"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: point 1 at (0, 58.18) mm"), std::string::npos) << r.output;
  // A point above the array (echoed at sample 0) and one of amplitude 0 (data of zeros).
  expect_refused(pw + " --point 0,-20", "--point '0,-20': z is the depth below the array, > 0 mm");
  expect_refused(pw + " --point 0,20,0", "--point '0,20,0': an amplitude of 0 echoes nothing");
  expect_refused("simulate --point 3,0 -o " + quote(dir_ / "s.txt"), "z is the depth below the array");
  // Positions in metres (as reconstruct and metrics take them) were simulated as millimetres,
  // 20 um deep, without a word: said once, with the rewrite (an amplitude kept), when no position
  // reaches 1 mm and the metres would lie within the record (1500 samples at 20 MHz: 57.7 mm).
  const auto said = [&](const std::string& command) {
    const auto run = run_command(usrecon(command));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const std::size_t at = run.output.find("usrecon: warning: no position given reaches 1 mm");
    return at == std::string::npos ? std::string() : run.output.substr(at, run.output.find('\n', at) - at);
  };
  for (const std::string& command : {pw, "simulate --overwrite -o " + quote(dir_ / "s.txt")})
    EXPECT_EQ(said(command + " --point 0.001,0.02,0.5"),
              "usrecon: warning: no position given reaches 1 mm (--point 0.001,0.02,0.5): simulate's positions are "
              "in mm; for metres give --point 1,20,0.5");
  EXPECT_EQ(said(pw + " --point 0,0.02 --speckle 10 --cyst 0,0.02,0.003 --speckle-z-range 0.002:0.03"),
            "usrecon: warning: no position given reaches 1 mm (--point 0,0.02 --cyst 0,0.02,0.003 --speckle-z-range "
            "0.002:0.03): simulate's positions are in mm; for metres give --point 0,20 --cyst 0,20,3 "
            "--speckle-z-range 2:30");
  // Not where one position reaches 1 mm (all are taken as mm), nor where the metres would lie past
  // the record (0.8 m deep), nor for a speckle region that, in metres, would.
  EXPECT_EQ(said(pw + " --point 0.5,0.9 --point 1,20"), "");
  EXPECT_EQ(said(pw + " --point 0.3,0.8"), "");
  EXPECT_EQ(said(pw + " --point 0,20 --speckle 10 --speckle-x-range -0.5:0.5"), "");
  EXPECT_EQ(said(pw + " --speckle 10 --speckle-x-range -0.5:0.5 --speckle-z-range 0.1:0.9"), "");
  // Where other positions reach 1 mm, a cyst or a speckle range that stays within it is said on
  // its own (--point 0,20 --speckle-z-range 0.005:0.03 put the speckle in a 25 um layer), unless
  // its metres would lie outside the record or the array's breadth.
  const auto region_said = [&](const std::string& command) {
    const auto run = run_command(usrecon(command));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(run.output.find("no position given reaches 1 mm"), std::string::npos) << run.output;
    const std::size_t at = run.output.find("stays within 1 mm");
    if (at == std::string::npos) return std::string();
    const std::size_t line = run.output.rfind('\n', at) + 1;
    return run.output.substr(line, run.output.find('\n', at) - line);
  };
  EXPECT_EQ(region_said(pw + " --point 0,20 --speckle 10 --speckle-z-range 0.005:0.03"),
            "usrecon: warning: --speckle-z-range 0.005:0.03 stays within 1 mm, where the other positions given reach "
            "it: simulate's positions are in mm; for metres give --speckle-z-range 5:30");
  EXPECT_EQ(region_said(pw + " --point 0,20 --speckle 10 --cyst 0.001,0.02,0.003"),
            "usrecon: warning: --cyst 0.001,0.02,0.003 stays within 1 mm, where the other positions given reach it: "
            "simulate's positions are in mm; for metres give --cyst 1,20,3");
  EXPECT_EQ(region_said(pw + " --point 0,20 --speckle 10 --speckle-z-range 0.1:0.9"), "");  // 0.9 m: past the record
  EXPECT_EQ(region_said(pw + " --point 0,20 --speckle 10 --cyst 0.5,0.5,0.2 --cyst 0,20,3"), "")
      << "a cyst within 0.9 mm of x = 0 (in metres: 0.5 m across, past the array's breadth)";
  EXPECT_EQ(region_said(pw + " --point 0.3,0.5 --point 0,20"), "") << "points may lie within 1 mm";
  // Cysts covering the whole speckle region drew scatterers for ever.
  r = run_command("timeout 120 " + usrecon(pw + " --speckle 100 --cyst 0,20,100"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the cysts cover (nearly) all of the speckle region: 0 of 100 speckle scatterers fell "
                          "outside them, then none in 1000000 draws"),
            std::string::npos)
      << r.output;
  // A cyst without speckle, or outside its region, changed nothing without a word.
  expect_refused(pw + " --point 0,20 --cyst 0,20,2", "--cyst needs --speckle: a cyst is a region that the speckle leaves empty");
  expect_refused(pw + " --cyst 0,20,2", "--cyst needs --speckle");
  r = run_command(usrecon(pw + " --speckle 10 --cyst 50,20,2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: --cyst 50,20,2 lies outside the speckle region (x -4.65 to 4.65 mm, z 2 to "),
            std::string::npos)
      << r.output;
  // Speckle deeper than a one-sample record: "10 speckle scatterers" over data of zeros.
  r = run_command(usrecon("simulate --model planewave --elements 32 --samples 1 --speckle 10 -o " + quote(out) +
                          " --overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: the speckle region (x -4.65 to 4.65 mm, z 2 to 2 mm) echoes outside the "
                          "recorded time"),
            std::string::npos)
      << r.output;
  // Speckle within the record: no warning, also where a steered wave's echoes come earlier than
  // 2 z / c would put them (10.5 to 12 mm in a record to 10 mm deep).
  const std::string base = "simulate --model planewave --elements 32 --pitch 0.3e-3 --fs 20e6 --overwrite -o " + quote(out);
  for (const std::string speckle : {" --samples 1500 --speckle 10",
                                    " --samples 261 --angles-deg 30 --time-zero center --speckle 200 "
                                    "--speckle-z-range 10.5:12"}) {
    r = run_command(usrecon(base + speckle));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  }
}

// `--truth nodir/t.json` failed after the channel data were written: exit 1 with the data left
// behind, so that a rerun without --overwrite was refused. Data and truth are now put in place
// together or not at all, for every format; with --overwrite the older pair is kept as it was.
// (simulate now makes a missing directory: the truth fails here by a name longer than the file
// system takes, found only when it is written, after the data.)
TEST_F(CliCommands, SimulateWritesDataAndTruthAllOrNone) {
  const std::string pw = "simulate --model planewave --elements 8 --samples 300 --point 0,3 -o ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"s3.npy", pw}, {"s3.uff", pw}, {"s3.h5", pw}, {"s3.txt", "simulate --channels 4 --samples 300 --point 1,3 -o "}};
  const fs::path unwritable = dir_ / (std::string(300, 't') + ".json");
  for (const auto& [name, sim] : cases) {
    SCOPED_TRACE(name);
    const fs::path data = dir_ / name, truth = dir_ / (name + ".json");
    expect_refused(sim + quote(data) + " --truth " + quote(unwritable), "File name too long");
    EXPECT_FALSE(fs::exists(data));
    auto r = run_command(usrecon(sim + quote(data) + " --truth " + quote(truth)));  // no --overwrite needed
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Replacing both: the truth fails, and the older data stay as they were.
    expect_refused(sim + quote(data) + " --point 0,4 --overwrite --truth " + quote(unwritable), "File name too long",
                   data);
  }
  // Nothing else was left in the folder (no staged file under a hidden name).
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"s3.h5", "s3.h5.json", "s3.npy", "s3.npy.json", "s3.txt", "s3.txt.json",
                                             "s3.uff", "s3.uff.json"}));
}

// A second point closer than the search radius: the weaker one's maximum is the stronger's, as
// PICMUS defines it, and flagged (it was reported as measured without a word).
TEST_F(CliCommands, MetricsFlagsAMaximumNearerAnotherPoint) {
  const fs::path image = write_image("a");  // one blob at (1, 2) mm
  const fs::path out = dir_ / "m.json";
  const auto r = run_command(usrecon("metrics " + quote(image) + " --point 0.001,0.002 --point 0.0014,0.002 -o " +
                                     quote(out)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json m = nlohmann::json::parse(usrecon::io::read_file(out));
  EXPECT_FALSE(m["points"][0].contains("nearer_another_point")) << m.dump();
  ASSERT_TRUE(m["points"][1].contains("nearer_another_point")) << m.dump();
  EXPECT_EQ(m["points"][1]["nearer_another_point"], nlohmann::json({0.001, 0.002})) << m.dump();
  EXPECT_NE(r.output.find("warning: the maximum found for (0.0014, 0.002) lies nearer the point (0.001, 0.002)"),
            std::string::npos) << r.output;
}

// IQ's modulus is taken in double: a finite complex64 pixel near float's largest value (3e38 +
// 3e38i) has a modulus past it, which was infinite: the maximum, with a null peak and widths.
TEST_F(CliCommands, MetricsTakesTheModulusOfLargeIqInDouble) {
  const auto [r, m] = metrics_of_iq([](int ix, int iz) {
    const double u = iz - 20.0, w = ix - 10.0;
    return std::complex<float>(float(3e38 * std::exp(-(u * u + w * w) / 18.0)), 3e38f);
  });
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(m["points"][0]["peak"].is_number()) << m.dump();
  EXPECT_NEAR(m["points"][0]["peak"].get<double>(), 3e38 * std::sqrt(2.0), 1e33) << m.dump();
  EXPECT_NEAR(m["points"][0]["x"].get<double>(), 0.001, 1e-9) << m.dump();
  EXPECT_NEAR(m["points"][0]["z"].get<double>(), 0.002, 1e-9) << m.dump();
}

// A ranged option says what it takes: a whole number or any number, and the range. CLI11's
// Range said "Value abc not in range 0 to 4096" of a word, and the same of 3.5.
// An option given an empty value was taken for the option not given, its default silently used
// (--x-range '' imaged the default range; a shell variable left unset does it). Now every
// option with a value refuses one, on the command line and in --config.
TEST_F(CliCommands, EmptyValuesAreRefused) {
  const std::string input = quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt");
  const std::string out = " -o " + quote(dir_ / "out");
  const std::string pw = "reconstruct " + input + out + " --model planewave --elements 128 --samples 2000";
  for (const char* option : {"--x-range", "--z-range", "--layout", "--var", "--channel-map", "--angles-deg",
                             "--sources-x", "--config", "--report"})
    expect_refused(pw + " " + option + " ''", std::string(option) + ": must not be empty (leave the option out for its "
                                                                  "default)");
  expect_refused("reconstruct " + input + " -o ''", "--output: must not be empty");
  expect_refused("reconstruct " + input + out + " --t0 ''", "--t0: must be a number, not an empty string");
  expect_refused("info " + input + " --var ''", "--var: must not be empty");
  expect_refused("simulate -o " + quote(dir_ / "s.npy") + " --model planewave --angles-deg ''", "--angles-deg: must not be empty");
  expect_refused("metrics " + input + " --truth ''", "--truth: must not be empty");
  // Flags carry no value, and are not refused: a run with two of them, into its own directory.
  const auto flags = run_command(usrecon("reconstruct " + input + " --backend cpu --overwrite --save-raw -o " +
                                         quote(dir_ / "flags")));
  EXPECT_EQ(flags.exit_code, 0) << flags.output;
  EXPECT_TRUE(fs::exists(dir_ / "flags" / "example.npy"));
  // In --config: an empty value, and a key given twice (CLI11 made one value "2e-4,3e-4" of it).
  usrecon::io::write_file_atomic(dir_ / "empty.toml", "x-range = \"\"\n");
  expect_refused(pw + " --config " + quote(dir_ / "empty.toml"),
                 "empty.toml: x-range (from the file): must not be empty (leave it out for its default)");
  usrecon::io::write_file_atomic(dir_ / "twice.toml", "[a]\npitch = 2e-4\n# pitch = 1\n[b]\n  pitch = 3e-4\n");
  expect_refused(pw + " --config " + quote(dir_ / "twice.toml"), "twice.toml: pitch is given 2 times; give it once");
  // Spelt quoted, or as a dotted key of a section, it is the same key given twice.
  usrecon::io::write_file_atomic(dir_ / "quoted.toml", "pitch = 3e-4\n\"pitch\" = 3e-4\n");
  expect_refused(pw + " --config " + quote(dir_ / "quoted.toml"), "quoted.toml: pitch is given 2 times; give it once");
  usrecon::io::write_file_atomic(dir_ / "dotted.toml", "pitch = 3e-4\nreconstruct.pitch = 2e-4\n");
  expect_refused(pw + " --config " + quote(dir_ / "dotted.toml"), "dotted.toml: pitch is given 2 times; give it once");
  // A section named after another command holds its options ([view]'s dynamic-range was taken).
  usrecon::io::write_file_atomic(dir_ / "view.toml", "fs = 20e6\n[view]\ndynamic-range = 20\n");
  expect_refused(pw + " --config " + quote(dir_ / "view.toml"),
                 "view.toml: [view] dynamic-range: a section named after another command is refused (only "
                 "reconstruct takes --config); give reconstruct's options at the top or under [reconstruct]");
  // The command line's own options: a config naming another was skipped without a word (its
  // options not read), help ignored, version an error that printed the version.
  for (const char* key : {"config = \"inner.toml\"", "help = true", "version = true"}) {
    usrecon::io::write_file_atomic(dir_ / "inner.toml", "fnumber = 2\n");
    usrecon::io::write_file_atomic(dir_ / "outer.toml", "fs = 20e6\n" + std::string(key) + "\n");
    const std::string name(key, std::string_view(key).find(' '));
    expect_refused(pw + " --config " + quote(dir_ / "outer.toml"),
                   "outer.toml: " + name + " is an option of the command line only: " +
                       (name == "config" ? "a config file does not read another (give its options in this one)"
                                         : "a config file sets reconstruct's options"));
  }
  // The inputs in the config, and a YAML-style key, are said as what they are (both were
  // "unknown option").
  usrecon::io::write_file_atomic(dir_ / "inputs.toml", "fs = 20e6\ninputs = [\"a.npy\"]\n");
  expect_refused(pw + " --config " + quote(dir_ / "inputs.toml"),
                 "inputs.toml: inputs: the inputs are not options: give them on the command line (usrecon "
                 "reconstruct --config " + (dir_ / "inputs.toml").string() + " FILE...)");
  usrecon::io::write_file_atomic(dir_ / "yaml.toml", "output: \"q/\"\n");
  expect_refused(pw + " --config " + quote(dir_ / "yaml.toml"),
                 "yaml.toml: unknown option 'output: \"q/\"': write key = value (TOML or INI), not key: value");
  usrecon::io::write_file_atomic(dir_ / "yaml2.toml", "model : sa\n");
  expect_refused(pw + " --config " + quote(dir_ / "yaml2.toml"), "write key = value (TOML or INI), not key: value");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Ranges and lists that are none are refused where the options are read, with CLI11's exit code
// for a bad value (105), as --fs abc is: they were refused later, with exit 1. A mistyped command
// is said to be one (it was "A subcommand is required").
TEST_F(CliCommands, BadRangesListsAndCommandsExitAsUsageErrors) {
  const std::string input = quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt");
  const std::string pw = "reconstruct " + input + " -o " + quote(dir_ / "out") + " --model planewave";
  const std::string sim = "simulate --model dw -o " + quote(dir_ / "s.npy");
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {pw + " --angles-deg abc", "--angles-deg: 'abc' is not a number"},
           {pw + " --x-range 1:0", "--x-range: MIN is larger than MAX in '1:0'"},
           {pw + " --z-range 5", "--z-range: expected MIN:MAX, got '5'"},
           {pw + " --sources-x 1:0:2", "--sources-x: START:STEP:STOP '1:0:2' never reaches STOP"},
           {sim + " --sources-z x", "--sources-z: 'x' is not a number"},
           {"simulate -o " + quote(dir_ / "p.npy") + " --model planewave --angles-deg 1:2:3:4",
            "--angles-deg: expected START:STEP:STOP or a comma-separated list"},
           {sim + " --speckle-z-range 3", "--speckle-z-range: expected MIN:MAX, got '3'"}}) {
    SCOPED_TRACE(args);
    const auto r = run_command(usrecon(args));
    EXPECT_EQ(r.exit_code, 105) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  const auto fs_word = run_command(usrecon(pw + " --fs abc"));
  EXPECT_EQ(fs_word.exit_code, 105) << fs_word.output;
  // An option given twice, with CLI11's exit code, said in words (it was "--model: At Most 1
  // required but received 2").
  for (const auto& [args, message] : {std::pair{pw + " --model sa", "--model is given 2 times; give it once\n"},
                                      std::pair{sim + " --fs 1e6 --fs 2e6 --fs 3e6", "--fs is given 3 times; give it once\n"}}) {
    const auto r = run_command(usrecon(args));
    EXPECT_EQ(r.exit_code, 114) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  for (const char* command : {"reconstuct", "bogus"}) {
    const auto r = run_command(usrecon(std::string(command) + " " + input + " -o " + quote(dir_ / "out")));
    EXPECT_EQ(r.exit_code, 109) << r.output;
    EXPECT_NE(r.output.find("usrecon: unknown command '" + std::string(command) +
                            "': the commands are reconstruct, simulate, metrics, view and info"),
              std::string::npos) << r.output;
  }
  EXPECT_EQ(run_command(usrecon("--help")).exit_code, 0);
  EXPECT_EQ(run_command(usrecon("--version")).exit_code, 0);
  // After a command too (reconstruct's said "inputs is required").
  for (const char* command : {"", "reconstruct ", "simulate ", "metrics ", "view ", "info "}) {
    const auto r = run_command(usrecon(std::string(command) + "--version"));
    EXPECT_EQ(r.exit_code, 0) << command << r.output;
    EXPECT_EQ(r.output, "usrecon 0.2.4\n") << command;
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  EXPECT_FALSE(fs::exists(dir_ / "s.npy"));
}

TEST_F(CliCommands, RangedOptionsSayWhatTheyTake) {
  const std::string input = quote(fs::path(USRECON_SOURCE_DIR) / "data" / "example.txt");
  const std::string out = " -o " + quote(dir_ / "out");
  expect_refused("reconstruct " + input + out + " --threads abc", "--threads: must be a whole number from 0 to 4096, not abc");
  expect_refused("reconstruct " + input + out + " --threads 3.5", "--threads: must be a whole number from 0 to 4096, not 3.5");
  expect_refused("reconstruct " + input + out + " --threads 5000", "--threads: must be from 0 to 4096, not 5000");
  expect_refused("reconstruct " + input + out + " --threads 99999999999",
                 "--threads: must be from 0 to 4096, not 99999999999");  // whole, past an int
  expect_refused("reconstruct " + input + out + " --fnumber nan", "--fnumber: must be a number from 0 to 100, not nan");
  expect_refused("simulate -o " + quote(dir_ / "s.txt") + " --speckle -1", "--speckle: must be from 0 to 1000000, not -1");
  expect_refused("view " + input + " --gain loud", "--gain: must be a number from -40 to 40, not loud");
  expect_refused("view " + input + " --gain 41", "--gain: must be from -40 to 40, not 41");
  // Each item of --tx-elements alike (0x10 was element 16, "" element 0, 010 element 8).
  const std::string sa = "simulate --model sa --elements 16 --samples 400 --point 0,6 -o " + quote(dir_ / "sa.npy");
  expect_refused(sa + " --tx-elements 0x10", "--tx-elements: must be a whole number from 0 to 65535, not 0x10");
  expect_refused(sa + " --tx-elements 1,abc", "--tx-elements: must be a whole number from 0 to 65535, not abc");
  expect_refused(sa + " --tx-elements ''", "--tx-elements: must be a whole number from 0 to 65535, not \n");
  // An empty item is refused, not dropped ("1,,2" was elements 1 and 2).
  expect_refused(sa + " --tx-elements 1,,2", "--tx-elements: has an empty item in 1,,2: whole numbers from 0 to 65535");
  expect_refused(sa + " --tx-elements 1,2,", "--tx-elements: has an empty item in 1,2,");
  expect_refused("reconstruct " + input + out + " --model sa --tx-elements ,1", "--tx-elements: has an empty item in ,1");
  // Several values, as CLI11 took them before: space-separated, or the option given again.
  for (const char* several : {"3 4 10", "3,4 --tx-elements 010"}) {
    const auto r = run_command(usrecon(sa + " --overwrite --tx-elements " + several));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("--tx-elements 3,4,10\n"), std::string::npos) << r.output;
  }
  const auto tx = run_command(usrecon(sa + " --overwrite --tx-elements 3,010"));
  ASSERT_EQ(tx.exit_code, 0) << tx.output;
  EXPECT_NE(tx.output.find("--tx-elements 3,10\n"), std::string::npos) << tx.output;
  // START:STEP:STOP, as --angles-deg takes it (it was refused: a sparse set needed seq), alone or
  // among numbers, counting up or down, STOP included where a step lands on it.
  for (const auto& [given, listed] : {std::pair{"0:5:15", "0,5,10,15"}, std::pair{"1,2:4:12,15", "1,2,6,10,15"},
                                      std::pair{"15:-7:0", "15,8,1"}, std::pair{"4:1:4", "4"}}) {
    const auto r = run_command(usrecon(sa + " --overwrite --tx-elements " + given));
    ASSERT_EQ(r.exit_code, 0) << given << ": " << r.output;
    EXPECT_NE(r.output.find("--tx-elements " + std::string(listed) + "\n"), std::string::npos) << r.output;
  }
  expect_refused(sa + " --tx-elements 0:0:8", "--tx-elements: START:STEP:STOP 0:0:8 has a STEP of 0");
  expect_refused(sa + " --tx-elements 5:0:5", "--tx-elements: START:STEP:STOP 5:0:5 has a STEP of 0");
  expect_refused(sa + " --tx-elements 0:1:65535,0", "--tx-elements: lists more than 65536 numbers");
  expect_refused(sa + " --tx-elements 8:1:0", "--tx-elements: START:STEP:STOP 8:1:0 never reaches STOP");
  expect_refused(sa + " --tx-elements 0:1", "--tx-elements: expected a whole number or START:STEP:STOP, not 0:1");
  expect_refused(sa + " --tx-elements 0:2:70000",
                 "--tx-elements: must be from 0 to 65535, not 70000 (STOP of 0:2:70000)");
  // The option takes the values after it: an input there is named as the likely mistake (it said
  // only "must be a whole number ... not sat3.npy").
  expect_refused(sa + " --tx-elements 0 10 sat3.npy",
                 "--tx-elements: must be whole numbers from 0 to 65535, not sat3.npy (a file? the option takes the "
                 "values that follow it: give the inputs before it, or the list with commas, 0,10,20, or as "
                 "START:STEP:STOP, 0:10:20)");
  // Numbers a double cannot hold, and words, are refused where the options are read ("inf" was
  // echoed later; "Could not convert: --t0 = abc").
  expect_refused("simulate -o " + quote(dir_ / "s.txt") + " --speckle-amplitude 1e400",
                 "--speckle-amplitude: must be a number >= 0, not 1e400");
  expect_refused("reconstruct " + input + out + " --model planewave --t0 abc", "--t0: must be a number, not abc");
  expect_refused("reconstruct " + input + out + " --model planewave --t0 1e400", "--t0: must be a number, not 1e400");
  expect_refused("simulate --model planewave -o " + quote(dir_ / "t.npy") + " --t0 nan", "--t0: must be a number, not nan");
  // The F-number's range is said as the option's (0 to 100), not as 1e-3 to 1e3.
  expect_refused("reconstruct " + input + out + " --model planewave --fnumber 1e-4",
                 "--fnumber must be 0 (the full aperture) or between 1e-3 and 100");
  // A cyst of no radius is refused by simulate, as metrics refuses it.
  expect_refused("simulate --model planewave --elements 16 --samples 400 --point 0,6 --cyst 0,6,-1 -o " +
                     quote(dir_ / "c.npy"),
                 "--cyst '0,6,-1': the radius must be > 0 mm");
  EXPECT_FALSE(fs::exists(dir_ / "c.npy"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  // Whole numbers are decimal: CLI11 took 010 for octal 8 (and refused 08).
  const auto run = run_command(usrecon("reconstruct " + input + out + " --backend cpu --threads 010"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json meta = nlohmann::json::parse(usrecon::io::read_file(dir_ / "out" / "example.json"));
  EXPECT_EQ(meta["backend"]["threads"], 10) << meta.dump();
  const auto help = run_command(usrecon("reconstruct --help"));
  EXPECT_NE(help.output.find("--threads INT:[0 - 4096]"), std::string::npos) << help.output;
}

// A spot narrower than 2 grid steps across (lateral FWHM 1.2 dx, axial 7 dz): its lateral width
// is given and flagged, in the JSON and on stderr with the width in steps; the axial is not.
TEST_F(CliCommands, MetricsFlagsAWidthTheGridDecides) {
  const double sx = 1.2 / 2.3548200450309493, sz = 7.0 / 2.3548200450309493;
  const auto [r, m] = metrics_of_iq([&](int ix, int iz) {
    const double u = iz - 20.0, w = ix - 10.0;
    return std::complex<float>(float(std::exp(-w * w / (2 * sx * sx) - u * u / (2 * sz * sz))));
  });
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json& p = m["points"][0];
  EXPECT_TRUE(p.contains("fwhm_lateral_coarse")) << m.dump();
  EXPECT_FALSE(p.contains("fwhm_axial_coarse")) << m.dump();
  ASSERT_TRUE(p["fwhm_lateral"].is_number()) << m.dump();
  EXPECT_LT(p["fwhm_lateral"].get<double>(), 2 * kStep) << m.dump();
  EXPECT_NE(r.output.find("warning: the lateral width at (0.001, 0.002) is "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("grid steps of 0.0001 m: under 2 steps the grid decides it (fwhm_lateral_coarse); a "
                          "finer grid measures it\n"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("axial width"), std::string::npos) << r.output;
  // The advice follows the grid's maker, as its JSON names it: the seed model's grid is fixed, a
  // general model's is reconstruct's --dx.
  for (const auto& [model, advice] : {std::pair{"seed", "the seed model's grid is fixed\n"},
                                      std::pair{"planewave", "reconstruct --dx gives a finer grid\n"}}) {
    nlohmann::json meta = nlohmann::json::parse(usrecon::io::read_file(dir_ / "c.json"));
    meta["model"] = model;
    usrecon::io::write_file_atomic(dir_ / "c.json", meta.dump(2) + "\n");
    const auto again = run_command(usrecon("metrics " + quote(dir_ / "c.npy") + " --point 0.001,0.002"));
    EXPECT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("(fwhm_lateral_coarse); " + std::string(advice)), std::string::npos) << again.output;
  }
  // Just under 2 steps (FWHM 1.99 dx, centred on a pixel: measured 1.973 steps): steps are
  // rounded down, never to a flagged "2" (two significant digits said that).
  const double s199 = 1.99 / 2.3548200450309493;
  const auto [near, near_m] = metrics_of_iq([&](int ix, int iz) {
    const double u = iz - 20.0, w = ix - 10.0;
    return std::complex<float>(float(std::exp(-w * w / (2 * s199 * s199) - u * u / (2 * sz * sz))));
  });
  EXPECT_TRUE(near_m["points"][0].contains("fwhm_lateral_coarse")) << near_m.dump();
  EXPECT_NE(near.output.find(", 1.97 grid steps of 0.0001 m"), std::string::npos) << near.output;
}

// A point on an all-zero image was reported with peak 0 at a made-up position, exit 0, while a
// cyst on the same image was not measured. Both are now listed as not measured; exit 1.
TEST_F(CliCommands, MetricsMeasuresNoPointOnAnAllZeroImage) {
  const fs::path image = write_image("a");
  const std::vector<float> zeros(std::size_t(kNx) * kNz, 0.f);
  const std::size_t shape[2] = {kNx, kNz};
  usrecon::io::write_npy(image, usrecon::io::DType::f32, shape, zeros.data());
  const fs::path out = dir_ / "m.json";
  const auto r = run_command(usrecon("metrics " + quote(image) + " --point 0.001,0.002 --cyst 0.001,0.002,0.001 -o " +
                                     quote(out)));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const nlohmann::json m = nlohmann::json::parse(usrecon::io::read_file(out));
  ASSERT_EQ(m.at("points").size(), 1u) << m.dump();
  EXPECT_NE(m["points"][0].value("not_measured", "").find("no pixel there has data (an envelope above 0 and finite); "
                                                          "none in the whole image does"),
            std::string::npos)
      << m.dump();
  EXPECT_FALSE(m["points"][0].contains("peak")) << m.dump();
  EXPECT_NE(m["cysts"][0].value("not_measured", "").find("no pixel of the image has data"), std::string::npos) << m.dump();
}

// metrics on channel data (an NPY with no grid JSON beside it) said `input file "pw.json" does not
// exist`, and a malformed grid JSON gave nlohmann's "[json.exception.type_error.302]". It says
// that the .npy is probably no reconstruct output, and which key of the grid is missing or of the
// wrong type.
TEST_F(CliCommands, MetricsSaysWhatIsWrongWithTheGridJson) {
  const fs::path pw = dir_ / "pw.npy";
  ASSERT_EQ(run_command(usrecon("simulate --model planewave --elements 8 --samples 300 --point 0,3 -o " + quote(pw)))
                .exit_code,
            0);
  expect_refused("metrics " + quote(pw) + " --point 0,0.003",
                 pw.string() + " has no grid JSON beside it (" + (dir_ / "pw.json").string() +
                     " is missing), so it is probably not a reconstruct output (a raw image): metrics needs the "
                     "<stem>.npy that usrecon reconstruct --save-raw writes, with its <stem>.json");
  const fs::path image = write_image("a"), grid = dir_ / "a.json";
  const std::string measure = "metrics " + quote(image) + " --point 0.001,0.002";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"grid": {"x0": "0", "dx": 1e-4, "nx": 40, "z0": 0, "dz": 1e-4, "nz": 60}})",
       R"("grid" has no number "x0" (found string "0"))"},
      {R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 40, "z0": 0, "dz": 1e-4}})", R"("grid" has no number "nz" (missing))"},
      {R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 40, "z0": 0, "dz": null, "nz": 60}})",
       R"("grid" has no number "dz" (found null))"},
      {R"({"grid": {"x0": 0, "dx": 1e-4, "nx": 41, "z0": 0, "dz": 1e-4, "nz": 60}})",
       R"("grid" is 41 x 60 (nx x nz) but the image is 40 x 60)"},
      {R"({"grid": [0, 1e-4, 40]})", R"(no "grid" object (x0, dx, nx, z0, dz, nz in metres))"},
      {R"({"grid": )", "not valid JSON"}};
  for (const auto& [text, message] : cases) {
    usrecon::io::write_file_atomic(grid, text);
    expect_refused(measure, grid.string() + ": " + message);
    expect_refused("view " + quote(image) + " --export " + quote(dir_ / "v.png"), grid.string() + ": " + message);
  }
}

// After reconstruct --overwrite without --save-raw, an older X.npy can sit beside the newer X.json,
// whose grid may differ: metrics (and view) measured it on that grid. A JSON whose "outputs" do not
// name the .npy as the raw image describes another run and is refused; one named with --grid, or
// one without "outputs" (a grid written by hand), is taken as it is.
TEST_F(CliCommands, MetricsAndViewRefuseTheJsonOfAnotherRun) {
  const fs::path image = write_image("a"), json = dir_ / "a.json";
  nlohmann::json meta = nlohmann::json::parse(usrecon::io::read_file(json));
  const std::string measure = "metrics " + quote(image) + " --point 0.001,0.002";
  const std::string view = "view " + quote(image) + " --export " + quote(dir_ / "v.png");
  meta["outputs"] = {{"png", "a.png"}};  // reconstruct without --save-raw
  usrecon::io::write_file_atomic(json, meta.dump());
  const std::string another = json.string() + " describes another run's output, not a.npy: its \"outputs\" ";
  for (const std::string& command : {measure, view})
    expect_refused(command, another + "name no raw image (that reconstruct ran without --save-raw), so its grid need "
                                      "not be a.npy's; reconstruct again with --save-raw");
  expect_refused(measure, "; reconstruct again with --save-raw, or name a grid JSON with --grid FILE");
  // Naming another raw image that lies beside it: that image's JSON. Naming one that is not there:
  // this pair renamed or copied (run1.npy, run1.json from example.*), taken.
  meta["outputs"]["raw"] = "b.npy";
  usrecon::io::write_file_atomic(json, meta.dump());
  usrecon::io::write_file_atomic(dir_ / "b.npy", usrecon::io::read_file(image));
  for (const std::string& command : {measure, view})
    expect_refused(command, another + "name \"b.npy\", beside it, as the raw image");
  fs::remove(dir_ / "b.npy");
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002").at("points").size(), 1u);
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002 --grid " + quote(json)).at("points").size(), 1u);
  meta.erase("outputs");
  usrecon::io::write_file_atomic(json, meta.dump());
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002").at("points").size(), 1u);
  meta["outputs"] = {{"png", "a.png"}, {"raw", "a.npy"}};
  usrecon::io::write_file_atomic(json, meta.dump());
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002").at("points").size(), 1u);
  EXPECT_EQ(run_command(usrecon(view)).exit_code, 0);
  // Channel data reconstructed into its own directory (a.npy the input, a.json the run's): the
  // advice says where to reconstruct (again "with --save-raw" there would overwrite the input).
  // The input is recorded as that run was given it, relative or not.
  fs::remove(dir_ / "v.png");  // the export above
  const std::string elsewhere = " (into another directory, if a.npy is the channel data that run read)";
  meta["outputs"] = {{"png", "a.png"}};
  for (const std::string& recorded : {image.string(), std::string("a.npy"), std::string("data/a.npy")}) {
    meta["input"] = recorded;
    usrecon::io::write_file_atomic(json, meta.dump());
    for (const std::string& command : {measure, view})
      expect_refused(command, "reconstruct again with --save-raw" + elsewhere);
  }
  meta["input"] = (dir_ / "b.npy").string();  // another input: no such advice
  usrecon::io::write_file_atomic(json, meta.dump());
  const auto other = run_command(usrecon(measure));
  EXPECT_NE(other.output.find("reconstruct again with --save-raw, or name a grid JSON"), std::string::npos) << other.output;
  // The JSON that names a.npy as its raw image is a.npy's, whatever its input was called.
  meta["outputs"] = {{"png", "a.png"}, {"raw", "a.npy"}};
  meta["input"] = "a.npy";
  usrecon::io::write_file_atomic(json, meta.dump());
  EXPECT_EQ(metrics(quote(image) + " --point 0.001,0.002").at("points").size(), 1u);
  EXPECT_EQ(run_command(usrecon(view)).exit_code, 0);
}
