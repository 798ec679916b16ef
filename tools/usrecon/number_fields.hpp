// Comma-separated numbers of one CLI option value ("X,Z" or "X,Z,R"), shared by the subcommands.
#pragma once

#include <charconv>
#include <cmath>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "usrecon/kernels/common.hpp"

namespace usrecon::cli {

/// Every comma-separated field of `text` as a finite decimal number; throws usrecon::Error naming
/// the option, the value and the field that is not one. Strict: the whole field must be the number
/// (no spaces, no hexadecimal), and nan and inf are refused, which would otherwise reach the
/// simulators and metrics as positions and silently give all-zero data or null results.
inline std::vector<double> number_fields(const std::string& text, const std::string& option) {
  std::vector<double> values;
  std::stringstream in(text);
  std::string field;
  while (std::getline(in, field, ',')) {
    // from_chars takes no leading '+'; a sign after it ("+-1") stays an error.
    const char* begin = field.data();
    const char* const end = field.data() + field.size();
    if (begin != end && *begin == '+' && begin + 1 != end && begin[1] != '-' && begin[1] != '+') ++begin;
    double value = 0;
    const auto [stop, ec] = std::from_chars(begin, end, value, std::chars_format::general);
    if (field.empty() || ec != std::errc() || stop != end)
      throw Error(option + " '" + text + "': '" + field + "' is not a number" +
                  (field.find(':') != std::string::npos ? " (a range START:STEP:STOP is not taken here)" : ""));
    if (!std::isfinite(value))
      throw Error(option + " '" + text + "': '" + field + "' is not a finite number");
    values.push_back(value);
  }
  // getline yields no field after a trailing comma: "1,2," would otherwise pass as "1,2".
  if (!text.empty() && text.back() == ',')
    throw Error(option + " '" + text + "': '' is not a number");
  return values;
}

}  // namespace usrecon::cli
