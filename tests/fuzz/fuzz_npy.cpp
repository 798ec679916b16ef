// libFuzzer target: the .npy parser, with an encode/parse round trip (see fuzz_checks.hpp).
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_npy({data, size});
  return 0;
}
