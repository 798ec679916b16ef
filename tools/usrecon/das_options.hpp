// The options of `usrecon reconstruct` for the general models (--model planewave | sa | dw | fw): geometry,
// grid, apodization, interpolation and channel-data input. Registered next to the seed's options;
// they can also come from a TOML/INI file (--config).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "usrecon/recon/pipeline.hpp"

namespace usrecon::cli {

/// The help group of the general models' options; with --model seed, any of them is refused.
inline constexpr const char* kGeneralModelsGroup = "General models (--model planewave | sa | dw | fw)";

struct DasArgs {
  CLI::App* app = nullptr;                      // the subcommand, to apply --config after parsing
  recon::ReconstructOptions* bound = nullptr;   // the options its flags write into
  std::string config;
  std::string model = "seed";
  std::string x_range, z_range, angles_deg, sources_x, sources_z;
  std::vector<std::string> tx_elements;  // whole_number_list's canonical lists
  std::string window = "rect", interp = "linear", offset = "none", time_zero = "first-element";
  std::string frame = "1";  // --frame N | all
  std::string tx_apodization = "none";
  std::string cuda_kernel = "auto";
  double tukey_alpha = 0.5;
};

/// Adds --model, --elements, --pitch, --sound-speed, --fs, --t0, --x-range, --z-range, --dx, --dz,
/// --angles-deg, --time-zero, --tx-elements, --sources-x, --sources-z, --fnumber, --window,
/// --tukey-alpha, --tx-apodization, --tx-fnumber, --interp, --cuda-kernel, --layout, --var,
/// --channel-map, --frame, --offset and --config to `app`, storing into args and options.das.
void add_das_options(CLI::App& app, DasArgs& args, recon::ReconstructOptions& options);

/// Applies --config (options the command line did not give), then converts what add_das_options stored (model, ranges, angles, names) into options. Throws Error
/// with the option's name for a bad value.
void finish_das_options(const DasArgs& args, recon::ReconstructOptions& options);

/// Values given (on the command line or in --config) that read as another unit than the option's
/// SI one: millimetres for metres (--pitch 0.3, --z-range 5:90), microseconds for seconds (--t0 5),
/// MHz for Hz (--fs 20), mm/us for m/s (--sound-speed 1.54). Such a run is refused nowhere (sonar
/// images metres, and a slow medium exists), so each is a warning that says what the value reads as
/// and how the smaller unit is written. Options `app` does not have are passed over.
std::vector<std::string> unlikely_units(const CLI::App& app);

}  // namespace usrecon::cli
