// Comma-separated numbers of one CLI option value ("X,Z" or "X,Z,R"), shared by the subcommands.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "usrecon/kernels/common.hpp"

namespace usrecon::cli {

/// Every comma-separated field of `text` as a number; throws usrecon::Error naming the option,
/// the value and the field that is not a number.
inline std::vector<double> number_fields(const std::string& text, const std::string& option) {
  std::vector<double> values;
  std::stringstream in(text);
  std::string field;
  while (std::getline(in, field, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stod(field, &used));
      if (used != field.size()) throw std::invalid_argument(field);
    } catch (const std::exception&) {
      throw Error(option + " '" + text + "': '" + field + "' is not a number");
    }
  }
  return values;
}

}  // namespace usrecon::cli
