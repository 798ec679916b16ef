// The check of the config target: a `usrecon reconstruct --config FILE` file, read by CLI11 (as
// TOML, and as INI under a .ini name) and then by tools/usrecon/das_options.cpp, through every step
// reconstruct takes before it lists an input or writes anything (ReconstructCommand::options).
// Kept apart because it needs the CLI's library (usrecon_cli).
#pragma once

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "fuzz_checks.hpp"

namespace usrecon::fuzz {

/// This process's own directory (0700, made by mkdtemp under $TMPDIR, else /dev/shm, else /tmp;
/// removed at exit): the config file is written there, and the output directory the command is
/// given lies there, never made.
inline const std::filesystem::path& config_scratch_dir() {
  struct Scratch {
    std::filesystem::path dir;
    Scratch() {
      const char* tmpdir = std::getenv("TMPDIR");
      std::error_code ec;
      const std::filesystem::path parent = tmpdir && *tmpdir                                  ? tmpdir
                                           : std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm"
                                                                                            : "/tmp";
      std::string pattern = (parent / "usrecon-fuzz-config-XXXXXX").string();
      require(::mkdtemp(pattern.data()) != nullptr, "cannot make a scratch directory under " + parent.string());
      dir = pattern;
    }
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

/// What the options' processing refused with must be short enough to read: a data file given as
/// --config (or a value of a few KiB) is not quoted whole. The paths it names are not counted.
inline void check_refusal_message(std::string message, const std::filesystem::path& dir) {
  for (std::size_t at; (at = message.find(dir.string())) != std::string::npos;) message.erase(at, dir.string().size());
  require(message.size() <= 1024, "a refusal of " + std::to_string(message.size()) +
                                      " characters: " + message.substr(0, 300) + "...");
}

/// The options that options() accepted are what the later steps take for granted.
inline void check_accepted_options(const recon::ReconstructOptions& options) {
  const recon::GridRequest& grid = options.das.grid;
  for (const auto& [lo, hi, name] : {std::tuple{grid.x_min, grid.x_max, "x-range"}, std::tuple{grid.z_min, grid.z_max, "z-range"}})
    require((std::isnan(lo) && std::isnan(hi)) || (std::isfinite(lo) && std::isfinite(hi) && lo < hi),
            std::string(name) + " accepted as " + std::to_string(lo) + ":" + std::to_string(hi));
  for (const double step : {grid.dx, grid.dz})
    require(std::isnan(step) || (std::isfinite(step) && step > 0), "a pixel step accepted as " + std::to_string(step));
  const recon::Acquisition& acq = options.das.acquisition;
  for (const std::vector<double>* values : {&acq.angles, &acq.source_x, &acq.source_z})
    for (const double v : *values) require(std::isfinite(v), "a non-finite angle or source accepted");
  require(options.das.input.frame >= 1, "frame accepted as " + std::to_string(options.das.input.frame));
  require(options.das.input.last_frame == 0 || (options.das.input.all_frames && options.das.input.last_frame >= options.das.input.frame),
          "frame range accepted as " + std::to_string(options.das.input.frame) + ":" +
              std::to_string(options.das.input.last_frame));
  require(options.dynamic_range_db > 0, "a dynamic range accepted that the Reconstructor refuses");
  for (const std::string& warning : options.option_warnings)
    require(warning.starts_with("--"), "a unit warning that names no option: " + warning);
}

/// `reconstruct MISSING.npy --config DIR/file_name -o DIR/out` with the input as the config file,
/// parsed as main parses it, then reconstruct's option processing alone: nothing is read but the
/// config and nothing is written, whatever the file says (output = "/", report = "/etc/x").
/// Refusals are CLI::ParseError or usrecon::Error; any other exception escapes and is a crash.
inline void check_config_as(std::span<const std::uint8_t> data, const std::string& file_name) {
  const std::filesystem::path& dir = config_scratch_dir();
  const std::filesystem::path config = dir / file_name;
  {
    std::ofstream out(config, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    require(static_cast<bool>(out), "cannot write the scratch file " + config.string());
  }
  {
    CLI::App app{"usrecon"};
    const cli::Commands commands = cli::add_commands(app);
    const std::vector<std::string> args = {"usrecon",  "reconstruct",  (dir / "missing.npy").string(),
                                           "--config", config.string(), "-o", (dir / "out").string()};
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
      cli::refuse_empty_values(app);
      check_accepted_options(commands.run_reconstruct.options());
    } catch (const CLI::ParseError& e) {
      check_refusal_message(e.what(), dir);
    } catch (const Error& e) {
      check_refusal_message(e.what(), dir);
    }
  }
  std::filesystem::remove(config);
  // The directory held the config file only: no output directory, report or temporary was made.
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    require(false, "the options' processing made " + entry.path().string());
}

inline void check_config(std::span<const std::uint8_t> data) {
  check_config_as(data, "config.toml");
  check_config_as(data, "config.ini");
}

}  // namespace usrecon::fuzz
