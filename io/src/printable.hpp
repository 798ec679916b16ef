// Bytes taken from an input file, made safe to quote in an error message (shared by the parsers).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace usrecon::io::detail {

/// At most max_bytes bytes of `text` (then "..."), every byte that is not printable ASCII (or is a
/// double quote or backslash) written as \xNN, so binary input cannot corrupt a terminal or a log.
inline std::string printable(std::string_view text, std::size_t max_bytes) {
  constexpr char kHexDigits[] = "0123456789ABCDEF";
  std::string shown;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '"' && byte != '\\') {
      shown += static_cast<char>(byte);
    } else {
      shown += "\\x";
      shown += kHexDigits[byte >> 4];
      shown += kHexDigits[byte & 0xF];
    }
  }
  if (text.size() > max_bytes) shown += "...";
  return shown;
}

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
