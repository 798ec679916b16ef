// The library's only cuBLAS calls outside the matrix product: the handle behind CublasHandle and
// the error message behind USRECON_CUBLAS_CHECK. In a file of their own, so that a program linked
// with the static library references cuBLAS only when it uses it: the usrecon tool and the
// recon library do not, and with --as-needed (the top-level CMakeLists.txt) their executables do
// not load cuBLAS at all. Loading it costs every process start about 70 ms (libcublasLt's
// relocations, measured on the 2-core development machine: an empty program linked with cuBLAS
// against one without).
#include <cublas_v2.h>

#include <string>

#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon {
namespace cuda_detail {

void throw_cublas_error(int status, const char* statement, const char* file, int line) {
  throw Error(std::string("cuBLAS error in ") + statement + " at " + file + ":" +
              std::to_string(line) + ": " +
              cublasGetStatusString(static_cast<cublasStatus_t>(status)));
}

}  // namespace cuda_detail

namespace kernels::detail {

cublasContext* cublas_create() {
  require_cuda("cuBLAS handle");
  cublasHandle_t h = nullptr;
  USRECON_CUBLAS_CHECK(cublasCreate(&h));
  return h;
}
void cublas_destroy(cublasContext* h) noexcept {
  if (h) cublasDestroy(h);
}

}  // namespace kernels::detail
}  // namespace usrecon
