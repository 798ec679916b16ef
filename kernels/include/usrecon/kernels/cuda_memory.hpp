// RAII for CUDA resources: device buffers, pinned host buffers, streams, events, cuBLAS handles,
// and the copies between host and device memory.
//
// This header includes no CUDA header, so CPU-only code may include it; the raw handles are the
// CUDA types themselves (cudaStream_t is CUstream_st*, cudaEvent_t is CUevent_st*, cublasHandle_t
// is cublasContext*), so .cu files pass .get() straight to CUDA calls.
//
// Every owning type is move-only; a moved-from object is empty and its destructor does nothing.
// In a build without CUDA every constructor that would need CUDA throws usrecon::CudaUnavailable
// ("... built without CUDA"); with CUDA but no device they throw CudaUnavailable too.
//
// Typical use (the pattern the CUDA reconstruction backend follows). A namespace alias, not
// `using namespace usrecon::kernels`: the library's ufuncs are variables named sqrt, hypot, add, so
// that directive would make unqualified sqrt(x) and hypot(x, y) ambiguous in user code, and in CUDA's
// own math headers in a .cu file.
//
//   namespace uk = usrecon::kernels;
//   uk::Stream stream;                              // a non-blocking stream
//   uk::PinnedBuffer<float> staging(n);             // page-locked host memory: truly async copies
//   uk::DeviceBuffer<float> d_in(n), d_out(n);      // uninitialised device memory
//   uk::Event start, stop;
//   fill(staging.span());
//   start.record(stream);
//   uk::copy_async(d_in.span(), staging.cspan(), stream);     // host -> device, enqueued
//   my_launcher(d_in.data(), d_out.data(), n, stream.get());
//   uk::copy_async(staging.span(), d_out.cspan(), stream);    // device -> host, enqueued
//   stop.record(stream);
//   stream.synchronize();                           // or stop.synchronize()
//   float ms = uk::Event::elapsed_ms(start, stop);
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "usrecon/kernels/common.hpp"

struct CUstream_st;
struct CUevent_st;
struct cublasContext;

namespace usrecon::kernels {

namespace detail {
// Implemented in cuda/cuda_memory.cu (or cpu/cuda_memory_none.cpp, where they throw).
void* device_malloc(std::size_t bytes);
void device_free(void* p) noexcept;
void* pinned_malloc(std::size_t bytes);
void pinned_free(void* p) noexcept;
/// cudaMemcpy(Async) with cudaMemcpyDefault: the direction follows from the pointers.
void copy_bytes(void* dst, const void* src, std::size_t bytes, CUstream_st* stream, bool async);
void memset_bytes(void* dst, int value, std::size_t bytes, CUstream_st* stream, bool async);
CUstream_st* stream_create();
void stream_destroy(CUstream_st* s) noexcept;
void stream_synchronize(CUstream_st* s);
CUevent_st* event_create(bool timing);
void event_destroy(CUevent_st* e) noexcept;
void event_record(CUevent_st* e, CUstream_st* s);
void event_synchronize(CUevent_st* e);
bool event_query(CUevent_st* e);
float event_elapsed_ms(CUevent_st* start, CUevent_st* stop);
void stream_wait_event(CUstream_st* s, CUevent_st* e);
cublasContext* cublas_create();
void cublas_destroy(cublasContext* h) noexcept;
[[noreturn]] void throw_size_mismatch(const char* what, std::size_t dst, std::size_t src);
/// count * sizeof(T), refusing a count whose bytes would not fit a size_t (the allocation would
/// otherwise be a wrapped-around small one).
template <class T>
std::size_t checked_bytes(std::size_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
    throw Error("CUDA memory: " + std::to_string(count) + " elements of " + std::to_string(sizeof(T)) +
                " bytes exceed the address space");
  return count * sizeof(T);
}
}  // namespace detail

/// A non-owning reference to a CUDA stream. The default value is the legacy default stream
/// (nullptr). Every asynchronous operation of the library takes one; a Stream converts to it.
class StreamView {
 public:
  constexpr StreamView() noexcept = default;
  constexpr StreamView(CUstream_st* stream) noexcept : stream_(stream) {}  // NOLINT: implicit
  [[nodiscard]] constexpr CUstream_st* get() const noexcept { return stream_; }
  [[nodiscard]] constexpr bool is_default() const noexcept { return stream_ == nullptr; }
  /// Blocks the calling thread until all work enqueued on the stream has finished.
  void synchronize() const { detail::stream_synchronize(stream_); }

 private:
  CUstream_st* stream_ = nullptr;
};

/// Owns one raw CUDA handle and releases it with Release; move-only. The base of Stream, Event
/// and CublasHandle.
template <class Handle, void (*Release)(Handle) noexcept>
class UniqueHandle {
 public:
  UniqueHandle() noexcept = default;
  explicit UniqueHandle(Handle h) noexcept : handle_(h) {}
  ~UniqueHandle() { Release(handle_); }
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      Release(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  /// The raw handle (nullptr after a move).
  [[nodiscard]] Handle get() const noexcept { return handle_; }

 private:
  Handle handle_ = nullptr;
};

/// An owned, non-blocking CUDA stream (cudaStreamCreateWithFlags(cudaStreamNonBlocking)).
/// Destroying it does not wait: work already enqueued still completes. Move-only.
class Stream : public UniqueHandle<CUstream_st*, detail::stream_destroy> {
 public:
  /// Creates the stream; throws CudaUnavailable without CUDA or device.
  Stream() : UniqueHandle(detail::stream_create()) {}
  [[nodiscard]] StreamView view() const noexcept { return StreamView(get()); }
  operator StreamView() const noexcept { return StreamView(get()); }  // NOLINT: implicit
  /// Blocks until all work enqueued on the stream has finished.
  void synchronize() const { detail::stream_synchronize(get()); }
};

/// An owned CUDA event: record it on a stream, wait for it, or time between two. Move-only.
class Event : public UniqueHandle<CUevent_st*, detail::event_destroy> {
 public:
  /// timing=false makes a cheaper event for synchronisation only (cudaEventDisableTiming).
  explicit Event(bool timing = true) : UniqueHandle(detail::event_create(timing)) {}

  /// cudaEventRecord: the event completes when the work enqueued before it on `stream` does.
  void record(StreamView stream = {}) { detail::event_record(get(), stream.get()); }
  /// Blocks until the recorded work has completed.
  void synchronize() const { detail::event_synchronize(get()); }
  /// True when the recorded work has completed (cudaEventQuery), without blocking.
  [[nodiscard]] bool ready() const { return detail::event_query(get()); }
  /// Makes later work on `stream` wait for this event (cudaStreamWaitEvent); the host does not
  /// block.
  void make_wait(StreamView stream) const { detail::stream_wait_event(stream.get(), get()); }

  /// Milliseconds between two recorded timing events (waits for `stop` to complete).
  static float elapsed_ms(const Event& start, const Event& stop) {
    return detail::event_elapsed_ms(start.get(), stop.get());
  }
};

/// An owned cuBLAS handle (cublasCreate / cublasDestroy); get() is the cublasHandle_t. Move-only.
class CublasHandle : public UniqueHandle<cublasContext*, detail::cublas_destroy> {
 public:
  CublasHandle() : UniqueHandle(detail::cublas_create()) {}
};

/// `count` elements of T in device memory (cudaMalloc), uninitialised. Move-only.
/// data() is a device pointer: never dereference it on the host.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer holds trivially copyable types");

 public:
  DeviceBuffer() noexcept = default;
  explicit DeviceBuffer(std::size_t count)
      : data_(count ? static_cast<T*>(detail::device_malloc(detail::checked_bytes<T>(count))) : nullptr),
        size_(count),
        capacity_(count) {}
  ~DeviceBuffer() { detail::device_free(data_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      detail::device_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Device spans, for the copy functions below.
  [[nodiscard]] std::span<T> span() noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> cspan() const noexcept { return {data_, size_}; }

  /// Makes the buffer hold `count` elements, reallocating only when the capacity is too small;
  /// the contents are unspecified afterwards. Lets a loop reuse one buffer across calls.
  void reserve_discard(std::size_t count) {
    if (count > capacity_) *this = DeviceBuffer(count);
    size_ = count;
  }
  /// Sets every byte to zero (cudaMemsetAsync on `stream`; waits when stream is the default).
  void zero(StreamView stream = {}) {
    detail::memset_bytes(data_, 0, bytes(), stream.get(), !stream.is_default());
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

/// `count` elements of page-locked host memory (cudaMallocHost), uninitialised. Copies between it
/// and device memory run asynchronously and at full PCIe/NVLink speed. Move-only.
template <class T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "PinnedBuffer holds trivially copyable types");

 public:
  PinnedBuffer() noexcept = default;
  explicit PinnedBuffer(std::size_t count)
      : data_(count ? static_cast<T*>(detail::pinned_malloc(detail::checked_bytes<T>(count))) : nullptr),
        size_(count) {}
  ~PinnedBuffer() { detail::pinned_free(data_); }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      detail::pinned_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] T* begin() noexcept { return data_; }
  [[nodiscard]] T* end() noexcept { return data_ + size_; }
  [[nodiscard]] const T* begin() const noexcept { return data_; }
  [[nodiscard]] const T* end() const noexcept { return data_ + size_; }
  [[nodiscard]] std::span<T> span() noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> cspan() const noexcept { return {data_, size_}; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Copies src into dst (equal sizes; host or device memory on either side, the direction follows
/// from the pointers) and returns when the copy has completed. T comes from dst: src may be a
/// span of T or of const T (HostArray::span() of a non-const array, say).
template <class T>
void copy(std::span<T> dst, std::span<const std::type_identity_t<T>> src) {
  if (dst.size() != src.size()) detail::throw_size_mismatch("copy", dst.size(), src.size());
  detail::copy_bytes(dst.data(), src.data(), src.size_bytes(), nullptr, false);
}

/// Enqueues the copy of src into dst on `stream` and returns at once. It overlaps with the host
/// and other streams only when the host side is pinned (PinnedBuffer); with pageable host memory
/// CUDA stages it and it may block. Keep both sides alive until the stream has passed this point.
template <class T>
void copy_async(std::span<T> dst, std::span<const std::type_identity_t<T>> src, StreamView stream) {
  if (dst.size() != src.size()) detail::throw_size_mismatch("copy_async", dst.size(), src.size());
  detail::copy_bytes(dst.data(), src.data(), src.size_bytes(), stream.get(), true);
}

}  // namespace usrecon::kernels
