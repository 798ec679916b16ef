// MAT files through matio.
#include "usrecon/io/mat.hpp"

#include <matio.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "usrecon/io/file.hpp"

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

std::string dims_text(const std::vector<std::size_t>& dims) {
  std::string s;
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? " x " : "") + std::to_string(dims[k]);
  return s;
}

/// MAT v5: matio allocates what a tag claims (a dims or name tag claiming 4 GiB: an 8 GiB or
/// 4 GiB malloc; dims of 3 x 2^31 with 6 bytes of data: 17 GB; found by tools/fuzz.sh), so every
/// element must fit in the file, every subelement of a matrix (recursively, for cells and
/// structs) in its matrix, and a matrix may not claim more elements than it has bytes.
/// Compressed elements are inflated up to their first MiB and checked the same way, their
/// decompressed size bounded by deflate's largest ratio (1032:1).
void check_mat5_sizes(const fs::path& path, std::ifstream& file, std::uintmax_t file_bytes,
                      bool big_endian) {
  const auto word = [&](const char* bytes) {
    std::uint32_t value;
    std::memcpy(&value, bytes, 4);
    return big_endian ? __builtin_bswap32(value) : value;
  };
  constexpr std::uint32_t kMiMatrix = 14, kMiCompressed = 15;
  constexpr int kMaxDepth = 16;
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
  const auto refuse = [&](const char* what, std::uintmax_t offset, const std::string& detail) {
    return InputError(path.string() + ": not a MAT file that matio can read: " + where + "the " + what +
                      " at byte " + std::to_string(offset) + " " + detail);
  };
  // Walks the elements of `in` in [offset, end); returns false where it cannot see further (matio
  // then decides).
  const auto walk = [&](auto& self, std::istream& in, std::uintmax_t offset, std::uintmax_t end,
                        int depth) -> bool {
    const auto read_at = [&](std::uintmax_t at, char* out, std::size_t n) {
      in.clear();
      in.seekg(static_cast<std::streamoff>(at));
      return static_cast<bool>(in.read(out, static_cast<std::streamsize>(n)));
    };
    while (end - offset >= 8) {
      char tag[8];
      if (!read_at(offset, tag, sizeof tag)) return false;
      const std::uint32_t first = word(tag);
      if ((first >> 16) != 0) {  // small data element: at most 4 bytes of data inside the tag
        if ((first >> 16) > 4)
          throw refuse("element", offset, "is a small data element of " + std::to_string(first >> 16) +
                                              " bytes (at most 4 fit)");
        offset += 8;
        continue;
      }
      const std::uint32_t type = first, bytes = word(tag + 4);
      if (bytes > end - offset - 8)
        throw refuse("element", offset,
                     "claims " + std::to_string(bytes) + " bytes, more than the " +
                         std::to_string(end - offset - 8) + " left in " +
                         (depth == 0 ? "the file" : where.empty() || depth > 1 ? "its matrix" : "it"));
      if (type == kMiMatrix && depth < kMaxDepth) {
        // matio allocates dims-product elements before reading the data: each must have at least
        // one byte (sparse arrays, class 5, store only their nonzeros: left to matio).
        // A matrix holds at least its flags and dims (24 bytes); only an empty cell or struct
        // field may be a 0-byte matrix. matio reads the header whatever the size claims.
        if (bytes == 0 && depth > 0) {
          offset += 8;
          continue;
        }
        if (bytes < 24)
          throw refuse("matrix", offset, "claims " + std::to_string(bytes) +
                                             " bytes, too few for its flags and dimensions (24)");
        char head[24];
        if (!read_at(offset + 8, head, sizeof head)) return false;
        const std::uint32_t array_class = word(head + 8) & 0xFF, dims_first = word(head + 16);
        const bool small_dims = (dims_first >> 16) != 0;
        const std::uint32_t dims_bytes = small_dims ? dims_first >> 16 : word(head + 20);
        if (array_class != 5 && dims_bytes <= bytes - 24) {
          std::uintmax_t elements = 1;
          for (std::uint32_t k = 0; k + 4 <= dims_bytes; k += 4) {
            char dim[4];
            if (!read_at(offset + 8 + (small_dims ? 20 : 24) + k, dim, 4)) return false;
            if (__builtin_mul_overflow(elements, std::uintmax_t{word(dim)}, &elements))
              elements = UINTMAX_MAX;
          }
          if (elements > bytes)
            throw refuse("matrix", offset, "claims " + std::to_string(elements) + " elements in " +
                                               std::to_string(bytes) + " bytes");
        }
        if (!self(self, in, offset + 8, offset + 8 + bytes, depth + 1)) return false;
      }
      if (type == kMiCompressed && depth == 0) {
        // Inflate the start of the element and walk that.
        constexpr std::size_t kWindow = std::size_t{1} << 20;
        std::string compressed(std::min<std::uintmax_t>(bytes, kWindow), '\0');
        if (!read_at(offset + 8, compressed.data(), compressed.size())) return false;
        std::string inflated(kWindow, '\0');
        z_stream z{};
        if (inflateInit(&z) != Z_OK) return false;
        z.next_in = reinterpret_cast<Bytef*>(compressed.data());
        z.avail_in = static_cast<uInt>(compressed.size());
        z.next_out = reinterpret_cast<Bytef*>(inflated.data());
        z.avail_out = static_cast<uInt>(inflated.size());
        const int status = inflate(&z, Z_SYNC_FLUSH);
        inflated.resize(z.total_out);
        inflateEnd(&z);
        // On a zlib error the prefix inflated so far is still what matio will read: walk it too.
        std::istringstream element(inflated);
        const std::uintmax_t inner_end =
            status == Z_STREAM_END ? inflated.size() : std::uintmax_t{bytes} * 1032 + 64;
        where = "the compressed element at byte " + std::to_string(offset) + ": ";
        self(self, element, 0, inner_end, 1);
        where.clear();
      }
      // Elements are padded to 8 bytes, except compressed ones.
      const std::uintmax_t padding = type != kMiCompressed && bytes % 8 != 0 ? 8 - bytes % 8 : 0;
      offset += 8 + bytes + std::min<std::uintmax_t>(padding, end - offset - 8 - bytes);
    }
    return true;
  };
  walk(walk, file, 128, file_bytes, 0);
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
    if (h[0] > 4999) {  // the M digit says big-endian: the header too is big-endian
      for (std::uint32_t& word : h) word = __builtin_bswap32(word);
      if (h[0] > 4999) return;
    }
    const std::uint32_t precision = (h[0] / 10) % 10;
    if (precision > 5) return;
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

MatFile open_mat(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(path.string() + ": " + (fs::exists(path, ec) ? "not a regular file" : "no such file"));
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

}  // namespace

std::size_t MatArray::size() const {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return dims.empty() ? 0 : n;
}

std::vector<MatVariableInfo> list_mat_variables(const fs::path& path) {
  MatFile m = open_mat(path);
  std::vector<MatVariableInfo> vars;
  while (matvar_t* raw = Mat_VarReadNextInfo(m.get())) {
    MatVar v(raw);
    vars.push_back({v->name ? v->name : "", class_name(v->class_type), dims_of(v.get()), v->isComplex != 0});
  }
  return vars;
}

MatArray read_mat(const fs::path& path, const std::string& requested) {
  std::string name = requested;
  if (name.empty()) {
    std::vector<std::string> candidates;
    for (const MatVariableInfo& info : list_mat_variables(path))
      if (info.matlab_class != "struct" && info.matlab_class != "cell" && info.matlab_class != "char" &&
          info.matlab_class != "sparse" && !info.is_complex)
        candidates.push_back(info.name);
    if (candidates.size() != 1) {
      std::string list;
      for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
      throw InputError(path.string() + ": name the variable to read with --var (numeric arrays here: " +
                       (list.empty() ? "none" : list) + ")");
    }
    name = candidates.front();
  }
  MatFile m = open_mat(path);
  const std::size_t dot = name.find('.');
  MatVar top(Mat_VarRead(m.get(), name.substr(0, dot).c_str()));
  if (!top) throw InputError(path.string() + ": no variable '" + name.substr(0, dot) + "'");
  const matvar_t* v = top.get();
  if (dot != std::string::npos) {
    if (top->class_type != MAT_C_STRUCT)
      throw InputError(path.string() + ": '" + name.substr(0, dot) + "' is not a struct");
    v = Mat_VarGetStructFieldByName(top.get(), name.substr(dot + 1).c_str(), 0);
    if (!v) throw InputError(path.string() + ": struct '" + name.substr(0, dot) + "' has no field '" +
                             name.substr(dot + 1) + "'");
  }
  const std::string what = path.string() + ": variable '" + name + "'";
  if (!numeric(v->class_type))
    throw InputError(what + " is a " + class_name(v->class_type) + " array, not a numeric array");
  if (v->isComplex) throw InputError(what + " is complex; only real channel data are read");
  MatArray a;
  a.name = name;
  a.matlab_class = class_name(v->class_type);
  a.dims = dims_of(v);
  const std::size_t n = a.size();
  if (n > 0 && !v->data) throw InputError(what + ": matio returned no data");
  switch (v->class_type) {
    case MAT_C_DOUBLE: convert<double>(v->data, n, a.values); break;
    case MAT_C_SINGLE: convert<float>(v->data, n, a.values); break;
    case MAT_C_INT8: convert<std::int8_t>(v->data, n, a.values); break;
    case MAT_C_UINT8: convert<std::uint8_t>(v->data, n, a.values); break;
    case MAT_C_INT16: convert<std::int16_t>(v->data, n, a.values); break;
    case MAT_C_UINT16: convert<std::uint16_t>(v->data, n, a.values); break;
    case MAT_C_INT32: convert<std::int32_t>(v->data, n, a.values); break;
    case MAT_C_UINT32: convert<std::uint32_t>(v->data, n, a.values); break;
    case MAT_C_INT64: convert<std::int64_t>(v->data, n, a.values); break;
    case MAT_C_UINT64: convert<std::uint64_t>(v->data, n, a.values); break;
    default: throw InputError(what + ": unsupported class " + class_name(v->class_type));
  }
  return a;
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
