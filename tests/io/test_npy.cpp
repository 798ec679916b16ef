// .npy reading and writing: round trips of every dtype and shape, header variants, Fortran order,
// every error message, and a cross-check against real NumPy.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "io_test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"

namespace usrecon::io {
namespace {

using testing::contains;
using testing::message_of;

class IoNpy : public testing::TempDirTest {};

using Shape = std::vector<std::size_t>;

/// The shapes every dtype is tested with: 0-d, 1-d, 2-d, 3-d and empty arrays.
const std::vector<Shape> kShapes = {{}, {1}, {5}, {3, 4}, {2, 3, 4}, {0}, {3, 0}};

std::size_t element_count(const Shape& shape) {
  std::size_t count = 1;
  for (const std::size_t extent : shape) count *= extent;
  return count;
}

/// The k-th value (C order) of every test array; the NumPy script below computes the same.
/// Chosen to use sign, full width (e.g. i8 beyond 32 bits) and fractions exactly representable
/// or computed identically (k / 3.0) on both sides.
template <class T>
T value_at(std::size_t k) {
  const auto i = static_cast<std::int64_t>(k);
  if constexpr (std::is_same_v<T, std::uint8_t>) return static_cast<T>((i * 7) % 256);
  if constexpr (std::is_same_v<T, std::int16_t>) return static_cast<T>(i * 37 - 50);
  if constexpr (std::is_same_v<T, std::int32_t>) return static_cast<T>(i * 100003 - 70000);
  if constexpr (std::is_same_v<T, std::int64_t>) return i * 3000000000 - 7;
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(i) * 0.25f - 3.5f;
  if constexpr (std::is_same_v<T, double>) return static_cast<double>(i) / 3.0;
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    return {static_cast<float>(i) * 0.5f, static_cast<float>(i - 2)};
  }
  if constexpr (std::is_same_v<T, std::complex<double>>) {
    return {static_cast<double>(i) / 3.0, static_cast<double>(i) * -0.125};
  }
}

template <class T>
std::vector<T> values_for(const Shape& shape) {
  std::vector<T> values(element_count(shape));
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = value_at<T>(k);
  return values;
}

/// Calls f(T{}) for every supported element type.
template <class F>
void for_each_type(F&& f) {
  f(std::uint8_t{});
  f(std::int16_t{});
  f(std::int32_t{});
  f(std::int64_t{});
  f(float{});
  f(double{});
  f(std::complex<float>{});
  f(std::complex<double>{});
}

/// File-name fragments shared with the NumPy script: "u1", "s3x4" ("s0d" for a 0-d array).
std::string descr_code(DType dtype) { return std::string(npy_descr(dtype).substr(1)); }
std::string shape_code(const Shape& shape) {
  if (shape.empty()) return "s0d";
  std::string code = "s";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) code += 'x';
    code += std::to_string(shape[i]);
  }
  return code;
}

/// Builds an .npy image by hand: any version, any header text (unpadded), any data.
std::vector<std::byte> make_npy(int major, const std::string& header, const std::string& data) {
  std::string image = std::string("\x93NUMPY", 6) + char(major) + '\0';
  const std::size_t length = header.size();
  image += char(length & 0xFF);
  image += char((length >> 8) & 0xFF);
  if (major != 1) {
    image += char((length >> 16) & 0xFF);
    image += char((length >> 24) & 0xFF);
  }
  image += header + data;
  const auto* bytes = reinterpret_cast<const std::byte*>(image.data());
  return {bytes, bytes + image.size()};
}

/// Little-endian bytes of int32 values.
std::string int32_data(const std::vector<std::int32_t>& values) {
  std::string data(values.size() * 4, '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return data;
}

std::string parse_error(const std::vector<std::byte>& image) {
  return message_of<InputError>([&] { parse_npy(image, "arrays/input.npy"); });
}

std::string parse_error_for_header(const std::string& header, const std::string& data = "") {
  return parse_error(make_npy(1, header, data));
}

TEST_F(IoNpy, DescrAndSizeOfEveryDType) {
  EXPECT_EQ(npy_descr(DType::u8), "|u1");
  EXPECT_EQ(npy_descr(DType::i16), "<i2");
  EXPECT_EQ(npy_descr(DType::i32), "<i4");
  EXPECT_EQ(npy_descr(DType::i64), "<i8");
  EXPECT_EQ(npy_descr(DType::f32), "<f4");
  EXPECT_EQ(npy_descr(DType::f64), "<f8");
  EXPECT_EQ(npy_descr(DType::c64), "<c8");
  EXPECT_EQ(npy_descr(DType::c128), "<c16");
  EXPECT_EQ(npy_descr(DType::i8), "|i1");
  EXPECT_EQ(npy_descr(DType::u16), "<u2");
  EXPECT_EQ(npy_descr(DType::u32), "<u4");
  EXPECT_EQ(npy_descr(DType::u64), "<u8");
  EXPECT_EQ(npy_descr(DType::b1), "|b1");
  for_each_type([](auto sample) {
    using T = decltype(sample);
    EXPECT_EQ(dtype_size(dtype_of<T>()), sizeof(T));
  });
}

TEST_F(IoNpy, RoundTripsEveryDTypeAndShape) {
  for_each_type([&](auto sample) {
    using T = decltype(sample);
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(std::string(npy_descr(dtype_of<T>())) + " " + shape_code(shape));
      const std::vector<T> values = values_for<T>(shape);
      const auto path = dir_ / "array.npy";
      write_npy<T>(path, values, shape);
      const NpyArray array = read_npy(path);
      EXPECT_EQ(array.dtype, dtype_of<T>());
      EXPECT_EQ(array.shape, shape);
      EXPECT_EQ(array.size(), values.size());
      const std::span<const T> read_values = array.as<T>();
      EXPECT_EQ(std::vector<T>(read_values.begin(), read_values.end()), values);
    }
  });
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"array.npy"});
}

TEST_F(IoNpy, EncodedHeaderIsPaddedLikeNumpy) {
  const Shape shape = {3, 4};
  const std::vector<double> values = values_for<double>(shape);
  const std::vector<std::byte> image = encode_npy(DType::f64, shape, values.data());
  const std::string text(reinterpret_cast<const char*>(image.data()), image.size());
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
  EXPECT_EQ(text.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_length = std::to_integer<std::size_t>(image[8]) |
                                    std::to_integer<std::size_t>(image[9]) << 8;
  EXPECT_EQ((10 + header_length) % 64, 0u);
  EXPECT_EQ(text.substr(10, dict.size()), dict);
  EXPECT_EQ(text[10 + header_length - 1], '\n');
  EXPECT_EQ(text.substr(10 + dict.size(), header_length - dict.size() - 1),
            std::string(header_length - dict.size() - 1, ' '));
  EXPECT_EQ(image.size(), 10 + header_length + values.size() * sizeof(double));

  // Shapes print as Python tuples: (), (5,).
  const std::uint8_t scalar = 9;
  const std::vector<std::byte> scalar_image = encode_npy(DType::u8, Shape{}, &scalar);
  EXPECT_TRUE(contains(
      std::string(reinterpret_cast<const char*>(scalar_image.data()), scalar_image.size()),
      "'shape': (), }"));
  const std::vector<std::byte> vector_image = encode_npy(DType::i32, Shape{5}, values.data());
  EXPECT_TRUE(contains(
      std::string(reinterpret_cast<const char*>(vector_image.data()), vector_image.size()),
      "'shape': (5,), }"));
}

TEST_F(IoNpy, HeaderVariantsAllParse) {
  const std::string data = int32_data({1, -1});
  const std::vector<std::string> headers = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }          \n",
      "{'shape': (2,), 'descr': '<i4', 'fortran_order': False}\n",
      "{'fortran_order': False, 'shape': (2,), 'descr': '<i4',}",
      "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(2,)}",
      "  { 'descr' : '<i4' , 'fortran_order' : False , 'shape' : ( 2 , ) , }  \n",
      "{'descr': '=i4', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }",  // Python 2 numpy
      "{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }",    // 1-d: same layout
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2), }",
      "{'descr': '<i', 'fortran_order': False, 'shape': (2,), }",  // NumPy's type code, as numpy.load takes it
  };
  for (const int major : {1, 2, 3}) {
    for (const std::string& header : headers) {
      SCOPED_TRACE("version " + std::to_string(major) + ".0, header " + header);
      const NpyArray array = parse_npy(make_npy(major, header, data), "variant.npy");
      EXPECT_EQ(array.dtype, DType::i32);
      EXPECT_EQ(array.shape, Shape{2});
      const auto values = array.as<std::int32_t>();
      EXPECT_EQ(std::vector<std::int32_t>(values.begin(), values.end()),
                (std::vector<std::int32_t>{1, -1}));
    }
  }
}

// NumPy's one-character type codes ('<d' was refused as unsupported) read as their dtypes, and
// the file's own descr and order are kept for describing it ('>i2' was listed as '<i2').
TEST_F(IoNpy, TypeCodesReadAndTheFilesDescrIsKept) {
  const std::string one = std::string("\0\0\0\0\0\0\xf0\x3f", 8);  // 1.0 as little-endian float64
  const NpyArray d = parse_npy(make_npy(1, "{'descr': '<d', 'fortran_order': False, 'shape': (1,), }", one), "d.npy");
  EXPECT_EQ(d.dtype, DType::f64);
  EXPECT_EQ(d.to_double(), std::vector<double>{1.0});
  EXPECT_EQ(d.file_descr, "<d");
  const struct {
    const char* code;
    DType dtype;
  } codes[] = {{"b", DType::i8}, {"B", DType::u8}, {"?", DType::b1}, {"h", DType::i16}, {"H", DType::u16},
               {"i", DType::i32}, {"I", DType::u32}, {"l", DType::i64}, {"L", DType::u64}, {"q", DType::i64},
               {"Q", DType::u64}, {"f", DType::f32}, {"d", DType::f64}, {"F", DType::c64}, {"D", DType::c128}};
  for (const auto& [code, dtype] : codes) {
    SCOPED_TRACE(code);
    const std::string data(dtype_size(dtype), '\0');
    EXPECT_EQ(parse_npy(make_npy(1, std::string("{'descr': '<") + code + "', 'fortran_order': False, 'shape': (1,), }",
                                 data), "c.npy").dtype,
              dtype);
  }
  const NpyArray big = parse_npy(make_npy(1, "{'descr': '>i2', 'fortran_order': True, 'shape': (1, 2), }",
                                          std::string("\0\1\0\2", 4)),
                                 "b.npy");
  EXPECT_EQ(big.file_descr, ">i2");
  EXPECT_TRUE(big.file_fortran_order);
  EXPECT_EQ(big.to_double(), (std::vector<double>{1, 2}));
  EXPECT_FALSE(d.file_fortran_order);
}

TEST_F(IoNpy, ShapeSpellingsAndByteOrderOfBytes) {
  const std::string six_bytes = "abcdef";
  for (const std::string shape_text : {"(2, 3)", "(2,3)", "(2, 3,)", "( 2 ,3 , )"}) {
    EXPECT_EQ(parse_npy(make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': " +
                                        shape_text + "}", six_bytes), "s.npy").shape,
              (Shape{2, 3})) << shape_text;
  }
  for (const std::string descr : {"|u1", "<u1", "=u1", ">u1"}) {
    const NpyArray array = parse_npy(
        make_npy(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (6,)}", six_bytes),
        "u8.npy");
    EXPECT_EQ(array.dtype, DType::u8) << descr;
  }
  const NpyArray scalar =
      parse_npy(make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
                         std::string("\0\0\0\0\0\0\xf0\x3f", 8)), "scalar.npy");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar.as<double>()[0], 1.0);
}

TEST_F(IoNpy, FortranOrderIsTransposedToCOrder) {
  // a[i][j] = 10 * i + j, shape (2, 3), stored column by column.
  const std::string data = int32_data({0, 10, 1, 11, 2, 12});
  const NpyArray matrix = parse_npy(
      make_npy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", data), "f.npy");
  EXPECT_EQ(matrix.shape, (Shape{2, 3}));
  const auto values = matrix.as<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(values.begin(), values.end()),
            (std::vector<std::int32_t>{0, 1, 2, 10, 11, 12}));

  // a[i][j][k] = 100 * i + 10 * j + k, shape (2, 3, 4), first index fastest in the file.
  std::vector<std::int32_t> fortran_values;
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) {
      for (int i = 0; i < 2; ++i) fortran_values.push_back(100 * i + 10 * j + k);
    }
  }
  const NpyArray cube = parse_npy(
      make_npy(2, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
               int32_data(fortran_values)), "f3.npy");
  std::vector<std::int32_t> expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) expected.push_back(100 * i + 10 * j + k);
    }
  }
  const auto cube_values = cube.as<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(cube_values.begin(), cube_values.end()), expected);
}

/// The bytes of an .npy image as a string, for make_file.
std::string image_text(const std::vector<std::byte>& image) {
  return {reinterpret_cast<const char*>(image.data()), image.size()};
}

TEST_F(IoNpy, SlabsOfTheSlowestAxisAreTheWholeReadsParts) {
  // C order: slab k of a (3, 2, 4) array is its rows [k][.][.]; versions 1.0 and 2.0 headers.
  std::vector<std::int32_t> c_values(24);
  for (int k = 0; k < 24; ++k) c_values[std::size_t(k)] = 1000 * k - 7;
  for (int major : {1, 2}) {
    SCOPED_TRACE(major);
    const auto path = make_file("c" + std::to_string(major) + ".npy",
                                image_text(make_npy(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2, 4), }",
                                                    int32_data(c_values))));
    const NpyArray whole = read_npy(path);
    for (std::size_t k = 0; k < 3; ++k) {
      const NpyArray slab = read_npy_slab(path, k);
      EXPECT_EQ(slab.shape, (Shape{1, 2, 4}));
      EXPECT_EQ(slab.dtype, DType::i32);
      const auto part = whole.as<std::int32_t>().subspan(8 * k, 8);
      const auto got = slab.as<std::int32_t>();
      EXPECT_EQ(std::vector<std::int32_t>(got.begin(), got.end()), std::vector<std::int32_t>(part.begin(), part.end()));
    }
  }
  // Fortran order: the last axis is the slowest; slab k of a[i][j][k] = 100 i + 10 j + k, shape
  // (2, 3, 4), is a[.][.][k], in C order.
  std::vector<std::int32_t> fortran_values;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) fortran_values.push_back(100 * i + 10 * j + k);
  const auto fortran = make_file("f.npy", image_text(make_npy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
                                                              int32_data(fortran_values))));
  for (int k = 0; k < 4; ++k) {
    const NpyArray slab = read_npy_slab(fortran, std::size_t(k));
    EXPECT_EQ(slab.shape, (Shape{2, 3, 1}));
    EXPECT_TRUE(slab.file_fortran_order);
    std::vector<std::int32_t> expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expected.push_back(100 * i + 10 * j + k);
    const auto got = slab.as<std::int32_t>();
    EXPECT_EQ(std::vector<std::int32_t>(got.begin(), got.end()), expected) << k;
  }
  // Big-endian: swapped as a whole read swaps them.
  const auto big = make_file("big.npy", image_text(make_npy(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2, 2), }",
                                                            std::string("\x00\x01\xff\xfe\x01\x00\x80\x00", 8))));
  EXPECT_EQ(read_npy_slab(big, 1).to_double(), (std::vector<double>{256, -32768}));
  EXPECT_EQ(read_npy_slab(big, 0).to_double(), (std::vector<double>{1, -2}));

  // Refused: past the axis, a 0-d array, data cut short (as read_npy_header refuses it).
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(fortran, 4); }),
                       fortran.string() + ": slabs 4 to 5 (from 0, the last left out) of the .npy array's last axis "
                                          "lie past its 4"));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(big, 2); }), "first axis lie past its 2"));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(big, 1, 2); }), "slabs 1 to 3"));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(big, 0, 0); }), "slabs 0 to 0"));
  // Several slabs at once: the whole array's part, in C order.
  EXPECT_EQ(read_npy_slab(big, 0, 2).to_double(), read_npy(big).to_double());
  const NpyArray middle = read_npy_slab(fortran, 1, 2);
  EXPECT_EQ(middle.shape, (Shape{2, 3, 2}));
  std::vector<std::int32_t> expected_middle;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 1; k < 3; ++k) expected_middle.push_back(100 * i + 10 * j + k);
  const auto middle_values = middle.as<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(middle_values.begin(), middle_values.end()), expected_middle);
  const auto scalar = make_file("scalar.npy", image_text(make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }",
                                                                  int32_data({5}))));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(scalar, 0); }), "a 0-d .npy array has no axis to take slabs of"));
  const auto cut = make_file("cut.npy", image_text(make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2, 4), }",
                                                            int32_data(c_values)))
                                            .substr(0, 100));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(cut, 0); }), "bytes, but shape (3, 2, 4)"));
}

TEST_F(IoNpy, AHeaderOfOver16MiBIsRefusedBeforeItIsRead) {
  // Version 2.0 keeps the header's length in 4 bytes: one claiming 2^25 bytes is refused from the
  // preamble (read_npy_header would otherwise allocate and read it; read_npy reads the file whole
  // and finds it short).
  std::string image = std::string("\x93NUMPY\x02\x00", 8) + std::string("\x00\x00\x00\x02", 4) + "{'descr': '<i4'";
  const auto path = make_file("huge_header.npy", image);
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_header(path); }),
                       path.string() + ": the .npy header claims 33554444 bytes"));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(path, 0); }), "the .npy header claims 33554444 bytes"));
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy(path); }), "truncated .npy file"));
}

TEST_F(IoNpy, ASlabOfAFilePastTheWholeReadsLimitIsRead) {
  // 100 000 slabs of 44 000 bytes: 4.4e9 bytes, past read_npy's 4 GiB, made sparse (the file
  // system stores the few bytes written). Only the slab asked for is read.
  constexpr std::size_t kSlabs = 100000, kSlabBytes = 44000;
  const auto path = make_file("large.npy", image_text(make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (100000, 44000), }", "")));
  const std::uintmax_t data_offset = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, data_offset + kSlabs * kSlabBytes);
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(std::streamoff(data_offset + (kSlabs - 1) * kSlabBytes));
    const std::string last(kSlabBytes, '\x2a');
    out.write(last.data(), std::streamsize(last.size()));
    ASSERT_TRUE(out.good());
  }
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  if (std::uintmax_t(st.st_blocks) * 512 > (std::uintmax_t{1} << 30))
    GTEST_SKIP() << "the file system did not store the 4.4 GB file sparsely (" << st.st_blocks * 512 << " bytes)";
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy(path); }), "(the input size limit)"));
  const NpyArray last = read_npy_slab(path, kSlabs - 1);
  EXPECT_EQ(last.shape, (Shape{1, kSlabBytes}));
  EXPECT_EQ(last.data, std::vector<std::byte>(kSlabBytes, std::byte{0x2a}));
  const NpyArray first = read_npy_slab(path, 0);
  EXPECT_EQ(first.data, std::vector<std::byte>(kSlabBytes, std::byte{0}));
  // Slabs past a whole read's 4 GiB at once are refused before anything is read or allocated.
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy_slab(path, 0, 98000); }),
                       path.string() + ": slabs of the .npy array of (98000, 44000) take 4312000000 bytes, more than "
                                       "the 4294967296 read at once"));
}

TEST_F(IoNpy, ToDoubleConvertsRealTypes) {
  for_each_type([](auto sample) {
    using T = decltype(sample);
    const Shape shape = {5};
    const std::vector<T> values = values_for<T>(shape);
    const NpyArray array = parse_npy(encode_npy(dtype_of<T>(), shape, values.data()), "t.npy");
    if constexpr (std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
      const std::string message = message_of<InputError>([&] { array.to_double(); });
      EXPECT_TRUE(contains(message, "complex dtype '" + std::string(npy_descr(dtype_of<T>()))));
    } else {
      std::vector<double> expected;
      for (const T value : values) expected.push_back(static_cast<double>(value));
      EXPECT_EQ(array.to_double(), expected);
    }
  });
}

TEST_F(IoNpy, AsWithWrongTypeNamesBothDTypes) {
  const std::vector<std::int32_t> values = {1, 2};
  const NpyArray array = parse_npy(encode_npy(DType::i32, Shape{2}, values.data()), "t.npy");
  const std::string message = message_of<InputError>([&] { array.as<double>(); });
  EXPECT_TRUE(contains(message, "'<i4'"));
  EXPECT_TRUE(contains(message, "'<f8'"));
  EXPECT_THROW(array.as<std::uint8_t>(), InputError);
  EXPECT_EQ(array.as<std::int32_t>().size(), 2u);
}

TEST_F(IoNpy, BadMagicAndTruncatedPreamble) {
  const std::string name = "arrays/input.npy";
  const std::string plain = "hello, this is not an array";
  const auto* bytes = reinterpret_cast<const std::byte*>(plain.data());
  const std::string message = parse_error({bytes, bytes + plain.size()});
  EXPECT_TRUE(contains(message, name + ": not an .npy file"));
  EXPECT_TRUE(contains(parse_error({bytes, bytes + 3}), "not an .npy file"));
  EXPECT_TRUE(contains(parse_error({}), "not an .npy file"));

  std::vector<std::byte> preamble_only = make_npy(2, "", "");
  preamble_only.resize(9);  // magic, version and half of the 4-byte header length
  EXPECT_TRUE(contains(parse_error(preamble_only), "truncated .npy file (9 bytes"));
}

TEST_F(IoNpy, UnsupportedVersionsAreRefused) {
  const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }";
  std::vector<std::byte> image = make_npy(4, header, "");
  EXPECT_TRUE(contains(parse_error(image), "unsupported .npy format version 4.0"));
  image = make_npy(1, header, "");
  image[7] = std::byte{1};
  EXPECT_TRUE(contains(parse_error(image), "unsupported .npy format version 1.1"));
}

TEST_F(IoNpy, HeaderLongerThanFileIsRefused) {
  std::vector<std::byte> image =
      make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }", "");
  image.resize(image.size() - 5);
  const std::string message = parse_error(image);
  EXPECT_TRUE(contains(message, "arrays/input.npy: truncated .npy file: the header claims 57 "
                                "bytes but only 52 follow"));
}

TEST_F(IoNpy, UnsupportedDTypesAreRefusedWithReason) {
  const auto header_with = [](const std::string& descr) {
    return "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }";
  };
  EXPECT_TRUE(contains(parse_error_for_header(header_with("'|O'")), "object arrays"));
  EXPECT_TRUE(contains(parse_error_for_header(header_with("[('a', '<i4'), ('b', '<f8')]")),
                       "structured dtypes"));
  EXPECT_TRUE(contains(parse_error_for_header(header_with("'<f2'")), "float16 is not read"));
  for (const std::string descr : {"<f2", "<U5", "|S3", "<M8[s]", "x", "<u16"}) {
    const std::string message = parse_error_for_header(header_with("'" + descr + "'"));
    EXPECT_TRUE(contains(message, "unsupported .npy dtype '" + descr + "'")) << message;
    EXPECT_TRUE(contains(message, "supported dtypes: |u1 |i1 |b1 <u2 <u4 <u8 <i2 <i4 <i8 <f4 <f8 <c8 <c16"))
        << message;
  }
}

// Unsigned, int8 and bool arrays, and big-endian files of any dtype, read as NumPy writes them
// (the bytes below are numpy's own: np.array([...], dtype).tobytes()).
TEST_F(IoNpy, SmallAndUnsignedDTypesAndBigEndianFilesAreRead) {
  const auto read = [](const std::string& descr, const std::string& data, std::size_t n) {
    const std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                               std::to_string(n) + ",), }";
    return parse_npy(make_npy(1, header, data), "x.npy");
  };
  EXPECT_EQ(read("<u2", std::string("\x01\x00\xff\xff", 4), 2).to_double(), (std::vector<double>{1, 65535}));
  EXPECT_EQ(read("|i1", std::string("\x7f\x80", 2), 2).to_double(), (std::vector<double>{127, -128}));
  EXPECT_EQ(read("|b1", std::string("\x00\x01\x02", 3), 3).to_double(), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(read("<u4", std::string("\xff\xff\xff\xff", 4), 1).to_double(), (std::vector<double>{4294967295.0}));
  EXPECT_EQ(read("<u8", std::string("\x00\x00\x00\x00\x00\x00\x10\x00", 8), 1).to_double(),
            (std::vector<double>{4503599627370496.0}));  // 2^52
  // Big-endian: each number's bytes reversed, a complex number's two parts each.
  EXPECT_EQ(read(">u2", std::string("\x00\x01\xff\xfe", 4), 2).to_double(), (std::vector<double>{1, 65534}));
  EXPECT_EQ(read(">i4", std::string("\xff\xff\xff\xfe", 4), 1).to_double(), (std::vector<double>{-2}));
  EXPECT_EQ(read(">f8", std::string("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8), 1).to_double(),
            (std::vector<double>{1.5}));
  const NpyArray c = read(">c8", std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8), 1);
  EXPECT_EQ(c.as<std::complex<float>>()[0], std::complex<float>(1.0f, -2.0f));
  const NpyArray u = read("<u2", std::string("\x02\x00", 2), 1);
  EXPECT_EQ(u.dtype, DType::u16);
  EXPECT_EQ(u.as<std::uint16_t>()[0], 2);
}

TEST_F(IoNpy, MalformedHeadersAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<i4', 'fortran_order': False}", "the key 'shape' is missing"},
      {"{'shape': (1,), 'fortran_order': False}", "the key 'descr' is missing"},
      {"{'descr': '<i4', 'shape': (1,)}", "the key 'fortran_order' is missing"},
      {"{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (1,)}",
       "the key 'descr' appears twice"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<i4', 'fortran_order': maybe, 'shape': (1,)}",
       "'fortran_order' must be True or False"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}",
       "the shape must be a tuple of non-negative integers"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': [1]}", "expected '('"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1 2)}", "expected ',' or ')'"},
      {"{'descr': '<i4', 'fortran_order': False 'shape': (1,)}", "expected ',' or '}'"},
      {"{'descr': '<i4", "unterminated string"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,)} junk",
       "unexpected text after the closing '}'"},
      {"", "expected '{'"},
      {"{descr: '<i4'}", "expected a quoted string"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
       "a shape extent is too large"},
  };
  for (const auto& [header, detail] : cases) {
    const std::string message = parse_error_for_header(header, int32_data({7}));
    EXPECT_TRUE(contains(message, "arrays/input.npy: malformed .npy header: " + detail))
        << header;
  }
}

TEST_F(IoNpy, OverflowingShapesAreRefused) {
  for (const std::string shape : {"(4294967296, 4294967296)", "(0, 4611686018427387904, 4)",
                                   "(2305843009213693952,)"}) {
    const std::string message = parse_error_for_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + "}");
    EXPECT_TRUE(contains(message, "arrays/input.npy: the .npy shape "));
    EXPECT_TRUE(contains(message, "is too large")) << shape;
  }
}

TEST_F(IoNpy, DataSizeMismatchReportsBothSizes) {
  const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string too_short = parse_error_for_header(header, std::string(23, '\0'));
  EXPECT_TRUE(contains(too_short, "arrays/input.npy: the .npy data has 23 bytes, but shape "
                                  "(2, 3) of '<i4' needs 24 bytes"));
  const std::string too_long = parse_error_for_header(header, std::string(25, '\0'));
  EXPECT_TRUE(contains(too_long, "has 25 bytes"));
  EXPECT_TRUE(contains(too_long, "needs 24 bytes"));
}

TEST_F(IoNpy, ReadErrorsNameThePath) {
  const auto missing = dir_ / "missing.npy";
  const std::string missing_message = message_of<InputError>([&] { read_npy(missing); });
  EXPECT_TRUE(contains(missing_message, missing.string()));
  EXPECT_TRUE(contains(missing_message, "does not exist"));

  const auto text_file = make_file("text.npy", "1 2 3\n");
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_npy(text_file); }),
                       text_file.string() + ": not an .npy file"));
}

TEST_F(IoNpy, EncodeRefusesImpossibleRequests) {
  const Shape huge = {std::size_t{1} << 40, std::size_t{1} << 40};
  EXPECT_THROW(encode_npy(DType::u8, huge, nullptr), usrecon::Error);
  EXPECT_THROW(encode_npy(DType::f64, Shape{3}, nullptr), usrecon::Error);
  // An empty array needs no data: the image is the header alone, 128 bytes as numpy writes it.
  EXPECT_EQ(encode_npy(DType::f64, Shape{0}, nullptr).size(), 128u);
}

// ---- Cross-check against NumPy -------------------------------------------------------------

/// The NumPy side. "write DIR": saves every dtype/shape in C and Fortran order (and in format
/// versions 2.0 and 3.0) as np_<dtype>_<shape>_<order>.npy. "check DIR": loads each
/// ours_<dtype>_<shape>.npy, compares values, and compares the file byte for byte with np.save.
constexpr const char* kNumpyScript = R"PY(
import io, os, sys
import numpy as np

mode, out_dir = sys.argv[1], sys.argv[2]
dtypes = ['u1', 'i2', 'i4', 'i8', 'f4', 'f8', 'c8', 'c16']
shapes = [(), (1,), (5,), (3, 4), (2, 3, 4), (0,), (3, 0)]

def shape_code(shape):
    return 's0d' if shape == () else 's' + 'x'.join(str(n) for n in shape)

def values(code, shape):
    k = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    if code == 'u1': v = ((k * 7) % 256).astype(np.uint8)
    elif code == 'i2': v = (k * 37 - 50).astype('<i2')
    elif code == 'i4': v = (k * 100003 - 70000).astype('<i4')
    elif code == 'i8': v = (k * 3000000000 - 7).astype('<i8')
    elif code == 'f4': v = (k.astype('<f4') * np.float32(0.25) - np.float32(3.5)).astype('<f4')
    elif code == 'f8': v = k / 3.0
    elif code == 'c8':
        v = np.empty(k.size, '<c8'); v.real = k * 0.5; v.imag = k - 2
    else:
        v = np.empty(k.size, '<c16'); v.real = k / 3.0; v.imag = k * -0.125
    return v.reshape(shape)

failures = []
for code in dtypes:
    for shape in shapes:
        a = values(code, shape)
        stem = code + '_' + shape_code(shape)
        if mode == 'write':
            np.save(os.path.join(out_dir, 'np_' + stem + '_C.npy'), a)
            # asfortranarray would turn a 0-d array into shape (1,)
            f_order = np.asfortranarray(a) if a.ndim else a
            np.save(os.path.join(out_dir, 'np_' + stem + '_F.npy'), f_order)
            for version in [(2, 0), (3, 0)]:
                name = 'np_%s_v%d.npy' % (stem, version[0])
                with open(os.path.join(out_dir, name), 'wb') as f:
                    np.lib.format.write_array(f, f_order, version=version)
        else:
            path = os.path.join(out_dir, 'ours_' + stem + '.npy')
            b = np.load(path)
            if b.dtype != a.dtype or b.shape != a.shape or not np.array_equal(a, b):
                failures.append('%s: numpy read %s %s %r' % (path, b.dtype, b.shape, b))
            expected = io.BytesIO()
            np.save(expected, a)
            with open(path, 'rb') as f:
                if f.read() != expected.getvalue():
                    failures.append('%s: bytes differ from np.save' % path)
for failure in failures:
    print(failure)
sys.exit(1 if failures else 0)
)PY";

class IoNpyNumpy : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 missing";
    if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "numpy is not installed for /usr/bin/python3";
    }
    script_ = make_file("numpy_side.py", kNumpyScript);
  }

  /// Runs the script; returns its exit status and puts its output in `output`.
  int run_numpy(const std::string& mode, std::string& output) const {
    const auto log = dir_ / "numpy.log";
    const std::string command = "/usr/bin/python3 '" + script_.string() + "' " + mode + " '" +
                                dir_.string() + "' > '" + log.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    output = testing::slurp(log);
    return status;
  }

  std::filesystem::path script_;
};

TEST_F(IoNpyNumpy, ReadsWhatNumpyWrites) {
  std::string output;
  ASSERT_EQ(run_numpy("write", output), 0) << output;
  int files_checked = 0;
  for_each_type([&](auto sample) {
    using T = decltype(sample);
    for (const Shape& shape : kShapes) {
      const std::vector<T> expected = values_for<T>(shape);
      for (const std::string suffix : {"C", "F", "v2", "v3"}) {
        const auto path = dir_ / ("np_" + descr_code(dtype_of<T>()) + "_" + shape_code(shape) +
                                  "_" + suffix + ".npy");
        SCOPED_TRACE(path.filename().string());
        const NpyArray array = read_npy(path);
        ASSERT_EQ(array.dtype, dtype_of<T>());
        EXPECT_EQ(array.shape, shape);
        const auto values = array.as<T>();
        EXPECT_EQ(std::vector<T>(values.begin(), values.end()), expected);
        ++files_checked;
      }
    }
  });
  EXPECT_EQ(files_checked, 8 * static_cast<int>(kShapes.size()) * 4);
}

TEST_F(IoNpyNumpy, NumpyReadsWhatWeWriteByteForByte) {
  for_each_type([&](auto sample) {
    using T = decltype(sample);
    for (const Shape& shape : kShapes) {
      write_npy<T>(dir_ / ("ours_" + descr_code(dtype_of<T>()) + "_" + shape_code(shape) + ".npy"),
                   values_for<T>(shape), shape);
    }
  });
  std::string output;
  EXPECT_EQ(run_numpy("check", output), 0) << output;
}

}  // namespace
}  // namespace usrecon::io
