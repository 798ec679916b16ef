// libFuzzer target: MAT struct and cell walking, read_mat(path, "A.b.c"), "C{1}", "S(2).x" (see fuzz_checks_mat_fields.hpp).
#include "fuzz_checks_mat_fields.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_mat_fields({data, size});
  return 0;
}
