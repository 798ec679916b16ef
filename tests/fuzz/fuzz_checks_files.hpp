// What the MAT and HDF5 checks share: both libraries read files by path, so the input goes to a
// scratch file of this process first; then every variable or dataset listed must either read
// with a value count that matches its dims or be refused with an InputError naming the file.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fuzz_checks.hpp"
#include "usrecon/io/file.hpp"

namespace usrecon::fuzz {

/// Writes `data` to this process's scratch file with extension `suffix` (removed at exit).
inline std::filesystem::path write_scratch_file(std::span<const std::uint8_t> data, const std::string& suffix) {
  struct Scratch {
    std::set<std::filesystem::path> paths;
    ~Scratch() {
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove(p, ignored);
    }
  };
  static Scratch scratch;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("usrecon-fuzz-" + std::to_string(::getpid()) + suffix);
  scratch.paths.insert(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  require(static_cast<bool>(out), "cannot write the scratch file " + path.string());
  return path;
}

/// list(path) -> the names in the file; read(path, name) -> {values read, product of the dims}.
/// At most four names are read. (Messages may quote names taken from the file, so they are not
/// required to be printable here.)
template <class List, class Read>
void check_listed_then_read(std::span<const std::uint8_t> data, const std::string& suffix, List list, Read read) {
  const std::filesystem::path path = write_scratch_file(data, suffix);
  const std::string name = path.string();
  const auto names_file = [&](const io::InputError& error) {
    require(std::string_view(error.what()).starts_with(name), "error does not name the file: " +
                                                                   std::string(error.what()));
  };
  std::vector<std::string> names;
  try {
    names = list(path);
  } catch (const io::InputError& error) {
    names_file(error);
    return;
  }
  constexpr std::size_t kMaxRead = 4;
  for (std::size_t idx = 0; idx < names.size() && idx < kMaxRead; ++idx) {
    try {
      const std::pair<std::size_t, std::size_t> counts = read(path, names[idx]);
      require(counts.first == counts.second, "value count does not match the dims");
    } catch (const io::InputError& error) {
      names_file(error);
    }
  }
}

}  // namespace usrecon::fuzz
