// libFuzzer target: the source.txt parser against a reference reader (see fuzz_checks.hpp).
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_source_txt({data, size});
  return 0;
}
