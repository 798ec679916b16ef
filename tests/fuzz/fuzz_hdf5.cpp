// libFuzzer target: HDF5 files through io::list_hdf5_datasets / io::read_hdf5 (see
// fuzz_checks_hdf5.hpp). libhdf5 itself is a system library, not coverage-instrumented: the
// fuzzer mutates blind inside it.
#include "fuzz_checks_hdf5.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_hdf5({data, size});
  return 0;
}
