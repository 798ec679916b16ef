// Path checks shared by the subcommands: whether two paths name one file or directory (they refuse
// to write over an input), and whether a file may be written at a name.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include "usrecon/kernels/common.hpp"

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

/// Throws usrecon::Error, naming the output as `what` (e.g. "--export fig.png"), unless a file
/// may be written at `target` now: it must not be or name a directory ("out/", an existing
/// directory, a link to one), and without `overwrite` nothing may be at the name (a link, even a
/// dangling one, counts: std::filesystem::exists would follow it). Checked before the work, so
/// that a run does not compute what it cannot write.
inline void check_output_file(const std::filesystem::path& target, bool overwrite, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!target.has_filename() || fs::is_directory(target, ec))
    throw Error(what + " is a directory; give a file name");
  if (!overwrite && fs::exists(fs::symlink_status(target, ec)))
    throw Error(what + " already exists (kept; use --overwrite to replace it)");
}

/// The directories above `target` that do not exist yet, made, as reconstruct makes -o's
/// (simulate -o new/x.npy said only that "new" did not exist). Called just before the writes, so
/// that a run refused earlier leaves no directory behind.
inline void make_parent_directories(const std::filesystem::path& target, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path dir = target.parent_path();
  std::error_code ec;
  if (dir.empty() || fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec) throw Error(what + ": cannot create its directory " + dir.string() + ": " + ec.message());
}

}  // namespace usrecon::cli
