// usrecon: delay-and-sum ultrasound reconstruction from the command line.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <new>

#include "commands.hpp"
#include "usrecon/kernels/common.hpp"
#include "usrecon/kernels/config.hpp"

int main(int argc, char** argv) {
  // Frames are a few large buffers (images of ~7 MB) made and freed on several threads. glibc
  // raises its mmap threshold after such frees and then serves them from per-thread arenas that
  // keep growing with fragmentation; a fixed threshold keeps them mmapped and returned to the
  // system at once, so memory stays flat over batches of any length.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{"usrecon — delay-and-sum ultrasound image reconstruction"};
  app.require_subcommand(1);
  constexpr const char* kVersion = "usrecon " USRECON_VERSION;  // the project's (usrecon/kernels/config.hpp)
  app.set_version_flag("--version", kVersion);
  auto* reconstruct = app.add_subcommand(
      "reconstruct", "Reconstruct channel data files into B-mode images (PNG, JSON, optional NPY)");
  auto* simulate = app.add_subcommand(
      "simulate", "Write simulated channel data (source.txt for --model seed; NPY, USTB UFF or PICMUS HDF5 for the others): points, cysts, speckle");
  const usrecon::cli::Command run_reconstruct = usrecon::cli::add_reconstruct(*reconstruct);
  const usrecon::cli::Command run_simulate = usrecon::cli::add_simulate(*simulate);
  auto* metrics = app.add_subcommand(
      "metrics", "Measure point targets (position, FWHM) and cysts (CNR, gCNR) in a raw image, as JSON");
  const usrecon::cli::Command run_metrics = usrecon::cli::add_metrics(*metrics);
  auto* view = app.add_subcommand(
      "view", "Show a reconstruction (.npy/.png) with axes in mm and a dB colour bar, or --export it");
  const usrecon::cli::Command run_view = usrecon::cli::add_view(*view);
  auto* info = app.add_subcommand(
      "info", "Say what channel-data files hold and how reconstruct reads them (arrays, geometry, or what to give)");
  const usrecon::cli::Command run_info = usrecon::cli::add_info(*info);
  // "usrecon reconstruct --version" was told "inputs is required".
  for (CLI::App* command : {reconstruct, simulate, metrics, view, info}) command->set_version_flag("--version", kVersion);
  // A mistyped command ("reconstuct") was told "A subcommand is required", as if none was given.
  const auto is_command = [&](const char* name) {
    const CLI::App& commands = app;
    for (const CLI::App* command : commands.get_subcommands(std::function<bool(const CLI::App*)>()))
      if (command->check_name(name)) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::fprintf(stderr, "usrecon: unknown command '%s': the commands are reconstruct, simulate, metrics, view and info "
                         "(usrecon --help)\n", argv[1]);
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  try {
    app.parse(argc, argv);
    usrecon::cli::refuse_empty_values(app);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (reconstruct->parsed()) return run_reconstruct();
    if (simulate->parsed()) return run_simulate();
    if (metrics->parsed()) return run_metrics();
    if (view->parsed()) return run_view();
    if (info->parsed()) return run_info();
  } catch (const std::bad_alloc&) {
    // std::bad_alloc's own text ("std::bad_alloc") says nothing to a user.
    std::fprintf(stderr, "usrecon: error: out of memory: the inputs or options (--channels, --samples, the image "
                         "grid, --writers) need more memory than this machine could give\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "usrecon: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
