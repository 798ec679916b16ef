// Host and device arrays with shapes, and the operand views the operations take.
// Plain C++: no CUDA headers.
//
//   HostArray<float> a({4, 4}, 1.0f);            // host, contiguous, row-major
//   DeviceArray<float> d = to_device(a);          // cuda.to_device
//   auto out = device_array<float>({4, 4});       // cuda.device_array: uninitialised
//   add(d, d, out);                               // runs on the GPU, writes into `out`
//   HostArray<float> back = out.copy_to_host();   // copy_to_host
#pragma once

#include <cstdint>
#include <initializer_list>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "usrecon/kernels/backend.hpp"
#include "usrecon/kernels/cuda_memory.hpp"
#include "usrecon/kernels/shape.hpp"

namespace usrecon::kernels {

namespace detail {
/// (0,): the shape of an empty array, which default-constructed and moved-from arrays have.
inline Shape empty_shape() noexcept {
  static const Shape empty{0};
  return empty;
}
/// Whether count_a elements of T at a and count_b at b share any byte.
template <class T>
bool overlaps(const T* a, std::int64_t count_a, const T* b, std::int64_t count_b) noexcept {
  if (!a || !b || count_a <= 0 || count_b <= 0) return false;
  const auto a_lo = reinterpret_cast<std::uintptr_t>(a), b_lo = reinterpret_cast<std::uintptr_t>(b);
  return a_lo < b_lo + static_cast<std::uintptr_t>(count_b) * sizeof(T) &&
         b_lo < a_lo + static_cast<std::uintptr_t>(count_a) * sizeof(T);
}
/// An array view with no memory but elements to hold: a caller's mistake, said at once.
[[noreturn]] void throw_null_view(const char* what, const Shape& shape);
}  // namespace detail

/// An owning, contiguous, row-major array in host memory. Copyable and movable.
template <class T>
class HostArray {
 public:
  using value_type = T;

  /// An empty array, shape (0,) (NumPy's np.array([])), as a moved-from one is left.
  HostArray() = default;
  HostArray(const HostArray&) = default;
  HostArray& operator=(const HostArray&) = default;
  HostArray(HostArray&& other) noexcept
      : shape_(std::exchange(other.shape_, detail::empty_shape())), data_(std::move(other.data_)) {
    other.data_.clear();
  }
  HostArray& operator=(HostArray&& other) noexcept {
    if (this != &other) {
      shape_ = std::exchange(other.shape_, detail::empty_shape());
      data_ = std::move(other.data_);
      other.data_.clear();
    }
    return *this;
  }
  /// Zero-filled array of the given shape.
  explicit HostArray(const Shape& shape) : shape_(shape), data_(allocate(shape, T{})) {}
  HostArray(const Shape& shape, T fill) : shape_(shape), data_(allocate(shape, fill)) {}
  /// Takes `values` (row-major) as the contents; their number must match the shape.
  HostArray(const Shape& shape, std::vector<T> values) : shape_(shape), data_(std::move(values)) {
    if (static_cast<std::int64_t>(data_.size()) != shape_.size())
      throw Error("HostArray: " + std::to_string(data_.size()) + " values for shape " +
                  shape_.to_string());
  }
  /// A 1-D array of the given values.
  [[nodiscard]] static HostArray from_vector(std::vector<T> values) {
    const auto n = static_cast<std::int64_t>(values.size());
    return HostArray(Shape{n}, std::move(values));
  }

  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] int ndim() const noexcept { return shape_.ndim(); }
  [[nodiscard]] std::size_t size() const noexcept { return data_.size(); }
  [[nodiscard]] T* data() noexcept { return data_.data(); }
  [[nodiscard]] const T* data() const noexcept { return data_.data(); }
  [[nodiscard]] std::span<T> span() noexcept { return data_; }
  [[nodiscard]] std::span<const T> span() const noexcept { return data_; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] auto begin() noexcept { return data_.begin(); }
  [[nodiscard]] auto end() noexcept { return data_.end(); }
  [[nodiscard]] auto begin() const noexcept { return data_.begin(); }
  [[nodiscard]] auto end() const noexcept { return data_.end(); }
  /// Element at a multi-index (row-major), e.g. a.at({i, j}).
  [[nodiscard]] T& at(std::initializer_list<std::int64_t> index) { return data_[offset(index)]; }
  [[nodiscard]] const T& at(std::initializer_list<std::int64_t> index) const {
    return data_[offset(index)];
  }
  /// The same elements viewed with another shape of the same size.
  void reshape(const Shape& shape) {
    if (shape.size() != shape_.size())
      throw Error("HostArray::reshape: cannot reshape " + shape_.to_string() + " to " +
                  shape.to_string());
    shape_ = shape;
  }

 private:
  /// The elements of shape s, each `fill`; refused with usrecon::Error, as the library's other
  /// failures, where there is no memory for them (std::bad_alloc said nothing of the shape).
  static std::vector<T> allocate(const Shape& s, T fill) {
    if (static_cast<std::uint64_t>(s.size()) > std::vector<T>().max_size())
      throw Error("HostArray: shape " + s.to_string() + " holds more elements than host memory can");
    try {
      return std::vector<T>(static_cast<std::size_t>(s.size()), fill);
    } catch (const std::bad_alloc&) {
      throw Error("HostArray: no host memory for shape " + s.to_string() + " (" +
                  std::to_string(static_cast<std::uint64_t>(s.size()) * sizeof(T)) + " bytes)");
    }
  }
  std::size_t offset(std::initializer_list<std::int64_t> index) const {
    if (static_cast<int>(index.size()) != shape_.ndim())
      throw Error("HostArray::at: " + std::to_string(index.size()) + " indices for shape " +
                  shape_.to_string());
    std::int64_t off = 0;
    int d = 0;
    for (std::int64_t i : index) {
      if (i < 0 || i >= shape_[d])
        throw Error("HostArray::at: index " + std::to_string(i) + " out of range for shape " +
                    shape_.to_string());
      off = off * shape_[d++] + i;
    }
    return static_cast<std::size_t>(off);
  }

  Shape shape_ = detail::empty_shape();
  std::vector<T> data_;
};

/// An owning, contiguous, row-major array in device memory. Move-only; data() is a device
/// pointer.
template <class T>
class DeviceArray {
 public:
  using value_type = T;

  /// An empty array, shape (0,), as a moved-from one is left.
  DeviceArray() = default;
  DeviceArray(DeviceArray&& other) noexcept
      : shape_(std::exchange(other.shape_, detail::empty_shape())), buffer_(std::move(other.buffer_)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      shape_ = std::exchange(other.shape_, detail::empty_shape());
      buffer_ = std::move(other.buffer_);
    }
    return *this;
  }
  /// Uninitialised device array (cuda.device_array).
  explicit DeviceArray(const Shape& shape)
      : shape_(shape), buffer_(static_cast<std::size_t>(shape.size())) {}

  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] int ndim() const noexcept { return shape_.ndim(); }
  [[nodiscard]] std::size_t size() const noexcept { return buffer_.size(); }
  [[nodiscard]] T* data() noexcept { return buffer_.data(); }
  [[nodiscard]] const T* data() const noexcept { return buffer_.data(); }
  [[nodiscard]] std::span<T> span() noexcept { return buffer_.span(); }
  [[nodiscard]] std::span<const T> span() const noexcept { return buffer_.span(); }
  [[nodiscard]] DeviceBuffer<T>& buffer() noexcept { return buffer_; }
  [[nodiscard]] const DeviceBuffer<T>& buffer() const noexcept { return buffer_; }

  /// Copies into `out` (same number of elements, reshaped to this shape); returns when done.
  /// Work enqueued on `stream` before this call is finished first.
  void copy_to_host(HostArray<T>& out, StreamView stream = {}) const {
    if (out.size() != size()) detail::throw_size_mismatch("copy_to_host", out.size(), size());
    out.reshape(shape_);
    if (size() == 0) return;  // nothing to copy or wait for: no device needed
    copy_async(out.span(), buffer_.cspan(), stream);
    stream.synchronize();
  }
  /// A new host array with the contents (synchronous, like Numba's copy_to_host()).
  [[nodiscard]] HostArray<T> copy_to_host(StreamView stream = {}) const {
    HostArray<T> out(shape_);
    copy_to_host(out, stream);
    return out;
  }
  /// Copies from a host array of the same size, ordered on `stream`; the host array may be
  /// reused as soon as this returns.
  void copy_from_host(const HostArray<T>& in, StreamView stream = {}) {
    if (in.size() != size()) detail::throw_size_mismatch("copy_from_host", size(), in.size());
    if (size() == 0) return;  // nothing to copy or wait for: no device needed
    copy_async(buffer_.span(), in.span(), stream);
    if (stream.is_default()) stream.synchronize();
  }

 private:
  Shape shape_ = detail::empty_shape();
  DeviceBuffer<T> buffer_;
};

/// cuda.device_array: an uninitialised device array.
template <class T>
[[nodiscard]] DeviceArray<T> device_array(const Shape& shape) {
  return DeviceArray<T>(shape);
}

/// cuda.to_device: a device copy of a host array (ordered on `stream`; `host` may be reused when
/// this returns).
template <class T>
[[nodiscard]] DeviceArray<T> to_device(const HostArray<T>& host, StreamView stream = {}) {
  DeviceArray<T> d(host.shape());
  d.copy_from_host(host, stream);
  return d;
}

/// Where an operand's elements live.
enum class Location { scalar, host, device };

/// A read-only operand of an operation: an array (host or device, contiguous row-major) or a
/// scalar. Converts implicitly from HostArray<T>, DeviceArray<T> and T, so functions taking
/// In<T> accept all three; In<T>::host/device wrap raw memory the caller owns.
template <class T>
struct In {
  const T* data = nullptr;
  Shape shape;
  Location location = Location::scalar;
  T value{};

  In() = default;
  In(T scalar) : value(scalar) {}  // NOLINT: implicit
  In(const HostArray<T>& a) : data(a.data()), shape(a.shape()), location(Location::host) {}
  In(const DeviceArray<T>& a) : data(a.data()), shape(a.shape()), location(Location::device) {}
  /// Views of memory the caller owns; p may be null only for an empty shape.
  static In host(const T* p, const Shape& s) { return In(p, s, Location::host); }
  static In device(const T* p, const Shape& s) { return In(p, s, Location::device); }

 private:
  In(const T* p, const Shape& s, Location l) : data(p), shape(s), location(l) {
    if (!p && s.size() > 0) detail::throw_null_view("In", s);
  }
};

/// A writable array operand (host or device, contiguous row-major). Converts implicitly from
/// HostArray<T>& and DeviceArray<T>&; Out<T>::host/device wrap raw memory the caller owns.
template <class T>
struct Out {
  T* data = nullptr;
  Shape shape;
  Location location = Location::host;

  Out(HostArray<T>& a) : data(a.data()), shape(a.shape()), location(Location::host) {}
  Out(DeviceArray<T>& a) : data(a.data()), shape(a.shape()), location(Location::device) {}
  /// Views of memory the caller owns; p may be null only for an empty shape.
  static Out host(T* p, const Shape& s) { return Out(p, s, Location::host); }
  static Out device(T* p, const Shape& s) { return Out(p, s, Location::device); }

 private:
  Out(T* p, const Shape& s, Location l) : data(p), shape(s), location(l) {
    if (!p && s.size() > 0) detail::throw_null_view("Out", s);
  }
};

/// The element type of an array-like argument (void for scalars and anything else).
template <class A>
struct element_type {
  using type = void;
};
template <class T>
struct element_type<HostArray<T>> {
  using type = T;
};
template <class T>
struct element_type<DeviceArray<T>> {
  using type = T;
};
template <class T>
struct element_type<In<T>> {
  using type = T;
};
template <class T>
struct element_type<Out<T>> {
  using type = T;
};
template <class A>
using element_type_t = typename element_type<std::remove_cvref_t<A>>::type;

/// True for the arrays that live on the device.
template <class A>
inline constexpr bool is_device_array_v = false;
template <class T>
inline constexpr bool is_device_array_v<DeviceArray<T>> = true;

/// The element types the library's operations are instantiated for.
template <class T>
inline constexpr bool is_supported_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t>;

}  // namespace usrecon::kernels
