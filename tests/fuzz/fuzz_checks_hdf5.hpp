// The check of the HDF5 target (see fuzz_checks.hpp): kept apart because it needs libhdf5.
#pragma once

#include "fuzz_checks_files.hpp"
#include "usrecon/io/hdf5.hpp"

namespace usrecon::fuzz {

/// HDF5: the groups list with attributes within their documented limits, and every dataset listed reads as a real array whose value count matches its dims, or is
/// refused with an InputError naming the file (libhdf5 crashing in its reader process included).
inline void check_hdf5(std::span<const std::uint8_t> data) {
  check_listed_then_read(
      data, ".h5",
      [](const std::filesystem::path& path) {
        for (const io::Hdf5Group& group : io::list_hdf5_groups(path))
          for (const io::Hdf5Attribute& attribute : group.attributes)
            require(attribute.text.size() <= 64 * 1024 && attribute.values.size() <= 4096,
                    "attribute over the documented limits");
        std::vector<std::string> names;
        for (const io::Hdf5DatasetInfo& info : io::list_hdf5_datasets(path)) names.push_back(info.path);
        return names;
      },
      [](const std::filesystem::path& path, const std::string& name) {
        const io::Hdf5Array array = io::read_hdf5(path, name);
        std::size_t count = 1;
        for (const std::size_t extent : array.dims) count *= extent;
        return std::pair{array.values.size(), count};
      });
}

}  // namespace usrecon::fuzz
