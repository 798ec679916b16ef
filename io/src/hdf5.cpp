// HDF5 files through libhdf5 (Debian: libhdf5-dev, the serial build).
#include "usrecon/io/hdf5.hpp"

#include <hdf5.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "printable.hpp"
#include "usrecon/io/file.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

// Debian's serial libhdf5 is not thread-safe; the batch pipeline reads on its own thread, and a
// library user may call from several. Every HDF5 call of this process (write_hdf5's) and every
// request to the reader server (see run_isolated) holds this lock.
std::mutex& hdf5_lock() {
  static std::mutex lock;
  return lock;
}

/// Closes an HDF5 identifier with its own close function (H5Fclose, H5Dclose, ...).
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle& operator=(Handle&&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// The innermost message on HDF5's error stack (its own printing is switched off), or "".
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* text = static_cast<std::string*>(out);
        if (text->empty() && e->desc && *e->desc) *text = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason.empty() ? "" : " (" + reason + ")";
}

/// "float32", "int16", ... for a real integer or floating-point type; "" for anything else.
std::string type_name(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::size_t bits = H5Tget_size(type) * 8;
  if (type_class == H5T_FLOAT && (bits == 32 || bits == 64)) return "float" + std::to_string(bits);
  if (type_class == H5T_INTEGER && bits <= 64)
    return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
  return "";
}

std::vector<std::size_t> dims_of(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) return {};
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return std::vector<std::size_t>(d.begin(), d.end());
}

Handle open_file(const fs::path& path) {
  if (!fs::is_regular_file(existing_input_status(path)))
    throw InputError(path.string() + ": not a regular file");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path.string() + ": not an HDF5 file");
  }
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw InputError(path.string() + ": HDF5 cannot open it" + hdf5_reason());
  return file;
}

/// Calls on_group(path, group id) for every group under `group` and on_dataset(path, dataset id)
/// for every dataset, in name order (a group before what it holds). Hard links can make cycles,
/// so the walk stops at a depth of 32 and after 100 000 objects; external links (which open other
/// files) are not followed.
using Visit = std::function<void(const std::string&, hid_t)>;
void walk(hid_t group, const std::string& prefix, int depth, std::size_t& seen, const Visit& on_group,
          const Visit& on_dataset) {
  H5G_info_t info;
  if (depth > 32 || H5Gget_info(group, &info) < 0) return;
  for (hsize_t k = 0; k < info.nlinks && seen < 100000; ++k, ++seen) {
    const ssize_t length = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
    if (length <= 0) continue;
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, k, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(length));
    H5L_info_t link;
    if (H5Lget_info(group, name.c_str(), &link, H5P_DEFAULT) < 0 || link.type == H5L_TYPE_EXTERNAL) continue;
    Handle object(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!object.ok()) continue;  // a dangling soft link
    const std::string path = prefix + "/" + name;
    const H5I_type_t kind = H5Iget_type(object.get());
    if (kind == H5I_GROUP) {
      if (on_group) on_group(path, object.get());
      walk(object.get(), path, depth + 1, seen, on_group, on_dataset);
    }
    if (kind == H5I_DATASET && on_dataset) on_dataset(path, object.get());
  }
  H5Eclear2(H5E_DEFAULT);
}

/// The attributes of an object, within the limits documented at list_hdf5_groups.
std::vector<Hdf5Attribute> read_attributes(hid_t object) {
  constexpr hsize_t kMaxAttributes = 256;
  constexpr std::size_t kMaxTextBytes = 64 * 1024, kMaxValues = 4096;
  std::vector<Hdf5Attribute> attributes;
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_NUM_ATTRS) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return attributes;
  }
  for (hsize_t k = 0; k < std::min<hsize_t>(info.num_attrs, kMaxAttributes); ++k) {
    Handle attr(H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_INC, k, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) continue;
    const ssize_t name_length = H5Aget_name(attr.get(), 0, nullptr);
    if (name_length <= 0 || name_length > 4096) continue;
    Hdf5Attribute a;
    a.name.assign(static_cast<std::size_t>(name_length) + 1, '\0');
    H5Aget_name(attr.get(), a.name.size(), a.name.data());
    a.name.resize(static_cast<std::size_t>(name_length));
    Handle type(H5Aget_type(attr.get()), H5Tclose);
    Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (!type.ok() || !space.ok()) continue;
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    const H5T_class_t type_class = H5Tget_class(type.get());
    if (points >= 1 && type_class == H5T_STRING) {
      Handle memory_type(H5Tcopy(H5T_C_S1), H5Tclose);
      if (H5Tis_variable_str(type.get()) > 0) {
        if (static_cast<std::size_t>(points) > kMaxValues) continue;
        H5Tset_size(memory_type.get(), H5T_VARIABLE);
        std::vector<char*> strings(static_cast<std::size_t>(points), nullptr);
        if (H5Aread(attr.get(), memory_type.get(), strings.data()) >= 0) {
          if (strings[0]) a.text.assign(strings[0], strnlen(strings[0], kMaxTextBytes));
          H5Dvlen_reclaim(memory_type.get(), space.get(), H5P_DEFAULT, strings.data());
        }
      } else {
        const std::size_t each = H5Tget_size(type.get());
        if (each == 0 || each > kMaxTextBytes / static_cast<std::size_t>(points)) continue;
        // Null-padded in memory: a NULLTERM conversion would drop the last character of a
        // string stored without a terminator (h5py's fixed-length strings, NULLPAD).
        H5Tset_size(memory_type.get(), each);
        H5Tset_strpad(memory_type.get(), H5T_STR_NULLPAD);
        std::vector<char> bytes(each * static_cast<std::size_t>(points) + 1, '\0');
        if (H5Aread(attr.get(), memory_type.get(), bytes.data()) >= 0) a.text.assign(bytes.data(), strnlen(bytes.data(), each));
      }
      while (!a.text.empty() && (a.text.back() == ' ' || a.text.back() == '\0')) a.text.pop_back();
    } else if (points >= 1 && static_cast<std::size_t>(points) <= kMaxValues &&
               (type_class == H5T_INTEGER || type_class == H5T_FLOAT) && !type_name(type.get()).empty()) {
      a.values.resize(static_cast<std::size_t>(points));
      if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, a.values.data()) < 0) a.values.clear();
    }
    attributes.push_back(std::move(a));
  }
  H5Eclear2(H5E_DEFAULT);
  return attributes;
}

Hdf5DatasetInfo describe(const std::string& path, hid_t dataset) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Hdf5DatasetInfo info{path, type.ok() ? type_name(type.get()) : "", {}, "", false, false};
  info.object_references = type.ok() && H5Tget_class(type.get()) == H5T_REFERENCE &&
                           H5Tequal(type.get(), H5T_STD_REF_OBJ) > 0;
  if (space.ok() && H5Sget_simple_extent_type(space.get()) == H5S_SIMPLE) info.dims = dims_of(space.get());
  if (H5Aexists(dataset, "MATLAB_class") > 0)
    for (const Hdf5Attribute& a : read_attributes(dataset))
      if (a.name == "MATLAB_class") info.matlab_class = a.text;
  info.matlab_empty = H5Aexists(dataset, "MATLAB_empty") > 0;
  H5Eclear2(H5E_DEFAULT);
  return info;
}

// ---- In a reader worker only (see run_isolated): the reads themselves ------------------------

std::vector<Hdf5DatasetInfo> list_here(const fs::path& path) {
  const Handle file = open_file(path);
  std::vector<Hdf5DatasetInfo> datasets;
  std::size_t seen = 0;
  walk(file.get(), "", 0, seen, nullptr,
       [&](const std::string& name, hid_t dataset) { datasets.push_back(describe(name, dataset)); });
  return datasets;
}

std::vector<Hdf5Group> list_groups_here(const fs::path& path) {
  const Handle file = open_file(path);
  std::vector<Hdf5Group> groups;
  {
    Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
    groups.push_back({"/", root.ok() ? read_attributes(root.get()) : std::vector<Hdf5Attribute>{}});
  }
  std::size_t seen = 0;
  walk(file.get(), "", 0, seen,
       [&](const std::string& name, hid_t group) { groups.push_back({name, read_attributes(group)}); }, nullptr);
  return groups;
}

/// The dataset read_hdf5(path, requested) reads: `requested` (with its leading '/'), or for an
/// empty name a PICMUS file's channel data, else the file's only real numeric array with at least
/// two axes (or its only array of two axes, which the read refuses by its type); throws naming
/// the candidates when there are several or none.
std::string dataset_to_read(const fs::path& path, const std::vector<Hdf5DatasetInfo>& all, const std::string& requested) {
  if (!requested.empty()) return requested.front() == '/' ? requested : "/" + requested;
  std::vector<std::string> candidates, others;  // others: arrays of types not read
  bool picmus = false;
  for (const Hdf5DatasetInfo& info : all) {
    if (info.path == kPicmusChannelData) picmus = true;
    if (info.dims.size() >= 2) (info.type.empty() ? others : candidates).push_back(info.path);
  }
  if (picmus) return kPicmusChannelData;
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty() && others.size() == 1) return others.front();  // refused by the read, saying what type it is
  std::string list;
  for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
  throw InputError(path.string() + ": name the dataset to read with --var (numeric arrays here: " +
                   (list.empty() ? "none" : list) + ")");
}

Hdf5Array read_here(const fs::path& path, const std::string& requested, std::size_t first_row = 0,
                    std::size_t rows = Hdf5Selection::kAllRows) {
  const std::string name = dataset_to_read(path, requested.empty() ? list_here(path) : std::vector<Hdf5DatasetInfo>{},
                                           requested);
  const Handle file = open_file(path);
  const std::string what = path.string() + ": dataset '" + name + "'";
  // H5Dopen on a missing path is an error, not a crash; H5Lexists per part would be tidier
  // but cannot see through soft links either.
  Handle dataset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) {
    H5Eclear2(H5E_DEFAULT);
    std::vector<std::string> names;
    for (const Hdf5DatasetInfo& info : list_here(path)) names.push_back(info.path);
    throw InputError(what + " does not exist or is not a dataset" + detail::names_here(names, name, "datasets"));
  }
  Hdf5Array array;
  array.path = name;
  const Hdf5DatasetInfo info = describe(name, dataset.get());
  if (info.type.empty()) {
    // Say what it is where that helps: a float16, an enum (h5py's bool), a compound (complex), ...
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    const H5T_class_t type_class = type.ok() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
    const std::string kind = type_class == H5T_FLOAT     ? "a " + std::to_string(H5Tget_size(type.get()) * 8) + "-bit float"
                             : type_class == H5T_ENUM     ? "an enum (as h5py stores bool)"
                             : type_class == H5T_COMPOUND ? "a compound (as complex numbers are stored)"
                             : type_class == H5T_STRING   ? "a string"
                             : type_class == H5T_REFERENCE ? "a reference"
                                                           : "a non-numeric";
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " is " + kind + " array, not a real integer or 32/64-bit float one (complex "
                            "channel data are read as two real datasets, e.g. PICMUS's data/real and data/imag)");
  }
  array.type = info.type;
  array.dims = info.dims;
  const bool part = rows != Hdf5Selection::kAllRows;
  if (part) {
    if (array.dims.empty() || first_row > array.dims[0] || rows > array.dims[0] - first_row)
      throw InputError(what + ": rows " + std::to_string(first_row) + " to " + std::to_string(first_row + rows) +
                       " asked of its " + dims_text(array.dims) + " values lie past its first axis");
    array.dims[0] = rows;
  }
  std::size_t count = 1;
  for (std::size_t d : array.dims)
    if (__builtin_mul_overflow(count, d, &count)) count = SIZE_MAX;
  // A dataset's dims are a claim: its stored bytes bound what it can really hold (deflate, the
  // usual filter, inflates at most 1032:1). 2^31 values (16 GiB as double) is the hard limit.
  const hsize_t stored = H5Dget_storage_size(dataset.get());
  std::size_t type_bytes = 8;
  {
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (type.ok()) type_bytes = H5Tget_size(type.get());
  }
  const long double claimed = static_cast<long double>(count) * type_bytes;
  if (count > (std::size_t{1} << 31) || claimed > static_cast<long double>(stored) * 1032 + (1 << 20))
    throw InputError(what + " claims " + dims_text(array.dims) + " values in " + std::to_string(stored) +
                     " stored bytes (the input size limit: 2^31 values, 1032 per stored byte)");
  array.values.resize(count);
  if (count == 0) return array;
  if (!part) {
    if (H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, array.values.data()) < 0)
      throw InputError(what + ": HDF5 cannot read it" + hdf5_reason());
    return array;
  }
  // The rows: a hyperslab of the file's dataspace, read into a memory space of the slab's shape.
  std::vector<hsize_t> start(array.dims.size(), 0), shape(array.dims.begin(), array.dims.end());
  start[0] = first_row;
  Handle file_space(H5Dget_space(dataset.get()), H5Sclose);
  Handle memory_space(H5Screate_simple(int(shape.size()), shape.data(), nullptr), H5Sclose);
  if (!file_space.ok() || !memory_space.ok() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, shape.data(), nullptr) < 0 ||
      H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(), H5P_DEFAULT,
              array.values.data()) < 0)
    throw InputError(what + ": HDF5 cannot read rows " + std::to_string(first_row) + " to " +
                     std::to_string(first_row + rows) + hdf5_reason());
  return array;
}

std::vector<std::string> reference_targets_here(const fs::path& path, std::string name, std::size_t first,
                                               std::size_t count) {
  if (name.empty() || name.front() != '/') name = "/" + name;
  const Handle file = open_file(path);
  const std::string what = path.string() + ": dataset '" + name + "'";
  Handle dataset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " does not exist or is not a dataset");
  }
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  if (!type.ok() || H5Tget_class(type.get()) != H5T_REFERENCE || H5Tequal(type.get(), H5T_STD_REF_OBJ) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " is not an array of object references");
  }
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const hssize_t stored_count = space.ok() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  // As read_here bounds a numeric dataset: by its stored bytes, and here by 2^20 references
  // (a cell array of a million channel-data arrays is no file anyone writes).
  const hsize_t stored = H5Dget_storage_size(dataset.get());
  if (stored_count < 0 || stored_count > (hssize_t{1} << 20) ||
      static_cast<long double>(stored_count) * sizeof(hobj_ref_t) > static_cast<long double>(stored) * 1032 + (1 << 20))
    throw InputError(what + " claims " + std::to_string(stored_count) + " references in " + std::to_string(stored) +
                     " stored bytes (at most 2^20 are read, 1032 per stored byte)");
  std::vector<hobj_ref_t> references(static_cast<std::size_t>(stored_count));
  if (stored_count > 0 &&
      H5Dread(dataset.get(), H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, references.data()) < 0)
    throw InputError(what + ": HDF5 cannot read it" + hdf5_reason());
  std::vector<std::string> targets;
  const std::size_t end = first >= references.size() ? first : first + std::min(count, references.size() - first);
  for (std::size_t k = first; k < end; ++k) {
    const hobj_ref_t& reference = references[k];
    std::string target;
    const ssize_t length = H5Rget_name(dataset.get(), H5R_OBJECT, &reference, nullptr, 0);
    if (length > 0 && length < 65536) {
      target.resize(static_cast<std::size_t>(length) + 1);
      if (H5Rget_name(dataset.get(), H5R_OBJECT, &reference, target.data(), target.size()) == length)
        target.resize(static_cast<std::size_t>(length));
      else
        target.clear();
    }
    H5Eclear2(H5E_DEFAULT);
    targets.push_back(std::move(target));
  }
  return targets;
}

// ---- Isolation: libhdf5 in worker processes ------------------------------------------------------
//
// libhdf5 (1.10.8) crashes on some malformed files: tools/fuzz.sh hdf5 found a NULL memcpy in
// H5F__accum_read from a 4 KiB file within 30 s (tests/corpus/regressions/hdf5/). A hostile file must
// not take a batch down with it, so every read of a file runs in a worker process that sends its
// result back; a worker killed by a signal becomes an InputError naming the file.
//
// The workers are not forked from the calling process. That one has other threads (the batch
// pipeline beamforms and writes while it reads), and fork() copies into the child whatever locks
// those threads held at that instant (the allocator's, the unwinder's), which nobody then
// releases: the child waits for ever. CI hung so, a worker stuck in AddressSanitizer's allocator
// (IoHdf5.ReadsWhileOtherThreadsAllocateAndThrow reproduces it). Instead, the first read starts a
// reader server with posix_spawn (safe with threads): this same executable, /proc/self/exe, run
// afresh. The static initialiser at the end of this section makes that process the server before
// main() runs and before it has any other thread. The server forks one worker per request (safe:
// it has a single thread, and libhdf5 starts clean in each worker) and relays the worker's reply
// and how it ended. The server exits when the calling process closes its end of the socket.
//
// Wire format, on a Unix stream socket: a request is u64 length + bytes (an Operation, the path,
// the operation's arguments; see run_isolated); an answer
// is u64 how (kExited, kSignalled, kNoWorker), u64 code (exit status, signal or errno), u64 length,
// then the worker's reply: a Tag, then the result's fields.

/// Bytes of a result: a tag, then length-prefixed fields.
class Message {
 public:
  std::string bytes;
  void u64(std::uint64_t v) { bytes.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& v) {
    u64(v.size());
    bytes += v;
  }
  void dims(const std::vector<std::size_t>& v) {
    u64(v.size());
    for (std::size_t d : v) u64(d);
  }
  void info(const Hdf5DatasetInfo& i) {
    str(i.path);
    str(i.type);
    dims(i.dims);
    str(i.matlab_class);
    u64((i.object_references ? 1u : 0u) | (i.matlab_empty ? 2u : 0u));
  }
  void doubles(const std::vector<double>& v) {
    u64(v.size());
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  void group(const Hdf5Group& g) {
    str(g.path);
    u64(g.attributes.size());
    for (const Hdf5Attribute& a : g.attributes) {
      str(a.name);
      str(a.text);
      doubles(a.values);
    }
  }
};

/// Reads a Message back; every read is bounds-checked (the child may have died mid-write).
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t u64() {
    std::uint64_t v = 0;
    take(&v, 8);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > bytes_.size() - at_) throw std::runtime_error("truncated");
    std::string v(bytes_.substr(at_, n));
    at_ += n;
    return v;
  }
  std::vector<std::size_t> dims() {
    std::vector<std::size_t> v(checked_count(8));
    for (std::size_t& d : v) d = u64();
    return v;
  }
  Hdf5DatasetInfo info() {
    Hdf5DatasetInfo i;
    i.path = str();
    i.type = str();
    i.dims = dims();
    i.matlab_class = str();
    const std::uint64_t flags = u64();
    i.object_references = (flags & 1) != 0;
    i.matlab_empty = (flags & 2) != 0;
    return i;
  }
  Hdf5Group group() {
    Hdf5Group g;
    g.path = str();
    g.attributes.resize(checked_count(24));
    for (Hdf5Attribute& a : g.attributes) {
      a.name = str();
      a.text = str();
      a.values = doubles();
    }
    return g;
  }
  std::vector<double> doubles() {
    std::vector<double> v(checked_count(sizeof(double)));
    take(v.data(), v.size() * sizeof(double));
    return v;
  }
  /// A doubles field passed over: where its values start (a byte offset) and how many there are.
  std::pair<std::size_t, std::size_t> skip_doubles() {
    const std::size_t n = checked_count(sizeof(double));
    const std::size_t values_at = at_;
    at_ += n * sizeof(double);
    return {values_at, n};
  }
  std::size_t checked_count(std::size_t item_bytes) {
    const std::uint64_t n = u64();
    if (n > (bytes_.size() - at_) / item_bytes) throw std::runtime_error("truncated");
    return static_cast<std::size_t>(n);
  }

 private:
  void take(void* out, std::size_t n) {
    if (n > bytes_.size() - at_) throw std::runtime_error("truncated");
    if (n == 0) return;  // `out` may be an empty vector's null data()
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

/// A reply as the calling process receives it: its bytes in 8-byte words, so that read_hdf5 can
/// move an array's values to the front and keep the words as the array, not copy them beside the
/// reply (a 1 GiB block of a cine's frames peaked at twice that).
struct Reply {
  std::vector<double> words;
  std::size_t size = 0;
  const char* data() const { return reinterpret_cast<const char*>(words.data()); }
  std::string_view view() const { return {data(), size}; }
};

/// A worker's reply, sent in pieces one after another: bytes[0], values[0], bytes[1], values[1],
/// ..., the last bytes; an array's values go out from where they lie, not copied into a message.
struct Answer {
  std::vector<std::string> bytes{std::string()};
  std::vector<std::vector<double>> values;
  /// Ends the current bytes with an array's count; its values follow them.
  void doubles(Message& fields, std::vector<double>&& v) {
    fields.u64(v.size());
    bytes.back() += fields.bytes;
    fields.bytes.clear();
    values.push_back(std::move(v));
    bytes.emplace_back();
  }
  std::size_t size() const {
    std::size_t n = 0;
    for (const std::string& b : bytes) n += b.size();
    for (const std::vector<double>& v : values) n += v.size() * sizeof(double);
    return n;
  }
};

enum Tag : std::uint64_t { kOk = 1, kInputError = 2, kOtherError = 3 };
enum Operation : std::uint64_t { kIsHdf5 = 1, kListDatasets = 2, kListGroups = 3, kRead = 4, kReferenceTargets = 5 };
enum How : std::uint64_t { kExited = 0, kSignalled = 1, kNoWorker = 2 };

// Set in the server's environment to the pid of the process that started it: the server checks it
// against its parent, so a stray variable in a user's environment does nothing.
constexpr const char* kServerVariable = "USRECON_HDF5_READER_SERVER";

/// Sends all of `bytes` on socket `fd` (MSG_NOSIGNAL: a peer that is gone is an error, not SIGPIPE).
bool send_all(int fd, std::string_view bytes) {
  for (std::size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

/// Reads exactly `n` bytes; false at end of file or on an error before that.
bool read_exactly(int fd, void* out, std::size_t n) {
  char* p = static_cast<char*>(out);
  for (std::size_t at = 0; at < n;) {
    const ssize_t got = ::read(fd, p + at, n - at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += static_cast<std::size_t>(got);
  }
  return true;
}

/// The server's answer to one request (see the top of this section). The reply, which may hold a
/// whole dataset, is sent after the header rather than copied behind it.
bool send_answer(int fd, How how, std::uint64_t code, const std::string& reply) {
  Message header;
  header.u64(how);
  header.u64(code);
  header.u64(reply.size());
  return send_all(fd, header.bytes) && send_all(fd, reply);
}

/// In a worker: does what `request` asks (Operation, path, then the operation's arguments) and
/// returns the reply: kOk and the result, or an error tag and its message.
Answer answer(const std::string& request) {
  Answer out;
  Message reply;
  try {
    Reader in(request);
    const std::uint64_t op = in.u64();
    const fs::path path = in.str();
    reply.u64(kOk);
    if (op == kIsHdf5) {
      H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
      reply.u64(H5Fis_hdf5(path.c_str()) > 0 ? 1 : 0);
    } else if (op == kListDatasets) {
      const std::vector<Hdf5DatasetInfo> all = list_here(path);
      reply.u64(all.size());
      for (const Hdf5DatasetInfo& i : all) reply.info(i);
    } else if (op == kListGroups) {
      const std::vector<Hdf5Group> all = list_groups_here(path);
      reply.u64(all.size());
      for (const Hdf5Group& g : all) reply.group(g);
    } else if (op == kRead) {
      const std::uint64_t count = in.u64();
      for (std::uint64_t k = 0; k < count; ++k) {
        const std::string dataset = in.str();
        const std::uint64_t first_row = in.u64();
        const std::uint64_t rows = in.u64();
        Hdf5Array a = read_here(path, dataset, first_row, rows);
        reply.info({a.path, a.type, a.dims, {}, false, false});
        out.doubles(reply, std::move(a.values));
      }
    } else if (op == kReferenceTargets) {
      const std::string dataset = in.str();
      const std::uint64_t first = in.u64();
      const std::uint64_t count = in.u64();
      const std::vector<std::string> targets = reference_targets_here(path, dataset, first, count);
      reply.u64(targets.size());
      for (const std::string& t : targets) reply.str(t);
    } else {
      throw Error("HDF5 reader: unknown operation " + std::to_string(op));
    }
  } catch (const InputError& e) {
    out = Answer{};
    reply = Message{};
    reply.u64(kInputError);
    reply.str(e.what());
  } catch (const std::exception& e) {
    out = Answer{};
    reply = Message{};
    reply.u64(kOtherError);
    reply.str(e.what());
  }
  out.bytes.back() += reply.bytes;
  return out;
}

/// In a worker: sends `answer` to the server, its length first (the server keeps that much room
/// for it, rather than growing a buffer as it comes).
bool send_worker_answer(int fd, const Answer& answer) {
  Message length;
  length.u64(answer.size());
  if (!send_all(fd, length.bytes)) return false;
  for (std::size_t k = 0; k < answer.bytes.size(); ++k) {
    if (!send_all(fd, answer.bytes[k])) return false;
    if (k < answer.values.size() &&
        !send_all(fd, std::string_view(reinterpret_cast<const char*>(answer.values[k].data()),
                                       answer.values[k].size() * sizeof(double))))
      return false;
  }
  return true;
}

/// The reader server's loop on socket `fd` (see the top of this section); never returns.
[[noreturn]] void serve(int fd) {
  // Ctrl-C and SIGTERM are the calling process's to handle (it finishes the current frame, which
  // may still read); the server ends when that process closes the socket.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  for (;;) {
    std::uint64_t length = 0;
    if (!read_exactly(fd, &length, 8)) ::_exit(0);
    std::string request(length, '\0');
    if (!read_exactly(fd, request.data(), length)) ::_exit(0);
    int worker_fds[2];
    pid_t worker = -1;
    int error = 0;
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, worker_fds) != 0) {
      error = errno;
    } else if ((worker = ::fork()) < 0) {
      error = errno;
      ::close(worker_fds[0]);
      ::close(worker_fds[1]);
    }
    if (worker < 0) {
      if (!send_answer(fd, kNoWorker, static_cast<std::uint64_t>(error), "")) ::_exit(0);
      continue;
    }
    if (worker == 0) {
      const rlimit no_core{0, 0};  // a crash here is expected on malformed files: no core dump
      ::setrlimit(RLIMIT_CORE, &no_core);
      // ... and it is the calling process's to report: the default action, not a sanitizer's or
      // fuzzer's handler (those would print a report and write a crash file).
      for (int crash : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(crash, SIG_DFL);
      ::close(worker_fds[0]);
      ::_exit(send_worker_answer(worker_fds[1], answer(request)) ? 0 : 3);  // no atexit handlers
    }
    ::close(worker_fds[1]);
    std::string reply;
    // The length the worker announces (none when it died first); room for at most the largest
    // dataset a read takes (2^31 doubles) and its fields, the rest grown as it comes.
    std::uint64_t announced = 0;
    if (read_exactly(worker_fds[0], &announced, sizeof announced))
      reply.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(announced, (std::uint64_t{1} << 34) + (1 << 20))));
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = ::read(worker_fds[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      reply.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(worker_fds[0]);
    int status = 0;
    while (::waitpid(worker, &status, 0) < 0 && errno == EINTR) {
    }
    const bool signalled = WIFSIGNALED(status);
    const std::uint64_t code = signalled ? WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    if (!send_answer(fd, signalled ? kSignalled : kExited, code, reply)) ::_exit(0);
  }
}

// Before main(): in a process started as the reader server, serve (on fd 0) and never return.
[[maybe_unused]] const bool kStartedAsReaderServer = [] {
  const char* parent = std::getenv(kServerVariable);
  if (parent == nullptr || std::to_string(::getppid()) != parent) return false;
  serve(0);
}();

/// The calling process's side: starts the server on first use and again if it has gone; used
/// under hdf5_lock() only.
class ReaderServer {
 public:
  ~ReaderServer() { stop(); }

  /// Sends `request` to a worker; returns its reply after the kOk tag's check (the reply still
  /// starts with the tag), or throws what the worker threw, or an InputError naming `path` when
  /// the worker died.
  Reply ask(const fs::path& path, const std::string& request) {
    std::uint64_t header[3] = {};
    Reply reply;
    if (owner_ != ::getpid()) {
      // A child forked from the process that started the server (fork without exec): the socket
      // is the parent's conversation, so this process starts a server of its own.
      if (fd_ >= 0) ::close(fd_);  // this process's copy only
      fd_ = -1;
      pid_ = -1;
    }
    for (int attempt = 0;; ++attempt) {
      if (pid_ < 0) start();
      Message framed;
      framed.str(request);
      if (send_all(fd_, framed.bytes) && read_exactly(fd_, header, sizeof header)) {
        reply.size = static_cast<std::size_t>(header[2]);
        reply.words.resize(reply.size / sizeof(double) + 1);
        if (read_exactly(fd_, reply.words.data(), reply.size)) break;
      }
      // The server itself is gone (killed from outside): start it again, once.
      stop();
      if (attempt == 1) throw Error("HDF5: the reader process ended unexpectedly");
    }
    const auto [how, code, length] = header;
    if (how == kNoWorker)
      throw Error("HDF5: cannot start a reader worker: " + std::string(std::strerror(static_cast<int>(code))));
    if (how == kSignalled)
      throw InputError(path.string() + ": libhdf5 crashed reading it (signal " + std::to_string(code) +
                       "): the file is malformed");
    if (code != 0 || length < 8)
      throw InputError(path.string() + ": the HDF5 reader process failed (exit status " + std::to_string(code) +
                       "): the file is probably malformed");
    std::uint64_t tag;
    std::memcpy(&tag, reply.data(), 8);
    if (tag == kInputError || tag == kOtherError) {
      Reader reader(reply.view());
      reader.u64();
      const std::string what = reader.str();
      if (tag == kInputError) throw InputError(what);
      throw Error(what);
    }
    if (tag != kOk) throw InputError(path.string() + ": the HDF5 reader sent an unknown reply");
    return reply;
  }

 private:
  void start() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      throw Error("HDF5: cannot create a socket for the reader process: " + std::string(std::strerror(errno)));
    // The server gets the other end as its fd 0 (dup2 clears close-on-exec there), the variable
    // that makes it a server, and the environment of this process otherwise.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
    const std::string variable = std::string(kServerVariable) + "=" + std::to_string(::getpid());
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, kServerVariable, std::strlen(kServerVariable)) != 0) env.push_back(*e);
    env.push_back(const_cast<char*>(variable.c_str()));
    env.push_back(nullptr);
    char name[] = "usrecon-hdf5-reader";
    char* argv[] = {name, nullptr};
    pid_t pid = -1;
    const int error = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, env.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (error != 0) {
      ::close(fds[0]);
      throw Error("HDF5: cannot start the reader process (/proc/self/exe): " + std::string(std::strerror(error)));
    }
    pid_ = pid;
    fd_ = fds[0];
    owner_ = ::getpid();
  }
  void stop() {
    if (fd_ >= 0) ::close(fd_);  // the server reads end of file and exits
    if (pid_ > 0 && owner_ == ::getpid()) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    fd_ = -1;
    pid_ = -1;
  }

  pid_t pid_ = -1;     // the server
  int fd_ = -1;        // this process's end of the socket
  pid_t owner_ = -1;   // the process that started the server
};

/// Runs `request` (an Operation on `path`, with `arguments` after the path) in a reader worker;
/// returns the reply positioned after the tag (see ReaderServer::ask).
Reply run_isolated(Operation op, const fs::path& path, const Message& arguments = {}) {
  Message request;
  request.u64(op);
  request.str(path.string());
  request.bytes += arguments.bytes;
  std::lock_guard lock(hdf5_lock());  // one request at a time; write_hdf5 holds it too
  static ReaderServer server;
  return server.ask(path, request.bytes);
}

}  // namespace

bool is_hdf5_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    const Reply reply = run_isolated(kIsHdf5, path);
    Reader reader(reply.view());
    reader.u64();
    return reader.u64() == 1;
  } catch (const InputError&) {
    return false;
  }
}

std::vector<Hdf5DatasetInfo> list_hdf5_datasets(const fs::path& path) {
  const Reply reply = run_isolated(kListDatasets, path);
  try {
    Reader reader(reply.view());
    reader.u64();
    std::vector<Hdf5DatasetInfo> all(reader.checked_count(24));
    for (Hdf5DatasetInfo& i : all) i = reader.info();
    return all;
  } catch (const std::runtime_error&) {
    throw InputError(path.string() + ": the HDF5 reader's reply was cut off");
  }
}

std::vector<Hdf5Group> list_hdf5_groups(const fs::path& path) {
  const Reply reply = run_isolated(kListGroups, path);
  try {
    Reader reader(reply.view());
    reader.u64();
    std::vector<Hdf5Group> all(reader.checked_count(16));
    for (Hdf5Group& g : all) g = reader.group();
    return all;
  } catch (const std::runtime_error&) {
    throw InputError(path.string() + ": the HDF5 reader's reply was cut off");
  }
}

std::vector<Hdf5Array> read_hdf5(const fs::path& path, const std::vector<std::string>& datasets) {
  std::vector<Hdf5Selection> whole;
  for (const std::string& dataset : datasets) whole.push_back({dataset});
  return read_hdf5(path, whole);
}

std::vector<Hdf5Array> read_hdf5(const fs::path& path, const std::vector<Hdf5Selection>& selections) {
  Message arguments;
  arguments.u64(selections.size());
  for (const Hdf5Selection& s : selections) {
    arguments.str(s.dataset);
    arguments.u64(s.first_row);
    arguments.u64(s.rows);
  }
  Reply reply = run_isolated(kRead, path, arguments);
  try {
    Reader reader(reply.view());
    reader.u64();
    std::vector<Hdf5Array> arrays;
    std::vector<std::pair<std::size_t, std::size_t>> values;  // each array's: byte offset, count
    for (std::size_t k = 0; k < selections.size(); ++k) {
      Hdf5DatasetInfo info = reader.info();
      arrays.push_back({std::move(info.path), std::move(info.type), std::move(info.dims), {}});
      values.push_back(reader.skip_doubles());
    }
    // The array that is most of the reply (channel data beside a few scalars) keeps the reply's
    // words: its values moved to their front, the others copied out first. Where none is (two
    // halves, say), each is copied and the reply let go: words kept for one array would hold the
    // others' room as long as it lives.
    std::size_t largest = 0;
    for (std::size_t k = 1; k < values.size(); ++k)
      if (values[k].second > values[largest].second) largest = k;
    const bool keep_words = !values.empty() && values[largest].second * sizeof(double) >= reply.size / 10 * 9;
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (keep_words && k == largest) continue;
      std::vector<double>& to = arrays[k].values;
      to.resize(values[k].second);
      if (!to.empty()) std::memcpy(to.data(), reply.data() + values[k].first, to.size() * sizeof(double));
    }
    if (keep_words) {
      const auto [values_at, count] = values[largest];
      std::memmove(reply.words.data(), reply.data() + values_at, count * sizeof(double));
      reply.words.resize(count);
      arrays[largest].values = std::move(reply.words);
    }
    return arrays;
  } catch (const std::runtime_error&) {
    throw InputError(path.string() + ": the HDF5 reader's reply was cut off");
  }
}

std::optional<Hdf5DatasetInfo> hdf5_dataset_to_read(const fs::path& path, const std::string& dataset) {
  const std::vector<Hdf5DatasetInfo> all = list_hdf5_datasets(path);
  const std::string chosen = dataset_to_read(path, all, dataset);
  for (const Hdf5DatasetInfo& d : all)
    if (d.path == chosen) return d;
  return std::nullopt;
}

std::vector<std::string> hdf5_reference_targets(const fs::path& path, const std::string& dataset, std::size_t first,
                                                std::size_t count) {
  Message arguments;
  arguments.str(dataset);
  arguments.u64(first);
  arguments.u64(count);
  const Reply reply = run_isolated(kReferenceTargets, path, arguments);
  try {
    Reader reader(reply.view());
    reader.u64();
    std::vector<std::string> targets(reader.checked_count(8));
    for (std::string& t : targets) t = reader.str();
    return targets;
  } catch (const std::runtime_error&) {
    throw InputError(path.string() + ": the HDF5 reader's reply was cut off");
  }
}

Hdf5Array read_hdf5(const fs::path& path, const std::string& dataset) {
  return std::move(read_hdf5(path, std::vector<std::string>{dataset}).front());
}

bool has_hdf5_extension(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".h5" || ext == ".hdf5" || ext == ".uff";
}

namespace {

/// Writes one attribute on `object` (replacing one of the same name): text as a fixed-length
/// NUL-terminated string, values as a float64 vector. False on failure.
bool write_attribute(hid_t object, const Hdf5Attribute& a) {
  if (H5Aexists(object, a.name.c_str()) > 0) H5Adelete(object, a.name.c_str());
  const bool text = a.values.empty();
  Handle type(text ? H5Tcopy(H5T_C_S1) : H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
  if (text) {
    H5Tset_size(type.get(), a.text.size() + 1);
    H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  }
  const hsize_t count = text ? 1 : a.values.size();
  Handle space(text ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr), H5Sclose);
  Handle attr(H5Acreate2(object, a.name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) return false;
  return text ? H5Awrite(attr.get(), type.get(), a.text.c_str()) >= 0
              : H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, a.values.data()) >= 0;
}

}  // namespace

void write_hdf5(StagedFile& out, const std::vector<Hdf5Array>& arrays, const std::vector<Hdf5Group>& groups) {
  const std::string name = out.target().string();
  // The file is built in memory (HDF5's core driver, no backing store: nothing touches the disk)
  // and its image written to the staged file.
  std::vector<std::byte> image;
  {
    std::lock_guard lock(hdf5_lock());
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const auto fail = [&](const std::string& what) { throw OutputError(name + ": cannot write " + what + hdf5_reason()); };
    Handle in_memory(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (!in_memory.ok() || H5Pset_fapl_core(in_memory.get(), std::size_t{1} << 20, 0) < 0)
      fail("an HDF5 file in memory");
    Handle file(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, in_memory.get()), H5Fclose);
    if (!file.ok()) throw OutputError(name + ": cannot create HDF5 file" + hdf5_reason());
    Handle link_props(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(link_props.get(), 1);
    for (const Hdf5Array& a : arrays) {
      std::size_t count = 1;
      for (std::size_t d : a.dims) count *= d;
      if (a.values.size() != count)
        throw Error("write_hdf5: '" + a.path + "' has " + std::to_string(a.values.size()) + " values but dims " +
                    dims_text(a.dims));
      const std::vector<hsize_t> dims(a.dims.begin(), a.dims.end());
      Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
      Handle dataset(H5Dcreate2(file.get(), a.path.c_str(), H5T_IEEE_F64LE, space.get(), link_props.get(),
                                H5P_DEFAULT, H5P_DEFAULT),
                     H5Dclose);
      if (!dataset.ok() ||
          H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.values.data()) < 0)
        fail("dataset '" + a.path + "'");
    }
    for (const Hdf5Group& g : groups) {
      const bool exists = g.path == "/" || H5Lexists(file.get(), g.path.c_str(), H5P_DEFAULT) > 0;
      H5Eclear2(H5E_DEFAULT);
      Handle group(exists ? H5Gopen2(file.get(), g.path.c_str(), H5P_DEFAULT)
                          : H5Gcreate2(file.get(), g.path.c_str(), link_props.get(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Gclose);
      if (!group.ok()) fail("group '" + g.path + "'");
      for (const Hdf5Attribute& a : g.attributes)
        if (!write_attribute(group.get(), a)) fail("attribute '" + a.name + "' of '" + g.path + "'");
    }
    if (H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) fail("the file");
    const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
    if (size < 0) fail("the file");
    image.resize(static_cast<std::size_t>(size));
    if (H5Fget_file_image(file.get(), image.data(), image.size()) != size) fail("the file");
  }
  out.write(image);
}

void write_hdf5(const fs::path& path, const std::vector<Hdf5Array>& arrays, const std::vector<Hdf5Group>& groups) {
  StagedFile out(path);
  write_hdf5(out, arrays, groups);
  out.commit();
}

}  // namespace usrecon::io
