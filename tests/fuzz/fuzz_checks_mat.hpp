// The check of the MAT target (see fuzz_checks.hpp): kept apart because it needs matio.
#pragma once

#include "fuzz_checks_files.hpp"
#include "usrecon/io/mat.hpp"

namespace usrecon::fuzz {

/// MAT: every variable listed reads as a real array whose value count matches its dims (and
/// MatArray::size() agrees), or is refused with an InputError naming the file.
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
        return std::pair{array.values.size(), count};
      });
}

}  // namespace usrecon::fuzz
