// Error helpers shared by the CPU and CUDA builds.
#include <string>

#include "usrecon/kernels/array.hpp"
#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels::detail {

void throw_size_mismatch(const char* what, std::size_t dst, std::size_t src) {
  throw Error(std::string(what) + ": destination holds " + std::to_string(dst) +
              " elements, source " + std::to_string(src));
}

void throw_null_view(const char* what, const Shape& shape) {
  throw Error(std::string(what) + "<T>::host/device: a null pointer for shape " + shape.to_string() +
              " (only an empty view may have none)");
}

}  // namespace usrecon::kernels::detail

namespace usrecon {

Error::~Error() = default;
CudaUnavailable::~CudaUnavailable() = default;

}  // namespace usrecon
