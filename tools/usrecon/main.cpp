// usrecon: delay-and-sum ultrasound reconstruction from the command line.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "usrecon/kernels/common.hpp"

int main(int argc, char** argv) {
  // Frames are a few large buffers (images of ~7 MB) made and freed on several threads. glibc
  // raises its mmap threshold after such frees and then serves them from per-thread arenas that
  // keep growing with fragmentation; a fixed threshold keeps them mmapped and returned to the
  // system at once, so memory stays flat over batches of any length.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{"usrecon — delay-and-sum ultrasound image reconstruction"};
  const usrecon::cli::Commands commands = usrecon::cli::add_commands(app);
  // A mistyped command ("reconstuct") was told "A subcommand is required", as if none was given.
  const auto is_command = [&](const char* name) {
    const CLI::App& top = app;
    for (const CLI::App* command : top.get_subcommands(std::function<bool(const CLI::App*)>()))
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
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11's "--model: At Most 1 required but received 2" for an option given twice.
    constexpr std::string_view kTwice = ": At Most 1 required but received ";
    const std::string what = e.what();
    const std::size_t at = what.find(kTwice);
    if (at == std::string::npos) return app.exit(e);
    std::fprintf(stderr, "%s is given %s times; give it once\nRun with --help for more information.\n",
                 what.substr(0, at).c_str(), what.substr(at + kTwice.size()).c_str());
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (commands.reconstruct->parsed()) return commands.run_reconstruct.run();
    if (commands.simulate->parsed()) return commands.run_simulate();
    if (commands.metrics->parsed()) return commands.run_metrics();
    if (commands.view->parsed()) return commands.run_view();
    if (commands.info->parsed()) return commands.run_info();
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
