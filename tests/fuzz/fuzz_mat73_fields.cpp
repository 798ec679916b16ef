// libFuzzer target: MAT v7.3 struct and cell walking (the check of mat_fields, seeded with v7.3
// files: HDF5 groups, datasets and object references, read in io's HDF5 reader workers).
#include "fuzz_checks_mat_fields.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_mat_fields({data, size});
  return 0;
}
