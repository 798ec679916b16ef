// usrecon simulate -o FILE.txt --point X_MM,Z_MM ...
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/source_txt.hpp"
#include "usrecon/recon/simulate.hpp"

namespace fs = std::filesystem;

namespace usrecon::cli {
namespace {

struct SimulateArgs {
  std::string output;
  std::string truth;
  std::vector<std::string> points;
  bool overwrite = false;
  recon::SimulationOptions options;
};

recon::Scatterer parse_point(const std::string& text) {
  std::vector<double> values;
  std::stringstream in(text);
  std::string field;
  while (std::getline(in, field, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stod(field, &used));
      if (used != field.size()) throw std::invalid_argument(field);
    } catch (const std::exception&) {
      throw Error("--point '" + text + "': '" + field + "' is not a number");
    }
  }
  if (values.size() < 2 || values.size() > 3)
    throw Error("--point '" + text + "': expected X_MM,Z_MM or X_MM,Z_MM,AMPLITUDE");
  return {values[0], values[1], values.size() == 3 ? values[2] : 1.0};
}

int run(SimulateArgs& args) {
  for (const std::string& text : args.points) args.options.points.push_back(parse_point(text));
  if (args.options.points.empty() && args.options.speckle == 0)
    throw Error("nothing to simulate: give --point and/or --speckle");
  for (const fs::path target : {fs::path(args.output), fs::path(args.truth)}) {
    std::error_code ec;
    if (!target.empty() && !args.overwrite && fs::exists(target, ec))
      throw Error(target.string() + " already exists (kept; use --overwrite to replace it)");
  }
  const recon::seed::Problem& p = args.options.problem;
  const std::vector<std::int32_t> rf = recon::simulate_seed_channels(args.options);
  io::write_source_txt(args.output, rf, p.channels, p.samples);
  if (!args.truth.empty()) {
    nlohmann::json truth = {{"channel_data", fs::path(args.output).filename().string()},
                            {"grid_step_mm", recon::seed::Problem::kGridStepMm},
                            {"speckle", args.options.speckle},
                            {"seed", args.options.seed},
                            {"points", nlohmann::json::array()}};
    for (const recon::Scatterer& s : args.options.points)
      truth["points"].push_back({{"x_mm", s.x_mm}, {"z_mm", s.z_mm}, {"amplitude", s.amplitude},
                                 {"j", s.x_mm / recon::seed::Problem::kGridStepMm},
                                 {"i", s.z_mm / recon::seed::Problem::kGridStepMm}});
    io::write_file_atomic(args.truth, truth.dump(2) + "\n");
  }
  std::printf("usrecon: wrote %s (%d channels x %d samples, %zu points, %d speckle scatterers)%s%s\n",
              args.output.c_str(), p.channels, p.samples, args.options.points.size(),
              args.options.speckle, args.truth.empty() ? "" : "; truth in ", args.truth.c_str());
  return 0;
}

}  // namespace

Command add_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto& o = args->options;
  app.add_option("-o,--output", args->output, "Channel data file to write (source.txt format)")->required();
  app.add_option("--point", args->points,
                 "Point target X_MM,Z_MM[,AMPLITUDE]: x lateral from element 0, z depth (repeatable)");
  app.add_option("--speckle", o.speckle, "Number of random weak scatterers")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--speckle-amplitude", o.speckle_amplitude, "Amplitude of speckle scatterers (uniform in [-a, a])")->capture_default_str();
  app.add_option("--noise", o.noise, "White noise standard deviation, in output units")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--center-mhz", o.center_mhz, "Pulse centre frequency in MHz")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--cycles", o.cycles, "Pulse length (Gaussian envelope FWHM) in cycles")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--peak", o.peak, "Largest absolute value written")->check(CLI::Range(1.0, 1e9))->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed for speckle and noise")->capture_default_str();
  app.add_option("--channels", o.problem.channels, "Channels (= elements)")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--samples", o.problem.samples, "Samples per channel")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--truth", args->truth, "Also write the true target positions as JSON");
  app.add_flag("--overwrite", args->overwrite, "Replace existing files");
  app.footer("The forward model is the seed's: all elements fire at once and channel k records "
             "every element's two-way path, so `usrecon reconstruct` focuses the points back.");
  return [args] { return run(*args); };
}

}  // namespace usrecon::cli
