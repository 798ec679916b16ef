// Names taken from an input file, listed in an error message (shared by the parsers; each is shown
// through io::printable).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/io/file.hpp"

namespace usrecon::io::detail {

/// What follows "no variable 'x'" in a message: the names a file holds (at most max_names, then
/// how many more), and the one that differs from `wanted` only in case, the likeliest slip:
/// " (variables here: RF, fs; names are case-sensitive: RF)".
inline std::string names_here(const std::vector<std::string>& names, std::string_view wanted, std::string_view kind,
                              std::size_t max_names = 12) {
  const auto lower = [](std::string_view text) {
    std::string l(text);
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return l;
  };
  std::string list, same_but_case;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i < max_names) list += (i ? ", " : "") + printable(names[i], 200);
    if (same_but_case.empty() && names[i] != wanted && lower(names[i]) == lower(wanted)) same_but_case = names[i];
  }
  if (names.size() > max_names) list += " and " + std::to_string(names.size() - max_names) + " more";
  std::string text = " (" + std::string(kind) + " here: " + (list.empty() ? "none" : list);
  if (!same_but_case.empty()) text += "; names are case-sensitive: " + printable(same_but_case, 200);
  return text + ")";
}

}  // namespace usrecon::io::detail
