// MAT files through matio.
#include "usrecon/io/mat.hpp"

#include <matio.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "printable.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/hdf5.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

struct MatCloser {
  void operator()(mat_t* m) const { Mat_Close(m); }
};
struct VarFreer {
  void operator()(matvar_t* v) const { Mat_VarFree(v); }
};
using MatFile = std::unique_ptr<mat_t, MatCloser>;
using MatVar = std::unique_ptr<matvar_t, VarFreer>;

std::string class_name(matio_classes c) {
  switch (c) {
    case MAT_C_DOUBLE: return "double";
    case MAT_C_SINGLE: return "single";
    case MAT_C_INT8: return "int8";
    case MAT_C_UINT8: return "uint8";
    case MAT_C_INT16: return "int16";
    case MAT_C_UINT16: return "uint16";
    case MAT_C_INT32: return "int32";
    case MAT_C_UINT32: return "uint32";
    case MAT_C_INT64: return "int64";
    case MAT_C_UINT64: return "uint64";
    case MAT_C_CHAR: return "char";
    case MAT_C_STRUCT: return "struct";
    case MAT_C_CELL: return "cell";
    case MAT_C_SPARSE: return "sparse";
    case MAT_C_FUNCTION: return "function";
    case MAT_C_OBJECT: return "object";
    default: return "unknown";
  }
}

bool numeric(matio_classes c) {
  switch (c) {
    case MAT_C_DOUBLE: case MAT_C_SINGLE: case MAT_C_INT8: case MAT_C_UINT8: case MAT_C_INT16:
    case MAT_C_UINT16: case MAT_C_INT32: case MAT_C_UINT32: case MAT_C_INT64: case MAT_C_UINT64:
      return true;
    default:
      return false;
  }
}

std::vector<std::size_t> dims_of(const matvar_t* v) {
  return std::vector<std::size_t>(v->dims, v->dims + v->rank);
}

/// Element `index` of cell array v, or nullptr: Mat_VarGetCell itself reads v->data unchecked,
/// which matio leaves null where it could not allocate a cell's elements.
matvar_t* cell_element(matvar_t* v, std::size_t index) {
  if (!v->data || index > INT_MAX) return nullptr;
  return Mat_VarGetCell(v, static_cast<int>(index));
}

/// Field `name` of element `index` of struct v, or nullptr (null data as for cell_element).
matvar_t* struct_field(matvar_t* v, const char* name, std::size_t index) {
  return v->data ? Mat_VarGetStructFieldByName(v, name, index) : nullptr;
}

/// A struct's field names, in the file's order (for the message that a field is not among them).
std::vector<std::string> field_names(matvar_t* v) {
  std::vector<std::string> names;
  if (v->class_type != MAT_C_STRUCT) return names;
  const unsigned count = Mat_VarGetNumberOfFields(v);
  char* const* fields = Mat_VarGetStructFieldnames(v);
  for (unsigned k = 0; fields && k < count; ++k)
    if (fields[k]) names.emplace_back(fields[k]);
  return names;
}

/// Forward-only bytes of MAT v5 elements: the file itself, or what one compressed element inflates
/// to. Reads never go back before the end of the previous one, so a compressed element is inflated
/// once, through a fixed buffer, however large it is.
class ElementBytes {
 public:
  virtual ~ElementBytes() = default;
  /// Reads n bytes at `at` (not before the end of the previous read) into `out`, or skips them
  /// when `out` is null; false when the bytes end first.
  virtual bool read(std::uintmax_t at, char* out, std::size_t n) = 0;
  /// Why the bytes ended early ("" when they simply ended).
  virtual std::string failure() const { return ""; }
};

class FileBytes final : public ElementBytes {
 public:
  FileBytes(std::istream& file, std::uintmax_t file_bytes) : file_(file), file_bytes_(file_bytes) {}
  bool read(std::uintmax_t at, char* out, std::size_t n) override {
    if (at > file_bytes_ || n > file_bytes_ - at) return false;
    if (out == nullptr) return true;
    file_.clear();
    file_.seekg(static_cast<std::streamoff>(at));
    return static_cast<bool>(file_.read(out, static_cast<std::streamsize>(n)));
  }

 private:
  std::istream& file_;
  std::uintmax_t file_bytes_;
};

/// The inflated content of the compressed element whose zlib stream is the `compressed_bytes` bytes
/// at `start` in `file`. A stream that is corrupt or stops before its end is a failure: matio would
/// read the garbage or the part before it.
class InflatedBytes final : public ElementBytes {
 public:
  InflatedBytes(std::istream& file, std::uintmax_t start, std::uintmax_t compressed_bytes)
      : file_(file), next_input_(start), input_left_(compressed_bytes) {
    if (inflateInit(&z_) != Z_OK) state_ = State::kFailed, failure_ = "zlib cannot start";
  }
  ~InflatedBytes() override { inflateEnd(&z_); }
  InflatedBytes(const InflatedBytes&) = delete;
  InflatedBytes& operator=(const InflatedBytes&) = delete;

  bool read(std::uintmax_t at, char* out, std::size_t n) override {
    if (at < position_) throw std::logic_error("InflatedBytes::read: going back");
    while (position_ < at)
      if (!produce(scratch_.data(), std::min<std::uintmax_t>(at - position_, scratch_.size())))
        return false;
    if (out != nullptr) return produce(out, n);
    while (n > 0) {
      const std::size_t chunk = std::min(n, scratch_.size());
      if (!produce(scratch_.data(), chunk)) return false;
      n -= chunk;
    }
    return true;
  }
  std::string failure() const override { return failure_; }
  /// Inflates the rest of the stream: true when it ends cleanly.
  bool drain() {
    while (produce(scratch_.data(), scratch_.size())) {
    }
    return state_ == State::kEnded;
  }

 private:
  enum class State { kInflating, kEnded, kFailed };

  /// Inflates exactly n bytes (n <= 64 KiB) into `out`; false when the stream ends or fails first.
  bool produce(char* out, std::size_t n) {
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out > 0 && state_ == State::kInflating) {
      if (z_.avail_in == 0) {
        if (input_left_ == 0) {
          state_ = State::kFailed, failure_ = "its zlib stream is cut off before its end";
          break;
        }
        const std::size_t chunk = static_cast<std::size_t>(std::min<std::uintmax_t>(input_left_, input_.size()));
        file_.clear();
        file_.seekg(static_cast<std::streamoff>(next_input_));
        if (!file_.read(input_.data(), static_cast<std::streamsize>(chunk))) {
          state_ = State::kFailed, failure_ = "its zlib stream runs past the end of the file";
          break;
        }
        next_input_ += chunk;
        input_left_ -= chunk;
        z_.next_in = reinterpret_cast<Bytef*>(input_.data());
        z_.avail_in = static_cast<uInt>(chunk);
      }
      const int status = inflate(&z_, Z_NO_FLUSH);
      if (status == Z_STREAM_END) {
        state_ = State::kEnded;
      } else if (status != Z_OK && !(status == Z_BUF_ERROR && z_.avail_in == 0)) {
        state_ = State::kFailed;
        failure_ = std::string("its zlib stream is corrupt (") + (z_.msg ? z_.msg : "error") + ")";
      }
    }
    position_ += n - z_.avail_out;
    return z_.avail_out == 0;
  }

  std::istream& file_;
  std::uintmax_t next_input_, input_left_;
  std::uintmax_t position_ = 0;  // inflated bytes produced so far
  z_stream z_{};
  State state_ = State::kInflating;
  std::string failure_;
  std::array<char, 1 << 16> input_{}, scratch_{};
};

/// MAT v5: matio allocates what a tag claims (a dims or name tag claiming 4 GiB: an 8 GiB or
/// 4 GiB malloc; dims of 3 x 2^31 with 6 bytes of data: 17 GB; found by tools/fuzz.sh), so before
/// matio sees the file every element is walked as matio will read it: each must fit in the file
/// (or in its compressed element's inflated stream), every subelement of a matrix (recursively,
/// for cells and structs) in its matrix, and a matrix may not claim more elements than it has
/// bytes. A compressed element is inflated in full, in one pass through a fixed buffer, and must
/// be a clean zlib stream.
void check_mat5_sizes(const fs::path& path, std::istream& file, std::uintmax_t file_bytes,
                      bool big_endian) {
  const auto word = [&](const char* bytes) {
    std::uint32_t value;
    std::memcpy(&value, bytes, 4);
    return big_endian ? __builtin_bswap32(value) : value;
  };
  constexpr std::uint32_t kMiMatrix = 14, kMiCompressed = 15;
  constexpr std::uint32_t kMiInt8 = 1, kMiInt32 = 5, kMiUint32 = 6;
  constexpr std::uint32_t kCellClass = 1, kStructClass = 2, kObjectClass = 3, kSparseClass = 5;
  constexpr std::uint32_t kDoubleClass = 6, kUint64Class = 15;  // the numeric classes: 6 to 15
  // Bytes of one value of a MAT v5 data type (miINT8 ... miUINT64); 0 for the others.
  const auto mi_type_bytes = [](std::uint32_t type) -> std::uintmax_t {
    switch (type) {
      case 1: case 2: return 1;          // miINT8, miUINT8
      case 3: case 4: return 2;          // miINT16, miUINT16
      case 5: case 6: case 7: return 4;  // miINT32, miUINT32, miSINGLE
      case 9: case 12: case 13: return 8;  // miDOUBLE, miINT64, miUINT64
      default: return 0;
    }
  };
  constexpr int kMaxDepth = 16;
  constexpr std::uintmax_t kUnknownEnd = UINTMAX_MAX;  // a compressed element's inflated length
  char version[2];
  file.clear();
  file.seekg(124);
  if (!file.read(version, 2)) return;
  const int version_major = version[big_endian ? 0 : 1], version_minor = version[big_endian ? 1 : 0];
  if (version_minor == 0 && version_major == 2) return;  // v7.3 (HDF5) is read by HDF5, not walked
  // MATLAB writes 0x0100 (v5/v7) or 0x0200 (v7.3); matio mis-sizes allocations on other values
  // (fuzz finding: a 1.4 GB malloc from a 149-byte file with version 0x4100).
  if (version_minor != 0 || version_major != 1)
    throw InputError(path.string() + ": not a MAT file that matio can read: header version 0x" +
                     [&] {
                       char hex[8];
                       std::snprintf(hex, sizeof hex, "%02X%02X", unsigned(version_major) & 0xFF,
                                     unsigned(version_minor) & 0xFF);
                       return std::string(hex);
                     }() + " (expected 0100 or 0200)");
  std::string where;  // "" for the file itself, else which compressed element is being walked
  const auto refuse = [&](const std::string& what, std::uintmax_t offset, const std::string& detail) {
    return InputError(path.string() + ": not a MAT file that matio can read: " + where + "the " + what +
                      " at byte " + std::to_string(offset) + " " + detail);
  };
  // Reads n bytes at `at` of the element at `offset`, refusing the file where they are missing.
  const auto need = [&](ElementBytes& in, std::uintmax_t at, char* out, std::size_t n, const char* what,
                        std::uintmax_t offset) {
    if (in.read(at, out, n)) return;
    const std::string failure = in.failure();
    throw refuse(what, offset,
                 failure.empty() ? "is cut off: the data end before byte " + std::to_string(at + n)
                                 : "is cut off: " + failure);
  };
  // The type and byte count of the element whose tag is at `at`, in the small format or not.
  struct Tag {
    std::uint32_t type, bytes;
    bool small;
  };
  const auto tag_at = [&](ElementBytes& in, std::uintmax_t at, const char* what) {
    char bytes[8];
    need(in, at, bytes, sizeof bytes, what, at);
    const std::uint32_t first = word(bytes);
    const bool small = (first >> 16) != 0;
    return Tag{small ? first & 0xFFFF : first, small ? first >> 16 : word(bytes + 4), small};
  };
  // Walks the elements in [offset, end) of `in`, as a matrix's subelements when depth > 0.
  const auto walk = [&](auto& self, ElementBytes& in, std::uintmax_t offset, std::uintmax_t end,
                        int depth) -> std::pair<std::uintmax_t, std::uintmax_t> {
    const std::string container = depth == 0 ? "the file" : "its matrix";
    std::uintmax_t matrices = 0;  // miMATRIX elements at this level (a cell's cells, a struct's fields)
    std::uintmax_t elements_seen = 0;  // all elements at this level
    while (end - offset >= 8) {
      char tag[8];
      if (end == kUnknownEnd) {
        if (!in.read(offset, tag, sizeof tag)) return {matrices, elements_seen};  // drain() judges the end
      } else {
        need(in, offset, tag, sizeof tag, "element", offset);
      }
      const std::uint32_t first = word(tag);
      ++elements_seen;
      if ((first >> 16) != 0) {  // small data element: at most 4 bytes of data inside the tag
        if ((first >> 16) > 4)
          throw refuse("element", offset, "is a small data element of " + std::to_string(first >> 16) +
                                              " bytes (at most 4 fit)");
        offset += 8;
        continue;
      }
      const std::uint32_t type = first, bytes = word(tag + 4);
      if (end != kUnknownEnd && bytes > end - offset - 8)
        throw refuse("element", offset,
                     "claims " + std::to_string(bytes) + " bytes, more than the " +
                         std::to_string(end - offset - 8) + " left in " + container);
      const std::uintmax_t element_end = offset + 8 + bytes;
      if (type == kMiMatrix) ++matrices;
      // Deeper matrices would go unchecked while matio still reads them (allocating what their
      // dims claim, reading on past their bytes), and recurses without a limit (60000 nested
      // structs overflowed its stack): they are refused.
      if (type == kMiMatrix && depth >= kMaxDepth && !(bytes == 0 && depth > 0))
        throw refuse("matrix", offset, "is nested more than " + std::to_string(kMaxDepth) +
                                           " deep in structs or cells (usrecon reads " +
                                           std::to_string(kMaxDepth) + " levels)");
      if (type == kMiMatrix && depth < kMaxDepth && !(bytes == 0 && depth > 0)) {
        // matio reads a matrix's parts by position, not by their tags (flags, then dims, then the
        // name, then the class's own parts), so each part must have exactly the layout MATLAB
        // writes, or matio and this walk would read different bytes. Only an empty cell or struct
        // field may be a 0-byte matrix (skipped above).
        if (bytes < 40)
          throw refuse("matrix", offset, "claims " + std::to_string(bytes) +
                                             " bytes, too few for its flags, dimensions and name (40)");
        char head[24];  // flags tag, flags (class in the low byte; nzmax), dims tag
        need(in, offset + 8, head, sizeof head, "matrix", offset);
        if (word(head) != kMiUint32 || word(head + 4) != 8)
          throw refuse("matrix", offset, "has array flags that are not 8 bytes of miUINT32");
        const std::uint32_t array_class = word(head + 8) & 0xFF, nonzeros = word(head + 12);
        const bool complex = (word(head + 8) & 0x0800) != 0;
        const std::uintmax_t dims_at = offset + 24;
        const std::uint32_t dims_first = word(head + 16), dims_bytes = word(head + 20);
        if ((dims_first >> 16) > 4)
          throw refuse("element", dims_at, "is a small data element of " + std::to_string(dims_first >> 16) +
                                               " bytes (at most 4 fit)");
        if (dims_first != kMiInt32)
          throw refuse("matrix", offset, "has dimensions that are not an miINT32 element");
        if (dims_bytes > bytes - 24)
          throw refuse("element", dims_at, "claims " + std::to_string(dims_bytes) + " bytes, more than the " +
                                               std::to_string(bytes - 24) + " left in its matrix");
        if (dims_bytes < 8 || dims_bytes % 4 != 0)
          throw refuse("matrix", offset, "has " + std::to_string(dims_bytes) +
                                             " bytes of dimensions (at least 2, of 4 bytes each)");
        // matio allocates dims-product elements (cells, fields) before reading them: each must
        // have at least one byte.
        std::uintmax_t elements = 1, columns = 0;
        for (std::uint32_t k = 0; k < dims_bytes; k += 4) {
          char dim[4];
          need(in, dims_at + 8 + k, dim, 4, "matrix", offset);
          if (k == 4) columns = word(dim);
          if (__builtin_mul_overflow(elements, std::uintmax_t{word(dim)}, &elements)) elements = UINTMAX_MAX;
        }
        if (elements > bytes)
          throw refuse("matrix", offset, "claims " + std::to_string(elements) + " elements in " +
                                             std::to_string(bytes) + " bytes");
        if (array_class == kSparseClass && nonzeros > bytes)
          throw refuse("matrix", offset, "claims " + std::to_string(nonzeros) + " nonzeros in " +
                                             std::to_string(bytes) + " bytes");
        // The name: miINT8, in the small format (at most 4 characters) or a padded element.
        std::uintmax_t at = dims_at + 8 + dims_bytes + (dims_bytes % 8);
        const auto fits = [&](std::uintmax_t n) { return at <= element_end && element_end - at >= n; };
        const auto int8_element = [&](const char* what) {
          if (!fits(8)) throw refuse(what, at, "does not fit in its matrix");
          char name_tag[8];
          need(in, at, name_tag, sizeof name_tag, what, at);
          const std::uint32_t first = word(name_tag);
          if ((first >> 16) != 0) {
            if ((first & 0xFFFF) != kMiInt8 || (first >> 16) > 4)
              throw refuse(what, at, "is not a small miINT8 element of at most 4 bytes");
            at += 8;
            return std::uintmax_t{first >> 16};
          }
          const std::uint32_t length = word(name_tag + 4);
          if (first != kMiInt8)
            throw refuse(what, at, "is an element of type " + std::to_string(first) + ", not miINT8");
          if (length > element_end - at - 8)
            throw refuse(what, at, "claims " + std::to_string(length) + " bytes, more than the " +
                                       std::to_string(element_end - at - 8) + " left in its matrix");
          need(in, at + 8, nullptr, length, what, at);
          at += 8 + length + (length % 8 ? 8 - length % 8 : 0);
          return std::uintmax_t{length};
        };
        int8_element("name");
        // A numeric array's real (and imaginary) part must hold exactly its elements, in the
        // type it is stored in: matio reads `elements` values whatever the tag says, so a short
        // part would be read on into the next variable's bytes.
        if (array_class >= kDoubleClass && array_class <= kUint64Class) {
          for (const char* part : {"real part", "imaginary part"}) {
            if (part[0] == 'i' && !complex) break;
            if (!fits(8)) throw refuse(part, at, "does not fit in its matrix");
            const auto [data_type, data_bytes, small] = tag_at(in, at, part);
            const std::uintmax_t value_bytes = mi_type_bytes(data_type);
            if (value_bytes == 0)
              throw refuse(part, at, "is of data type " + std::to_string(data_type) + ", not a numeric one");
            if (std::uintmax_t{data_bytes} != elements * value_bytes)
              throw refuse(part, at, "holds " + std::to_string(data_bytes) + " bytes for " + std::to_string(elements) +
                                         " values of " + std::to_string(value_bytes) + " bytes");
            if (!small && data_bytes > element_end - at - 8)
              throw refuse(part, at, "claims " + std::to_string(data_bytes) + " bytes, more than the " +
                                         std::to_string(element_end - at - 8) + " left in its matrix");
            if (!small) need(in, at + 8, nullptr, data_bytes, part, at);
            at += small ? 8 : 8 + std::uintmax_t{data_bytes} + (data_bytes % 8 ? 8 - data_bytes % 8 : 0);
          }
        }
        // A struct (and an object, after its class name) lists its field names: an miINT32 small
        // element with the padded name length L, then L bytes per field. matio makes
        // elements x fields matrices and reads that many.
        std::uintmax_t expected_matrices = array_class == kCellClass ? elements : 0;
        if (array_class == kStructClass || array_class == kObjectClass) {
          if (array_class == kObjectClass) int8_element("class name");
          if (!fits(8)) throw refuse("field name length", at, "does not fit in its matrix");
          char length_tag[8];
          need(in, at, length_tag, sizeof length_tag, "field name length", at);
          const std::uint32_t name_length = word(length_tag + 4);
          if (word(length_tag) != (kMiInt32 | 4u << 16) || name_length == 0)
            throw refuse("field name length", at, "is not a small miINT32 element above 0");
          at += 8;
          const std::uintmax_t names_bytes = int8_element("field names");
          if (names_bytes % name_length != 0)
            throw refuse("field names", at, "are not a whole number of " + std::to_string(name_length) +
                                                "-byte names");
          if (__builtin_mul_overflow(elements, names_bytes / name_length, &expected_matrices) ||
              expected_matrices > bytes)
            throw refuse("matrix", offset, "claims " + std::to_string(elements) + " elements of " +
                                               std::to_string(names_bytes / name_length) + " fields in " +
                                               std::to_string(bytes) + " bytes");
        }
        // A sparse matrix (2-D) holds its row indices (nzmax), column starts (columns + 1), both
        // miINT32 as MATLAB writes them (miUINT32 as matio does), and then its real (and
        // imaginary) values; matio reads all of them in turn and sizes buffers from what it
        // finds, garbage included when a part is missing.
        std::uintmax_t value_parts = 0;
        if (array_class == kSparseClass) {
          if (dims_bytes != 8)
            throw refuse("matrix", offset, "is sparse with " + std::to_string(dims_bytes / 4) +
                                               " dimensions (sparse arrays have 2)");
          for (const char* part : {"row indices", "column starts"}) {
            if (!fits(8)) throw refuse(part, at, "do not fit in their sparse matrix");
            const auto [part_type, part_bytes, small] = tag_at(in, at, part);
            if ((part_type != kMiInt32 && part_type != kMiUint32) || part_bytes % 4 != 0 || (small && part_bytes > 4) ||
                (!small && part_bytes > element_end - at - 8))
              throw refuse(part, at, "are not an miINT32 (or miUINT32) element within their sparse matrix");
            if (part == std::string_view("column starts") && part_bytes != 4 * (columns + 1))
              throw refuse(part, at, "hold " + std::to_string(part_bytes / 4) + " entries for " +
                                         std::to_string(columns) + " columns (columns + 1 needed)");
            if (!small) need(in, at + 8, nullptr, part_bytes, part, at);
            at += small ? 8 : 8 + part_bytes + (part_bytes % 8 ? 8 - part_bytes % 8 : 0);
          }
          value_parts = complex ? 2 : 1;
        }
        const auto [parts, elements_in] = self(self, in, std::min(at, element_end), element_end, depth + 1);
        need(in, element_end, nullptr, 0, "matrix", offset);  // its last (< 8) bytes too
        if (elements_in < value_parts)
          throw refuse("matrix", offset, "is sparse but holds " + std::to_string(elements_in) +
                                             " of its " + std::to_string(value_parts) + " value parts");
        if ((array_class == kCellClass || array_class == kStructClass || array_class == kObjectClass) &&
            parts != expected_matrices)
          throw refuse("matrix", offset, "holds " + std::to_string(parts) + " matrices where its " +
                                             (array_class == kCellClass ? "cells" : "fields") + " need " +
                                             std::to_string(expected_matrices));
      } else if (type == kMiCompressed && depth == 0) {
        InflatedBytes inflated(file, offset + 8, bytes);
        where = "the compressed element at byte " + std::to_string(offset) + ": ";
        self(self, inflated, 0, kUnknownEnd, 1);
        if (!inflated.drain()) {
          where.clear();
          throw refuse("compressed element", offset, "is not a clean zlib stream: " + inflated.failure());
        }
        where.clear();
      } else {
        need(in, offset + 8, nullptr, bytes, "element", offset);  // its bytes must all be there
      }
      // Elements are padded to 8 bytes, except compressed ones.
      const std::uintmax_t padding = type != kMiCompressed && bytes % 8 != 0 ? 8 - bytes % 8 : 0;
      offset = element_end + std::min<std::uintmax_t>(padding, end - element_end);
    }
    return {matrices, elements_seen};
  };
  FileBytes whole_file(file, file_bytes);
  walk(walk, whole_file, 128, file_bytes, 0);
}

/// matio trusts the sizes in a MAT v4 header and allocates what they claim (an 80-byte file could
/// cost a gigabyte; found by tools/fuzz.sh), so a file without the v5/v7.3 header is walked first:
/// every v4 variable's header and data must fit in the file. What is not recognisably v4 is left
/// for matio to refuse.
void check_mat4_sizes(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t file_bytes = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return;
  char head[128] = {};
  in.read(head, sizeof head);
  if (in.gcount() == sizeof head && ((head[126] == 'I' && head[127] == 'M') ||
                                     (head[126] == 'M' && head[127] == 'I'))) {
    check_mat5_sizes(path, in, file_bytes, head[126] == 'M');
    return;
  }
  constexpr std::uintmax_t kElementBytes[] = {8, 4, 4, 2, 2, 1};  // by the type's P digit
  for (std::uintmax_t offset = 0; file_bytes - offset >= 20;) {
    std::uint32_t h[5];
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return;
    // The type word MOPT as matio decodes it: read natively, byte-swapped when outside 0..4052,
    // then its M digit alone (0 little-endian, 1 big-endian) says how the other four words are
    // stored, whatever the type word needed (fuzz finding: a swapped type word with M = 0 and a
    // native name length of 2^28 + 2^25).
    std::int32_t mopt;
    std::memcpy(&mopt, &h[0], 4);
    if (mopt < 0 || mopt > 4052) mopt = static_cast<std::int32_t>(__builtin_bswap32(h[0]));
    if (mopt < 0 || mopt > 4052) return;  // matio refuses it
    const int machine = mopt / 1000, zero = (mopt / 100) % 10, precision = (mopt / 10) % 10;
    if (machine > 1 || zero != 0 || precision > 5 || mopt % 10 > 2) return;  // likewise
    if ((machine == 1) != (std::endian::native == std::endian::big))
      for (std::uint32_t& word : h) word = __builtin_bswap32(word);
    h[0] = static_cast<std::uint32_t>(mopt);
    // A sparse matrix (T digit 2) is stored as its (nonzeros + 1) x 3 (or x 4, complex) triplets;
    // matio sizes its buffers from mrows alone.
    if (h[0] % 10 == 2 && h[2] != 3 && h[2] != 4)
      throw InputError(path.string() + ": not a MAT file that matio can read: the sparse MAT v4 "
                       "matrix at byte " + std::to_string(offset) + " has " + std::to_string(h[2]) +
                       " columns, not 3 or 4");
    if (h[1] > INT32_MAX || h[2] > INT32_MAX || h[4] > INT32_MAX)
      throw InputError(path.string() + ": not a MAT file that matio can read: a MAT v4 header at byte " +
                       std::to_string(offset) + " has a negative size");
    const std::uintmax_t left = file_bytes - offset - 20;  // after this header
    if (h[4] > left)  // matio mallocs the name's length before reading it
      throw InputError(path.string() + ": not a MAT file that matio can read: a MAT v4 header at byte " +
                       std::to_string(offset) + " claims a name of " + std::to_string(h[4]) +
                       " bytes, more than the " + std::to_string(left) + " left in the file");
    std::uintmax_t data_bytes = kElementBytes[precision] * (h[3] != 0 ? 2 : 1);
    if (__builtin_mul_overflow(data_bytes, std::uintmax_t{h[1]}, &data_bytes) ||
        __builtin_mul_overflow(data_bytes, std::uintmax_t{h[2]}, &data_bytes) || h[4] > left ||
        data_bytes > left - h[4] || h[1] > file_bytes || h[2] > file_bytes)  // 0 x 2^30: matio still allocates
      throw InputError(path.string() + ": not a MAT file that matio can read: a MAT v4 header at byte " +
                       std::to_string(offset) + " claims " + std::to_string(h[1]) + " x " +
                       std::to_string(h[2]) + " values, more than the " +
                       std::to_string(file_bytes - offset) + " bytes left in the file");
    offset += 20 + h[4] + data_bytes;
  }
}

/// MAT v7.3: an HDF5 file behind a 128-byte MAT header (version 0x0200). Such files are read
/// through io's HDF5 reader, in its worker process, not by matio in this one: libhdf5 crashes on
/// some malformed files (matio would take the whole batch down with it), and the reader also
/// refuses a dataset that claims more values than its stored bytes hold.
bool is_mat73(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[128] = {};
  if (!in.read(head, sizeof head)) return false;
  const bool little = head[126] == 'I' && head[127] == 'M', big = head[126] == 'M' && head[127] == 'I';
  if (!little && !big) return false;
  const int major = head[little ? 125 : 124], minor = head[little ? 124 : 125];
  if (major != 2 || minor != 0) return false;
  // Not handed to matio either: it would open the HDF5 part itself, in this process, and fill
  // stderr with libhdf5's diagnostics before saying that the file holds no variables.
  if (!is_hdf5_file(path))
    throw InputError(path.string() + ": a MAT v7.3 header, but no HDF5 file behind it (truncated or damaged?)");
  return true;
}

/// The classes read as channel data. MATLAB's logical arrays are stored as uint8 (matio reads a
/// v5 one as uint8; a v7.3 one says "logical"), so they read too, as 0 and 1.
bool numeric_class(const std::string& c) {
  for (const char* n : {"double", "single", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                        "logical"})
    if (c == n) return true;
  return false;
}

/// A v7.3 variable's MATLAB class: its MATLAB_class attribute, else the stored type's.
std::string mat73_class(const Hdf5DatasetInfo& d) {
  if (!d.matlab_class.empty()) return d.matlab_class;
  if (d.type == "float64") return "double";
  if (d.type == "float32") return "single";
  return d.type.empty() ? "unknown" : d.type;
}

/// A top-level name ("/rf" -> "rf"), or "" for deeper paths and MATLAB's own "#refs#" group.
std::string top_level_name(const std::string& hdf5_path) {
  if (hdf5_path.size() < 2 || hdf5_path[0] != '/' || hdf5_path.find('/', 1) != std::string::npos ||
      hdf5_path[1] == '#')
    return "";
  return hdf5_path.substr(1);
}

/// The MATLAB class of a v7.3 group: "sparse" (a sparse matrix's data, ir and jc), its
/// MATLAB_class ("cell", ...), or "struct" (MATLAB writes no class for a struct's group).
std::string mat73_group_class(const Hdf5Group& g) {
  if (g.attribute("MATLAB_sparse")) return "sparse";
  const Hdf5Attribute* cls = g.attribute("MATLAB_class");
  return cls ? cls->text : "struct";
}

std::size_t element_count(const std::vector<std::size_t>& dims) { return MatArray{"", "", dims, {}}.size(); }

/// A MAT v7.3 file's HDF5 objects as MATLAB lays them out: a numeric array is a dataset of
/// MATLAB's dims reversed (the same bytes, C order against column-major); a 1 x 1 struct is a
/// group whose members are its fields; a struct array is a group whose fields are arrays of
/// object references, one per element, to the values in /#refs#; a cell array is an array of such
/// references (MATLAB_class "cell"); and an empty array of any class, or a struct array without
/// fields, is a dataset of its dims with a MATLAB_empty attribute.
class Mat73File {
 public:
  explicit Mat73File(const fs::path& path)
      : path_(path), datasets_(list_hdf5_datasets(path)), groups_(list_hdf5_groups(path)) {}

  const fs::path& path() const { return path_; }
  const Hdf5DatasetInfo* dataset(const std::string& p) const {
    const auto d = std::find_if(datasets_.begin(), datasets_.end(), [&](const Hdf5DatasetInfo& i) { return i.path == p; });
    return d == datasets_.end() ? nullptr : &*d;
  }
  const Hdf5Group* group(const std::string& p) const {
    const auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Hdf5Group& h) { return h.path == p; });
    return g == groups_.end() ? nullptr : &*g;
  }
  bool exists(const std::string& p) const { return dataset(p) || group(p); }
  std::string matlab_class(const std::string& p) const {
    if (const Hdf5DatasetInfo* d = dataset(p)) return mat73_class(*d);
    if (const Hdf5Group* g = group(p)) return mat73_group_class(*g);
    return "unknown";
  }
  bool is_struct(const std::string& p) const {
    const Hdf5DatasetInfo* d = dataset(p);
    return matlab_class(p) == "struct" && (group(p) || (d && d->matlab_empty));
  }
  bool is_cell(const std::string& p) const {
    const Hdf5DatasetInfo* d = dataset(p);
    return d && d->matlab_class == "cell" && (d->object_references || d->matlab_empty);
  }
  /// A numeric array with values (what the no---var message offers).
  bool has_numbers(const std::string& p) const {
    const Hdf5DatasetInfo* d = dataset(p);
    return d && !d->type.empty() && !d->matlab_empty && !d->object_references && numeric_class(mat73_class(*d)) &&
           element_count(dims(p)) > 0;
  }
  /// The direct members of group g: datasets and groups, in name order.
  std::vector<std::string> members(const std::string& g) const {
    std::vector<std::string> out;
    const auto direct = [&](const std::string& p) {
      return p.size() > g.size() + 1 && p.rfind(g + "/", 0) == 0 && p.find('/', g.size() + 1) == std::string::npos;
    };
    for (const Hdf5Group& h : groups_)
      if (direct(h.path)) out.push_back(h.path);
    for (const Hdf5DatasetInfo& d : datasets_)
      if (direct(d.path)) out.push_back(d.path);
    std::sort(out.begin(), out.end());
    return out;
  }
  /// The names of struct g's fields (a 1 x 1 struct's members, a struct array's fields), in name
  /// order.
  std::vector<std::string> field_names(const std::string& g) const {
    std::vector<std::string> names;
    const std::vector<std::string> fields = element_count(dims(g)) == 1 ? members(g) : struct_array_fields(g);
    for (const std::string& m : fields) names.push_back(m.substr(g.size() + 1));
    return names;
  }
  /// A struct array's fields: its members that are arrays of references without a MATLAB class.
  std::vector<std::string> struct_array_fields(const std::string& g) const {
    std::vector<std::string> out;
    for (const std::string& m : members(g))
      if (const Hdf5DatasetInfo* d = dataset(m); d && d->object_references && d->matlab_class.empty()) out.push_back(m);
    return out;
  }
  /// MATLAB's dims of object p: a dataset's reversed, an empty array's as stored, a struct
  /// array's those of its fields' references, a 1 x 1 struct's (or another group's) 1 x 1.
  std::vector<std::size_t> dims(const std::string& p) const {
    if (const Hdf5DatasetInfo* d = dataset(p)) {
      if (d->matlab_empty) return empty_dims(p);
      return std::vector<std::size_t>(d->dims.rbegin(), d->dims.rend());
    }
    if (group(p) && is_struct(p))
      for (const std::string& f : struct_array_fields(p)) return dims(f);
    // A sparse matrix: MATLAB_sparse holds its rows, jc its columns + 1.
    const Hdf5Attribute* rows = group(p) ? group(p)->attribute("MATLAB_sparse") : nullptr;
    const Hdf5DatasetInfo* jc = dataset(p + "/jc");
    if (rows && rows->values.size() == 1 && rows->values[0] >= 0 && rows->values[0] < 9.007199254740992e15 && jc &&
        element_count(jc->dims) > 0)
      return {static_cast<std::size_t>(rows->values[0]), element_count(jc->dims) - 1};
    return {1, 1};
  }
  /// The HDF5 paths of the file's variables ("/rf"), in name order.
  std::vector<std::string> variables() const {
    std::vector<std::string> tops;
    for (const Hdf5Group& g : groups_)
      if (!top_level_name(g.path).empty()) tops.push_back(g.path);
    for (const Hdf5DatasetInfo& d : datasets_)
      if (!top_level_name(d.path).empty()) tops.push_back(d.path);
    std::sort(tops.begin(), tops.end());
    return tops;
  }
  /// Reads the stored dims of the empty arrays among `paths` in one reader request.
  void read_empty_dims(const std::vector<std::string>& paths) const {
    std::vector<std::string> wanted;
    for (const std::string& p : paths)
      if (const Hdf5DatasetInfo* d = dataset(p); d && d->matlab_empty && !d->type.empty() && !empty_dims_.count(p))
        wanted.push_back(p);
    if (wanted.empty()) return;
    const std::vector<Hdf5Array> stored = read_hdf5(path_, wanted);
    for (std::size_t k = 0; k < stored.size(); ++k) {
      std::vector<std::size_t> d;
      for (double v : stored[k].values)
        d.push_back(v >= 0 && v < 9.007199254740992e15 ? static_cast<std::size_t>(v) : SIZE_MAX);
      if (d.empty() || d.size() > 32) d = {0, 0};  // not MATLAB's: an empty array all the same
      empty_dims_[wanted[k]] = std::move(d);
    }
  }

 private:
  std::vector<std::size_t> empty_dims(const std::string& p) const {
    read_empty_dims({p});
    const auto found = empty_dims_.find(p);
    return found == empty_dims_.end() ? std::vector<std::size_t>{0, 0} : found->second;
  }

  fs::path path_;
  std::vector<Hdf5DatasetInfo> datasets_;
  std::vector<Hdf5Group> groups_;
  mutable std::map<std::string, std::vector<std::size_t>> empty_dims_;
};

std::vector<MatVariableInfo> list_mat73_variables(const Mat73File& f) {
  const std::vector<std::string> tops = f.variables();
  f.read_empty_dims(tops);  // one request for all
  std::vector<MatVariableInfo> vars;
  for (const std::string& p : tops) {
    const Hdf5DatasetInfo* d = f.dataset(p);
    const std::string cls = f.matlab_class(p);
    // Complex numbers are a compound type, which the reader lists without a type.
    const bool has_values = d && !d->type.empty() && !d->object_references && !d->matlab_empty && numeric_class(cls);
    vars.push_back({top_level_name(p), cls, f.dims(p), d && d->type.empty() && !d->object_references && numeric_class(cls),
                    has_values ? p : ""});
  }
  std::sort(vars.begin(), vars.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return vars;
}

/// "no variable 'rf'" with the variables the file holds (a wrong --var was told nothing more,
/// where a missing one was told the file's arrays).
InputError no_variable(const fs::path& path, const std::string& name) {
  std::vector<std::string> names;
  for (const MatVariableInfo& v : list_mat_variables(path)) names.push_back(v.name);
  return InputError(path.string() + ": no variable '" + printable(name, 200) + "'" +
                    detail::names_here(names, name, "variables"));
}

/// A name (or part of one) from --var or the file, as a message quotes it.
std::string shown(std::string_view text) { return printable(text, 200); }

/// One step of a --var name, MATLAB's syntax: the variable, then fields (`.rx`), struct array
/// elements (`(2)`, `(1,3)`) and cell elements (`{1}`), as in `P.rx(2).data` or `RcvData{1}`.
struct VarStep {
  char kind = '.';  ///< '.' a field (the first step: the variable), '(' a struct's element, '{' a cell's
  std::string field;                    ///< for '.'
  std::vector<std::size_t> subscripts;  ///< for '(' and '{': counted from 1, as MATLAB counts
  std::size_t end = 0;                  ///< where this step ends in the name: "P.rx(2)" is name[0, end)
};

/// The characters that --var's syntax takes for itself: a name holding one cannot be named.
constexpr std::string_view kSyntax = ".(){}";

/// The steps of `name`; throws InputError naming the file, the name and the character where its
/// syntax fails. A field is any run of characters but . ( ) { } (h5py and other writers are
/// less strict than MATLAB about names); an empty one is left for the walk to refuse by name.
std::vector<VarStep> parse_variable_path(const fs::path& path, const std::string& name) {
  const auto bad = [&](std::size_t at, const std::string& why) {
    return InputError(path.string() + ": --var '" + shown(name) + "': " + why + " (character " +
                      std::to_string(at + 1) + ")");
  };
  std::vector<VarStep> steps;
  std::size_t i = 0;
  const auto field = [&] {
    if (steps.size() == 256) throw bad(i, "more than 256 fields and subscripts");
    const std::size_t start = i;
    while (i < name.size() && kSyntax.find(name[i]) == std::string_view::npos) ++i;
    steps.push_back({'.', name.substr(start, i - start), {}, i});
  };
  field();
  while (i < name.size()) {
    const char open = name[i];
    if (open == '.') {
      ++i;
      field();
      continue;
    }
    if (open != '(' && open != '{') throw bad(i, "unexpected '" + shown(std::string(1, open)) + "'");
    const char close = open == '(' ? ')' : '}';
    if (steps.size() == 256) throw bad(i, "more than 256 fields and subscripts");
    VarStep step{open, "", {}, 0};
    for (++i;;) {
      while (i < name.size() && name[i] == ' ') ++i;
      const std::size_t start = i;
      std::size_t value = 0;
      for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
        if (__builtin_mul_overflow(value, 10u, &value) || __builtin_add_overflow(value, std::size_t(name[i] - '0'), &value))
          throw bad(start, "an index past any array's end");
      if (i == start) throw bad(i, "expected an index (1, 2, ...)");
      if (value == 0) throw bad(start, "indices count from 1, as MATLAB's do");
      if (step.subscripts.size() == 32) throw bad(start, "more than 32 subscripts");
      step.subscripts.push_back(value);
      while (i < name.size() && name[i] == ' ') ++i;
      if (i < name.size() && name[i] == ',') {
        ++i;
        continue;
      }
      if (i < name.size() && name[i] == close) break;
      throw bad(i, std::string("expected ',' or '") + close + "'");
    }
    step.end = ++i;
    steps.push_back(std::move(step));
  }
  return steps;
}

/// The column-major (MATLAB) linear index of `step`'s subscripts into an array of `dims` (MATLAB's
/// order), as MATLAB computes it: one subscript counts the elements in order; with several, the
/// last spans the dims it leaves. `text` is the name up to the step, `array` names the array, for
/// the message when they lie past it.
std::size_t element_index(const fs::path& path, const VarStep& step, const std::string& text,
                          const std::vector<std::size_t>& dims, const std::string& array) {
  const std::size_t n = step.subscripts.size();
  std::size_t linear = 0, stride = 1;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t extent = 1;
    if (k + 1 < n)
      extent = k < dims.size() ? dims[k] : 1;
    else
      for (std::size_t d = k; d < dims.size(); ++d)
        if (__builtin_mul_overflow(extent, dims[d], &extent)) extent = SIZE_MAX;
    if (dims.empty() || step.subscripts[k] > extent)
      throw InputError(path.string() + ": '" + shown(text) + "' lies past the end of " + array);
    linear += (step.subscripts[k] - 1) * stride;
    stride *= extent;
  }
  return linear;
}

/// Reads v7.3 variable `name` (its `steps`) as read_mat does.
/// The HDF5 object of a v7.3 file that --var `name` names, an array read_mat reads: its path, its
/// MATLAB class and, for an empty array (MATLAB_empty), its dims. Throws as read_mat does.
struct Mat73Target {
  std::string object, matlab_class;
  bool empty = false;
  std::vector<std::size_t> dims;  ///< MATLAB's
};

Mat73Target resolve_mat73(const Mat73File& f, const std::string& name, const std::vector<VarStep>& steps) {
  const fs::path& path = f.path();
  const std::string& top = steps.front().field;
  std::string object = "/" + top;  // the HDF5 object the steps so far name
  if (top.empty() || top.find('/') != std::string::npos || top.front() == '#' || !f.exists(object))
    throw no_variable(path, top);
  constexpr std::size_t kNone = SIZE_MAX;
  std::size_t element = kNone;  // of the struct array `object`, chosen by '('
  const auto refers_to_nothing = [&](const VarStep& step) {
    return InputError(path.string() + ": '" + shown(std::string_view(name).substr(0, step.end)) +
                      "' refers to nothing in the file");
  };
  for (std::size_t k = 1; k < steps.size(); ++k) {
    const VarStep& step = steps[k];
    const std::string at = name.substr(0, steps[k - 1].end);
    const std::string text = name.substr(0, step.end);
    const std::string cls = f.matlab_class(object);
    if (step.kind == '(') {
      if (element != kNone) throw InputError(path.string() + ": '" + shown(text) + "': one subscript per struct array");
      if (f.is_cell(object))
        throw InputError(path.string() + ": '" + shown(at) + "' is a cell array: --var " + shown(at) +
                         "{k} names its element k");
      if (!f.is_struct(object))
        throw InputError(path.string() + ": '" + shown(at) + "' is a " + cls +
                         " array; --var names whole arrays, not parts of them");
      const std::vector<std::size_t> dims = f.dims(object);
      element = element_index(path, step, text, dims, "'" + shown(at) + "', a " + dims_text(dims) + " struct array");
      continue;
    }
    if (step.kind == '{') {
      if (!f.is_cell(object))
        throw InputError(path.string() + ": '" + shown(at) + "' is a " + cls + " array, not a cell array (braces index cells)");
      const std::vector<std::size_t> dims = f.dims(object);
      const std::size_t index = element_index(path, step, text, dims, "'" + shown(at) + "', a " + dims_text(dims) + " cell array");
      const std::vector<std::string> target = hdf5_reference_targets(path, object, index, 1);
      if (target.empty() || !f.exists(target.front())) throw refers_to_nothing(step);
      object = target.front();
      element = kNone;
      continue;
    }
    if (!f.is_struct(object)) throw InputError(path.string() + ": '" + shown(at) + "' is not a struct");
    const std::string member = object + "/" + step.field;
    const bool has_member = !step.field.empty() && step.field.find('/') == std::string::npos && f.group(object) &&
                            f.exists(member);
    const std::vector<std::size_t> dims = f.dims(object);
    const auto no_field = [&] {
      return InputError(path.string() + ": struct '" + shown(at) + "' has no field '" + shown(step.field) + "'" +
                        detail::names_here(f.field_names(object), step.field, "fields"));
    };
    if (element_count(dims) != 1) {  // a 1 x 1 struct holds its fields; (1) may select it
      if (element == kNone)
        throw InputError(path.string() + ": '" + shown(at) + "' is a " + dims_text(dims) + " struct array; --var " +
                         shown(at) + "(k)." + shown(step.field) + " reads element k's field");
      const Hdf5DatasetInfo* references = has_member ? f.dataset(member) : nullptr;
      if (!references || !references->object_references) throw no_field();
      const std::vector<std::string> target = hdf5_reference_targets(path, member, element, 1);
      if (target.empty() || !f.exists(target.front())) throw refers_to_nothing(step);
      object = target.front();
    } else {
      if (!has_member) throw no_field();
      object = member;
    }
    element = kNone;
  }
  const std::string what = path.string() + ": variable '" + shown(name) + "'";
  const Hdf5DatasetInfo* found = f.dataset(object);
  const std::string cls = f.matlab_class(object);
  if (!found || found->object_references || !numeric_class(cls) || f.is_struct(object))
    throw InputError(what + " is a " + cls + " array, not a numeric array" +
                     (f.is_cell(object) ? " (--var " + shown(name) + "{k} reads its element k)" : ""));
  if (found->type.empty()) throw InputError(what + " is complex; only real channel data are read");
  // MATLAB stores an empty array as its dims: [0 3] is the values 0, 3.
  Mat73Target target{object, cls, found->matlab_empty, f.dims(object)};
  if (target.empty && element_count(target.dims) != 0)
    throw InputError(what + ": an empty array whose stored dims, " + dims_text(target.dims) + ", are not empty");
  return target;
}

/// Says that slab `index` of the last axis of the `dims` array `what` is past its end.
[[noreturn]] void slab_past_the_end(const std::string& what, const std::vector<std::size_t>& dims, std::size_t index) {
  throw InputError(what + ": index " + std::to_string(index + 1) + " of the last axis of a " + dims_text(dims) +
                   " array is past its end");
}

/// Slabs `first` to first + count - 1 of an array's last axis (read_mat_slabs), or the whole array.
struct LastAxisSlabs {
  std::size_t first = 0, count = 0;
};

MatArray read_mat73(const fs::path& path, const std::string& name, const std::vector<VarStep>& steps,
                    std::optional<LastAxisSlabs> slabs) {
  const Mat73File f(path);
  const Mat73Target target = resolve_mat73(f, name, steps);
  const std::string what = path.string() + ": variable '" + shown(name) + "'";
  MatArray a;
  a.name = name;
  a.matlab_class = target.matlab_class;
  if (target.empty) {
    a.dims = target.dims;
    if (slabs) slab_past_the_end(what, a.dims, slabs->first + slabs->count - 1);
    return a;
  }
  // MATLAB's last axis is the dataset's first (its dims are MATLAB's reversed): slabs of it are
  // a run of rows, which the reader reads alone.
  Hdf5Selection selection{target.object};
  if (slabs) {
    const std::vector<std::size_t> dims = f.dims(target.object);
    if (dims.empty() || slabs->first + slabs->count > dims.back())
      slab_past_the_end(what, dims, slabs->first + slabs->count - 1);
    selection.first_row = slabs->first;
    selection.rows = slabs->count;
  }
  Hdf5Array h = std::move(read_hdf5(path, std::vector<Hdf5Selection>{selection}).front());
  a.dims.assign(h.dims.rbegin(), h.dims.rend());  // MATLAB's order; the values are already column-major
  a.values = std::move(h.values);
  if (a.dims.empty()) a.dims = {a.values.size(), 1};  // an HDF5 scalar (or null) dataspace: 1 x 1 (or 0 x 1)
  return a;
}

MatFile open_mat(const fs::path& path) {
  if (!fs::is_regular_file(existing_input_status(path)))
    throw InputError(path.string() + ": not a regular file");
  check_mat4_sizes(path);
  MatFile m(Mat_Open(path.c_str(), MAT_ACC_RDONLY));
  if (!m) throw InputError(path.string() + ": not a MAT file that matio can read");
  return m;
}

template <class T>
void convert(const void* data, std::size_t n, std::vector<double>& out) {
  const T* p = static_cast<const T*>(data);
  out.resize(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<double>(p[k]);
}

/// `out` = the n values at `data`, of matio's class `c` (as matio gives a numeric class's values),
/// as doubles; refused, naming `what`, for any other class.
void class_values_to_double(matio_classes c, const void* data, std::size_t n, std::vector<double>& out,
                            const std::string& what) {
  switch (c) {
    case MAT_C_DOUBLE: convert<double>(data, n, out); break;
    case MAT_C_SINGLE: convert<float>(data, n, out); break;
    case MAT_C_INT8: convert<std::int8_t>(data, n, out); break;
    case MAT_C_UINT8: convert<std::uint8_t>(data, n, out); break;
    case MAT_C_INT16: convert<std::int16_t>(data, n, out); break;
    case MAT_C_UINT16: convert<std::uint16_t>(data, n, out); break;
    case MAT_C_INT32: convert<std::int32_t>(data, n, out); break;
    case MAT_C_UINT32: convert<std::uint32_t>(data, n, out); break;
    case MAT_C_INT64: convert<std::int64_t>(data, n, out); break;
    case MAT_C_UINT64: convert<std::uint64_t>(data, n, out); break;
    default: throw InputError(what + ": unsupported class " + class_name(c));
  }
}

}  // namespace

std::size_t MatArray::size() const {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return dims.empty() ? 0 : n;
}

std::vector<MatVariableInfo> list_mat_variables(const fs::path& path) {
  if (is_mat73(path)) return list_mat73_variables(Mat73File(path));
  MatFile m = open_mat(path);
  std::vector<MatVariableInfo> vars;
  while (matvar_t* raw = Mat_VarReadNextInfo(m.get())) {
    MatVar v(raw);
    vars.push_back({v->name ? v->name : "", class_name(v->class_type), dims_of(v.get()), v->isComplex != 0, ""});
  }
  return vars;
}

namespace {

/// What the no---var message offers: names --var can read inside structs and cells, at most
/// kLimit of them; `complete` is false when the walk stopped before seeing everything.
struct Offer {
  static constexpr std::size_t kLimit = 64;
  std::vector<std::string> names;
  bool complete = true;
  bool full() {
    if (names.size() < kLimit) return false;
    complete = false;
    return true;
  }
  void add(std::string name) {
    if (!full()) names.push_back(std::move(name));
  }
};

/// A name from the file that --var can take as one step: not empty, printable, and without the
/// characters --var's syntax takes for itself.
bool nameable(std::string_view name) {
  return !name.empty() && name.find_first_of(kSyntax) == std::string_view::npos &&
         std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; });
}

/// Offers what --var can name inside v (MAT v5), named `prefix`: v itself when it is a real
/// numeric array with values; in a cell, its elements ("RcvData{1}"); in a struct, its fields
/// ("P.fs"), a struct array's first element's ("s(1).data"), and on down.
void offer_v5(matvar_t* v, const std::string& prefix, Offer& out, int depth = 0) {
  if (!v || depth > 8 || out.full()) return;
  const std::size_t count = element_count(dims_of(v));
  if (numeric(v->class_type)) {
    if (!v->isComplex && count > 0 && depth > 0) out.add(prefix);  // [] holds no channel data
    return;
  }
  if (v->class_type == MAT_C_CELL) {
    for (std::size_t k = 0; k < count && !out.full(); ++k) {
      if (k == Offer::kLimit) {
        out.complete = false;
        break;
      }
      offer_v5(cell_element(v, k), prefix + "{" + std::to_string(k + 1) + "}", out, depth + 1);
    }
    return;
  }
  if (v->class_type != MAT_C_STRUCT || count == 0) return;
  const std::string element = count == 1 ? prefix : prefix + "(1)";  // the others' fields are alike
  const unsigned n = Mat_VarGetNumberOfFields(v);
  char* const* names = Mat_VarGetStructFieldnames(v);
  for (unsigned k = 0; k < n && names && !out.full(); ++k)
    if (names[k] && nameable(names[k])) offer_v5(struct_field(v, names[k], 0), element + "." + names[k], out, depth + 1);
}

/// The same in a v7.3 file, from HDF5 object `object`. Each cell and struct array field costs a
/// reader request (a few ms), so at most 64 are looked into.
void offer_v73(const Mat73File& f, const std::string& object, const std::string& prefix, Offer& out,
               std::size_t& requests, int depth = 0) {
  if (depth > 8 || out.full()) return;
  if (f.has_numbers(object)) {
    if (depth > 0) out.add(prefix);
    return;
  }
  const auto leaf = [](const std::string& p) { return p.substr(p.rfind('/') + 1); };
  if (f.is_cell(object)) {
    const std::size_t count = element_count(f.dims(object));
    if (count == 0) return;
    if (requests++ >= 64 || count > Offer::kLimit) out.complete = false;
    if (requests > 64) return;
    const std::vector<std::string> targets = hdf5_reference_targets(f.path(), object, 0, Offer::kLimit);
    for (std::size_t k = 0; k < targets.size() && !out.full(); ++k)
      if (f.exists(targets[k])) offer_v73(f, targets[k], prefix + "{" + std::to_string(k + 1) + "}", out, requests, depth + 1);
    return;
  }
  if (!f.is_struct(object) || !f.group(object)) return;
  const std::size_t count = element_count(f.dims(object));
  if (count == 1) {
    for (const std::string& m : f.members(object))
      if (nameable(leaf(m))) offer_v73(f, m, prefix + "." + leaf(m), out, requests, depth + 1);
    return;
  }
  for (const std::string& field : f.struct_array_fields(object)) {  // the first element's
    if (out.full() || !nameable(leaf(field))) continue;
    if (requests++ >= 64) {
      out.complete = false;
      return;
    }
    const std::vector<std::string> target = hdf5_reference_targets(f.path(), field, 0, 1);
    if (!target.empty() && f.exists(target.front()))
      offer_v73(f, target.front(), prefix + "(1)." + leaf(field), out, requests, depth + 1);
  }
}

/// What --var can name inside the file's structs and cells ("P.rx.data", "RcvData{1}"): what to
/// offer when no top-level variable is a numeric array.
Offer numeric_struct_fields(const fs::path& path) {
  Offer offer;
  if (is_mat73(path)) {
    const Mat73File f(path);
    std::size_t requests = 0;
    for (const std::string& top : f.variables())
      if (nameable(top_level_name(top))) offer_v73(f, top, top_level_name(top), offer, requests);
    return offer;
  }
  MatFile m = open_mat(path);
  while (matvar_t* raw = Mat_VarReadNextInfo(m.get())) {
    MatVar v(raw);
    if (v->name && nameable(v->name)) offer_v5(v.get(), v->name, offer);
  }
  return offer;
}

/// Reads v5 variable `name` (its `steps`) as read_mat does. matio reads a top-level variable
/// whole, so a cell's element costs the memory of the whole cell.
MatArray read_mat5(const fs::path& path, const std::string& name, const std::vector<VarStep>& steps,
                   std::optional<LastAxisSlabs> slabs) {
  MatFile m = open_mat(path);
  const std::string& top_name = steps.front().field;
  {
    // The header first: a variable that cannot be read as channel data is refused before matio
    // reads (and allocates for) its data.
    MatVar info(Mat_VarReadInfo(m.get(), top_name.c_str()));
    if (!info) throw no_variable(path, top_name);
    const std::string what = path.string() + ": variable '" + shown(top_name) + "'";
    if (steps.size() == 1 && !numeric(info->class_type))
      throw InputError(what + " is a " + class_name(info->class_type) + " array, not a numeric array" +
                       (info->class_type == MAT_C_CELL ? " (--var " + shown(name) + "{k} reads its element k)" : ""));
    if (steps.size() == 1 && info->isComplex)
      throw InputError(what + " is complex; only real channel data are read");
  }
  MatVar top(Mat_VarRead(m.get(), top_name.c_str()));
  if (!top) throw no_variable(path, top_name);
  matvar_t* v = top.get();
  // Down the steps: "P.rx(2).data" is field data of element 2 of struct array P.rx, "RcvData{1}"
  // element 1 of cell array RcvData.
  constexpr std::size_t kNone = SIZE_MAX;
  std::size_t element = kNone;  // of the struct array v, chosen by '('
  for (std::size_t k = 1; k < steps.size(); ++k) {
    const VarStep& step = steps[k];
    const std::string at = name.substr(0, steps[k - 1].end);
    const std::string text = name.substr(0, step.end);
    const std::vector<std::size_t> dims = dims_of(v);
    const std::string cls = class_name(v->class_type);
    if (step.kind == '(') {
      if (element != kNone) throw InputError(path.string() + ": '" + shown(text) + "': one subscript per struct array");
      if (v->class_type == MAT_C_CELL)
        throw InputError(path.string() + ": '" + shown(at) + "' is a cell array: --var " + shown(at) +
                         "{k} names its element k");
      if (v->class_type != MAT_C_STRUCT)
        throw InputError(path.string() + ": '" + shown(at) + "' is a " + cls +
                         " array; --var names whole arrays, not parts of them");
      element = element_index(path, step, text, dims, "'" + shown(at) + "', a " + dims_text(dims) + " struct array");
      continue;
    }
    if (step.kind == '{') {
      if (v->class_type != MAT_C_CELL)
        throw InputError(path.string() + ": '" + shown(at) + "' is a " + cls + " array, not a cell array (braces index cells)");
      const std::size_t index = element_index(path, step, text, dims, "'" + shown(at) + "', a " + dims_text(dims) + " cell array");
      v = cell_element(v, index);
      if (!v) throw InputError(path.string() + ": '" + shown(text) + "' refers to nothing in the file");
      element = kNone;
      continue;
    }
    if (v->class_type != MAT_C_STRUCT) throw InputError(path.string() + ": '" + shown(at) + "' is not a struct");
    // Mat_VarGetStructFieldByName(..., 0) would read the first element's field without a word.
    if (element == kNone && element_count(dims) != 1)
      throw InputError(path.string() + ": '" + shown(at) + "' is a " + dims_text(dims) + " struct array; --var " +
                       shown(at) + "(k)." + shown(step.field) + " reads element k's field");
    matvar_t* const parent = v;
    v = struct_field(v, step.field.c_str(), element == kNone ? 0 : element);
    if (!v)
      throw InputError(path.string() + ": struct '" + shown(at) + "' has no field '" + shown(step.field) + "'" +
                       detail::names_here(field_names(parent), step.field, "fields"));
    element = kNone;
  }
  const std::string what = path.string() + ": variable '" + shown(name) + "'";
  if (!numeric(v->class_type))
    throw InputError(what + " is a " + class_name(v->class_type) + " array, not a numeric array" +
                     (v->class_type == MAT_C_CELL ? " (--var " + shown(name) + "{k} reads its element k)" : ""));
  if (v->isComplex) throw InputError(what + " is complex; only real channel data are read");
  MatArray a;
  a.name = name;
  a.matlab_class = class_name(v->class_type);
  a.dims = dims_of(v);
  const std::size_t n = a.size();
  if (n > 0 && !v->data) throw InputError(what + ": matio returned no data");
  class_values_to_double(v->class_type, v->data, n, a.values, what);
  if (slabs) {
    // matio has read the whole array; the slabs are a contiguous run of it (column-major: the
    // last axis is the slowest).
    if (a.dims.empty() || slabs->first + slabs->count > a.dims.back())
      slab_past_the_end(what, a.dims, slabs->first + slabs->count - 1);
    const std::size_t slab = a.values.size() / a.dims.back();
    a.values.erase(a.values.begin() + std::ptrdiff_t((slabs->first + slabs->count) * slab), a.values.end());
    a.values.erase(a.values.begin(), a.values.begin() + std::ptrdiff_t(slabs->first * slab));
    a.dims.back() = slabs->count;
  }
  return a;
}

/// A v5 file's top-level real numeric array `name` (matio's header, read without its data), for
/// slabs read alone; null for a v4 file, a name inside a struct or cell, any other array, and one
/// past matio's int offsets: more than 2^31 - 1 values, or for a compressed one 2^31 bytes of
/// values at 8 bytes each (matio 1.5.23 skips to a run of a compressed variable by an int count
/// of bytes, and a count past 2^31 read the run from the array's start without an error).
MatVar mat5_array_alone(const MatFile& m, const std::vector<VarStep>& steps) {
  if (steps.size() != 1 || Mat_GetVersion(m.get()) != MAT_FT_MAT5) return MatVar(nullptr);
  MatVar info(Mat_VarReadInfo(m.get(), steps.front().field.c_str()));
  if (!info || !numeric(info->class_type) || info->isComplex || info->rank < 1) return MatVar(nullptr);
  const std::size_t values = element_count(dims_of(info.get()));
  const std::size_t most = info->compression == MAT_COMPRESSION_NONE ? std::size_t(INT_MAX)
                                                                     : std::size_t(INT_MAX) / sizeof(double);
  if (values > most) return MatVar(nullptr);
  return info;
}

/// Slabs of a v5 file's top-level array read alone (mat5_array_alone): column-major, they are one
/// run of its values, which matio's Mat_VarReadDataLinear reads (inflating a compressed variable
/// from its start up to the run, not keeping the rest). (Its Mat_VarReadData, by start and edge
/// per axis, read the wrong values of arrays of four axes and more in matio 1.5.23.)
MatArray read_mat5_slabs(const fs::path& path, const std::string& name, const MatFile& m, const MatVar& info,
                         LastAxisSlabs slabs) {
  const std::string what = path.string() + ": variable '" + shown(name) + "'";
  MatArray a;
  a.name = name;
  a.matlab_class = class_name(info->class_type);
  a.dims = dims_of(info.get());
  if (a.dims.empty() || slabs.first + slabs.count > a.dims.back())
    slab_past_the_end(what, a.dims, slabs.first + slabs.count - 1);
  const std::size_t slab = a.dims.back() == 0 ? 0 : element_count(a.dims) / a.dims.back();
  a.dims.back() = slabs.count;
  const std::size_t n = a.size();
  if (n == 0) return a;
  // Values of the array's class, as matio gives them (converted from the stored type): a double
  // array's read into place, the others into words (aligned for any class) and converted.
  const bool doubles = info->class_type == MAT_C_DOUBLE;
  std::vector<double> raw;
  std::vector<double>& into = doubles ? a.values : raw;
  into.resize(doubles ? n : (n * Mat_SizeOfClass(info->class_type) + sizeof(double) - 1) / sizeof(double));
  const int run_start = static_cast<int>(slabs.first * slab), run_values = static_cast<int>(n);  // below INT_MAX
  if (Mat_VarReadDataLinear(m.get(), info.get(), into.data(), run_start, 1, run_values) != 0)
    throw InputError(what + ": matio cannot read slabs " + std::to_string(slabs.first + 1) + " to " +
                     std::to_string(slabs.first + slabs.count) + " of its last axis");
  if (!doubles) class_values_to_double(info->class_type, raw.data(), n, a.values, what);
  return a;
}

}  // namespace

namespace {

/// The variable an empty --var reads: the file's only real numeric array at the top. Throws, naming
/// what to choose from, when there are several or none (then offering those inside its structs
/// and cells).
std::string only_numeric_variable(const fs::path& path, const std::vector<MatVariableInfo>& vars) {
  std::vector<std::string> candidates, complex;
  for (const MatVariableInfo& info : vars)
    if (numeric_class(info.matlab_class)) (info.is_complex ? complex : candidates).push_back(info.name);
  const auto listed = [](const std::vector<std::string>& names) {
    std::string list;
    for (const std::string& c : names) list += (list.empty() ? "" : ", ") + shown(c);
    return list;
  };
  if (candidates.empty() && !complex.empty())
    throw InputError(path.string() + ": its numeric arrays (" + listed(complex) +
                     ") are complex; only real channel data are read");
  if (candidates.size() > 1)
    throw InputError(path.string() + ": name the variable to read with --var (numeric arrays here: " +
                     listed(candidates) + ")");
  if (candidates.empty()) {
    // Channel data kept in a struct (P.rx.data) were told only "none".
    Offer offer = numeric_struct_fields(path);
    const std::size_t more = offer.names.size() > 12 ? offer.names.size() - 12 : 0;
    offer.names.resize(offer.names.size() - more);
    const std::string inside = !offer.names.empty() ? "; in structs and cells: " + listed(offer.names)
                               : !offer.complete    ? "; none in the structs and cells looked into"
                                                    : "";
    const std::string rest = offer.names.empty() ? ""
                             : !offer.complete    ? " and more"  // a count would be a guess
                             : more               ? " and " + std::to_string(more) + " more"
                                                  : "";
    throw InputError(path.string() + ": name the variable to read with --var (numeric arrays here: none" + inside +
                     rest + ")");
  }
  return candidates.front();
}

/// Whether the file has a top-level variable of exactly this name (the first, as matio finds it).
bool has_variable(const fs::path& path, const std::string& name) {
  if (is_mat73(path)) {
    const std::vector<MatVariableInfo> vars = list_mat73_variables(Mat73File(path));
    return std::any_of(vars.begin(), vars.end(), [&](const MatVariableInfo& v) { return v.name == name; });
  }
  MatFile m = open_mat(path);
  return MatVar(Mat_VarReadInfo(m.get(), name.c_str())) != nullptr;
}

/// The steps of --var `name`: a variable whose own name takes the syntax ("rf(1)", "a.b": SciPy
/// and h5py write such names) is read by that name, before the syntax is tried.
std::vector<VarStep> variable_steps(const fs::path& path, const std::string& name) {
  if (name.find_first_of(kSyntax) != std::string::npos && has_variable(path, name))
    return {VarStep{'.', name, {}, name.size()}};
  return parse_variable_path(path, name);
}

}  // namespace

bool is_numeric_class(const std::string& matlab_class) { return numeric_class(matlab_class); }

std::optional<MatVariableInfo> mat_variable_to_read(const fs::path& path, const std::string& name) {
  // A v7.3 file's lists are read once, for its variables and the walk below.
  const std::optional<Mat73File> v73 = is_mat73(path) ? std::optional<Mat73File>(std::in_place, path) : std::nullopt;
  const std::vector<MatVariableInfo> vars = v73 ? list_mat73_variables(*v73) : list_mat_variables(path);
  const std::string chosen = name.empty() ? only_numeric_variable(path, vars) : name;
  for (const MatVariableInfo& v : vars)
    if (v.name == chosen) return v;
  if (!v73) return std::nullopt;
  // Inside a v7.3 file's structs and cells: the walk reads only the references it follows. (The
  // name is no variable's own, so its syntax is read as such.)
  try {
    const Mat73File& f = *v73;
    const Mat73Target target = resolve_mat73(f, chosen, parse_variable_path(path, chosen));
    return MatVariableInfo{chosen, target.matlab_class, target.empty ? target.dims : f.dims(target.object), false,
                           target.empty ? "" : target.object};
  } catch (const InputError&) {
    return std::nullopt;  // read_mat says why
  }
}

MatArray read_mat(const fs::path& path, const std::string& requested, std::optional<std::size_t> last_axis_index) {
  if (last_axis_index) return read_mat_slabs(path, requested, *last_axis_index, 1);
  const std::string name = requested.empty() ? only_numeric_variable(path, list_mat_variables(path)) : requested;
  const std::vector<VarStep> steps = variable_steps(path, name);
  return is_mat73(path) ? read_mat73(path, name, steps, std::nullopt) : read_mat5(path, name, steps, std::nullopt);
}

namespace {

/// read_mat_slabs and read_mat_slabs_alone: the slabs read alone where they can be, else (unless
/// `alone_only`) from the whole variable.
std::optional<MatArray> read_slabs(const fs::path& path, const std::string& requested, std::size_t first,
                                   std::size_t count, bool alone_only) {
  const std::string name = requested.empty() ? only_numeric_variable(path, list_mat_variables(path)) : requested;
  const std::vector<VarStep> steps = variable_steps(path, name);
  if (count == 0 || first > SIZE_MAX - count)
    throw InputError(path.string() + ": variable '" + shown(name) + "': no slabs asked for");
  const LastAxisSlabs slabs{first, count};
  if (is_mat73(path)) return read_mat73(path, name, steps, slabs);
  {
    MatFile m = open_mat(path);
    if (const MatVar info = mat5_array_alone(m, steps)) return read_mat5_slabs(path, name, m, info, slabs);
  }
  if (alone_only) return std::nullopt;
  return read_mat5(path, name, steps, slabs);
}

}  // namespace

MatArray read_mat_slabs(const fs::path& path, const std::string& name, std::size_t first, std::size_t count) {
  return std::move(*read_slabs(path, name, first, count, false));
}

std::optional<MatArray> read_mat_slabs_alone(const fs::path& path, const std::string& name, std::size_t first,
                                             std::size_t count) {
  return read_slabs(path, name, first, count, true);
}

bool mat_reads_slabs_alone(const fs::path& path, const std::string& requested) {
  if (is_mat73(path)) return true;
  const std::string name = requested.empty() ? only_numeric_variable(path, list_mat_variables(path)) : requested;
  const std::vector<VarStep> steps = variable_steps(path, name);
  if (steps.size() != 1) return false;
  MatFile m = open_mat(path);
  return static_cast<bool>(mat5_array_alone(m, steps));
}

bool MatFieldValue::numeric() const { return numeric_class(matlab_class); }

namespace {

/// UTF-8 of MATLAB's character codes (UTF-16 code units; a v5 file's 8-bit text is Latin-1, and
/// an unpaired surrogate is written as U+FFFD).
std::string utf8_of_codes(const std::vector<std::uint32_t>& codes) {
  std::string out;
  for (std::size_t k = 0; k < codes.size(); ++k) {
    std::uint32_t c = codes[k];
    if (c >= 0xD800 && c <= 0xDBFF && k + 1 < codes.size() && codes[k + 1] >= 0xDC00 && codes[k + 1] <= 0xDFFF)
      c = 0x10000 + ((c - 0xD800) << 10) + (codes[++k] - 0xDC00);
    else if (c >= 0xD800 && c <= 0xDFFF)
      c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

/// A v5 struct field's value as read_mat_struct gives it.
MatFieldValue mat5_field_value(const matvar_t* v, const std::string& what) {
  MatFieldValue out;
  out.matlab_class = v->isLogical ? "logical" : class_name(v->class_type);
  out.dims = dims_of(v);
  const std::size_t n = element_count(out.dims);
  if (v->class_type == MAT_C_CHAR) {
    if (n == 0 || !v->data) return out;
    if (v->data_type == MAT_T_UTF8) {  // already UTF-8: as many bytes as it holds
      out.text.assign(static_cast<const char*>(v->data), v->nbytes);
      return out;
    }
    std::vector<std::uint32_t> codes(n);
    const std::size_t unit = v->data_size > 0 ? static_cast<std::size_t>(v->data_size) : 1;
    if (v->nbytes < n * unit) throw InputError(what + ": matio returned too few characters");
    for (std::size_t k = 0; k < n; ++k)
      codes[k] = unit == 1 ? static_cast<const std::uint8_t*>(v->data)[k]
                 : unit == 2 ? static_cast<const std::uint16_t*>(v->data)[k]
                             : static_cast<const std::uint32_t*>(v->data)[k];
    out.text = utf8_of_codes(codes);
    return out;
  }
  if (!numeric(v->class_type)) return out;
  if (v->isComplex) {
    out.matlab_class = "complex " + out.matlab_class;
    return out;
  }
  if (n > 0 && !v->data) throw InputError(what + ": matio returned no data");
  if (n > 0) class_values_to_double(v->class_type, v->data, n, out.values, what);
  return out;
}

void read_mat5_struct(const fs::path& path, const std::vector<VarStep>& steps, const std::vector<std::string>& wanted,
                      std::size_t count, MatStruct& out) {
  MatFile m = open_mat(path);
  MatVar top(Mat_VarRead(m.get(), steps.front().field.c_str()));
  if (!top) throw no_variable(path, steps.front().field);
  matvar_t* v = top.get();
  for (std::size_t k = 1; k < steps.size(); ++k) {
    const std::string at = out.name.substr(0, steps[k - 1].end);
    if (v->class_type != MAT_C_STRUCT || element_count(dims_of(v)) != 1)
      throw InputError(path.string() + ": '" + shown(at) + "' is not a 1 x 1 struct");
    matvar_t* const parent = v;
    v = struct_field(v, steps[k].field.c_str(), 0);
    if (!v)
      throw InputError(path.string() + ": struct '" + shown(at) + "' has no field '" + shown(steps[k].field) + "'" +
                       detail::names_here(field_names(parent), steps[k].field, "fields"));
  }
  if (v->class_type != MAT_C_STRUCT)
    throw InputError(path.string() + ": '" + shown(out.name) + "' is a " + class_name(v->class_type) +
                     " array, not a struct");
  out.dims = dims_of(v);
  const unsigned n_fields = Mat_VarGetNumberOfFields(v);
  char* const* names = Mat_VarGetStructFieldnames(v);
  for (unsigned f = 0; f < n_fields && names; ++f) out.fields.push_back(names[f] ? names[f] : "");
  const std::size_t n = element_count(out.dims);
  for (std::size_t k = out.first; k < n && k - out.first < count; ++k) {
    auto& row = out.elements.emplace_back();
    for (const std::string& w : wanted) {
      if (std::find(out.fields.begin(), out.fields.end(), w) == out.fields.end()) {
        row.emplace_back();
        continue;
      }
      const std::string what = path.string() + ": '" + shown(out.name) + "(" + std::to_string(k + 1) + ")." + shown(w) + "'";
      const matvar_t* fv = struct_field(v, w.c_str(), k);
      if (!fv) throw InputError(what + " refers to nothing in the file");
      row.push_back(mat5_field_value(fv, what));
    }
  }
}

void read_mat73_struct(const Mat73File& f, const std::vector<VarStep>& steps, const std::vector<std::string>& wanted,
                       std::size_t count, MatStruct& out) {
  const fs::path& path = f.path();
  const std::string& top = steps.front().field;
  std::string object = "/" + top;
  if (top.empty() || top.find('/') != std::string::npos || top.front() == '#' || !f.exists(object))
    throw no_variable(path, top);
  for (std::size_t k = 1; k < steps.size(); ++k) {
    const std::string at = out.name.substr(0, steps[k - 1].end);
    if (!f.is_struct(object) || !f.group(object) || element_count(f.dims(object)) != 1)
      throw InputError(path.string() + ": '" + shown(at) + "' is not a 1 x 1 struct");
    const std::string& field = steps[k].field;
    if (field.empty() || field.find('/') != std::string::npos || !f.exists(object + "/" + field))
      throw InputError(path.string() + ": struct '" + shown(at) + "' has no field '" + shown(field) + "'" +
                       detail::names_here(f.field_names(object), field, "fields"));
    object += "/" + field;
  }
  if (!f.is_struct(object))
    throw InputError(path.string() + ": '" + shown(out.name) + "' is a " + f.matlab_class(object) +
                     " array, not a struct");
  out.dims = f.dims(object);
  const std::size_t n = element_count(out.dims);
  const bool single = n == 1 && f.group(object);  // a 1 x 1 struct's group holds its fields
  const std::vector<std::string> members = !f.group(object) ? std::vector<std::string>()
                                           : single          ? f.members(object)
                                                             : f.struct_array_fields(object);
  for (const std::string& m : members) out.fields.push_back(m.substr(m.rfind('/') + 1));
  const std::size_t first = out.first, taken = first < n ? std::min(count, n - first) : 0;
  // Where each value asked for lies: a 1 x 1 struct's member, or a struct array's element's
  // reference target (one reader request per field, for all the elements).
  std::vector<std::vector<std::optional<std::string>>> where(taken, std::vector<std::optional<std::string>>(wanted.size()));
  for (std::size_t w = 0; w < wanted.size(); ++w) {
    if (std::find(out.fields.begin(), out.fields.end(), wanted[w]) == out.fields.end()) continue;
    const std::string member = object + "/" + wanted[w];
    if (single) {
      if (taken == 1) where[0][w] = member;
      continue;
    }
    if (taken == 0) continue;
    std::vector<std::string> targets = hdf5_reference_targets(path, member, first, taken);
    targets.resize(taken);
    for (std::size_t k = 0; k < taken; ++k) where[k][w] = std::move(targets[k]);
  }
  // The values, in one request; empty arrays' dims in another.
  std::vector<std::string> to_read, empties;
  for (const auto& row : where)
    for (const auto& p : row)
      if (p && !p->empty())
        if (const Hdf5DatasetInfo* d = f.dataset(*p); d && !d->object_references && !d->type.empty()) {
          const std::string cls = mat73_class(*d);
          if (numeric_class(cls) || cls == "char") (d->matlab_empty ? empties : to_read).push_back(*p);
        }
  std::sort(to_read.begin(), to_read.end());
  to_read.erase(std::unique(to_read.begin(), to_read.end()), to_read.end());
  f.read_empty_dims(empties);
  std::map<std::string, Hdf5Array> read;
  if (!to_read.empty()) {
    std::vector<Hdf5Array> arrays = read_hdf5(path, to_read);
    for (std::size_t k = 0; k < arrays.size() && k < to_read.size(); ++k) read.emplace(to_read[k], std::move(arrays[k]));
  }
  for (std::size_t k = 0; k < taken; ++k) {
    auto& row = out.elements.emplace_back();
    for (std::size_t w = 0; w < wanted.size(); ++w) {
      if (!where[k][w]) {
        row.emplace_back();
        continue;
      }
      const std::string& p = *where[k][w];
      MatFieldValue v;
      if (p.empty() || !f.exists(p)) {
        v.matlab_class = "nothing";  // a null or dangling reference
        row.push_back(std::move(v));
        continue;
      }
      v.matlab_class = f.matlab_class(p);
      v.dims = f.dims(p);
      const Hdf5DatasetInfo* d = f.dataset(p);
      if (d && d->type.empty() && !d->object_references && numeric_class(v.matlab_class))
        v.matlab_class = "complex " + v.matlab_class;
      if (const auto r = read.find(p); r != read.end()) {
        if (!r->second.dims.empty()) v.dims.assign(r->second.dims.rbegin(), r->second.dims.rend());
        if (v.matlab_class == "char") {
          std::vector<std::uint32_t> codes;
          for (double c : r->second.values) codes.push_back(c >= 0 && c < 4294967296.0 ? static_cast<std::uint32_t>(c) : 0xFFFD);
          v.text = utf8_of_codes(codes);
        } else {
          v.values = r->second.values;
        }
      }
      row.push_back(std::move(v));
    }
  }
}

}  // namespace

struct MatStructReader::Impl {
  fs::path path;
  std::optional<Mat73File> v73;  ///< a v7.3 file's listing, read once
  std::vector<MatVariableInfo> variables;
};

MatStructReader::MatStructReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (is_mat73(path)) {
    impl_->v73.emplace(path);
    impl_->variables = list_mat73_variables(*impl_->v73);
  } else {
    impl_->variables = list_mat_variables(path);
  }
}

MatStructReader::~MatStructReader() = default;

const std::vector<MatVariableInfo>& MatStructReader::variables() const { return impl_->variables; }

MatStruct MatStructReader::read(const std::string& name, const std::vector<std::string>& wanted, std::size_t first,
                                std::size_t count) const {
  const fs::path& path = impl_->path;
  const std::vector<VarStep> steps = parse_variable_path(path, name);
  for (const VarStep& step : steps)
    if (step.kind != '.')
      throw InputError(path.string() + ": '" + shown(name) +
                       "': a struct is named by its variable and fields (Resource.Parameters), without subscripts");
  MatStruct out;
  out.name = name;
  out.first = first;
  if (impl_->v73) read_mat73_struct(*impl_->v73, steps, wanted, count, out);
  else read_mat5_struct(path, steps, wanted, count, out);
  return out;
}

MatStruct read_mat_struct(const fs::path& path, const std::string& name, const std::vector<std::string>& wanted,
                          std::size_t first, std::size_t count) {
  return MatStructReader(path).read(name, wanted, first, count);
}

void write_mat(const fs::path& path, const std::vector<MatArray>& arrays, bool as_uint8) {
  const fs::path tmp = path.string() + ".tmp-mat";
  mat_t* m = Mat_CreateVer(tmp.c_str(), nullptr, MAT_FT_MAT5);
  if (!m) throw OutputError(path.string() + ": cannot create MAT file");
  MatFile file(m);
  for (const MatArray& a : arrays) {
    if (a.values.size() != a.size())
      throw Error("write_mat: '" + a.name + "' has " + std::to_string(a.values.size()) +
                  " values but dims " + dims_text(a.dims));
    std::vector<std::size_t> dims = a.dims;
    std::vector<std::uint8_t> bytes;
    void* data = const_cast<double*>(a.values.data());
    if (as_uint8) {
      bytes.resize(a.values.size());
      for (std::size_t k = 0; k < bytes.size(); ++k)
        bytes[k] = static_cast<std::uint8_t>(std::lround(std::fmin(255.0, std::fmax(0.0, a.values[k]))));
      data = bytes.data();
    }
    MatVar v(Mat_VarCreate(a.name.c_str(), as_uint8 ? MAT_C_UINT8 : MAT_C_DOUBLE,
                           as_uint8 ? MAT_T_UINT8 : MAT_T_DOUBLE, static_cast<int>(dims.size()),
                           dims.data(), data, 0));
    if (!v || Mat_VarWrite(m, v.get(), MAT_COMPRESSION_ZLIB) != 0) {
      file.reset();
      fs::remove(tmp);
      throw OutputError(path.string() + ": cannot write variable '" + a.name + "'");
    }
  }
  file.reset();
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw OutputError(path.string() + ": " + ec.message());
  }
}

}  // namespace usrecon::io
