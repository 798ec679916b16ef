// LD_PRELOAD library for CliHostile.ASignalWhileTheProcessExitsChangesNothing: as the process
// exits (this library's destructor runs after main has returned and after the executable's own
// static destructors), it sends itself the signal numbered
//   USRECON_TEST_SIGNAL_AT_EXIT (e.g. "2" for SIGINT)
// which is the moment a Ctrl-C after the last input can always land in, made certain.
#include <csignal>
#include <cstdlib>

namespace {

__attribute__((destructor)) void signal_at_exit() {
  const char* number = std::getenv("USRECON_TEST_SIGNAL_AT_EXIT");
  if (number && *number) std::raise(std::atoi(number));
}

}  // namespace
