// Whether two paths name one file, shared by the subcommands that refuse to write over an input.
#pragma once

#include <filesystem>
#include <system_error>

namespace usrecon::cli {

/// True when a and b name one file: the same path once absolute and normalised (symbolic links in
/// its existing part resolved), or, when both exist, the same file under two names (hard links).
inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  const fs::path ca = fs::weakly_canonical(a, ec);
  const fs::path cb = ec ? fs::path() : fs::weakly_canonical(b, ec);
  if (ec) return fs::absolute(a, ec).lexically_normal() == fs::absolute(b, ec).lexically_normal();
  return ca == cb;
}

}  // namespace usrecon::cli
