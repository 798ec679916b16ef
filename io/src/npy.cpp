// NumPy .npy reading (format 1.0, 2.0, 3.0) and writing (1.0).
//
// File layout: 6-byte magic "\x93NUMPY", major and minor version bytes, the header length
// (little-endian uint16 in 1.0, uint32 in 2.0/3.0), then the header: a Python dict literal such as
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and a final '\n'
// so that the data starts at a multiple of 64 bytes. The raw data follows.
#include "usrecon/io/npy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "printable.hpp"
#include "usrecon/io/file.hpp"

namespace usrecon::io {

// Data is stored and handed out as little-endian; a big-endian host would need byte swapping.
static_assert(std::endian::native == std::endian::little,
              "usrecon's .npy support assumes a little-endian host");

namespace {

/// Header text from the file (a key, a descr) as it may appear in a message (see printable.hpp).
std::string shown(std::string_view header_text) { return printable(header_text, 40); }

constexpr std::array<char, 6> kMagic = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
/// numpy aligns the data start to this many bytes (numpy.lib.format.ARRAY_ALIGN).
constexpr std::size_t kHeaderAlignment = 64;

struct DTypeInfo {
  DType dtype;
  std::string_view descr;  // as numpy writes it
  char kind;               // numpy's kind letter: 'u', 'i', 'f', 'c'
  std::size_t size_bytes;
};

constexpr std::array<DTypeInfo, 13> kDTypes = {{
    {DType::u8, "|u1", 'u', 1},
    {DType::i8, "|i1", 'i', 1},
    {DType::b1, "|b1", 'b', 1},
    {DType::u16, "<u2", 'u', 2},
    {DType::u32, "<u4", 'u', 4},
    {DType::u64, "<u8", 'u', 8},
    {DType::i16, "<i2", 'i', 2},
    {DType::i32, "<i4", 'i', 4},
    {DType::i64, "<i8", 'i', 8},
    {DType::f32, "<f4", 'f', 4},
    {DType::f64, "<f8", 'f', 8},
    {DType::c64, "<c8", 'c', 8},
    {DType::c128, "<c16", 'c', 16},
}};

const DTypeInfo& info_of(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  throw Error("unknown usrecon::io::DType value " + std::to_string(static_cast<int>(dtype)));
}

std::string supported_descrs() {
  std::string list;
  for (const DTypeInfo& info : kDTypes) {
    if (!list.empty()) list += ' ';
    list += info.descr;
  }
  return list;
}

/// Product of the shape times the item size; nullopt when it overflows. An absurd shape with a
/// zero extent, such as (0, 2**63, 2**63), is refused too: the non-zero extents must fit.
std::optional<std::size_t> checked_byte_count(std::span<const std::size_t> shape,
                                              std::size_t item_size) {
  std::size_t nonzero_product = item_size;
  bool has_zero_extent = false;
  for (const std::size_t extent : shape) {
    if (extent == 0) {
      has_zero_extent = true;
    } else if (__builtin_mul_overflow(nonzero_product, extent, &nonzero_product)) {
      return std::nullopt;
    }
  }
  return has_zero_extent ? 0 : nonzero_product;
}

std::string shape_text(std::span<const std::size_t> shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ',';
  return text + ")";
}

/// Reads the header's Python dict literal. Accepts keys in any order, single or double quotes,
/// any spacing, a trailing comma, shapes written (), (5,), (3, 4) or (5), and Python 2 long
/// integers (5L), as produced by every numpy version.
class HeaderParser {
 public:
  HeaderParser(std::string_view header, const std::string& name) : text_(header), name_(name) {}

  struct Fields {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::size_t> shape;
  };

  Fields parse() {
    Fields fields;
    bool have_descr = false, have_fortran_order = false, have_shape = false;
    expect('{');
    skip_spaces();
    while (peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      const auto claim = [&](bool& seen) {
        if (seen) fail("the key '" + shown(key) + "' appears twice");
        seen = true;
      };
      if (key == "descr") {
        claim(have_descr);
        skip_spaces();
        if (peek() == '[') {
          fail("structured dtypes (a list 'descr') are not supported; supported dtypes: " +
               supported_descrs());
        }
        fields.descr = string_literal();
      } else if (key == "fortran_order") {
        claim(have_fortran_order);
        fields.fortran_order = boolean_literal();
      } else if (key == "shape") {
        claim(have_shape);
        fields.shape = shape_tuple();
      } else {
        fail("unexpected key '" + shown(key) + "' (expected 'descr', 'fortran_order' and 'shape')");
      }
      skip_spaces();
      if (peek() == ',') {
        ++position_;
        skip_spaces();
      } else if (peek() != '}') {
        fail("expected ',' or '}' after the value of '" + shown(key) + "'");
      }
    }
    ++position_;  // the closing '}'
    skip_spaces();
    if (position_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!have_descr) fail("the key 'descr' is missing");
    if (!have_fortran_order) fail("the key 'fortran_order' is missing");
    if (!have_shape) fail("the key 'shape' is missing");
    return fields;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(name_ + ": malformed .npy header: " + what);
  }

  char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }

  void skip_spaces() {
    // The header ends in '\n' and may be padded with spaces (or, in old files, other blanks).
    while (position_ < text_.size() &&
           (text_[position_] == ' ' || text_[position_] == '\t' || text_[position_] == '\n' ||
            text_[position_] == '\r')) {
      ++position_;
    }
  }

  void expect(char wanted) {
    skip_spaces();
    if (peek() != wanted) fail(std::string("expected '") + wanted + "'");
    ++position_;
  }

  std::string string_literal() {
    skip_spaces();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t close = text_.find(quote, position_ + 1);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(position_ + 1, close - position_ - 1));
    position_ = close + 1;
    return value;
  }

  bool boolean_literal() {
    skip_spaces();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true},
                                      std::pair{std::string_view("False"), false}}) {
      if (text_.substr(position_, word.size()) == word) {
        position_ += word.size();
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }

  std::vector<std::size_t> shape_tuple() {
    expect('(');
    std::vector<std::size_t> shape;
    skip_spaces();
    while (peek() != ')') {
      std::size_t extent = 0;
      const char* const first = text_.data() + position_;
      const char* const last = text_.data() + text_.size();
      const auto [end, error] = std::from_chars(first, last, extent, 10);
      if (error == std::errc::result_out_of_range) fail("a shape extent is too large");
      if (error != std::errc{}) fail("the shape must be a tuple of non-negative integers");
      position_ += static_cast<std::size_t>(end - first);
      if (peek() == 'L') ++position_;  // Python 2 long integer suffix
      shape.push_back(extent);
      skip_spaces();
      if (peek() == ',') {
        ++position_;
        skip_spaces();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++position_;  // the closing ')'
    return shape;
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t position_ = 0;
};

/// Maps a header descr to a DType, and whether its data are big-endian ('>': swapped on reading).
/// The byte-order character may be '<' (little), '=' (native, which is little here), '|' (not
/// applicable) or '>'; for one-byte types any order character is fine. Every other kind of dtype
/// is refused with a message that says why.
std::pair<DType, bool> dtype_from_descr(const std::string& descr, const std::string& name) {
  const auto unsupported = [&](const std::string& why) {
    return InputError(name + ": unsupported .npy dtype '" + shown(descr) + "'" + why +
                      "; supported dtypes: " + supported_descrs() + " (and the same big-endian, '>')");
  };
  if (descr.size() < 2) throw unsupported("");
  const char byte_order = descr[0];
  std::string_view kind_and_size = std::string_view(descr).substr(1);
  // NumPy's one-character type codes ('<d' for float64), which numpy.load accepts too.
  static constexpr std::pair<char, std::string_view> kTypeCodes[] = {
      {'b', "i1"}, {'B', "u1"}, {'?', "b1"}, {'h', "i2"}, {'H', "u2"}, {'i', "i4"}, {'I', "u4"}, {'l', "i8"},
      {'L', "u8"}, {'q', "i8"}, {'Q', "u8"}, {'f', "f4"}, {'d', "f8"}, {'F', "c8"}, {'D', "c16"}, {'e', "f2"}};
  if (kind_and_size.size() == 1) {
    const char code = kind_and_size[0];
    for (const auto& [type_code, canonical] : kTypeCodes)
      if (code == type_code) kind_and_size = canonical;
  }
  for (const DTypeInfo& info : kDTypes) {
    if (kind_and_size != info.descr.substr(1)) continue;
    if (byte_order == '<' || byte_order == '=' || byte_order == '|') return {info.dtype, false};
    if (byte_order == '>') return {info.dtype, info.size_bytes > 1};
    throw unsupported(" (unknown byte-order character)");
  }
  if (kind_and_size == "O") throw unsupported(" (object arrays hold Python objects, not numbers)");
  if (kind_and_size == "f2") throw unsupported(" (float16 is not read; convert it with numpy: a.astype('<f4'))");
  throw unsupported("");
}

/// Copies a Fortran-order (first index fastest) array into C order (last index fastest).
std::vector<std::byte> fortran_to_c_order(std::span<const std::byte> fortran_data,
                                          std::span<const std::size_t> shape,
                                          std::size_t item_size) {
  std::vector<std::byte> c_data(fortran_data.size());
  if (c_data.empty()) return c_data;
  const std::size_t rank = shape.size();
  // Element strides of the Fortran layout: stride[0] = 1, stride[k] = shape[0] * ... * shape[k-1].
  std::vector<std::size_t> fortran_stride(rank, 1);
  for (std::size_t k = 1; k < rank; ++k) fortran_stride[k] = fortran_stride[k - 1] * shape[k - 1];

  // Walk the C-order index like an odometer (last digit fastest), keeping the Fortran element
  // offset of the current index up to date.
  std::vector<std::size_t> index(rank, 0);
  std::size_t fortran_offset = 0;
  const std::size_t element_count = c_data.size() / item_size;
  for (std::size_t c_offset = 0; c_offset < element_count; ++c_offset) {
    std::memcpy(c_data.data() + c_offset * item_size,
                fortran_data.data() + fortran_offset * item_size, item_size);
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        fortran_offset += fortran_stride[k];
        break;
      }
      fortran_offset -= (shape[k] - 1) * fortran_stride[k];
      index[k] = 0;
    }
  }
  return c_data;
}

std::uint32_t read_little_endian(std::span<const std::byte> bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) {
    value = (value << 8) | std::to_integer<std::uint32_t>(bytes[i]);
  }
  return value;
}

}  // namespace

std::string_view npy_descr(DType dtype) { return info_of(dtype).descr; }

std::size_t dtype_size(DType dtype) { return info_of(dtype).size_bytes; }

std::size_t NpyArray::size() const {
  std::size_t product = 1;
  for (const std::size_t extent : shape) product *= extent;
  return product;
}

template <class T>
std::span<const T> NpyArray::as() const {
  if (dtype != dtype_of<T>()) {
    throw InputError("the array has dtype '" + std::string(npy_descr(dtype)) +
                     "' but was requested as '" + std::string(npy_descr(dtype_of<T>())) + "'");
  }
  // The vector's storage comes from operator new, so it is aligned for every supported type.
  return {reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T)};
}

template std::span<const std::uint8_t> NpyArray::as<std::uint8_t>() const;
template std::span<const std::int8_t> NpyArray::as<std::int8_t>() const;
template std::span<const std::uint16_t> NpyArray::as<std::uint16_t>() const;
template std::span<const std::uint32_t> NpyArray::as<std::uint32_t>() const;
template std::span<const std::uint64_t> NpyArray::as<std::uint64_t>() const;
template std::span<const std::int16_t> NpyArray::as<std::int16_t>() const;
template std::span<const std::int32_t> NpyArray::as<std::int32_t>() const;
template std::span<const std::int64_t> NpyArray::as<std::int64_t>() const;
template std::span<const float> NpyArray::as<float>() const;
template std::span<const double> NpyArray::as<double>() const;
template std::span<const std::complex<float>> NpyArray::as<std::complex<float>>() const;
template std::span<const std::complex<double>> NpyArray::as<std::complex<double>>() const;

std::vector<double> NpyArray::to_double() const {
  const auto convert = [](auto values) {
    return std::vector<double>(values.begin(), values.end());
  };
  switch (dtype) {
    case DType::u8: return convert(as<std::uint8_t>());
    case DType::i8: return convert(as<std::int8_t>());
    case DType::b1: {  // NumPy's True is any non-zero byte
      std::vector<double> v(data.size());
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = data[k] != std::byte{0} ? 1.0 : 0.0;
      return v;
    }
    case DType::u16: return convert(as<std::uint16_t>());
    case DType::u32: return convert(as<std::uint32_t>());
    case DType::u64: return convert(as<std::uint64_t>());  // exact up to 2^53
    case DType::i16: return convert(as<std::int16_t>());
    case DType::i32: return convert(as<std::int32_t>());
    case DType::i64: return convert(as<std::int64_t>());  // exact up to 2^53 in magnitude
    case DType::f32: return convert(as<float>());
    case DType::f64: return convert(as<double>());
    case DType::c64:
    case DType::c128: break;
  }
  throw InputError("the array has complex dtype '" + std::string(npy_descr(dtype)) +
                   "', which cannot be converted to real values");
}

namespace {

/// The preamble and header of an .npy image: the array without its data, whether its values are
/// big-endian, and how many bytes precede the data. `bytes` may end anywhere after the header.
struct NpyHead {
  NpyArray array;
  bool big_endian = false;
  std::size_t data_offset = 0;
};

/// The bytes an .npy file's preamble and header take, from its first 12 bytes (or fewer, for the
/// message of a file that short); throws as parse_npy does.
std::size_t npy_head_bytes(std::span<const std::byte> bytes, const std::string& name) {
  constexpr std::size_t kMagicAndVersionBytes = kMagic.size() + 2;
  if (bytes.size() < kMagicAndVersionBytes ||
      std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    throw InputError(name + ": not an .npy file (it does not start with \"\\x93NUMPY\")");
  }
  const auto major = std::to_integer<unsigned>(bytes[6]);
  const auto minor = std::to_integer<unsigned>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    throw InputError(name + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (3.0: UTF-8 header) in 4.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble_bytes = kMagicAndVersionBytes + length_bytes;
  if (bytes.size() < preamble_bytes) {
    throw InputError(name + ": truncated .npy file (" + std::to_string(bytes.size()) +
                     " bytes, shorter than its preamble)");
  }
  return preamble_bytes + read_little_endian(bytes.subspan(kMagicAndVersionBytes, length_bytes));
}

NpyHead parse_npy_head(std::span<const std::byte> bytes, const std::string& name) {
  const std::size_t head_bytes = npy_head_bytes(bytes, name);
  const std::size_t preamble_bytes = bytes[6] == std::byte{1} ? 10 : 12;
  if (bytes.size() < head_bytes) {
    throw InputError(name + ": truncated .npy file: the header claims " +
                     std::to_string(head_bytes - preamble_bytes) + " bytes but only " +
                     std::to_string(bytes.size() - preamble_bytes) + " follow the preamble");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + preamble_bytes,
                                head_bytes - preamble_bytes);
  const HeaderParser::Fields fields = HeaderParser(header, name).parse();
  NpyHead head;
  const auto [dtype, big_endian] = dtype_from_descr(fields.descr, name);
  head.array.dtype = dtype;
  head.array.shape = fields.shape;
  head.array.file_descr = shown(fields.descr);
  head.array.file_fortran_order = fields.fortran_order;
  head.big_endian = big_endian;
  head.data_offset = head_bytes;
  return head;
}

}  // namespace

namespace {

/// An .npy file's head, read from the file alone (not its data), checked against the file's
/// size as read_npy_header documents.
NpyHead read_npy_head(const std::filesystem::path& path) {
  // Not opened unless a regular file (a FIFO would block the open): read_file says why, as every
  // reader does.
  if (existing_input_status(path).type() != std::filesystem::file_type::regular) (void)read_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) (void)read_file(path);
  std::string bytes(12, '\0');
  in.read(bytes.data(), std::streamsize(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  const auto as_bytes = [](const std::string& b) { return std::as_bytes(std::span<const char>(b.data(), b.size())); };
  const std::size_t head_bytes = npy_head_bytes(as_bytes(bytes), path.string());
  if (head_bytes > bytes.size()) {
    if (head_bytes > (std::size_t{1} << 24))
      throw InputError(path.string() + ": the .npy header claims " + std::to_string(head_bytes) + " bytes");
    bytes.resize(head_bytes);
    in.read(bytes.data() + 12, std::streamsize(head_bytes - 12));
    bytes.resize(12 + static_cast<std::size_t>(in.gcount()));
  }
  NpyHead head = parse_npy_head(as_bytes(bytes), path.string());
  // The data must be all there, as parse_npy checks: a header claiming more than the file holds
  // is refused here too.
  const std::optional<std::size_t> data_bytes = checked_byte_count(head.array.shape, dtype_size(head.array.dtype));
  std::error_code ec;
  const std::uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  if (!data_bytes || ec || file_bytes < head.data_offset || file_bytes - head.data_offset != *data_bytes)
    throw InputError(path.string() + ": the .npy data has " +
                     std::to_string(ec || file_bytes < head.data_offset ? 0 : file_bytes - head.data_offset) +
                     " bytes, but shape " + shape_text(head.array.shape) + " of '" + head.array.file_descr + "' needs " +
                     (data_bytes ? std::to_string(*data_bytes) : std::string("more than 2^64")) + " bytes");
  return head;
}

/// Reverses each number's bytes of big-endian data: a complex item is two numbers of half its size.
void swap_to_native(std::vector<std::byte>& data, DType dtype) {
  const std::size_t item_size = dtype_size(dtype);
  const std::size_t word = dtype == DType::c64 || dtype == DType::c128 ? item_size / 2 : item_size;
  for (std::size_t at = 0; at < data.size(); at += word)
    std::reverse(data.begin() + std::ptrdiff_t(at), data.begin() + std::ptrdiff_t(at + word));
}

}  // namespace

NpyArray read_npy_header(const std::filesystem::path& path) { return read_npy_head(path).array; }

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  NpyHead head = parse_npy_head(bytes, name);
  NpyArray array = std::move(head.array);
  const bool big_endian = head.big_endian;
  const std::size_t preamble_and_header = head.data_offset;
  const std::size_t item_size = dtype_size(array.dtype);
  const std::optional<std::size_t> expected_bytes = checked_byte_count(array.shape, item_size);
  if (!expected_bytes) {
    throw InputError(name + ": the .npy shape " + shape_text(array.shape) +
                     " is too large (its byte count overflows)");
  }
  const std::span<const std::byte> data = bytes.subspan(preamble_and_header);
  if (data.size() != *expected_bytes) {
    throw InputError(name + ": the .npy data has " + std::to_string(data.size()) +
                     " bytes, but shape " + shape_text(array.shape) + " of '" + array.file_descr +
                     "' needs " + std::to_string(*expected_bytes) + " bytes");
  }
  if (array.file_fortran_order && array.shape.size() > 1) {
    array.data = fortran_to_c_order(data, array.shape, item_size);
  } else {
    array.data.assign(data.begin(), data.end());
  }
  if (big_endian) swap_to_native(array.data, array.dtype);
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  const std::string contents = read_file(path);
  return parse_npy(std::as_bytes(std::span<const char>(contents.data(), contents.size())),
                   path.string());
}

NpyArray read_npy_slab(const std::filesystem::path& path, std::size_t first, std::size_t count) {
  NpyHead head = read_npy_head(path);  // the file holds all the data its header claims
  NpyArray array = std::move(head.array);
  const bool fortran = array.file_fortran_order && array.shape.size() > 1;
  if (array.shape.empty())
    throw InputError(path.string() + ": a 0-d .npy array has no axis to take slabs of");
  const std::size_t axis = fortran ? array.shape.size() - 1 : 0;  // the slowest stored axis
  if (count < 1 || first >= array.shape[axis] || count > array.shape[axis] - first)
    throw InputError(path.string() + ": slabs " + std::to_string(first) + " to " + std::to_string(first + count) +
                     " (from 0, the last left out) of the .npy array's " + (fortran ? "last" : "first") +
                     " axis lie past its " + std::to_string(array.shape[axis]));
  std::vector<std::size_t> slab_shape = array.shape;
  slab_shape[axis] = count;
  const std::size_t item_size = dtype_size(array.dtype);
  // No overflow: the whole array's byte count was checked, and the slabs are a part of it.
  const std::size_t slab_bytes = *checked_byte_count(slab_shape, item_size);
  if (slab_bytes > kDefaultMaxInputBytes)
    throw InputError(path.string() + ": slabs of the .npy array of " + shape_text(slab_shape) + " take " +
                     std::to_string(slab_bytes) + " bytes, more than the " + std::to_string(kDefaultMaxInputBytes) +
                     " read at once");
  const std::size_t offset = head.data_offset + first * (slab_bytes / count);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> data(slab_bytes);
  in.seekg(std::streamoff(offset));
  in.read(reinterpret_cast<char*>(data.data()), std::streamsize(slab_bytes));
  if (!in || std::size_t(in.gcount()) != slab_bytes)
    throw InputError(path.string() + ": cannot read " + std::to_string(slab_bytes) + " bytes of .npy data at byte " +
                     std::to_string(offset) + ": the file changed or cannot be read");
  array.data = fortran ? fortran_to_c_order(data, slab_shape, item_size) : std::move(data);
  array.shape = std::move(slab_shape);
  if (head.big_endian) swap_to_native(array.data, array.dtype);
  return array;
}

std::vector<std::byte> encode_npy(DType dtype, std::span<const std::size_t> shape,
                                  const void* data) {
  const std::optional<std::size_t> data_bytes = checked_byte_count(shape, dtype_size(dtype));
  if (!data_bytes) {
    throw Error("encode_npy: shape " + shape_text(shape) + " is too large (byte count overflows)");
  }
  if (*data_bytes != 0 && data == nullptr) {
    throw Error("encode_npy: no data given for shape " + shape_text(shape));
  }
  // Same text and padding as numpy.save, so files are byte-identical to numpy's.
  std::string header = "{'descr': '" + std::string(npy_descr(dtype)) +
                       "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  constexpr std::size_t kPreambleBytes = kMagic.size() + 2 + 2;  // magic, version, uint16 length
  const std::size_t unpadded = kPreambleBytes + header.size() + 1;  // +1 for the final '\n'
  header.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) {
    throw Error("encode_npy: the header for shape " + shape_text(shape) +
                " is too long for .npy format 1.0");
  }

  std::vector<std::byte> image(kPreambleBytes + header.size() + *data_bytes);
  std::memcpy(image.data(), kMagic.data(), kMagic.size());
  image[6] = std::byte{1};  // format version 1.0
  image[7] = std::byte{0};
  image[8] = static_cast<std::byte>(header.size() & 0xFF);
  image[9] = static_cast<std::byte>(header.size() >> 8);
  std::memcpy(image.data() + kPreambleBytes, header.data(), header.size());
  if (*data_bytes != 0) {
    std::memcpy(image.data() + kPreambleBytes + header.size(), data, *data_bytes);
  }
  return image;
}

void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::size_t> shape,
               const void* data) {
  write_file_atomic(path, encode_npy(dtype, shape, data));
}

}  // namespace usrecon::io
