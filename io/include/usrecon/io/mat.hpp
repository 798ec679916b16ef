// MATLAB MAT files: v4 and v5 (compressed elements too) through the matio library, v7.3 (HDF5
// behind a MAT header) through io's isolated HDF5 reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace usrecon::io {

/// A real numeric MATLAB array. dims are in MATLAB's own order and `values` are column-major, as
/// MATLAB stores them: element (i0, i1, i2, ...) is values[i0 + dims[0] * (i1 + dims[1] * (i2 ...))].
struct MatArray {
  std::string name;
  std::string matlab_class;  ///< "uint8", "double", "single", "int16", ...
  std::vector<std::size_t> dims;
  std::vector<double> values;  ///< converted exactly from the stored class (every class fits)
  std::size_t size() const;
};

/// One variable of a MAT file: name, class and dims (without reading its data).
struct MatVariableInfo {
  std::string name;
  std::string matlab_class;
  std::vector<std::size_t> dims;
  bool is_complex = false;
  /// v7.3 (an HDF5 file): the dataset that holds the array's values ("/rf", "/#refs#/b"), which
  /// read_hdf5 reads in MATLAB's dims reversed, column-major values as they are; "" for a struct,
  /// a cell, an empty array, and in v4 and v5 files.
  std::string hdf5_object;
};

/// The variables of a MAT file, in file order. Throws InputError naming the file when it is
/// missing or not a MAT file.
std::vector<MatVariableInfo> list_mat_variables(const std::filesystem::path& path);

/// Reads variable `name`, a real numeric array, named in MATLAB's syntax: `rf`; `P.rx.data`, a
/// field of 1 x 1 structs; `S(2).data` or `S(1,2).data`, a field of a struct array's element;
/// `RcvData{1}` or `C{2,1}`, a cell array's element; and any chain of these (`P.rx{3}`).
/// Subscripts count from 1, one subscript counts the elements in column-major order, and with
/// several the last spans the dims left, as in MATLAB. The same in v5 and v7.3 (HDF5) files, but
/// for memory: matio reads a v5 top-level variable whole, a v7.3 element is read alone. A
/// variable whose own name takes this syntax ("rf(1)", which SciPy writes) is read by that name
/// first. At most 256 fields and subscripts.
/// An empty name reads the file's only numeric array, or fails listing the candidates (and, when
/// there is none, the names of the numeric arrays inside its structs and cells). Throws
/// InputError naming the file and the variable for a missing variable or field, a subscript past
/// the end, a name whose syntax fails, a complex, sparse, character, cell or struct array, or a
/// file matio cannot read.
/// With `last_axis_index`, only that index of the array's last axis (MATLAB's slowest: frame k of
/// a [samples][channels][frames] cine) is returned, dims keeping that axis at extent 1, as
/// read_mat_slabs(path, name, index, 1) reads it. An index past the axis is refused.
MatArray read_mat(const std::filesystem::path& path, const std::string& name = "",
                  std::optional<std::size_t> last_axis_index = std::nullopt);

/// Indices `first` to first + count - 1 of the array's last axis (frames of a cine), dims keeping
/// that axis at extent `count`. Read alone where mat_reads_slabs_alone says so: a v7.3 file's
/// array (an HDF5 hyperslab), a v5 file's top-level array (matio's Mat_VarReadData, which
/// inflates a compressed variable from its start up to the part without keeping the rest);
/// otherwise the variable is read whole by matio and the part taken from it. A range past the
/// axis, or of no index, is refused.
MatArray read_mat_slabs(const std::filesystem::path& path, const std::string& name, std::size_t first,
                        std::size_t count);

/// read_mat_slabs where the slabs are read alone (mat_reads_slabs_alone), else nullopt (nothing
/// read): a caller that reads a cine a block at a time reads it whole instead.
std::optional<MatArray> read_mat_slabs_alone(const std::filesystem::path& path, const std::string& name,
                                             std::size_t first, std::size_t count);

/// Whether read_mat_slabs reads a part of array `name` without the rest: any array of a v7.3 file;
/// a v5 file's real numeric array at its top of at most 2^31 - 1 values, or 2^28 - 1 when
/// compressed (matio's offsets are ints; not one inside a struct or cell, which matio reads with
/// its whole variable); never a v4 file's. An empty name is the file's only numeric array.
bool mat_reads_slabs_alone(const std::filesystem::path& path, const std::string& name);

/// Whether read_mat reads arrays of this MATLAB class ("double", ..., "uint64", "logical").
bool is_numeric_class(const std::string& matlab_class);

/// The variable that read_mat(path, name) reads, without reading its data: `name` itself, or for
/// an empty name the file's only real numeric array (throwing as read_mat does when there are
/// several or none). In a v7.3 file a name inside structs and cells too (the walk resolves only
/// the references it follows); nullopt for one inside a v4 or v5 file's struct or cell (matio
/// reads the variable whole to look inside), for one the file does not hold, and for a v7.3 name
/// that read_mat refuses (it says why).
std::optional<MatVariableInfo> mat_variable_to_read(const std::filesystem::path& path, const std::string& name);

/// One field of one element of a MAT struct (read_mat_struct): a real numeric array as read_mat
/// reads one (dims in MATLAB's order, values column-major), or a character array's text. Any other
/// value (a struct, a cell, a complex or sparse array) is said by its class, without values.
struct MatFieldValue {
  std::string matlab_class;  ///< "double", ..., "logical", "char", "struct", "cell", ...
  std::vector<std::size_t> dims;
  std::vector<double> values;  ///< a real numeric array's
  std::string text;            ///< a char array's characters in column-major order, as UTF-8
  bool numeric() const;        ///< a real numeric array (values holds it; [] is one without values)
};

/// A struct or struct array of a MAT file (read_mat_struct): its dims, its fields' names in file
/// order, and the fields asked for of elements first to first + elements.size() - 1.
struct MatStruct {
  std::string name;
  std::vector<std::size_t> dims;
  std::vector<std::string> fields;
  std::size_t first = 0;
  /// elements[k][f]: field wanted[f] of element first + k (column-major); nullopt where the struct
  /// has no such field.
  std::vector<std::vector<std::optional<MatFieldValue>>> elements;
};

/// Reads fields `wanted` of elements first to first + count - 1 (fewer past the end) of the struct
/// or struct array `name`: a variable at the file's top, or a 1 x 1 struct's field of a struct
/// there ("Resource.Parameters"), as a scanner's parameters are saved (Verasonics' Trans, Receive,
/// TX). In v5 files matio reads the variable whole; in v7.3 files each field of a struct array
/// costs one reader request, and the values asked for one more, whatever their number. Throws
/// InputError naming the file for a missing variable or field, a name with subscripts, or a value
/// that is not a struct.
MatStruct read_mat_struct(const std::filesystem::path& path, const std::string& name,
                          const std::vector<std::string>& wanted, std::size_t first = 0,
                          std::size_t count = SIZE_MAX);

/// read_mat_struct of several structs of one file, its variables listed once: a v7.3 file's list
/// of HDF5 objects (seconds for a cine whose structs hold thousands of entries) is read when this
/// is made, not for every struct.
class MatStructReader {
 public:
  explicit MatStructReader(const std::filesystem::path& path);
  ~MatStructReader();
  MatStructReader(const MatStructReader&) = delete;
  MatStructReader& operator=(const MatStructReader&) = delete;
  /// The file's variables (list_mat_variables).
  const std::vector<MatVariableInfo>& variables() const;
  /// As read_mat_struct(path, ...).
  MatStruct read(const std::string& name, const std::vector<std::string>& wanted, std::size_t first = 0,
                 std::size_t count = SIZE_MAX) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes real double or uint8 arrays to a MAT v5 file (tests and tools; compressed when
/// matio supports it). dims in MATLAB order, values column-major.
void write_mat(const std::filesystem::path& path, const std::vector<MatArray>& arrays,
               bool as_uint8 = false);

}  // namespace usrecon::io
