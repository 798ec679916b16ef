// Splitting option text (--x-range MIN:MAX, --angles-deg A,B,C, --channel-map 1:64,65:128),
// internal to recon/pipeline.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace usrecon::recon::detail {

/// The parts of `text` between `sep`s, views into it (an empty text is one empty part).
inline std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace usrecon::recon::detail
