#include "commands.hpp"
#include "usrecon/kernels/config.hpp"

namespace usrecon::cli {

Commands add_commands(CLI::App& app) {
  app.require_subcommand(1);
  constexpr const char* kVersion = "usrecon " USRECON_VERSION;  // the project's (usrecon/kernels/config.hpp)
  app.set_version_flag("--version", kVersion);
  Commands commands;
  commands.reconstruct = app.add_subcommand(
      "reconstruct", "Reconstruct channel data files into B-mode images (PNG, JSON, optional NPY)");
  commands.simulate = app.add_subcommand(
      "simulate", "Write simulated channel data (source.txt for --model seed; NPY, USTB UFF or PICMUS HDF5 for the others): points, cysts, speckle");
  commands.run_reconstruct = add_reconstruct(*commands.reconstruct);
  commands.run_simulate = add_simulate(*commands.simulate);
  commands.metrics = app.add_subcommand(
      "metrics", "Measure point targets (position, FWHM) and cysts (CNR, gCNR) in a raw image, as JSON");
  commands.run_metrics = add_metrics(*commands.metrics);
  commands.view = app.add_subcommand(
      "view", "Show a reconstruction (.npy/.png) with axes in mm and a dB colour bar, or --export it");
  commands.run_view = add_view(*commands.view);
  commands.info = app.add_subcommand(
      "info", "Say what channel-data files hold and how reconstruct reads them (arrays, geometry, or what to give)");
  commands.run_info = add_info(*commands.info);
  // "usrecon reconstruct --version" was told "inputs is required".
  for (CLI::App* command : {commands.reconstruct, commands.simulate, commands.metrics, commands.view, commands.info})
    command->set_version_flag("--version", kVersion);
  return commands;
}

}  // namespace usrecon::cli
