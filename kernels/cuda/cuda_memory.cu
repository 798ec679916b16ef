// CUDA implementations behind the RAII types of usrecon/kernels/cuda_memory.hpp.
#include <cuda_runtime.h>

#include <string>

#include "usrecon/kernels/cuda_check.hpp"
#include "usrecon/kernels/cuda_memory.hpp"

namespace usrecon::kernels::detail {

void* device_malloc(std::size_t bytes) {
  void* p = nullptr;
  USRECON_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
void device_free(void* p) noexcept {
  if (p) cudaFree(p);
}
void* pinned_malloc(std::size_t bytes) {
  void* p = nullptr;
  USRECON_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}
void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}
void copy_bytes(void* dst, const void* src, std::size_t bytes, CUstream_st* stream, bool async) {
  if (bytes == 0) return;
  if (async)
    USRECON_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  else
    USRECON_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}
void memset_bytes(void* dst, int value, std::size_t bytes, CUstream_st* stream, bool async) {
  if (bytes == 0) return;
  USRECON_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream));
  if (!async) USRECON_CUDA_CHECK(cudaStreamSynchronize(stream));
}
CUstream_st* stream_create() {
  cudaStream_t s = nullptr;
  USRECON_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
void stream_destroy(CUstream_st* s) noexcept {
  if (s) cudaStreamDestroy(s);
}
void stream_synchronize(CUstream_st* s) { USRECON_CUDA_CHECK(cudaStreamSynchronize(s)); }
CUevent_st* event_create(bool timing) {
  cudaEvent_t e = nullptr;
  USRECON_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}
void event_destroy(CUevent_st* e) noexcept {
  if (e) cudaEventDestroy(e);
}
void event_record(CUevent_st* e, CUstream_st* s) { USRECON_CUDA_CHECK(cudaEventRecord(e, s)); }
void event_synchronize(CUevent_st* e) { USRECON_CUDA_CHECK(cudaEventSynchronize(e)); }
bool event_query(CUevent_st* e) {
  const cudaError_t status = cudaEventQuery(e);
  if (status == cudaErrorNotReady) return false;
  USRECON_CUDA_CHECK(status);
  return true;
}
float event_elapsed_ms(CUevent_st* start, CUevent_st* stop) {
  USRECON_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  USRECON_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}
void stream_wait_event(CUstream_st* s, CUevent_st* e) {
  USRECON_CUDA_CHECK(cudaStreamWaitEvent(s, e, 0));
}

}  // namespace usrecon::kernels::detail
