// The check of the MAT target (see fuzz_checks.hpp): kept apart because it needs matio.
#pragma once

#include <cstring>

#include "fuzz_checks_files.hpp"
#include "usrecon/io/mat.hpp"

namespace usrecon::fuzz {

/// MAT: every variable listed reads as a real array whose value count matches its dims (and
/// MatArray::size() agrees), or is refused with an InputError naming the file. Read as runs of its
/// last axis (read_mat_slabs: matio reads a v5 top-level array's part alone), it gives the whole
/// read's values, bit for bit: all of them, and the last index alone; or is refused likewise.
inline void check_mat(std::span<const std::uint8_t> data) {
  check_listed_then_read(
      data, ".mat",
      [](const std::filesystem::path& path) {
        std::vector<std::string> names;
        for (const io::MatVariableInfo& info : io::list_mat_variables(path)) names.push_back(info.name);
        return names;
      },
      [](const std::filesystem::path& path, const std::string& name) {
        const io::MatArray array = io::read_mat(path, name);
        std::size_t count = array.dims.empty() ? 0 : 1;  // MatArray::size()'s convention
        for (const std::size_t extent : array.dims) count *= extent;
        require(array.size() == count, "MatArray::size() does not match the dims");
        if (count > 0 && array.values.size() == count) {
          const std::size_t last = array.dims.back(), slab = count / last;
          const io::MatArray all = io::read_mat_slabs(path, name, 0, last);
          require(all.dims == array.dims && all.values.size() == count &&
                      std::memcmp(all.values.data(), array.values.data(), count * sizeof(double)) == 0,
                  "read_mat_slabs of the whole last axis differs from read_mat");
          const io::MatArray tail = io::read_mat_slabs(path, name, last - 1, 1);
          require(tail.values.size() == slab &&
                      std::memcmp(tail.values.data(), array.values.data() + (count - slab), slab * sizeof(double)) == 0,
                  "read_mat_slabs of the last index differs from the whole read's part");
        }
        return std::pair{array.values.size(), count};
      });
}

}  // namespace usrecon::fuzz
