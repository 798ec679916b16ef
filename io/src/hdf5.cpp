// HDF5 files through libhdf5 (Debian: libhdf5-dev, the serial build).
#include "usrecon/io/hdf5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <functional>
#include <mutex>

#include "usrecon/io/file.hpp"

namespace fs = std::filesystem;

namespace usrecon::io {
namespace {

// Debian's serial libhdf5 is not thread-safe; the batch pipeline reads on its own thread, and a
// library user may call from several. Every HDF5 call here holds this lock.
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

std::string dims_text(const std::vector<std::size_t>& dims) {
  std::string s;
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? " x " : "") + std::to_string(dims[k]);
  return dims.empty() ? "scalar" : s;
}

Handle open_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(path.string() + ": " + (fs::exists(path, ec) ? "not a regular file" : "no such file"));
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path.string() + ": not an HDF5 file");
  }
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw InputError(path.string() + ": HDF5 cannot open it" + hdf5_reason());
  return file;
}

/// Calls visit(path, dataset id) for every dataset under `group`, in name order. Hard links can
/// make cycles, so the walk stops at a depth of 32 and after 100 000 objects; external links
/// (which open other files) are not followed.
void walk_datasets(hid_t group, const std::string& prefix, int depth, std::size_t& seen,
                   const std::function<void(const std::string&, hid_t)>& visit) {
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
    if (kind == H5I_GROUP) walk_datasets(object.get(), path, depth + 1, seen, visit);
    if (kind == H5I_DATASET) visit(path, object.get());
  }
  H5Eclear2(H5E_DEFAULT);
}

Hdf5DatasetInfo describe(const std::string& path, hid_t dataset) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Hdf5DatasetInfo info{path, type.ok() ? type_name(type.get()) : "", {}};
  if (space.ok() && H5Sget_simple_extent_type(space.get()) == H5S_SIMPLE) info.dims = dims_of(space.get());
  return info;
}

constexpr const char* kPicmusData = "/US/US_DATASET0000/data/real";

}  // namespace

bool is_hdf5_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::lock_guard lock(hdf5_lock());
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const htri_t yes = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return yes > 0;
}

std::vector<Hdf5DatasetInfo> list_hdf5_datasets(const fs::path& path) {
  std::lock_guard lock(hdf5_lock());
  const Handle file = open_file(path);
  std::vector<Hdf5DatasetInfo> datasets;
  std::size_t seen = 0;
  walk_datasets(file.get(), "", 0, seen,
                [&](const std::string& name, hid_t dataset) { datasets.push_back(describe(name, dataset)); });
  return datasets;
}

Hdf5Array read_hdf5(const fs::path& path, const std::string& requested) {
  std::string name = requested;
  if (name.empty()) {
    std::vector<std::string> candidates;
    bool picmus = false;
    for (const Hdf5DatasetInfo& info : list_hdf5_datasets(path)) {
      if (info.path == kPicmusData) picmus = true;
      if (!info.type.empty() && info.dims.size() >= 2) candidates.push_back(info.path);
    }
    if (picmus) {
      name = kPicmusData;
    } else if (candidates.size() == 1) {
      name = candidates.front();
    } else {
      std::string list;
      for (const std::string& c : candidates) list += (list.empty() ? "" : ", ") + c;
      throw InputError(path.string() + ": name the dataset to read with --var (numeric arrays here: " +
                       (list.empty() ? "none" : list) + ")");
    }
  }
  if (name.front() != '/') name = "/" + name;
  std::lock_guard lock(hdf5_lock());
  const Handle file = open_file(path);
  const std::string what = path.string() + ": dataset '" + name + "'";
  // H5Dopen on a missing path is an error, not a crash; H5Lexists per part would be tidier
  // but cannot see through soft links either.
  Handle dataset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " does not exist or is not a dataset");
  }
  Hdf5Array array;
  array.path = name;
  const Hdf5DatasetInfo info = describe(name, dataset.get());
  if (info.type.empty())
    throw InputError(what + " is not a real integer or floating-point array (complex data are stored "
                            "as two real datasets, e.g. data/real and data/imag)");
  array.type = info.type;
  array.dims = info.dims;
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
  if (count > 0 &&
      H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, array.values.data()) < 0)
    throw InputError(what + ": HDF5 cannot read it" + hdf5_reason());
  return array;
}

void write_hdf5(const fs::path& path, const std::vector<Hdf5Array>& arrays) {
  const fs::path tmp = path.string() + ".tmp-h5";
  {
    std::lock_guard lock(hdf5_lock());
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw OutputError(path.string() + ": cannot create HDF5 file" + hdf5_reason());
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
          H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.values.data()) < 0) {
        const std::string reason = hdf5_reason();
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw OutputError(path.string() + ": cannot write dataset '" + a.path + "'" + reason);
      }
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw OutputError(path.string() + ": cannot write it");
  }
}

}  // namespace usrecon::io
