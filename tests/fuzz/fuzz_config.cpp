// libFuzzer target: reconstruct's --config file (TOML and INI) through CLI11 and usrecon's own
// checks of the options, stopping before any input is listed or output written (see
// fuzz_checks_config.hpp).
#include "fuzz_checks_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_config({data, size});
  return 0;
}
