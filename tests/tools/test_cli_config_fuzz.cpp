// The fuzz_config target's check (tests/fuzz/fuzz_checks_config.hpp) in the normal suite: every
// seed and every saved finding passes it, as IoFuzzRegression runs the io targets'; and the check
// reaches reconstruct's option processing yet stops before anything is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../fuzz/fuzz_checks_config.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

/// reconstruct's options as `reconstruct x.npy --config DIR/c.toml -o DIR/out` reads them, with
/// `text` as the file, through ReconstructCommand::options (nothing is read but the file).
usrecon::recon::ReconstructOptions options_of(const fs::path& dir, const std::string& text) {
  std::ofstream(dir / "c.toml") << text;
  CLI::App app{"usrecon"};
  const usrecon::cli::Commands commands = usrecon::cli::add_commands(app);
  const std::string config = (dir / "c.toml").string(), out = (dir / "out").string();
  const char* argv[] = {"usrecon", "reconstruct", "x.npy", "--config", config.c_str(), "-o", out.c_str()};
  app.parse(7, argv);
  return commands.run_reconstruct.options();
}

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("usrecon-config-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(CliFuzzRegression, ConfigSeedsAndCrashesPassTheChecks) {
  std::size_t count = 0;
  for (const fs::path& dir : {fs::path(USRECON_SOURCE_DIR) / "tests/fuzz/corpus/config",
                              fs::path(USRECON_SOURCE_DIR) / "tests/corpus/regressions/config"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      SCOPED_TRACE(entry.path().string());
      EXPECT_NO_THROW(usrecon::fuzz::check_config(read_bytes(entry.path())));
      ++count;
    }
  }
  EXPECT_GE(count, 12u);
}

// The check must reach the options' own checks: a valid file is accepted with its values, and what
// das_options.cpp refuses comes back as its usrecon::Error (which the check accepts).
TEST(CliFuzzRegression, ConfigCheckRunsReconstructsOptionProcessing) {
  const fs::path dir = scratch_dir();
  const usrecon::recon::ReconstructOptions options =
      options_of(dir, "model = \"planewave\"\nangles-deg = [-5, 0, 5]\npitch = 0.3\n");
  EXPECT_EQ(options.model, usrecon::recon::ReconModel::PlaneWave);
  EXPECT_EQ(options.das.acquisition.angles.size(), 3u);
  ASSERT_EQ(options.option_warnings.size(), 1u);  // --pitch 0.3 reads as metres
  EXPECT_THROW(options_of(dir, "[view]\ndynamic-range = 40\n"), usrecon::Error);
  EXPECT_THROW(options_of(dir, "pitch = 2e-4\npitch = 3e-4\n"), usrecon::Error);
  // And stops before the outputs: neither the output directory nor the report is made.
  const std::string writes = "output = \"" + (dir / "out").string() + "\"\nreport = \"" +
                             (dir / "report.json").string() + "\"\nmodel = \"planewave\"\n";
  EXPECT_NO_THROW(usrecon::fuzz::check_config(bytes_of(writes)));
  EXPECT_NO_THROW(options_of(dir, writes));
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(fs::exists(dir / "report.json"));
  fs::remove_all(dir);
}

// Found by the fuzz_config check (regressions/config/frame_value_quoted_whole_in_its_message.toml):
// a --frame value from the file that is no frame number was quoted whole in the refusal, where every
// other value from the file is cut at 300 characters. Now --frame's own validator refuses it and
// quotes the value up to 40 characters.
TEST(CliFuzzRegression, AFrameValueOfThousandsOfCharactersIsCutInItsMessage) {
  const fs::path dir = scratch_dir();
  try {
    options_of(dir, "model = \"planewave\"\nframe = \"" + std::string(5000, '9') + "\"\n");
    ADD_FAILURE() << "accepted";
  } catch (const usrecon::Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message, "--config " + (dir / "c.toml").string() + ": frame (from the file): --frame: expected a frame "
                       "number from 1 (the first) to 1073741824, FIRST:LAST (both included), or all, not " +
                       std::string(40, '9') + "...");
    EXPECT_LT(message.size(), 400 + dir.string().size()) << message;
  }
  fs::remove_all(dir);
}

TEST(CliFuzzRegression, ConfigCheckCatchesAContractViolation) {
  const fs::path dir = "/nowhere";
  EXPECT_NO_THROW(usrecon::fuzz::check_refusal_message("--config /nowhere/c.toml: unknown option 'x'", dir));
  EXPECT_THROW(usrecon::fuzz::check_refusal_message("--frame " + std::string(2000, '1'), dir),
               usrecon::fuzz::ContractViolation);
  usrecon::recon::ReconstructOptions options;
  options.das.grid.x_min = 0.02;
  options.das.grid.x_max = -0.02;
  EXPECT_THROW(usrecon::fuzz::check_accepted_options(options), usrecon::fuzz::ContractViolation);
}

}  // namespace
