// Wall-clock stage timing and file identities shared by the pipeline's sources (internal header).
#pragma once

#include <chrono>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>

namespace usrecon::recon::detail {

/// (device, inode) of an existing file; nullopt when it cannot be stat'ed.
std::optional<std::pair<std::uintmax_t, std::uintmax_t>> file_identity(const std::filesystem::path& path);


using Clock = std::chrono::steady_clock;

/// Seconds elapsed since `start`.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace usrecon::recon::detail
