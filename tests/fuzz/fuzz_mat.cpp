// libFuzzer target: MAT files through io::list_mat_variables / io::read_mat (see fuzz_checks_mat.hpp).
#include "fuzz_checks_mat.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_mat({data, size});
  return 0;
}
