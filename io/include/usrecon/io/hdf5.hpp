// HDF5 files (PICMUS / UFF-style channel data, and any numeric dataset), read through libhdf5.
//
// libhdf5 crashes on some malformed files, so every read runs in a worker process (a crash
// becomes an InputError naming the file). The workers come from a reader server that the first
// read starts by running this program again (/proc/self/exe; Linux): the program must therefore
// be one linked with usrecon::io, not an interpreter that loads it with dlopen. The server ends
// when the program does. Reads are safe from any thread, one at a time.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "usrecon/io/file.hpp"

namespace usrecon::io {

/// A real numeric HDF5 dataset. dims are in HDF5's order, which is C order: the last axis varies
/// fastest, element (i0, i1, ...) is values[((i0 * dims[1] + i1) * dims[2] + i2) ...].
struct Hdf5Array {
  std::string path;  ///< the dataset's path in the file, e.g. "/US/US_DATASET0000/data/real"
  std::string type;  ///< "float32", "float64", "int16", "uint8", ...
  std::vector<std::size_t> dims;
  std::vector<double> values;  ///< converted from the stored type by libhdf5
};

/// One dataset of an HDF5 file (without its data). `type` is "" for a dataset that is not a real
/// integer or floating-point array (strings, compounds such as complex numbers, references).
struct Hdf5DatasetInfo {
  std::string path;
  std::string type;
  std::vector<std::size_t> dims;
  /// The dataset's "MATLAB_class" attribute ("double", "char", "cell", ...), which MATLAB v7.3
  /// MAT files give every variable; "" when it has none.
  std::string matlab_class;
  /// An array of object references (hdf5_reference_targets reads where they point): how MATLAB
  /// v7.3 stores a cell array, and each field of a struct array.
  bool object_references = false;
  /// A "MATLAB_empty" attribute: MATLAB v7.3 stores an empty array as its dims (uint64), so the
  /// values are not the array's.
  bool matlab_empty = false;
};

/// An attribute of a group: `text` for a string attribute (trailing NULs and blanks removed; the
/// first string of an array of strings), `values` for a numeric one (C order). Attributes of
/// other types are listed with neither.
struct Hdf5Attribute {
  std::string name;
  std::string text;
  std::vector<double> values;
};

/// A group of an HDF5 file with its attributes ("/" is the root group). USTB's UFF files name
/// each object's class in a "class" attribute of its group (e.g. "uff.channel_data").
struct Hdf5Group {
  std::string path;
  std::vector<Hdf5Attribute> attributes;
  /// The attribute called `name`, or nullptr.
  const Hdf5Attribute* attribute(const std::string& name) const {
    for (const Hdf5Attribute& a : attributes)
      if (a.name == name) return &a;
    return nullptr;
  }
};

/// The PICMUS layout (the 2016 IEEE IUS plane-wave challenge): its group and channel data.
inline constexpr const char* kPicmusGroup = "/US/US_DATASET0000";
inline constexpr const char* kPicmusChannelData = "/US/US_DATASET0000/data/real";

/// True when `path` is an HDF5 file (its signature is there); false for anything else.
bool is_hdf5_file(const std::filesystem::path& path);

/// True for the extensions read as HDF5: .h5, .hdf5, .uff (any case).
bool has_hdf5_extension(const std::filesystem::path& path);

/// Every dataset of the file, by path in name order. Throws InputError naming the file when it is
/// missing or not HDF5.
std::vector<Hdf5DatasetInfo> list_hdf5_datasets(const std::filesystem::path& path);

/// Every group of the file with its attributes, root first then by path in name order (at most
/// 256 attributes a group, string attributes up to 64 KiB, numeric ones up to 4096 values; larger
/// ones are listed with neither text nor values). Throws InputError like list_hdf5_datasets.
std::vector<Hdf5Group> list_hdf5_groups(const std::filesystem::path& path);

/// Reads dataset `dataset` (a path such as "/US/US_DATASET0000/data/real"). An empty name reads a
/// PICMUS file's "/US/US_DATASET0000/data/real", else the file's only real numeric dataset with
/// at least two axes, or fails listing the candidates. Throws InputError naming the file and the
/// dataset for a missing dataset, one that is not a real numeric array, or one whose size claims
/// more values than its stored bytes can hold (the limit on what a file may make us allocate).
Hdf5Array read_hdf5(const std::filesystem::path& path, const std::string& dataset = "");

/// The dataset that read_hdf5(path, dataset) reads, without reading its data (the choice it makes
/// for an empty name included, throwing as it does when there is none to make); nullopt when the
/// file holds no dataset of that path.
std::optional<Hdf5DatasetInfo> hdf5_dataset_to_read(const std::filesystem::path& path, const std::string& dataset = "");

/// Reads several datasets in one go (each name as for read_hdf5 above): one reader process for all.
std::vector<Hdf5Array> read_hdf5(const std::filesystem::path& path, const std::vector<std::string>& datasets);

/// A dataset to read whole, or only rows [first_row, first_row + rows) of its first axis (C order:
/// the slowest one), e.g. one frame of a [frames][...] array, so that the other rows are neither
/// read nor held in memory. The array read then has dims[0] = rows.
struct Hdf5Selection {
  static constexpr std::size_t kAllRows = static_cast<std::size_t>(-1);
  std::string dataset;
  std::size_t first_row = 0;
  std::size_t rows = kAllRows;
};

/// Reads several datasets, or parts of them, in one go (one reader process). Throws InputError as
/// read_hdf5 above, and when a selection's rows lie past the end of its dataset's first axis.
std::vector<Hdf5Array> read_hdf5(const std::filesystem::path& path, const std::vector<Hdf5Selection>& selections);

/// The objects that elements [first, first + count) of dataset `dataset`, an array of object
/// references, point to (fewer past its end): one path per element in C order ("/#refs#/b"; ""
/// for a null or dangling reference). MATLAB v7.3 stores a cell array so, and each field of a
/// struct array. Only the elements asked for are resolved (libhdf5 searches the file for each
/// one's name). Throws InputError naming the file and the dataset for a missing dataset, one of
/// another type, or one of over 2^20 references or over 1032 per stored byte (and 1 MiB).
std::vector<std::string> hdf5_reference_targets(const std::filesystem::path& path, const std::string& dataset,
                                                std::size_t first = 0, std::size_t count = 1);

/// Writes real double arrays (dims in C order) as float64 datasets, creating the groups on their
/// paths, then the groups' attributes (a group that holds no dataset is created; text attributes
/// are fixed-length strings as MATLAB writes them, numeric ones float64 vectors). For tests and
/// tools. Atomic (see write_file_atomic). Throws OutputError.
void write_hdf5(const std::filesystem::path& path, const std::vector<Hdf5Array>& arrays,
                const std::vector<Hdf5Group>& groups = {});
/// The same file written into `out` (staged: commit or commit_staged puts it in place, so that it
/// can go there together with other files). Errors name out.target().
void write_hdf5(StagedFile& out, const std::vector<Hdf5Array>& arrays, const std::vector<Hdf5Group>& groups = {});

}  // namespace usrecon::io
