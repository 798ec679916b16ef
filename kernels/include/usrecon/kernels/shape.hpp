// Array shapes and NumPy broadcasting. Plain C++: no CUDA headers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "usrecon/kernels/common.hpp"

namespace usrecon::kernels {

/// The most dimensions an array may have.
inline constexpr int max_dims = 8;

/// The extents of an array, outermost first (row-major). A default Shape has no dimensions: it is
/// the shape of a scalar (size 1).
class Shape {
 public:
  constexpr Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(std::span(dims.begin(), dims.size())); }
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims); }

  [[nodiscard]] int ndim() const noexcept { return ndim_; }
  [[nodiscard]] std::int64_t operator[](int i) const noexcept { return dims_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] std::int64_t& operator[](int i) noexcept { return dims_[static_cast<std::size_t>(i)]; }
  /// Number of elements (1 for a scalar shape).
  [[nodiscard]] std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (const std::int64_t d : *this) n *= d;
    return n;
  }
  [[nodiscard]] const std::int64_t* begin() const noexcept { return dims_.data(); }
  [[nodiscard]] const std::int64_t* end() const noexcept { return dims_.data() + ndim_; }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.ndim_ != b.ndim_) return false;
    return std::equal(a.begin(), a.end(), b.begin());
  }

  /// NumPy's spelling: "(4, 4)", "(3,)", "()".
  [[nodiscard]] std::string to_string() const {
    std::string s = "(";
    for (const std::int64_t* d = begin(); d != end(); ++d) {
      if (d != begin()) s += ", ";
      s += std::to_string(*d);
    }
    s += ndim_ == 1 ? ",)" : ")";
    return s;
  }

 private:
  void assign(std::span<const std::int64_t> dims) {
    if (dims.size() > static_cast<std::size_t>(max_dims))
      throw Error("Shape: " + std::to_string(dims.size()) + " dimensions, at most " +
                  std::to_string(max_dims) + " are supported");
    // The product of the non-zero extents must fit: size() and every offset within the array
    // are then int64 without overflow (an empty array's other extents count too).
    std::int64_t product = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) throw Error("Shape: negative extent " + std::to_string(dims[i]));
      if (dims[i] > 0 && __builtin_mul_overflow(product, dims[i], &product))
        throw Error("Shape: more than 2^63 - 1 elements");
    }
    ndim_ = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), dims_.begin());
  }

  std::array<std::int64_t, max_dims> dims_{};
  int ndim_ = 0;
};

/// The shape NumPy broadcasting gives `shapes` (aligned at the innermost dimension; extents must be
/// equal or 1). Throws usrecon::Error naming `what` and every shape when they do not broadcast.
inline Shape broadcast_shapes(std::span<const Shape> shapes, const std::string& what) {
  int ndim = 0;
  for (const Shape& s : shapes) ndim = s.ndim() > ndim ? s.ndim() : ndim;
  std::array<std::int64_t, max_dims> dims{};
  dims.fill(1);
  for (const Shape& s : shapes) {
    for (int i = 0; i < s.ndim(); ++i) {
      std::int64_t& d = dims[static_cast<std::size_t>(ndim - s.ndim() + i)];
      if (s[i] == d || s[i] == 1) continue;
      if (d == 1) {
        d = s[i];
        continue;
      }
      std::string message = what + ": operands could not be broadcast together with shapes";
      for (const Shape& t : shapes) {
        message += ' ';
        message += t.to_string();
      }
      throw Error(message);
    }
  }
  return Shape(std::span<const std::int64_t>(dims.data(), static_cast<std::size_t>(ndim)));
}

}  // namespace usrecon::kernels
