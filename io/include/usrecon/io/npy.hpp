// NumPy .npy files (format versions 1.0, 2.0 and 3.0 read; 1.0 written), little-endian data.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace usrecon::io {

/// The dtypes read and written (b1: NumPy's bool, one byte each, read through to_double() as 0 or
/// 1). Big-endian files of any of them are read too (swapped to native order on reading).
enum class DType { u8, i16, i32, i64, f32, f64, c64, c128, i8, u16, u32, u64, b1 };

/// NumPy's descr string for a dtype, e.g. "<f8".
std::string_view npy_descr(DType dtype);
std::size_t dtype_size(DType dtype);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<std::int16_t>() { return DType::i16; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::complex<float>>() { return DType::c64; }
template <> constexpr DType dtype_of<std::complex<double>>() { return DType::c128; }
template <> constexpr DType dtype_of<std::int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<std::uint16_t>() { return DType::u16; }
template <> constexpr DType dtype_of<std::uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<std::uint64_t>() { return DType::u64; }

/// An array read from an .npy file, data always in C order (a Fortran-order file is transposed on
/// reading so that callers see one layout).
struct NpyArray {
  DType dtype = DType::f64;
  std::vector<std::size_t> shape;
  std::vector<std::byte> data;  // C order, native little-endian
  /// As the file's header said them ("'>i2'", Fortran order), for describing the file; the data
  /// above are already converted.
  std::string file_descr;
  bool file_fortran_order = false;

  std::size_t size() const;  // product of shape (1 for a 0-d array)

  /// Typed view; throws InputError if T does not match dtype.
  template <class T> std::span<const T> as() const;

  /// Values converted to double (complex types refused); convenient for channel data.
  std::vector<double> to_double() const;
};

/// Parses an .npy image in memory. Throws InputError naming `name` for a bad magic, an unsupported
/// version or dtype (object, structured, float16, strings, ...), a malformed header, or a data
/// size that does not match the shape.
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& name);
NpyArray read_npy(const std::filesystem::path& path);
/// An .npy file's dtype and shape (as read_npy gives them; `data` left empty), from its header
/// and its size alone. Throws InputError as read_npy does for anything but a bad value (a file
/// that is not regular, a bad preamble or header, data that are not as many bytes as the shape).
NpyArray read_npy_header(const std::filesystem::path& path);
/// Slabs [first, first + count) of an .npy file's slowest stored axis (counted from 0), reading
/// only their bytes: the first axis of a C-order file, the last of a Fortran-order one (frames of
/// a [frames][...] cine, say). The shape is the file's with that axis at extent `count`, the data
/// in C order. The file is checked as read_npy_header checks it, and may be larger than
/// read_npy's 4 GiB as long as the slabs are not. Throws InputError naming the file for those, a
/// 0-d array, and slabs past the axis.
NpyArray read_npy_slab(const std::filesystem::path& path, std::size_t first, std::size_t count = 1);

/// Encodes a C-order array as an .npy (version 1.0) image.
std::vector<std::byte> encode_npy(DType dtype, std::span<const std::size_t> shape,
                                  const void* data);
/// Writes an .npy file atomically.
void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::size_t> shape,
               const void* data);

template <class T>
void write_npy(const std::filesystem::path& path, std::span<const T> values,
               std::span<const std::size_t> shape) {
  write_npy(path, dtype_of<T>(), shape, values.data());
}

}  // namespace usrecon::io
