// Path checks shared by the subcommands: whether two paths name one file or directory (they refuse
// to write over an input), and whether a file may be written at a name.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "usrecon/io/file.hpp"
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

/// Before any work: the nearest existing directory above `target` must be a directory that can be
/// written, where directories are to be made for it (said at once, not after the simulation).
inline void check_output_directory(const std::filesystem::path& target, const std::string& what) {
  namespace fs = std::filesystem;
  const io::DirectoriesToMake d = io::directories_to_make(target.parent_path());
  const fs::path dir = target.parent_path();
  std::error_code ec;
  if (d.missing.empty() && (dir.empty() || fs::is_directory(dir, ec))) return;
  const fs::path& existing = d.nearest_existing;
  if (!fs::is_directory(existing, ec))
    throw Error(what + ": cannot create its directory " + dir.string() + ": " + existing.string() +
                (fs::is_symlink(fs::symlink_status(existing, ec)) ? " is a link that leads to no directory"
                                                                  : " is not a directory"));
  if (!d.missing.empty() && ::access(existing.c_str(), W_OK | X_OK) != 0)
    throw Error(what + ": cannot create its directory " + dir.string() + ": " + existing.string() + ": " +
                std::error_code(errno, std::generic_category()).message());
}

/// The directories made for outputs that did not exist yet (simulate -o new/x.npy said only that
/// "new" did not exist, where reconstruct makes -o's), removed again, deepest first and only
/// where still empty, unless keep() is called once the outputs are in place: a run that fails
/// after making them leaves none behind.
class MadeDirectories {
 public:
  MadeDirectories() = default;
  MadeDirectories(const MadeDirectories&) = delete;
  MadeDirectories& operator=(const MadeDirectories&) = delete;
  ~MadeDirectories() {
    if (kept_) return;
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      std::error_code ec;
      std::filesystem::remove(*it, ec);  // an empty directory only
    }
  }
  /// Makes the missing directories above `target`, shallowest first, recording each.
  void make_for(const std::filesystem::path& target, const std::string& what) {
    const io::DirectoriesToMake d = io::directories_to_make(target.parent_path());
    for (auto it = d.missing.rbegin(); it != d.missing.rend(); ++it) {
      std::error_code ec;
      const bool made = std::filesystem::create_directory(*it, ec);
      if (ec) throw Error(what + ": cannot create its directory " + it->string() + ": " + ec.message());
      if (made) made_.push_back(*it);  // not one that another process made meanwhile
    }
  }
  void keep() { kept_ = true; }

 private:
  std::vector<std::filesystem::path> made_;
  bool kept_ = false;
};

}  // namespace usrecon::cli
