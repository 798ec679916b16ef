// Bytes taken from an input file, made safe to quote in an error message (shared by the parsers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace usrecon::io::detail
