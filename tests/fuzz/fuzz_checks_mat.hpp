// The check of the MAT target (see fuzz_checks.hpp): kept apart because it needs matio.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "fuzz_checks.hpp"
#include "usrecon/io/mat.hpp"

namespace usrecon::fuzz {

/// MAT: matio reads files by path, so the input goes to a scratch file of this process first. Every
/// variable listed must either read as a real array whose value count matches its dims or be
/// refused with an InputError naming the file. (Messages may quote variable names taken from the
/// file, so they are not required to be printable here.)
inline void check_mat(std::span<const std::uint8_t> data) {
  struct ScratchFile {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("usrecon-fuzz-mat-" + std::to_string(::getpid()) + ".mat");
    ~ScratchFile() {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  };
  static const ScratchFile scratch;
  {
    std::ofstream out(scratch.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    require(static_cast<bool>(out), "cannot write the scratch file " + scratch.path.string());
  }
  const std::string name = scratch.path.string();
  const auto names_file = [&](const io::InputError& error) {
    require(std::string_view(error.what()).starts_with(name), "error does not name the file: " +
                                                                   std::string(error.what()));
  };
  std::vector<io::MatVariableInfo> variables;
  try {
    variables = io::list_mat_variables(scratch.path);
  } catch (const io::InputError& error) {
    names_file(error);
    return;
  }
  constexpr std::size_t kMaxVariablesRead = 4;
  for (std::size_t idx = 0; idx < variables.size() && idx < kMaxVariablesRead; ++idx) {
    try {
      const io::MatArray array = io::read_mat(scratch.path, variables[idx].name);
      std::size_t count = array.dims.empty() ? 0 : 1;  // MatArray::size()'s convention
      for (const std::size_t extent : array.dims) count *= extent;
      require(array.values.size() == count && array.size() == count,
              "value count does not match the dims");
    } catch (const io::InputError& error) {
      names_file(error);
    }
  }
}

}  // namespace usrecon::fuzz
