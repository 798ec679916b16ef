// Whether two paths name one file or directory, shared by the subcommands that refuse to write
// over an input.
#pragma once

#include <filesystem>
#include <system_error>

namespace usrecon::cli {

/// p made absolute, with the symbolic links of its existing part resolved and no trailing
/// separator ("out/" and "./out" give what "out" gives), so that two spellings of one path compare
/// equal. (std::filesystem::weakly_canonical alone keeps a relative path relative when none of it
/// exists yet, and "out/" apart from "out".)
inline std::filesystem::path comparable_path(const std::filesystem::path& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path absolute = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  fs::path c = fs::weakly_canonical(absolute, ec);
  if (ec) c = absolute.lexically_normal();
  if (!c.has_filename() && c.has_relative_path()) c = c.parent_path();
  return c;
}

/// True when a and b name one file: the same comparable_path, or, when both exist, the same file
/// under two names (hard links).
inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return comparable_path(a) == comparable_path(b);
}

}  // namespace usrecon::cli
