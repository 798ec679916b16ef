// Error helpers shared by the CPU and CUDA builds.
#include <string>

#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels::detail {

void throw_size_mismatch(const char* what, std::size_t dst, std::size_t src) {
  throw Error(std::string(what) + ": destination holds " + std::to_string(dst) +
              " elements, source " + std::to_string(src));
}

}  // namespace usrecon::kernels::detail
