// The check of the mat_fields target: MAT struct and cell walking (--var A.b.c, C{1}, S(2).x),
// which the mat target (top-level names only) does not reach. read_mat(path, "") lists the
// numeric arrays inside the file's structs and cells when it has no numeric top-level array;
// each listed name is read.
#pragma once

#include "fuzz_checks_files.hpp"
#include "usrecon/io/mat.hpp"

namespace usrecon::fuzz {

inline void check_mat_field_read(const std::filesystem::path& path, const std::string& name) {
  try {
    const io::MatArray array = io::read_mat(path, name);
    std::size_t count = array.dims.empty() ? 0 : 1;
    for (const std::size_t extent : array.dims) count *= extent;
    require(array.size() == count, "MatArray::size() does not match the dims");
    require(array.values.size() == count, "value count does not match the dims of " + name);
  } catch (const io::InputError& error) {
    require(std::string_view(error.what()).starts_with(path.string()),
            "error does not name the file: " + std::string(error.what()));
  }
}

inline void check_mat_fields(std::span<const std::uint8_t> data) {
  const std::filesystem::path path = write_scratch_file(data, ".mat");
  std::vector<std::string> names;
  try {
    for (const io::MatVariableInfo& info : io::list_mat_variables(path)) names.push_back(info.name);
  } catch (const io::InputError&) {
    return;
  }
  std::vector<std::string> fields;
  try {
    (void)io::read_mat(path, "");
  } catch (const io::InputError& error) {
    const std::string message = error.what();
    const std::string marker = "; in structs and cells: ";
    if (const std::size_t at = message.find(marker); at != std::string::npos) {
      std::string list = message.substr(at + marker.size());
      if (const std::size_t close = list.rfind(')'); close != std::string::npos) list.resize(close);
      if (const std::size_t more = list.find(" and "); more != std::string::npos) list.resize(more);
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = list.find(", ", start);
        fields.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 2;
      }
    }
  }
  for (std::size_t k = 0; k < fields.size() && k < 4; ++k) check_mat_field_read(path, fields[k]);
  // Walking through what is not a struct, or a field that is not there; subscripts on whatever
  // the variable is (a cell, a struct array, neither), past its end too.
  for (std::size_t k = 0; k < names.size() && k < 2; ++k) {
    check_mat_field_read(path, names[k] + ".x");
    check_mat_field_read(path, names[k] + ".x.y");
    check_mat_field_read(path, names[k] + "{1}");
    check_mat_field_read(path, names[k] + "{2,1}.x");
    check_mat_field_read(path, names[k] + "(2).x");
  }
}

}  // namespace usrecon::fuzz
