// Built instead of cuda/cuda_memory.cu without CUDA: every request for CUDA resources throws
// CudaUnavailable; releasing (of what can never have been acquired) does nothing.
#include <string>

#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels::detail {
namespace {
[[noreturn]] void unavailable(const char* what) { require_cuda(what); throw CudaUnavailable(what); }
}  // namespace

void* device_malloc(std::size_t) { unavailable("device memory"); }
void device_free(void*) noexcept {}
void* pinned_malloc(std::size_t) { unavailable("pinned host memory"); }
void pinned_free(void*) noexcept {}
// Nothing to copy or set needs no device, as with CUDA (kernels/README.md: an array or buffer of
// zero elements needs no device in either build).
void copy_bytes(void*, const void*, std::size_t bytes, CUstream_st*, bool) {
  if (bytes != 0) unavailable("CUDA copy");
}
void memset_bytes(void*, int, std::size_t bytes, CUstream_st*, bool) {
  if (bytes != 0) unavailable("CUDA memset");
}
CUstream_st* stream_create() { unavailable("CUDA stream"); }
void stream_destroy(CUstream_st*) noexcept {}
void stream_synchronize(CUstream_st*) { unavailable("CUDA stream synchronize"); }
CUevent_st* event_create(bool) { unavailable("CUDA event"); }
void event_destroy(CUevent_st*) noexcept {}
void event_record(CUevent_st*, CUstream_st*) { unavailable("CUDA event record"); }
void event_synchronize(CUevent_st*) { unavailable("CUDA event synchronize"); }
bool event_query(CUevent_st*) { unavailable("CUDA event query"); }
float event_elapsed_ms(CUevent_st*, CUevent_st*) { unavailable("CUDA event timing"); }
void stream_wait_event(CUstream_st*, CUevent_st*) { unavailable("CUDA stream wait"); }
cublasContext* cublas_create() { unavailable("cuBLAS handle"); }
void cublas_destroy(cublasContext*) noexcept {}

}  // namespace usrecon::kernels::detail
