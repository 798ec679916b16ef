// Compiled instead of cuda/cuda_info.cu when usrecon is built without CUDA.
#include "usrecon/kernels/common.hpp"

namespace usrecon {

bool built_with_cuda() noexcept { return false; }
int cuda_device_count() noexcept { return 0; }
void require_cuda(const std::string& what) {
  throw CudaUnavailable(what + ": usrecon was built without CUDA (reconfigure with nvcc available "
                               "and -DUSRECON_CUDA=ON)");
}

}  // namespace usrecon
