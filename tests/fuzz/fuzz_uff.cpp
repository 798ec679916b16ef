// libFuzzer target: HDF5 files with their own geometry (USTB UFF, PICMUS) through
// recon::count_frames, recon::read_channel_data and recon::prepare_das (see fuzz_checks_uff.hpp).
// Like the hdf5 target, every libhdf5 call runs in a reader process: tens of inputs per second.
#include "fuzz_checks_uff.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  usrecon::fuzz::check_uff({data, size});
  return 0;
}
